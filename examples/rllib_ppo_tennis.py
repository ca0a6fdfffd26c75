"""Train RLlib PPO on the built-in Tennis through PettingZoo: two rackets, one shared policy.

Needs RLlib (``pip install "ray[rllib]" "torch==2.13.0"``). Run from the repository root::

    .venv/bin/python examples/rllib_ppo_tennis.py                      # 20 iterations
    .venv/bin/python examples/rllib_ppo_tennis.py --num-env-runners 2 --iterations 50
    .venv/bin/python examples/rllib_ppo_tennis.py --policies per-team

Each env runner (a Ray actor; ``--num-env-runners 0`` keeps the env in this process) plays one
game of ``unity_gym.pettingzoo.parallel_env(scene="Tennis")``, wrapped by RLlib's
``ParallelPettingZooEnv``. Its two agents are ``Tennis_team0_0`` (behavior ``Tennis?team=0``) and
``Tennis_team1_0`` (``Tennis?team=1``); each observes 27 floats and takes 3 continuous actions in
[-1, 1].

Policies. By default both teams share one policy, ``tennis`` (as ``unity-train``'s Tennis config
does): each agent sees the court in its own mirrored frame, so the two sides face the same task
and every rally trains the policy twice; it plays against itself. ``--policies per-team`` trains
one policy per team behavior instead (``Tennis_team0`` and ``Tennis_team1``), two independent
learners that each adapt to the other.

What to watch. A point ends the episode of both agents: the winner gets +1, the loser -1, so the
sum over the agents is always 0 and the per-team means only say which side wins more often. The
learning signal is the rally length (``episode_len_mean``, game decisions per point), which grows
as the rackets learn to return the ball. Every iteration prints it with the steps sampled so far;
the last line sums up the run.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.env_to_module import MeanStdFilter
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
import unity_gym
from unity_gym.pettingzoo import parallel_env

__all__ = ["main"]

ENV_NAME = "unity-tennis"
AGENTS = ("Tennis_team0_0", "Tennis_team1_0")
SHARED_POLICY = "tennis"
TEAM_POLICIES = ("Tennis_team0", "Tennis_team1")  # the agent names without their index


def make_tennis(config: EnvContext) -> ParallelPettingZooEnv:
    """One Tennis game per env copy, seeded by the env runner's index."""
    game = parallel_env(
        scene="Tennis",
        seed=config["seed"] + 1000 * config.worker_index + config.vector_index,
        no_graphics=True,
    )
    return ParallelPettingZooEnv(game)


def normalize_observations(env: Any, spaces: Any = None, device: Any = None) -> MeanStdFilter:
    """Observations scaled by running mean and std, per agent (ML-Agents' ``normalize: true``)."""
    return MeanStdFilter(multi_agent=True)


def shared_policy(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """Every agent plays with the one shared policy."""
    return SHARED_POLICY


def team_policy(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """``Tennis_team1_0`` plays with ``Tennis_team1``: the agent name without its index."""
    return str(agent_id).rsplit("_", 1)[0]


def main(argv: list[str] | None = None) -> int:
    """Train for ``--iterations`` and print one line per iteration; return 0 (1 when an
    iteration sampled nothing)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="training iterations")
    parser.add_argument(
        "--num-env-runners", type=int, default=1, help="sampling actors (0: in this process)"
    )
    parser.add_argument("--policies", choices=["shared", "per-team"], default="shared")
    parser.add_argument("--batch-size", type=int, default=4096, help="env steps per iteration")
    parser.add_argument("--minibatch-size", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=3, help="passes over each batch")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--hidden", type=int, default=256, help="units of the 2 hidden layers")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ray-address", help="an existing Ray cluster (default: start one)")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")

    if args.ray_address:
        ray.init(address=args.ray_address)
    else:  # a Ray instance of our own (never a cluster that happens to run on this machine),
        # with enough logical CPUs to schedule the requested env runners on a small machine
        cpus = max(os.cpu_count() or 1, args.num_env_runners)
        ray.init(address="local", num_cpus=cpus, include_dashboard=False)
    register_env(ENV_NAME, make_tennis)

    if args.policies == "shared":
        policies, mapping = {SHARED_POLICY}, shared_policy
    else:
        policies, mapping = set(TEAM_POLICIES), team_policy
    model = DefaultModelConfig(fcnet_hiddens=[args.hidden, args.hidden], fcnet_activation="relu")

    config = (
        PPOConfig()
        .environment(ENV_NAME, env_config={"seed": args.seed})
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=1,
            env_to_module_connector=normalize_observations,
        )
        .multi_agent(policies=policies, policy_mapping_fn=mapping)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={name: RLModuleSpec(model_config=model) for name in policies}
            )
        )
        .training(
            train_batch_size_per_learner=args.batch_size,
            minibatch_size=args.minibatch_size,
            num_epochs=args.epochs,
            lr=args.lr,
            gamma=0.99,
            lambda_=0.95,
            clip_param=0.2,
            entropy_coeff=0.005,
        )
        .debugging(seed=args.seed)
    )
    algo = config.build_algo()

    started = time.monotonic()
    env_steps = 0
    try:
        for iteration in range(1, args.iterations + 1):
            sampled = algo.train()["env_runners"]
            if int(sampled.get("num_env_steps_sampled_lifetime", 0)) <= env_steps:
                print(
                    f"iteration {iteration} sampled nothing: the env runners failed (their "
                    "errors are above). Stopping.",
                    file=sys.stderr,
                )
                return 1
            env_steps = int(sampled["num_env_steps_sampled_lifetime"])
            agent_steps = int(sum(sampled["num_agent_steps_sampled_lifetime"].values()))
            points = int(sampled.get("num_episodes_lifetime", 0))
            rally = float(sampled.get("episode_len_mean", math.nan))
            per_agent = sampled.get("agent_episode_returns_mean", {})
            returns = [per_agent.get(agent, math.nan) for agent in AGENTS]
            print(
                f"iteration {iteration:3d}  env steps {env_steps:>8d}  "
                f"agent steps {agent_steps:>8d}  points {points:>6d}  rally length {rally:6.1f}  "
                f"mean return team0 {returns[0]:+.2f} team1 {returns[1]:+.2f}  "
                f"[{time.monotonic() - started:6.1f} s]",
                flush=True,
            )
    finally:
        algo.stop()  # closes the envs, and so the games
        ray.shutdown()

    print(
        f"result: {args.iterations} iterations, {env_steps} env steps, {agent_steps} agent steps, "
        f"{points} points played, mean rally length {rally:.1f} decisions, "
        f"{time.monotonic() - started:.0f} s; policies {sorted(policies)}; "
        f"unity_gym {unity_gym.__version__}, ray {ray.__version__}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
