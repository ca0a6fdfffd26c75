"""Train Stable-Baselines3 PPO on ``gymnasium.make("Unity-v0")``: the built-in 3DBall, one agent.

Run from the repository root::

    .venv/bin/python examples/sb3_ppo_3dball.py                 # until mean reward >= 50
    .venv/bin/python examples/sb3_ppo_3dball.py --target 90 --max-minutes 40

Training stops when the mean reward of the last ``--window`` finished episodes reaches
``--target``, after ``--timesteps`` steps or after ``--max-minutes``; the policy is then evaluated
deterministically on fresh episodes. A 3DBall episode earns 0.1 per decision while the ball stays
on the platform and ends after 1000 decisions (5000 game steps), so 100 is the maximum.
The exit status is 0 when the evaluation reaches the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
import unity_gym

__all__ = ["main"]


class StopAtTarget(BaseCallback):
    """Stop training when recent episodes reach the target, or when the time is up."""

    def __init__(self, target: float, window: int, deadline: float, report_every: float) -> None:
        super().__init__()
        self.target = target
        self.returns: deque[float] = deque(maxlen=window)
        self.deadline = deadline
        self.report_every = report_every
        self.started = time.monotonic()
        self.next_report = self.started + report_every
        self.reached = False

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            episode = info.get("episode")
            if episode is not None:
                self.returns.append(float(episode["r"]))
        now = time.monotonic()
        mean = float(np.mean(self.returns)) if self.returns else float("nan")
        if now >= self.next_report:
            self.next_report = now + self.report_every
            print(
                f"[{now - self.started:7.1f} s] steps {self.num_timesteps:>8d}  "
                f"episodes {len(self.returns):>3d} (window)  mean reward {mean:7.2f}",
                flush=True,
            )
        if len(self.returns) == self.returns.maxlen and mean >= self.target:
            self.reached = True
            print(f"target reached at step {self.num_timesteps}: mean reward {mean:.2f}")
            return False
        if now >= self.deadline:
            print(f"time limit reached at step {self.num_timesteps}: mean reward {mean:.2f}")
            return False
        return True


def evaluate(model: PPO, vec_env: VecNormalize, episodes: int) -> list[float]:
    """Deterministic returns of ``episodes`` fresh episodes (observations normalised as trained)."""
    vec_env.training = False
    returns: list[float] = []
    obs: Any = vec_env.reset()
    total = 0.0
    while len(returns) < episodes:
        action, _ = model.predict(obs, deterministic=True)
        obs, _, dones, _ = vec_env.step(action)
        total += float(vec_env.get_original_reward()[0])
        if dones[0]:
            returns.append(total)
            print(f"evaluation episode {len(returns)}: reward {total:.2f}", flush=True)
            total = 0.0
    return returns


def main(argv: list[str] | None = None) -> int:
    """Train, evaluate, print the result; return 0 when the target is met."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=50.0, help="mean episode reward goal")
    parser.add_argument("--window", type=int, default=20, help="episodes in the training mean")
    parser.add_argument("--timesteps", type=int, default=1_000_000, help="training step cap")
    parser.add_argument("--max-minutes", type=float, default=25.0, help="training time cap")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    def make_env() -> gymnasium.Env[Any, Any]:
        return Monitor(gymnasium.make("Unity-v0", seed=args.seed, no_graphics=True))

    vec_env = VecNormalize(DummyVecEnv([make_env]), norm_obs=True, norm_reward=True, gamma=0.99)
    model = PPO(
        "MlpPolicy",
        vec_env,
        n_steps=2048,
        batch_size=64,
        n_epochs=10,
        learning_rate=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        policy_kwargs={"net_arch": [64, 64]},
        seed=args.seed,
        verbose=0,
        device="cpu",
    )
    started = time.monotonic()
    callback = StopAtTarget(
        args.target, args.window, started + args.max_minutes * 60.0, report_every=30.0
    )
    try:
        model.learn(total_timesteps=args.timesteps, callback=callback)
        trained = time.monotonic() - started
        print(f"training: {model.num_timesteps} steps in {trained:.0f} s")
        returns = evaluate(model, vec_env, args.eval_episodes)
    finally:
        vec_env.close()
    mean = float(np.mean(returns))
    print(
        f"result: evaluation mean reward {mean:.2f} over {len(returns)} episodes "
        f"(target {args.target}); wall time {time.monotonic() - started:.0f} s; "
        f"unity_gym {unity_gym.__version__}"
    )
    return 0 if mean >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
