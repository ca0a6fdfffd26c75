"""In-process harness for the scene tests: run a real :class:`Academy` without a trainer, with the
scene's own heuristic or another policy, and read what it queued for the trainer.

Without a trainer the Academy asks ``Scene.heuristic`` for actions; :func:`play` swaps in a
policy by subclassing the scene (the policy is the only thing replaced). Terminal reports queued
during a step (episode ends in ``on_action_received`` or the physics) are still in the batches'
queues when ``environment_step`` returns; :func:`terminal_reports` reads them.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from unity_gym.player.academy import Academy, AgentBatch
from unity_gym.player.scenes import Scene
from unity_gym.player.side_channels import SideChannelHub, StandardChannels
from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage

#: ``policy(scene, batch, slots, observations) -> (continuous, discrete)``, or ``None`` to use
#: the scene's heuristic for that batch.
Policy = Callable[
    [Scene, AgentBatch, np.ndarray, Sequence[np.ndarray]], "tuple[np.ndarray, np.ndarray] | None"
]


@dataclass
class Played:
    """A scene, its Academy and a digest of every decision's observations (in order)."""

    scene: Any
    academy: Academy
    digests: list[int] = field(default_factory=list)

    def step(self, count: int = 1) -> None:
        """Run ``count`` Academy steps."""
        for _ in range(count):
            self.academy.environment_step()


def random_policy(seed: int) -> Policy:
    """Uniform random actions (continuous in [-1, 1], every discrete value)."""
    rng = np.random.default_rng(seed)

    def act(
        scene: Scene, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        spec = batch.spec.action_spec
        continuous = rng.uniform(-1, 1, (slots.size, spec.continuous_size)).astype(np.float32)
        discrete = np.zeros((slots.size, spec.discrete_size), dtype=np.int32)
        for branch, size in enumerate(spec.discrete_branches):
            discrete[:, branch] = rng.integers(0, size, slots.size)
        return continuous, discrete

    return act


def idle_policy(
    scene: Scene, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """All-zero actions."""
    spec = batch.spec.action_spec
    return (
        np.zeros((slots.size, spec.continuous_size), np.float32),
        np.zeros((slots.size, spec.discrete_size), np.int32),
    )


def play(
    scene_class: type[Scene],
    *,
    seed: int = 0,
    options: Mapping[str, object] | None = None,
    policy: Policy | None = None,
    parameters: Mapping[str, float] | None = None,
    num_agents: int | None = None,
) -> Played:
    """Set up ``scene_class`` in an Academy without a trainer (nothing is stepped yet).

    Args:
        scene_class: the scene.
        seed: the Academy's seed.
        options: scene options.
        policy: replaces the heuristic when it returns actions.
        parameters: environment parameters, delivered through the parameters channel.
        num_agents: agents of the stock scene (``None``: the scene's default).
    """
    played: Played

    def heuristic(
        self: Scene, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        for obs in observations:
            played.digests.append(zlib.crc32(np.ascontiguousarray(obs).tobytes()))
        chosen = policy(self, batch, slots, observations) if policy is not None else None
        if chosen is None:
            return scene_class.heuristic(self, batch, slots, observations)
        return chosen

    driven = type(scene_class.__name__, (scene_class,), {"heuristic": heuristic})
    scene = driven(options or {}, num_agents=num_agents)
    channels = StandardChannels.create()
    for key, value in (parameters or {}).items():
        message = OutgoingMessage()
        message.write_string(key)
        message.write_int32(0)  # a constant (FLOAT) parameter
        message.write_float32(value)
        channels.parameters.on_message_received(IncomingMessage(message.buffer))
    hub = SideChannelHub(channels.in_registration_order())
    academy = Academy(scene, channels=channels, hub=hub, seed=seed)
    played = Played(scene=scene, academy=academy)
    return played


def seeded_digests(
    scene_class: type[Scene], seed: int, *, steps: int = 200, num_agents: int = 2
) -> list[int]:
    """The observation digests of ``steps`` Academy steps of ``scene_class`` (Academy seed
    ``seed``, :func:`random_policy` seed 1), for determinism checks."""
    played = play(scene_class, seed=seed, policy=random_policy(1), num_agents=num_agents)
    played.step(steps)
    return played.digests


@dataclass(frozen=True)
class Terminal:
    """One agent's terminal report."""

    behavior: str
    agent_id: int
    reward: float
    group_id: int
    group_reward: float
    interrupted: bool


def terminal_reports(academy: Academy) -> list[Terminal]:
    """Terminal reports queued during the last step, in queue order."""
    found = []
    for batch in academy.batches:
        for reports in batch.queued:
            if not reports.done:
                continue
            interrupted = reports.interrupted
            for i in range(reports.ids.size):
                found.append(
                    Terminal(
                        behavior=batch.name,
                        agent_id=int(reports.ids[i]),
                        reward=float(reports.rewards[i]),
                        group_id=int(reports.group_ids[i]),
                        group_reward=float(reports.group_rewards[i]),
                        interrupted=bool(interrupted[i]) if interrupted is not None else False,
                    )
                )
    return found


def player_alive(pid: int) -> bool:
    """True if process ``pid`` exists and is a headless player (not a zombie)."""
    proc = Path(f"/proc/{pid}")
    try:
        cmdline = (proc / "cmdline").read_bytes()
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return b"unity_gym.player" in cmdline and state not in ("Z", "X")
