"""Play an exported policy's team against a uniformly random team in a built-in two-team scene
and count the games won, lost and drawn.

The game is ``unity_gym.pettingzoo.parallel_env(scene=...)`` with one area (Tennis: one agent
per team; SoccerTwos: two). The team is the ``?team=<t>`` suffix of an agent's behavior. The
trained team's agents act with the ONNX model ``unity-train`` exported (``<run>/<Behavior>.onnx``,
loaded and run by :class:`unity_gym.player.onnx_policy.OnnxPolicy`, as the player's ``--model``;
the names of :mod:`trainers.common.checkpoints.onnx_export`: inputs ``obs_0``... and
``action_masks`` for discrete actions, outputs ``deterministic_continuous_actions`` /
``deterministic_discrete_actions``, or with ``sampled`` the sampled ``continuous_actions`` /
``discrete_actions``, which is what Unity's inference plays by default: ``BehaviorParameters``'
``DeterministicInference`` is off unless set); each agent's observation goes through the
:class:`~trainers.common.spaces.ObservationLayout` of its own observation space, as in training
(SoccerTwos' sensors are named after the team). The other team samples its action space
uniformly (respecting action masks). The trained team alternates between the two teams from one
game to the next, so that neither side of the court or field favours it.

A game is one PettingZoo episode: it ends when every agent has ended its episode (a Tennis point,
a SoccerTwos goal or time-out). Its result is the sign of the trained team's final reward minus
the other team's (each agent's reward plus its group reward in the step its episode ended): a
win, a loss or a draw (0: a SoccerTwos time-out). With no model, both teams play randomly
(a baseline: about as many wins as losses).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from trainers.behavior_ids import team_of
from trainers.common.spaces import ActionLayout, ObservationLayout
from unity_gym.player.academy import Academy
from unity_gym.player.onnx_policy import OnnxPolicy as ModelPolicy
from unity_gym.player.scenes import Scene
from unity_gym.player.side_channels import SideChannelHub, StandardChannels

__all__ = [
    "MatchRecord",
    "OnnxPolicy",
    "Reported",
    "outcomes_main",
    "play_against_random",
    "step_in_process",
]

_CPU = torch.device("cpu")


@dataclass
class MatchRecord:
    """Games won, lost and drawn by the trained team."""

    wins: int = 0
    losses: int = 0
    draws: int = 0

    @property
    def games(self) -> int:
        """Games played."""
        return self.wins + self.losses + self.draws

    @property
    def win_rate(self) -> float:
        """Wins over all games (a draw is not a win); nan without games."""
        return self.wins / self.games if self.games else float("nan")

    def add(self, margin: float) -> None:
        """Count one game whose final reward margin (trained minus other team) is ``margin``."""
        if margin > 0:
            self.wins += 1
        elif margin < 0:
            self.losses += 1
        else:
            self.draws += 1

    def __str__(self) -> str:
        return (
            f"win rate {100 * self.win_rate:5.1f}% ({self.wins} won, {self.losses} lost, "
            f"{self.draws} drawn of {self.games})"
        )


class OnnxPolicy(ModelPolicy):
    """An exported ``unity-train`` policy acting for one agent at a time: the player's
    :class:`unity_gym.player.onnx_policy.OnnxPolicy` (which loads and runs the file) plus
    :meth:`act`, which takes a PettingZoo observation.

    Args:
        path: the ``.onnx`` file.
        sampled: act on the model's sampled actions (``continuous_actions`` /
            ``discrete_actions``, Unity's default inference) instead of its deterministic ones
            (``deterministic_*``: the mean, the most likely branch value).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the model is recurrent (``recurrent_in``; not supported here), or cannot be
            loaded (:class:`~unity_gym.player.onnx_policy.ModelError`).
    """

    def __init__(self, path: Path, sampled: bool = False) -> None:
        super().__init__(path, sampled)
        if self.memory_size:
            raise ValueError(f"{path} is a recurrent policy; only feed-forward ones are played.")

    def act(
        self,
        observation: Any,
        layout: ObservationLayout,
        actions: ActionLayout,
        action_mask: Any = None,
    ) -> Any:
        """The action for one agent's ``observation`` in its action space.

        Args:
            observation: the agent's PettingZoo observation.
            layout: the layout of the agent's observation space.
            actions: the layout of the agent's action space.
            action_mask: ``info["action_mask"]`` (the ``space.sample(mask=...)`` format), if any.

        Raises:
            ValueError: the observation has another number of entries than the model's inputs.
        """
        if len(layout.entries) != self.observation_count:
            raise ValueError(
                f"the model takes {self.observation_count} observation inputs but the agent's "
                f"space has {len(layout.entries)} entries ({layout.names}); evaluate the model on "
                "the scene it was trained on."
            )
        tensors = layout.to_tensors(layout.stack_single([observation]), _CPU)
        mask = _flat_mask(action_mask, actions.discrete_size) if self.mask_size else None
        found = self.run([tensor.numpy() for tensor in tensors], mask)
        action = actions.to_env(found.get("continuous_actions"), found.get("discrete_actions"))
        if isinstance(action, Mapping):
            return {key: value[0] for key, value in action.items()}
        return action[0]


def _flat_mask(mask: Any, size: int) -> np.ndarray:
    """A ``space.sample(mask=...)`` mask as the model's ``(1, size)`` float mask (1 = allowed)."""
    if mask is None:
        return np.ones((1, size), dtype=np.float32)
    if isinstance(mask, Mapping):
        mask = mask["discrete"]
    parts = mask if isinstance(mask, tuple) else (mask,)
    return np.concatenate([np.asarray(part, np.float32).reshape(-1) for part in parts])[None]


