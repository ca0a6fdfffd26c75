"""``mlagents_envs.rpc_utils``: protos to specs, steps and arrays, with the official signatures.

Built on :mod:`unity_gym.decoding` (the bridge's own decoder). Official facts followed
(ml-agents 1.1.0 ``rpc_utils``): :func:`behavior_spec_from_proto` (``brain_param_proto``,
``agent_info``); :func:`steps_from_proto` (``agent_info_list``, ``behavior_spec``) splits agents
by ``done`` into ``DecisionSteps`` and ``TerminalSteps``, raising
:class:`~unity_gym.exceptions.UnityObservationException` for an observation of the wrong shape
and :class:`RuntimeError` for NaN or infinite observations or rewards; :func:`process_pixels`
(``image_bytes``, ``expected_channels``, ``mappings=None``) decodes one or more concatenated
PNGs into float32 ``(channels, height, width)`` in ``[0, 1]``: with a channel mapping, each
output channel is the mean of the PNG channels mapped to it (-1 drops one); without, one
expected channel is the mean of the first image's colours, more are the first channels of the
images concatenated. The helpers that the official unit tests call directly
(``_observation_to_np_array``, ``_process_maybe_compressed_observation``,
``_process_rank_one_or_two_observation``) are served too, with their official arguments.
:class:`OffsetBytesIO` and :data:`PNG_HEADER` are the official names of the same things.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Iterable

import numpy as np

from unity_gym import decoding
from unity_gym.base_env import (
    ActionSpec,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)
from unity_gym.exceptions import UnityObservationException
from unity_gym.protocol.communicator_objects.agent_info_pb2 import AgentInfoProto
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.observation_pb2 import NONE, ObservationProto
from unity_gym.timers import hierarchical_timer, timed

__all__ = [
    "COMPRESSION_TYPE_NONE",
    "PNG_HEADER",
    "ActionSpec",
    "AgentInfoProto",
    "BehaviorSpec",
    "BrainParametersProto",
    "DecisionSteps",
    "DimensionProperty",
    "ObservationProto",
    "ObservationSpec",
    "ObservationType",
    "OffsetBytesIO",
    "TerminalSteps",
    "UnityObservationException",
    "_observation_to_np_array",
    "_process_maybe_compressed_observation",
    "_process_rank_one_or_two_observation",
    "behavior_spec_from_proto",
    "hierarchical_timer",
    "process_pixels",
    "steps_from_proto",
    "timed",
]

COMPRESSION_TYPE_NONE = NONE
"""``CompressionTypeProto.NONE``: an uncompressed (float) observation."""
PNG_HEADER = decoding.PNG_SIGNATURE
"""The eight bytes every PNG starts with."""


class OffsetBytesIO:
    """A read-only file over ``data`` whose position 0 can be moved to ``offset``.

    Reading concatenated PNGs with Pillow (which seeks to 0 first) is what it is for
    officially; :func:`process_pixels` does not need it here, it is kept for callers.
    """

    __slots__ = ("fp", "offset")

    def __init__(self, data: bytes) -> None:
        self.fp = io.BytesIO(data)
        self.offset = 0

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Seek relative to ``self.offset`` (``SEEK_SET`` only).

        Raises:
            NotImplementedError: for another ``whence``.
        """
        if whence != io.SEEK_SET:
            raise NotImplementedError("OffsetBytesIO.seek supports only io.SEEK_SET.")
        return self.fp.seek(offset + self.offset) - self.offset

    def tell(self) -> int:
        """Position relative to ``self.offset``."""
        return self.fp.tell() - self.offset

    def read(self, size: int = -1) -> bytes:
        """Read up to ``size`` bytes (all remaining when negative)."""
        return self.fp.read(size)

    def original_tell(self) -> int:
        """Position in the whole ``data``."""
        return self.fp.tell()


