"""Stable-Baselines3 PPO on 3DBall through ``unity_gym.sb3.UnityVecEnv`` (4 games x 12 agents).

Trains until the mean reward of the last 100 finished episodes reaches ``--target`` (default 90;
the best possible is 100: +0.1 per decision for 1000 decisions), then evaluates the deterministic
policy on fresh episodes of all 48 agents. Hyperparameters follow ML-Agents' 3DBall PPO config
(lr 3e-4 linear, 3 epochs, gamma 0.99, lambda 0.99, entropy 1e-3, 128x2 network, normalized
observations, ~12k-step buffer).

Run::

    .venv/bin/python -m benchmarks.sb3_3dball --time-limit 1800

Prints progress lines and a final ``RESULT`` line; exits 0 when the target was reached.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["main", "train"]


def _evaluate(model: Any, env: Any, episodes_per_slot: int = 1, max_steps: int = 1500) -> float:
    """Mean return of the first ``episodes_per_slot`` fresh episodes of every slot."""
    observations = env.reset()
    returns = np.zeros(env.num_envs)
    finished: list[list[float]] = [[] for _ in range(env.num_envs)]
    for _ in range(max_steps):
        actions, _ = model.predict(observations, deterministic=True)
        observations, rewards, dones, _ = env.step(actions)
        returns += rewards
        for index in np.flatnonzero(dones).tolist():
            if len(finished[index]) < episodes_per_slot:
                finished[index].append(float(returns[index]))
            returns[index] = 0.0
        if all(len(done) >= episodes_per_slot for done in finished):
            break
    # Episodes still running at the step cap count with what they earned so far.
    scores = [done[0] if done else float(returns[i]) for i, done in enumerate(finished)]
    return float(np.mean(scores))


def train(
    *,
    num_processes: int = 4,
    target: float = 90.0,
    time_limit: float = 1800.0,
    seed: int = 0,
    backend: str = "subprocess",
) -> dict[str, float]:
    """Train PPO until the rolling mean reward reaches ``target`` or ``time_limit`` passes.

    Returns:
        ``steps``, ``seconds``, ``rolling_mean`` (last 100 episodes) and ``eval_mean``.
    """
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from unity_gym.sb3 import UnityVecEnv

    torch.set_num_threads(1)
    venv = UnityVecEnv(
        num_envs=12 * num_processes, scene="3DBall", seed=seed, backend=backend, timeout_wait=60
    )
    env = VecNormalize(VecMonitor(venv), norm_obs=True, norm_reward=False)
    start = time.monotonic()

    class Progress(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rolling = float("nan")
            self.last_print = 0.0

        def _on_step(self) -> bool:
            buffer: Any = self.model.ep_info_buffer or []
            if buffer:
                self.rolling = float(np.mean([info["r"] for info in buffer]))
            now = time.monotonic() - start
            if now - self.last_print > 30:
                self.last_print = now
                print(
                    f"[{now:7.1f} s] steps={self.num_timesteps:>9} rolling mean reward "
                    f"(100 episodes)={self.rolling:7.2f}",
                    flush=True,
                )
            enough = len(buffer) >= 100 and self.rolling >= target
            return not enough and now < time_limit

    progress = Progress()
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=256,
        batch_size=1024,
        n_epochs=3,
        gamma=0.99,
        gae_lambda=0.99,
        ent_coef=1e-3,
        learning_rate=lambda remaining: 3e-4 * remaining,
        policy_kwargs={"net_arch": [128, 128]},
        seed=seed,
        verbose=0,
        device="cpu",
    )
    try:
        model.learn(total_timesteps=3_000_000, callback=progress)
        seconds = time.monotonic() - start
        env.training = False
        eval_mean = _evaluate(model, env)
    finally:
        env.close()
    return {
        "steps": float(model.num_timesteps),
        "seconds": seconds,
        "rolling_mean": progress.rolling,
        "eval_mean": eval_mean,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=4, help="game processes (12 agents each)")
    parser.add_argument("--target", type=float, default=90.0, help="mean reward to reach")
    parser.add_argument("--time-limit", type=float, default=1800.0, help="seconds of training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="subprocess", choices=("subprocess", "inprocess"))
    args = parser.parse_args(argv)
    result = train(
        num_processes=args.processes,
        target=args.target,
        time_limit=args.time_limit,
        seed=args.seed,
        backend=args.backend,
    )
    reached = result["rolling_mean"] >= args.target
    print(
        f"RESULT steps={result['steps']:.0f} seconds={result['seconds']:.0f} "
        f"rolling_mean_reward={result['rolling_mean']:.2f} "
        f"deterministic_eval_mean_reward={result['eval_mean']:.2f} "
        f"target={args.target} reached={reached}",
        flush=True,
    )
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
