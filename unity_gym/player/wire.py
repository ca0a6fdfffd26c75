"""Conversion between the Academy's per-agent arrays and the RL messages (spec §2.3, §3.3, §4.6).

Agents report in batches (:class:`AgentReports`); :class:`OutputBuilder` turns the batches queued
since the last exchange into one serialized ``UnityOutputProto`` (written by hand, see
:mod:`~unity_gym.player.encoding`), adding each behavior's ``BrainParametersProto`` with its first
agent data. :func:`read_actions` turns the trainer's
``AgentActionProto`` list into arrays.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from unity_gym.protocol.communicator_objects.agent_action_pb2 import AgentActionProto
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import (
    ActionSpecProto,
    BrainParametersProto,
)
from unity_gym.protocol.communicator_objects.unity_rl_initialization_output_pb2 import (
    UnityRLInitializationOutputProto,
)

from .capabilities import Capabilities
from .encoding import fixed32_tag, key, length_delimited, varint, varint_tag
from .errors import PlayerError
from .observations import ObservationEncoder
from .specs import ActionSpec, BehaviorSpec

__all__ = ["AgentReports", "OutputBuilder", "read_actions"]

logger = logging.getLogger("unity_gym.player")

# AgentInfoProto field tags (spec §2.3).
_REWARD_TAG = fixed32_tag(7)
_DONE = varint_tag(8) + varint(1)
_INTERRUPTED = varint_tag(9) + varint(1)
_ID_TAG = varint_tag(10)
_MASK_TAG = key(11, 2)
_GROUP_ID_TAG = varint_tag(14)
_GROUP_REWARD_TAG = fixed32_tag(15)
_INFO_TAG = key(1, 2)  # ListAgentInfoProto.value


@dataclass
class AgentReports:
    """Reports (``AgentInfoProto``) of several agents of one behavior, queued together.

    All arrays have one row per agent; ``slots`` are the agents' indices in their batch (not sent);
    ``observations`` holds one array per sensor in wire order, shaped ``(k, *wire_shape)``.
    """

    slots: np.ndarray
    ids: np.ndarray
    rewards: np.ndarray
    group_ids: np.ndarray
    group_rewards: np.ndarray
    observations: list[np.ndarray]
    done: bool = False
    interrupted: np.ndarray | None = None
    action_masks: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def brain_parameters(spec: BehaviorSpec, trainer: Capabilities | None) -> BrainParametersProto:
    """The ``BrainParametersProto`` of ``spec``; adds the deprecated action fields when the
    trainer lacks ``hybridActions``.

    Raises:
        PlayerError: if the trainer lacks ``hybridActions`` and the spec mixes action types.
    """
    actions = spec.action_spec
    proto = BrainParametersProto(
        brain_name=spec.full_name,
        is_training=True,
        action_spec=ActionSpecProto(
            num_continuous_actions=actions.continuous_size,
            num_discrete_actions=actions.discrete_size,
            discrete_branch_sizes=actions.discrete_branches,
        ),
    )
    if trainer is not None and not trainer.hybrid_actions:
        if actions.is_hybrid:
            raise PlayerError(
                f"behavior {spec.full_name} mixes continuous and discrete actions, which the "
                "trainer does not support (no hybridActions capability): upgrade the trainer"
            )
        if actions.continuous_size > 0:
            proto.vector_action_size_deprecated.append(actions.continuous_size)
            proto.vector_action_space_type_deprecated = 1  # type: ignore[assignment]
        else:
            proto.vector_action_size_deprecated.extend(actions.discrete_branches)
            proto.vector_action_space_type_deprecated = 0  # type: ignore[assignment]
    return proto


class OutputBuilder:
    """Assembles serialized ``UnityOutputProto`` messages for the behaviors of a scene.

    Args:
        behaviors: every behavior with agents on the remote policy (all keys appear in every
            output, possibly with empty lists, as in Unity).
        trainer: the trainer's capabilities.

    Raises:
        PlayerError: if a behavior needs a capability the trainer lacks (variable-length
            observations, or hybrid actions).
    """

    def __init__(self, behaviors: Sequence[BehaviorSpec], trainer: Capabilities | None) -> None:
        self._behaviors = list(behaviors)
        self._trainer = trainer
        self._encoders: dict[str, list[ObservationEncoder]] = {}
        self._keys: dict[str, bytes] = {}
        for spec in self._behaviors:
            sensors = [spec.sensors[i] for i in spec.wire_sensor_order()]
            for sensor in sensors:
                if (
                    sensor.is_variable_length
                    and trainer is not None
                    and not trainer.variable_length_observation
                ):
                    raise PlayerError(
                        f"sensor {sensor.wire_name} of {spec.full_name} is variable-length, "
                        "which the trainer does not support: upgrade the trainer"
                    )
            brain_parameters(spec, trainer)  # fail now, not at the first report
            self._encoders[spec.full_name] = [ObservationEncoder(s, trainer) for s in sensors]
            self._keys[spec.full_name] = length_delimited(1, spec.full_name.encode("utf-8"))
        self._unsent_brains = {spec.full_name for spec in self._behaviors}
        self._warned_groups = False

    def build(self, queued: Mapping[str, Sequence[AgentReports]], side_channel: bytes) -> bytes:
        """One serialized ``UnityOutputProto`` holding every queued report, in order."""
        entries: list[bytes] = []
        new_brains: list[BrainParametersProto] = []
        for spec in self._behaviors:
            name = spec.full_name
            infos: list[bytes] = []
            for reports in queued.get(name, ()):
                infos.extend(self._encode_reports(reports, self._encoders[name]))
            entry = self._keys[name] + length_delimited(2, b"".join(infos))
            entries.append(length_delimited(2, entry))
            if infos and name in self._unsent_brains:
                new_brains.append(brain_parameters(spec, self._trainer))
                self._unsent_brains.discard(name)
        if side_channel:
            entries.append(length_delimited(3, side_channel))
        output = length_delimited(1, b"".join(entries))
        if new_brains:
            init = UnityRLInitializationOutputProto(brain_parameters=new_brains)
            output += length_delimited(2, init.SerializeToString())
        return output

    def encode_agent_infos(self, behavior: str, reports: AgentReports) -> list[bytes]:
        """Each report as a serialized field 1 holding an ``AgentInfoProto`` (tag and length
        included), one per agent: the ``agent_info`` of an ``AgentInfoActionPairProto`` as well.

        Raises:
            KeyError: if ``behavior`` (full name) is not one of this builder's behaviors.
        """
        return self._encode_reports(reports, self._encoders[behavior])

    def _encode_reports(
        self, reports: AgentReports, encoders: list[ObservationEncoder]
    ) -> list[bytes]:
        """Serialized ``ListAgentInfoProto.value`` entries (tag included), one per agent."""
        observations = [
            enc.encode(obs) for enc, obs in zip(encoders, reports.observations, strict=True)
        ]
        k = len(reports)
        rewards = np.ascontiguousarray(reports.rewards, dtype="<f4")
        reward_bytes = rewards.tobytes()
        has_reward = rewards.view(np.uint32) != 0
        group_rewards = np.ascontiguousarray(reports.group_rewards, dtype="<f4")
        group_reward_bytes = group_rewards.tobytes()
        has_group_reward = group_rewards.view(np.uint32) != 0
        ids = reports.ids.tolist()
        group_ids = reports.group_ids.tolist()
        if (
            not self._warned_groups
            and any(group_ids)
            and self._trainer is not None
            and not self._trainer.multi_agent_groups
        ):
            logger.warning("the trainer does not support multi-agent groups: group rewards ignored")
            self._warned_groups = True
        done = _DONE if reports.done else b""
        interrupted = (
            reports.interrupted.tolist() if reports.interrupted is not None else [False] * k
        )
        masks: list[bytes] | None = None
        if reports.action_masks is not None:
            mask_rows = np.ascontiguousarray(reports.action_masks, dtype=np.uint8)
            width = mask_rows.shape[1]
            blob = mask_rows.tobytes()
            head = _MASK_TAG + varint(width)
            masks = [head + blob[i * width : (i + 1) * width] for i in range(k)]
        has_reward_list = has_reward.tolist()
        has_group_reward_list = has_group_reward.tolist()
        result = []
        for i in range(k):
            parts = []
            if has_reward_list[i]:
                parts.append(_REWARD_TAG + reward_bytes[4 * i : 4 * i + 4])
            if done:
                parts.append(done)
                if interrupted[i]:
                    parts.append(_INTERRUPTED)
            if ids[i]:
                parts.append(_ID_TAG + varint(ids[i]))
            if masks is not None:
                parts.append(masks[i])
            for entries in observations:
                parts.append(entries[i])
            if group_ids[i]:
                parts.append(_GROUP_ID_TAG + varint(group_ids[i]))
            if has_group_reward_list[i]:
                parts.append(_GROUP_REWARD_TAG + group_reward_bytes[4 * i : 4 * i + 4])
            info = b"".join(parts)
            result.append(_INFO_TAG + varint(len(info)) + info)
        return result


def read_actions(
    actions: Sequence[AgentActionProto], count: int, spec: ActionSpec
) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Arrays of the first ``count`` actions: continuous ``(count, c)``, discrete ``(count, b)``.

    Entries that are missing or of the wrong length become zeros (padded or cut).

    Returns:
        ``(continuous, discrete, problem)`` where ``problem`` describes a mismatch, or ``None``.
    """
    c, b = spec.continuous_size, spec.discrete_size
    entries = list(actions[:count])
    problem = None
    if len(entries) < count:
        problem = f"{len(entries)} actions for {count} agents that requested a decision"
    continuous, bad = _stack_values([e.continuous_actions for e in entries], count, c, np.float32)
    if bad:
        problem = problem or f"continuous actions of length {bad} instead of {c}"
    discrete, bad = _stack_values([e.discrete_actions for e in entries], count, b, np.int32)
    if bad:
        problem = problem or f"discrete actions of length {bad} instead of {b}"
    return continuous, discrete, problem


def _stack_values(
    rows: Sequence[Sequence[float]], count: int, width: int, dtype: type
) -> tuple[np.ndarray, int | None]:
    """``rows`` as a ``(count, width)`` array, zero-padded; also the first wrong row length."""
    if len(rows) == count and all(len(row) == width for row in rows):
        flat: np.ndarray = np.fromiter(
            itertools.chain.from_iterable(rows), dtype=dtype, count=count * width
        )
        return flat.reshape(count, width), None
    result: np.ndarray = np.zeros((count, width), dtype=dtype)
    bad = None
    for i, row in enumerate(rows):
        n = min(width, len(row))
        result[i, :n] = list(row)[:n]
        if len(row) != width and bad is None:
            bad = len(row)
    return result, bad