def behavior_spec_from_proto(
    brain_param_proto: BrainParametersProto, agent_info: AgentInfoProto
) -> BehaviorSpec:
    """The ``BehaviorSpec`` of a behavior from its parameters and one agent's info.

    Observation specs come from the agent's observations; the action spec from ``action_spec``
    or, when that declares no action, from the deprecated fields.
    """
    return decoding.behavior_spec_from_proto(brain_param_proto, agent_info)


@timed
def process_pixels(
    image_bytes: bytes, expected_channels: int, mappings: list[int] | None = None
) -> np.ndarray:
    """Decode concatenated PNGs into a float32 ``(channels, height, width)`` array in ``[0, 1]``.

    Args:
        image_bytes: one or more PNG images, back to back.
        expected_channels: channels wanted when there is no mapping.
        mappings: output channel of each PNG channel (-1 drops it), or ``None``/empty.

    Raises:
        UnityObservationException: for undecodable data or an invalid mapping.
    """
    with hierarchical_timer("image_decompress"):
        images = [decoding.decode_png(part) for part in decoding.split_png_stream(image_bytes)]
    if mappings:
        mapped = decoding._apply_channel_mapping(images, mappings)
        return np.asarray(mapped, dtype=np.float32)
    if expected_channels == 1:
        first = decoding._color_only(images[0])
        return first.mean(axis=0, keepdims=True).astype(np.float32)
    stacked = decoding._concatenate(images)
    return np.asarray(stacked[:expected_channels], dtype=np.float32)


@timed
def _observation_to_np_array(
    obs: ObservationProto, expected_shape: Iterable[int] | None = None
) -> np.ndarray:
    """One observation proto as an array of its shape (official private helper).

    Raises:
        UnityObservationException: if its shape is not ``expected_shape``, or the decoded image
            does not have the shape it declares.
    """
    if expected_shape is not None and list(obs.shape) != list(expected_shape):
        raise UnityObservationException(
            f"Observation did not have the expected shape - got {list(obs.shape)} but expected "
            f"{list(expected_shape)}"
        )
    if obs.compression_type == NONE:
        return np.reshape(np.array(obs.float_data.data, dtype=np.float32), tuple(obs.shape))
    return decoding.decode_png_observation(
        obs.compressed_data, tuple(obs.shape), tuple(obs.compressed_channel_mapping)
    )


@timed
def _process_maybe_compressed_observation(
    obs_index: int,
    observation_spec: ObservationSpec,
    agent_info_list: Collection[AgentInfoProto],
) -> np.ndarray:
    """Observation ``obs_index`` (rank 3) of every agent, ``(n, *shape)`` float32."""
    shape = tuple(observation_spec.shape)
    if not agent_info_list:
        return np.zeros((0, *shape), dtype=np.float32)
    return np.array(
        [_observation_to_np_array(a.observations[obs_index], shape) for a in agent_info_list],
        dtype=np.float32,
    )


@timed
def _process_rank_one_or_two_observation(
    obs_index: int,
    observation_spec: ObservationSpec,
    agent_info_list: Collection[AgentInfoProto],
) -> np.ndarray:
    """Uncompressed observation ``obs_index`` of every agent, ``(n, *shape)`` float32.

    Raises:
        UnityObservationException: for an observation of another shape.
        RuntimeError: for NaN or infinite values.
    """
    agents = list(agent_info_list)
    batch = decoding._stack_float_observations(agents, obs_index, observation_spec, "")
    ids = np.array([a.id for a in agents], dtype=np.int32)
    decoding._raise_if_not_finite(batch, "observations", "", ids)
    return batch


@timed
def steps_from_proto(
    agent_info_list: Collection[AgentInfoProto], behavior_spec: BehaviorSpec
) -> tuple[DecisionSteps, TerminalSteps]:
    """Split agents by ``done`` into decision and terminal steps (message order kept).

    Raises:
        UnityObservationException: for observations that do not match ``behavior_spec``.
        RuntimeError: for NaN or infinite observations or rewards.
    """
    return decoding.steps_from_proto(list(agent_info_list), behavior_spec)
