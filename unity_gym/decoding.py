"""Translation between wire messages and the data model (spec §4.2-§4.6).

Decoding turns ``BrainParametersProto`` + a first ``AgentInfoProto`` into a :class:`BehaviorSpec`
and a list of ``AgentInfoProto`` into :class:`DecisionSteps` / :class:`TerminalSteps`; encoding
turns :class:`ActionTuple` objects into the ``UnityRLInputProto`` of a STEP. Vector observations
are copied straight out of their serialized packed-float bytes, one NumPy operation per batch.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Mapping, Sequence

import numpy as np

from unity_gym.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)
from unity_gym.exceptions import UnityCommunicationException, UnityObservationException
from unity_gym.protocol.communicator_objects.agent_info_pb2 import AgentInfoProto
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.command_pb2 import RESET, STEP
from unity_gym.protocol.communicator_objects.observation_pb2 import NONE, ObservationProto
from unity_gym.protocol.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
from unity_gym.protocol.wire_format import encode_varint
from unity_gym.timers import hierarchical_timer, timed

__all__ = [
    "PNG_SIGNATURE",
    "NonFiniteValueError",
    "behavior_spec_from_proto",
    "decode_png",
    "decode_png_observation",
    "encode_reset_input",
    "encode_step_input",
    "observation_spec_from_proto",
    "png_dimensions",
    "split_png_stream",
    "steps_from_proto",
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
"""The eight bytes every PNG image starts with."""

_FLOAT32_LE = np.dtype("<f4")


class NonFiniteValueError(UnityObservationException, RuntimeError):
    """The game sent NaN or infinite observations or rewards.

    Also a :class:`RuntimeError`, the type ``mlagents_envs`` raises for this condition.
    """


# --------------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------------


def observation_spec_from_proto(observation: ObservationProto) -> ObservationSpec:
    """The :class:`ObservationSpec` described by one example observation.

    Raises:
        UnityObservationException: for an unknown observation type.
    """
    shape = tuple(observation.shape)
    if observation.dimension_properties:
        properties = tuple(DimensionProperty(p) for p in observation.dimension_properties)
    else:
        properties = (DimensionProperty.UNSPECIFIED,) * len(shape)
    try:
        observation_type = ObservationType(observation.observation_type)
    except ValueError:
        raise UnityObservationException(
            f"Observation {observation.name!r} has unknown observation_type "
            f"{observation.observation_type}; expected one of "
            f"{[t.value for t in ObservationType]}."
        ) from None
    return ObservationSpec(
        shape=shape,
        dimension_property=properties,
        observation_type=observation_type,
        name=observation.name,
    )


def behavior_spec_from_proto(
    brain_parameters: BrainParametersProto, agent_info: AgentInfoProto
) -> BehaviorSpec:
    """The :class:`BehaviorSpec` of a behavior, from its parameters and one of its agents.

    The action spec comes from ``action_spec``; when it declares no action at all, from the
    deprecated fields (``vector_action_space_type_deprecated`` 1 = continuous).

    Raises:
        UnityCommunicationException: for a spec no game can mean (negative observation sizes,
            a negative continuous size, a branch size below 1), naming the behavior. Unity's
            ``ActionSpec`` makes branches of at least one action; ``mlagents_envs`` does not
            check and fails later (numpy's "negative dimensions are not allowed").
    """
    name = brain_parameters.brain_name
    observation_specs = [observation_spec_from_proto(o) for o in agent_info.observations]
    for index, spec in enumerate(observation_specs):
        if any(size < 0 for size in spec.shape):
            raise UnityCommunicationException(
                f"The game's behavior {name!r} announced observation {index} "
                f"({spec.name or 'unnamed'}) with shape {spec.shape}; sizes cannot be "
                "negative. The game (or its sensor) is broken: fix the sensor's shape."
            )
    declared = brain_parameters.action_spec
    if declared.num_continuous_actions == 0 and declared.num_discrete_actions == 0:
        sizes = tuple(brain_parameters.vector_action_size_deprecated)
        if brain_parameters.vector_action_space_type_deprecated == 1:
            action_spec = ActionSpec(sizes[0] if sizes else 0, ())
        else:
            action_spec = ActionSpec(0, sizes)
    else:
        action_spec = ActionSpec(
            declared.num_continuous_actions, tuple(declared.discrete_branch_sizes)
        )
    if action_spec.continuous_size < 0 or any(size < 1 for size in action_spec.discrete_branches):
        raise UnityCommunicationException(
            f"The game's behavior {name!r} announced {action_spec.continuous_size} continuous "
            f"actions and discrete branch sizes {list(action_spec.discrete_branches)}; the "
            "continuous size must be >= 0 and every branch size >= 1. Fix the behavior's "
            "action spec (Behavior Parameters) in the game."
        )
    return BehaviorSpec(observation_specs, action_spec)


# --------------------------------------------------------------------------------------------
# PNG observations
# --------------------------------------------------------------------------------------------


def split_png_stream(data: bytes) -> list[bytes]:
    """Split byte-wise concatenated PNG images by walking their chunk structure.

    Bytes after the last ``IEND`` chunk that do not start another PNG are ignored.

    Raises:
        UnityObservationException: if ``data`` does not start with a PNG or is truncated.
    """
    if not data.startswith(PNG_SIGNATURE):
        raise UnityObservationException(
            f"Compressed observation is not PNG data: expected the PNG signature "
            f"{PNG_SIGNATURE.hex()}, got {bytes(data[:8]).hex() or 'no bytes'}."
        )
    images: list[bytes] = []
    start, end = 0, len(data)
    while start >= 0:
        cursor = start + len(PNG_SIGNATURE)
        while True:
            if cursor + 12 > end:
                raise UnityObservationException(
                    f"PNG image #{len(images)} of a compressed observation is truncated at byte "
                    f"{end} (no IEND chunk)."
                )
            length = int.from_bytes(data[cursor : cursor + 4], "big")
            kind = data[cursor + 4 : cursor + 8]
            cursor += 12 + length
            if kind == b"IEND":
                break
        if cursor > end:
            raise UnityObservationException(
                f"PNG image #{len(images)} of a compressed observation is truncated."
            )
        images.append(data[start:cursor])
        start = data.find(PNG_SIGNATURE, cursor)
    return images


def png_dimensions(image: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG's ``IHDR`` header, read without decoding; None if absent."""
    if len(image) < 24 or image[12:16] != b"IHDR":
        return None
    return int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")


def decode_png(image: bytes) -> np.ndarray:
    """Decode one PNG into float32 ``(channels, H, W)`` in ``[0, 1]``, top row first.

    Grayscale gives 1 channel, gray+alpha 2, RGB 3, RGBA 4; palette images are expanded to RGB
    (RGBA if transparent); 16-bit grayscale is scaled by 1/65535.

    Raises:
        UnityObservationException: if the bytes are not a decodable image.
    """
    from PIL import Image, UnidentifiedImageError  # on first use: Pillow costs start-up time

    try:
        with Image.open(io.BytesIO(image)) as opened:
            opened.load()
            picture: Image.Image = opened
            mode = picture.mode
            if mode in ("I;16", "I;16B", "I;16L", "I"):
                pixels = np.asarray(picture, dtype=np.float32) / np.float32(65535.0)
                return pixels[np.newaxis]
            if mode == "1":
                picture = picture.convert("L")
            elif mode in ("P", "PA"):
                transparent = mode == "PA" or "transparency" in picture.info
                picture = picture.convert("RGBA" if transparent else "RGB")
            elif mode not in ("L", "LA", "RGB", "RGBA"):
                picture = picture.convert("RGB")
            pixels = np.asarray(picture, dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise UnityObservationException(f"Could not decode a PNG observation: {error}") from error
    if pixels.ndim == 2:
        return pixels[np.newaxis]
    return np.moveaxis(pixels, -1, 0)


def _color_only(image: np.ndarray) -> np.ndarray:
    """Drop an alpha channel (2-channel gray+alpha or 4-channel RGBA images)."""
    return image[:-1] if image.shape[0] in (2, 4) else image


def _as_rgb(image: np.ndarray) -> np.ndarray:
    """The 3 channels Unity would have sent for this image (gray replicated, alpha dropped)."""
    color = _color_only(image)
    return np.repeat(color, 3, axis=0) if color.shape[0] == 1 else color


def _concatenate(images: list[np.ndarray]) -> np.ndarray:
    try:
        return np.concatenate(images, axis=0)
    except ValueError:
        sizes = [tuple(i.shape[1:]) for i in images]
        raise UnityObservationException(
            f"The concatenated PNG images of an observation have different sizes {sizes}; "
            "every image must have the observation's height and width."
        ) from None


def _apply_channel_mapping(images: list[np.ndarray], mapping: Sequence[int]) -> np.ndarray:
    channels = _concatenate(images)
    if len(mapping) != channels.shape[0] and len(mapping) == 3 * len(images):
        channels = _concatenate([_as_rgb(i) for i in images])
    if len(mapping) != channels.shape[0]:
        raise UnityObservationException(
            f"Compressed channel mapping has {len(mapping)} entries but the PNG data decoded to "
            f"{channels.shape[0]} channels; expected one mapping entry per PNG channel."
        )
    targets = np.asarray(mapping, dtype=np.int64)
    used = sorted({int(t) for t in targets if t >= 0})
    if targets.min() < -1 or not used or used != list(range(used[-1] + 1)):
        raise UnityObservationException(
            f"Invalid compressed channel mapping {list(mapping)}: expected -1 (dropped) or output "
            "channel indices covering 0..max without gaps."
        )
    return np.stack([channels[targets == c].mean(axis=0) for c in used])


def decode_png_observation(
    data: bytes, shape: Sequence[int], mapping: Sequence[int] = ()
) -> np.ndarray:
    """Decode a PNG-compressed observation into float32 of the given ``(C, H, W)`` shape.

    With a channel ``mapping`` (one entry per PNG channel: output channel, or -1 to drop), each
    output channel is the mean of the PNG channels mapped to it. Without one, a 1-channel shape
    takes the mean of the first image's colors; otherwise channels are concatenated and the
    first ``C`` are kept. Grayscale PNGs count as gray RGB where 3 channels per image are needed.

    For a 3-D ``shape`` every image's ``IHDR`` width and height must match ``(W, H)``; this is
    checked before anything is decoded, so decoding never allocates more than the shape says.

    Raises:
        UnityObservationException: for undecodable data, an image whose header dimensions do
            not match ``shape``, an invalid mapping, or a decoded shape different from
            ``shape`` (message gives expected and decoded shapes).
    """
    expected = tuple(int(d) for d in shape)
    parts = split_png_stream(data)
    if len(expected) == 3:  # refuse before decoding: a tiny PNG can declare a huge picture
        for index, part in enumerate(parts):
            size = png_dimensions(part)
            if size is not None and size != (expected[2], expected[1]):
                raise UnityObservationException(
                    f"PNG image #{index} of a compressed observation is {size[0]}x{size[1]} "
                    f"(width x height), the observation's shape {expected} (channels, height, "
                    f"width) needs {expected[2]}x{expected[1]}; refused without decoding it."
                )
    with hierarchical_timer("image_decompress"):
        images = [decode_png(part) for part in parts]
    if mapping:
        result = _apply_channel_mapping(images, mapping)
    elif expected and expected[0] == 1:
        result = _color_only(images[0]).mean(axis=0, keepdims=True)
    else:
        result = _concatenate(images)
        wanted = expected[0] if expected else 0
        if result.shape[0] < wanted and any(_color_only(i).shape[0] == 1 for i in images):
            result = _concatenate([_as_rgb(i) for i in images])
        result = result[:wanted]
    if result.shape != expected:
        raise UnityObservationException(
            f"Decompressed observation did not have the expected shape: expected {expected} "
            f"(channels, height, width), decoded {tuple(result.shape)}."
        )
    return np.ascontiguousarray(result, dtype=np.float32)


# --------------------------------------------------------------------------------------------
# Agent data
# --------------------------------------------------------------------------------------------


def _varint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def _observation_error(
    behavior_name: str, index: int, spec: ObservationSpec, agent: AgentInfoProto, detail: str
) -> UnityObservationException:
    return UnityObservationException(
        f"Behavior {behavior_name!r}, observation {index} ({spec.name!r}) of agent id "
        f"{agent.id}: {detail}"
    )


def _describe_observation(observation: ObservationProto) -> str:
    kind = "uncompressed" if observation.compression_type == NONE else "PNG-compressed"
    return (
        f"got an {kind} observation of shape {tuple(observation.shape)} with "
        f"{len(observation.float_data.data)} float values"
    )


def _stack_float_observations(
    agents: Sequence[AgentInfoProto], index: int, spec: ObservationSpec, behavior_name: str
) -> np.ndarray:
    """Uncompressed observation ``index`` of every agent as one ``(n, *shape)`` float32 array.

    Each agent's ``float_data`` serializes to a tag byte, a varint length and the packed
    little-endian floats; joining those and dropping the header columns is a single copy.
    """
    count = len(agents)
    size = math.prod(spec.shape)
    if count == 0 or size == 0:
        return np.zeros((count, *spec.shape), dtype=np.float32)
    payload = 4 * size
    header = 1 + _varint_size(payload)
    row = header + payload
    parts = [agent.observations[index].float_data.SerializeToString() for agent in agents]
    blob = b"".join(parts)
    if len(blob) != row * count or min(map(len, parts)) != row:
        position = next(i for i, part in enumerate(parts) if len(part) != row)
        agent = agents[position]
        raise _observation_error(
            behavior_name,
            index,
            spec,
            agent,
            f"expected shape {spec.shape} ({size} float values), "
            f"{_describe_observation(agent.observations[index])}.",
        )
    raw = np.frombuffer(blob, dtype=np.uint8).reshape(count, row)[:, header:]
    values = np.ascontiguousarray(raw).view(_FLOAT32_LE).astype(np.float32, copy=False)
    return values.reshape(count, *spec.shape)


def _decode_visual_observations(
    agents: Sequence[AgentInfoProto], index: int, spec: ObservationSpec, behavior_name: str
) -> np.ndarray:
    """Rank-3 observation ``index`` of every agent, PNG-decoding compressed ones."""
    observations = [agent.observations[index] for agent in agents]
    if all(o.compression_type == NONE for o in observations):
        return _stack_float_observations(agents, index, spec, behavior_name)
    batch = np.empty((len(agents), *spec.shape), dtype=np.float32)
    for row, (agent, observation) in enumerate(zip(agents, observations, strict=True)):
        if tuple(observation.shape) != spec.shape:
            raise _observation_error(
                behavior_name,
                index,
                spec,
                agent,
                f"expected shape {spec.shape}, {_describe_observation(observation)}.",
            )
        try:
            if observation.compression_type == NONE:
                batch[row] = np.asarray(observation.float_data.data, dtype=np.float32).reshape(
                    spec.shape
                )
            else:
                batch[row] = decode_png_observation(
                    observation.compressed_data,
                    spec.shape,
                    observation.compressed_channel_mapping,
                )
        except UnityObservationException as error:
            raise _observation_error(behavior_name, index, spec, agent, str(error)) from error
        except ValueError as error:
            raise _observation_error(
                behavior_name,
                index,
                spec,
                agent,
                f"expected shape {spec.shape}, {_describe_observation(observation)}.",
            ) from error
    return batch


def _raise_if_not_finite(
    values: np.ndarray, what: str, behavior_name: str, agent_ids: np.ndarray
) -> None:
    """Raise :class:`NonFiniteValueError` naming the agents whose ``values`` hold NaN or inf.

    A float64 sum of float32 values cannot overflow, so a finite sum proves every value finite.
    """
    if values.size == 0 or np.isfinite(values.sum(dtype=np.float64)):
        return
    per_agent = values.reshape(len(agent_ids), -1)
    bad_rows = ~np.isfinite(per_agent).all(axis=1)
    kind = "NaN" if np.isnan(per_agent).any() else "infinite"
    raise NonFiniteValueError(
        f"The {what} of behavior {behavior_name!r} contain {kind} values (agent ids "
        f"{agent_ids[bad_rows].tolist()}). The game must send finite numbers; check the agent "
        "code that produces them."
    )


def _observations_of(
    agents: Sequence[AgentInfoProto], spec: BehaviorSpec, behavior_name: str, ids: np.ndarray
) -> list[np.ndarray]:
    try:
        return _decode_observations(agents, spec, behavior_name, ids)
    except IndexError:
        expected = len(spec.observation_specs)
        agent = next(a for a in agents if len(a.observations) < expected)
        raise UnityObservationException(
            f"Behavior {behavior_name!r}: agent id {agent.id} sent {len(agent.observations)} "
            f"observations, expected {expected} ({[o.name for o in spec.observation_specs]})."
        ) from None


def _decode_observations(
    agents: Sequence[AgentInfoProto], spec: BehaviorSpec, behavior_name: str, ids: np.ndarray
) -> list[np.ndarray]:
    result: list[np.ndarray] = []
    for index, observation_spec in enumerate(spec.observation_specs):
        if len(observation_spec.shape) == 3:
            result.append(
                _decode_visual_observations(agents, index, observation_spec, behavior_name)
            )
        else:
            batch = _stack_float_observations(agents, index, observation_spec, behavior_name)
            name = f"observations ({index}: {observation_spec.name!r})"
            _raise_if_not_finite(batch, name, behavior_name, ids)
            result.append(batch)
    return result


def _action_masks(
    agents: Sequence[AgentInfoProto], action_spec: ActionSpec
) -> list[np.ndarray] | None:
    """Per-branch ``(n, branch_size)`` masks, True = disabled; unsized masks mean all enabled.

    None without discrete branches or without agents (as ``mlagents_envs`` 1.1.0 returns).
    """
    branches = action_spec.discrete_branches
    if not branches or not agents:
        return None
    width = int(sum(branches))
    masks = [agent.action_mask for agent in agents]
    matrix = np.zeros((len(agents), width), dtype=bool)
    sized = [row for row, mask in enumerate(masks) if len(mask) == width]
    if sized:
        matrix[sized] = np.array([masks[row] for row in sized], dtype=bool).reshape(-1, width)
    return np.split(matrix, np.cumsum(branches)[:-1].tolist(), axis=1)


@timed
def steps_from_proto(
    agent_infos: Sequence[AgentInfoProto], spec: BehaviorSpec, behavior_name: str = ""
) -> tuple[DecisionSteps, TerminalSteps]:
    """Split a behavior's AgentInfos by ``done`` into decision and terminal batches.

    Both keep message order. Vector observations, rewards and group rewards are checked for
    NaN/inf. An agent may be in both batches (its episode ended and the next one began in one
    step), but not twice in one batch.

    Raises:
        UnityCommunicationException: an agent id appears twice among the deciding (or the
            ending) agents; ``mlagents_envs`` accepts that and its ``agent_id_to_index`` keeps
            only the last row.
        UnityObservationException: for observations not matching ``spec``.
        NonFiniteValueError: for NaN/inf in vector observations, rewards or group rewards.
    """
    done = [a.done for a in agent_infos]
    if any(done):
        deciding = [a for a, d in zip(agent_infos, done, strict=True) if not d]
        ending = [a for a, d in zip(agent_infos, done, strict=True) if d]
    else:
        deciding, ending = list(agent_infos), []
    decision = _decision_steps(deciding, spec, behavior_name)
    terminal = _terminal_steps(ending, spec, behavior_name) if ending else TerminalSteps.empty(spec)
    return decision, terminal


def _scalars(
    agents: Sequence[AgentInfoProto], behavior_name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Agent ids, rewards, group ids and group rewards (the float ones NaN-checked)."""
    id_list = [a.id for a in agents]
    ids = np.array(id_list, dtype=np.int32)
    rewards = np.array([a.reward for a in agents], dtype=np.float32)
    group_ids = np.array([a.group_id for a in agents], dtype=np.int32)
    group_rewards = np.array([a.group_reward for a in agents], dtype=np.float32)
    if len(set(id_list)) != len(id_list):  # a set: half the time of np.unique for a dozen ids
        unique, counts = np.unique(ids, return_counts=True)
        raise UnityCommunicationException(
            f"The game sent agent ids {unique[counts > 1][:10].tolist()} of behavior "
            f"{behavior_name!r} more than once in one step (among {len(ids)} agents with "
            "the same done flag); every agent must report once per step. The game is "
            "broken: check that agents are not registered twice."
        )
    _raise_if_not_finite(rewards, "rewards", behavior_name, ids)
    _raise_if_not_finite(group_rewards, "group rewards", behavior_name, ids)
    return ids, rewards, group_ids, group_rewards


def _decision_steps(
    agents: Sequence[AgentInfoProto], spec: BehaviorSpec, behavior_name: str
) -> DecisionSteps:
    ids, rewards, group_ids, group_rewards = _scalars(agents, behavior_name)
    return DecisionSteps(
        obs=_observations_of(agents, spec, behavior_name, ids),
        reward=rewards,
        agent_id=ids,
        action_mask=_action_masks(agents, spec.action_spec),
        group_id=group_ids,
        group_reward=group_rewards,
    )


def _terminal_steps(
    agents: Sequence[AgentInfoProto], spec: BehaviorSpec, behavior_name: str
) -> TerminalSteps:
    ids, rewards, group_ids, group_rewards = _scalars(agents, behavior_name)
    interrupted = np.array([a.max_step_reached for a in agents], dtype=bool)
    return TerminalSteps(
        obs=_observations_of(agents, spec, behavior_name, ids),
        reward=rewards,
        interrupted=interrupted,
        agent_id=ids,
        group_id=group_ids,
        group_reward=group_rewards,
    )


# --------------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------------


@timed
def encode_step_input(
    actions: Mapping[str, ActionTuple], side_channel: bytes = b""
) -> UnityRLInputProto:
    """The STEP input carrying ``actions`` (one row per deciding agent, in DecisionSteps order).

    Behaviors with zero rows get no map entry. Each agent's ``vector_actions_deprecated`` holds
    its continuous values followed by its discrete values as floats.
    """
    rl_input = UnityRLInputProto(command=STEP, side_channel=side_channel)
    for behavior_name, action in actions.items():
        continuous, discrete = action.continuous, action.discrete
        if len(continuous) == 0:
            continue
        packed = _packed_agent_actions(continuous, discrete)
        if packed is not None:
            rl_input.agent_actions[behavior_name].MergeFromString(packed)
            continue
        continuous_rows = continuous.tolist()
        discrete_rows = discrete.tolist()
        combined_rows = np.concatenate((continuous, discrete.astype(np.float32)), axis=1).tolist()
        entries = rl_input.agent_actions[behavior_name].value
        for combined, continuous_row, discrete_row in zip(
            combined_rows, continuous_rows, discrete_rows, strict=True
        ):
            entries.add(
                vector_actions_deprecated=combined,
                continuous_actions=continuous_row,
                discrete_actions=discrete_row,
            )
    return rl_input


def _packed_agent_actions(continuous: np.ndarray, discrete: np.ndarray) -> bytes | None:
    """The serialized ``ListAgentActionProto`` of these rows, built with numpy; ``None`` where
    the rows need the general path (:func:`encode_step_input`'s per-agent ``add``).

    Covered: float32 continuous actions and discrete actions in ``0..127`` (each one varint
    byte), the shapes of every built-in scene and of validated actions. Every agent's
    ``AgentActionProto`` then has one size (:func:`_action_rows_layout`). Parsed back, it is the
    message the general path builds, so it serializes to the same bytes.
    """
    if continuous.ndim != 2 or discrete.ndim != 2:
        return None
    rows, width_c = continuous.shape
    width_d = discrete.shape[1]
    if continuous.dtype != np.float32 or discrete.dtype.kind not in "iu" or rows != len(discrete):
        return None
    if width_d and (discrete.min() < 0 or discrete.max() > 0x7F):
        return None
    template, combined, continuous_at, discrete_at = _action_rows_layout(rows, width_c, width_d)
    packed = template.copy()
    if width_c:
        packed[:, combined : combined + 4 * width_c].view(_FLOAT32_LE)[:] = continuous
        packed[:, continuous_at : continuous_at + 4 * width_c].view(_FLOAT32_LE)[:] = continuous
    if width_d:
        start = combined + 4 * width_c
        packed[:, start : start + 4 * width_d].view(_FLOAT32_LE)[:] = discrete
        packed[:, discrete_at : discrete_at + width_d] = discrete
    return packed.tobytes()


@functools.lru_cache(maxsize=64)
def _action_rows_layout(rows: int, width_c: int, width_d: int) -> tuple[np.ndarray, int, int, int]:
    """The byte layout of ``rows`` agents' actions in a ``ListAgentActionProto``: a template
    (``rows`` equal rows, the tags and lengths filled in, the values zero; read-only) and the
    columns where the packed ``vector_actions_deprecated`` (field 1: the continuous values, then
    the discrete ones as floats), ``continuous_actions`` (field 6) and ``discrete_actions``
    (field 7, one byte each) values start. An empty field is left out, as protobuf does.
    """
    fields: list[tuple[bytes, int]] = []  # (tag and length, value bytes)
    if width_c + width_d:
        fields.append((b"\x0a" + encode_varint(4 * (width_c + width_d)), 4 * (width_c + width_d)))
    if width_c:
        fields.append((b"\x32" + encode_varint(4 * width_c), 4 * width_c))
    if width_d:
        fields.append((b"\x3a" + encode_varint(width_d), width_d))
    body = sum(len(header) + size for header, size in fields)
    row = bytearray(b"\x0a" + encode_varint(body))  # one element of the repeated field 1, ``value``
    starts: list[int] = []
    for header, size in fields:
        row += header
        starts.append(len(row))
        row += bytes(size)
    template = np.tile(np.frombuffer(bytes(row), dtype=np.uint8), (rows, 1))
    template.flags.writeable = False
    at = iter(starts)
    combined = next(at) if width_c + width_d else 0
    continuous_at = next(at) if width_c else 0
    discrete_at = next(at) if width_d else 0
    return template, combined, continuous_at, discrete_at


def encode_reset_input(side_channel: bytes = b"") -> UnityRLInputProto:
    """The RESET input, carrying the queued side-channel bytes."""
    return UnityRLInputProto(command=RESET, side_channel=side_channel)