def play_against_random(
    scene: str,
    model: Path | None,
    games: int,
    seed: int,
    max_cycles: int | None = None,
    sampled: bool = False,
) -> MatchRecord:
    """Play ``games`` games of built-in ``scene``: ``model``'s team against a random team.

    Args:
        scene: a built-in scene with exactly two teams (Tennis, SoccerTwos).
        model: the exported policy; None: both teams play randomly.
        games: the number of games.
        seed: the game's seed and the random team's.
        max_cycles: end a game as a draw after this many steps (None: the scene's own end).
        sampled: the model plays its sampled actions (Unity's default inference), not its
            deterministic ones (see :class:`OnnxPolicy`).

    Raises:
        ValueError: the scene does not have exactly two teams.
    """
    from unity_gym.pettingzoo import parallel_env

    policy = None if model is None else OnnxPolicy(model, sampled)
    env = parallel_env(scene=scene, seed=seed, max_cycles=max_cycles)
    try:
        behaviors: dict[str, str] = env.metadata["agent_behaviors"]
        teams = {agent: team_of(behavior) for agent, behavior in behaviors.items()}
        team_ids = sorted(set(teams.values()))
        if len(team_ids) != 2:
            raise ValueError(
                f"scene {scene!r} has teams {team_ids}; play_against_random needs exactly two."
            )
        layouts = {
            agent: (
                ObservationLayout.from_space(env.observation_space(agent)),
                ActionLayout.from_space(env.action_space(agent)),
            )
            for agent in env.possible_agents
        }
        for offset, agent in enumerate(env.possible_agents):
            env.action_space(agent).seed(seed + offset)
        record = MatchRecord()
        for game in range(games):
            trained = team_ids[game % 2]
            observations, infos = env.reset()
            final: dict[str, float] = {}
            while env.agents:
                actions = {}
                for agent in env.agents:
                    mask = infos[agent].get("action_mask")
                    if policy is not None and teams[agent] == trained:
                        actions[agent] = policy.act(observations[agent], *layouts[agent], mask)
                    else:
                        actions[agent] = env.action_space(agent).sample(mask=mask)
                observations, rewards, terminations, truncations, infos = env.step(actions)
                for agent, reward in rewards.items():
                    if terminations[agent] or truncations[agent]:
                        final[agent] = reward + float(infos[agent].get("group_reward", 0.0))
            record.add(
                sum(value if teams[agent] == trained else -value for agent, value in final.items())
            )
        return record
    finally:
        env.close()


def step_in_process(scene: Scene, seed: int, done: Callable[[], bool]) -> None:
    """Step a fresh ``scene`` in an Academy of this process, seeded with ``seed``, until
    ``done()`` is true (checked before each step).

    This is the player's loop without a trainer, so the scene's ``heuristic`` chooses every
    action; the outcome diagnostics (:mod:`benchmarks.soccer_outcomes`,
    :mod:`benchmarks.tennis_outcomes`) override it to play a model against random actions. It is
    several times faster than a match through the PettingZoo front, and the scene's own state
    can be read between steps.
    """
    channels = StandardChannels.create()
    academy = Academy(
        scene, channels=channels, hub=SideChannelHub(channels.in_registration_order()), seed=seed
    )
    while not done():
        academy.environment_step()


class Reported(Protocol):
    """What an outcome diagnostic's ``play`` returns: something that prints as a table."""

    def report(self) -> str:
        """The outcomes as printable lines."""
        ...


def outcomes_main(
    argv: Sequence[str] | None,
    description: str,
    play: Callable[[Path | None, int, int, bool], Reported],
    count: str,
    default_count: int,
    opponent: str,
) -> int:
    """The command line of an outcome diagnostic: ``[MODEL.onnx] [--<count> N] [--seed S]
    [--sampled]``; plays ``play(model, N, seed, sampled)`` and prints its report under a line
    naming the model (or the heuristic) and ``opponent``.

    Returns:
        0, or 2 after printing the error when ``play`` refuses the input (a missing model, a
        count that is not positive, a model for another scene).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model", nargs="?", type=Path, help="ONNX policy (default: heuristic)")
    parser.add_argument(f"--{count}", type=int, default=default_count)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sampled", action="store_true", help="sampled, not deterministic")
    args = parser.parse_args(argv)
    try:
        outcomes = play(args.model, getattr(args, count), args.seed, args.sampled)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{args.model or 'the heuristic'} against {opponent}, seed {args.seed}")
    print(outcomes.report())
    return 0
