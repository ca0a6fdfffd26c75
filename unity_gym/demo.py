"""Reader (and writer functions) for Unity ``.demo`` demonstration recordings (spec §8).

File layout written by Unity's ``DemonstrationWriter``:

1. offset 0: a varint-length-delimited ``DemonstrationMetaProto`` (rewritten when recording ends);
2. zero padding up to offset 33;
3. offset 33: a delimited ``BrainParametersProto``;
4. ``number_steps`` delimited ``AgentInfoActionPairProto`` records, one per recorded agent step;
5. (newer files) one more, undelimited, copy of the meta proto, which the reader ignores.

Example::

    demo = read_demonstration("ExpertBasic.demo")
    obs = demo.observations(0)          # (n_steps, 20) float32
    actions = demo.discrete_actions()   # (n_steps, 1) int32

    # ML-Agents' own shape: a file or a folder of them, as protos
    spec, info_action_pairs, total_expected = load_demonstration("demos/")

Bounds on untrusted files (demonstrations come from other people). A record can only be read
if its bytes are in the file, so the number of records is bounded by the file's size. Before
decoding, :func:`read_demonstration` multiplies the records by the float32 size of the
observation spec (every record must have the first record's shapes) and refuses files that
would decode to more than :data:`MAX_DECODED_BYTES` (1 GiB); every PNG observation's ``IHDR``
width and height must match its shape before it is decoded (a 1.6 MB file of 13000x13000
blank PNGs is refused in milliseconds). Errors are :class:`DemonstrationError`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError, Message

from unity_gym.base_env import ActionSpec, BehaviorSpec, ObservationSpec
from unity_gym.decoding import behavior_spec_from_proto, decode_png_observation
from unity_gym.exceptions import UnityException, UnityObservationException
from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)
from unity_gym.protocol.communicator_objects.observation_pb2 import PNG, ObservationProto

__all__ = [
    "API_VERSION",
    "BRAIN_PARAMETERS_OFFSET",
    "MAX_DECODED_BYTES",
    "MAX_NAME_LENGTH",
    "SUPPORTED_API_VERSIONS",
    "Demonstration",
    "DemonstrationError",
    "DemonstrationMeta",
    "DemonstrationStep",
    "DemonstrationVersionError",
    "delimited",
    "demonstration_bytes",
    "demonstration_header",
    "get_demo_files",
    "load_demonstration",
    "read_demonstration",
    "sanitize_demonstration_name",
]

BRAIN_PARAMETERS_OFFSET = 33
"""Where the brain parameters start: Unity reserves 32 bytes (+1) for the meta proto."""

SUPPORTED_API_VERSIONS = frozenset({0, 1})
"""Demonstration format versions this reader understands (Unity writes 1)."""

API_VERSION = 1
"""Demonstration format version written by :func:`demonstration_bytes` (as Unity does)."""

MAX_DECODED_BYTES = 2**30
"""Most float32 bytes :func:`read_demonstration` decodes one file into (1 GiB; module docs)."""

MAX_NAME_LENGTH = 16
"""Longest demonstration name Unity writes (it cuts longer ones)."""


class DemonstrationError(UnityException, ValueError):
    """A file is not a readable ``.demo`` recording (wrong format, truncated, unsupported)."""


class DemonstrationVersionError(DemonstrationError, RuntimeError):
    """A ``.demo`` file has a format version this reader does not support.

    Also a :class:`RuntimeError`, which ML-Agents' trainers raise for it.
    """


@dataclass(frozen=True)
class DemonstrationMeta:
    """Summary Unity writes at the start of the file.

    Attributes:
        name: demonstration name (sanitized by Unity, at most 16 characters).
        api_version: file format version.
        number_steps: number of recorded agent steps (records).
        number_episodes: number of completed episodes.
        mean_reward: cumulative reward divided by the number of episodes.
    """

    name: str
    api_version: int
    number_steps: int
    number_episodes: int
    mean_reward: float


@dataclass(frozen=True)
class DemonstrationStep:
    """One recorded agent step: what the agent observed and the action stored with it.

    Attributes:
        agent_id: id of the recording agent (per episode in old recordings).
        observations: one array per sensor; visual ones are float32 ``(C, H, W)`` in ``[0, 1]``
            (or the recorded ``(H, W, C)`` for legacy uncompressed recordings).
        reward: reward since the agent's previous step.
        done: the episode ended at this step.
        interrupted: the episode was cut short (max step reached), not truly terminal.
        action_mask: ``True`` = action disabled, one entry per discrete action of all branches;
            ``None`` when the step carries no mask.
        continuous_actions: float32 ``(continuous_size,)``.
        discrete_actions: int32 ``(number_of_branches,)``.
        has_action: the record carried action values (zeros are stored when it did not).
        group_id: multi-agent group (0 = none).
        group_reward: group reward since the previous step.
    """

    agent_id: int
    observations: list[np.ndarray]
    reward: float
    done: bool
    interrupted: bool
    action_mask: np.ndarray | None
    continuous_actions: np.ndarray
    discrete_actions: np.ndarray
    has_action: bool
    group_id: int
    group_reward: float


@dataclass(frozen=True)
class Demonstration:
    """A parsed ``.demo`` file: summary, behavior and the recorded steps in file order.

    Attributes:
        meta: the file's summary.
        behavior_name: fully-qualified behavior name (``Name?team=N`` in newer files).
        behavior_spec: observation specs (from the first record) and action spec.
        steps: the recorded steps, in recording order.
    """

    meta: DemonstrationMeta
    behavior_name: str
    behavior_spec: BehaviorSpec
    steps: list[DemonstrationStep]

    def __len__(self) -> int:
        return len(self.steps)

    def observations(self, index: int) -> np.ndarray:
        """Observation ``index`` of every step, stacked: float32 ``(n_steps, *shape)``.

        Raises:
            IndexError: if the behavior has no observation ``index``.
        """
        specs = self.behavior_spec.observation_specs
        if not -len(specs) <= index < len(specs):
            raise IndexError(
                f"Observation index {index} out of range: this demonstration has {len(specs)} "
                f"observation(s): {[s.name or s.shape for s in specs]}."
            )
        shape = tuple(specs[index].shape)
        if not self.steps:
            return np.zeros((0, *shape), dtype=np.float32)
        return np.stack([step.observations[index] for step in self.steps])

    def rewards(self) -> np.ndarray:
        """float32 ``(n_steps,)``."""
        return np.array([s.reward for s in self.steps], dtype=np.float32)

    def dones(self) -> np.ndarray:
        """bool ``(n_steps,)``: the episode ended at the step."""
        return np.array([s.done for s in self.steps], dtype=bool)

    def interrupted(self) -> np.ndarray:
        """bool ``(n_steps,)``: the episode was cut short at the step."""
        return np.array([s.interrupted for s in self.steps], dtype=bool)

    def agent_ids(self) -> np.ndarray:
        """int32 ``(n_steps,)``."""
        return np.array([s.agent_id for s in self.steps], dtype=np.int32)

    def group_ids(self) -> np.ndarray:
        """int32 ``(n_steps,)``."""
        return np.array([s.group_id for s in self.steps], dtype=np.int32)

    def group_rewards(self) -> np.ndarray:
        """float32 ``(n_steps,)``."""
        return np.array([s.group_reward for s in self.steps], dtype=np.float32)

    def continuous_actions(self) -> np.ndarray:
        """float32 ``(n_steps, continuous_size)``."""
        size = self.behavior_spec.action_spec.continuous_size
        rows = [s.continuous_actions for s in self.steps]
        return np.stack(rows) if rows else np.zeros((0, size), dtype=np.float32)

    def discrete_actions(self) -> np.ndarray:
        """int32 ``(n_steps, number_of_branches)``."""
        branches = len(self.behavior_spec.action_spec.discrete_branches)
        rows = [s.discrete_actions for s in self.steps]
        return np.stack(rows) if rows else np.zeros((0, branches), dtype=np.int32)

    def action_masks(self) -> np.ndarray:
        """bool ``(n_steps, sum(discrete_branches))``, ``True`` = disabled; all ``False`` for
        steps without a mask."""
        width = sum(self.behavior_spec.action_spec.discrete_branches)
        masks = np.zeros((len(self.steps), width), dtype=bool)
        for row, step in enumerate(self.steps):
            if step.action_mask is not None:
                masks[row] = step.action_mask
        return masks


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def delimited(message: Message | bytes) -> bytes:
    """``message`` (or already serialized bytes) with its base-128 varint length prefix."""
    body = message if isinstance(message, bytes) else message.SerializeToString()
    size, prefix = len(body), bytearray()
    while True:
        byte = size & 0x7F
        size >>= 7
        if size:
            prefix.append(byte | 0x80)
        else:
            prefix.append(byte)
            return bytes(prefix) + body


def sanitize_demonstration_name(name: str) -> str:
    """``name`` as Unity stores it: letters, digits, spaces and ``-`` only, at most
    :data:`MAX_NAME_LENGTH` characters (``"Demo"`` when nothing is left)."""
    cleaned = re.sub(r"[^a-zA-Z0-9 -]", "", name)[:MAX_NAME_LENGTH]
    return cleaned or "Demo"


def demonstration_header(meta: DemonstrationMetaProto) -> bytes:
    """The delimited ``meta`` zero-padded to :data:`BRAIN_PARAMETERS_OFFSET` bytes.

    Raises:
        DemonstrationError: if the meta-data does not fit (name longer than Unity allows).
    """
    head = delimited(meta)
    if len(head) > BRAIN_PARAMETERS_OFFSET:
        raise DemonstrationError(
            f"demonstration meta-data takes {len(head)} bytes, more than the "
            f"{BRAIN_PARAMETERS_OFFSET}-byte header; shorten the name to at most "
            f"{MAX_NAME_LENGTH} characters (see sanitize_demonstration_name)."
        )
    return head + b"\x00" * (BRAIN_PARAMETERS_OFFSET - len(head))


def demonstration_bytes(
    meta: DemonstrationMetaProto,
    brain: BrainParametersProto,
    records: Iterable[AgentInfoActionPairProto | bytes],
    *,
    trailing_meta: bool = True,
) -> bytes:
    """A whole ``.demo`` file laid out as Unity's ``DemonstrationWriter`` writes it.

    Args:
        meta: the summary (its ``number_steps`` should count ``records``).
        brain: the behavior's brain parameters.
        records: the agent steps, as protos or serialized ``AgentInfoActionPairProto`` bytes.
        trailing_meta: append the undelimited copy of ``meta`` newer Unity versions leave at
            the end of the file.

    Raises:
        DemonstrationError: if ``meta`` does not fit the header.
    """
    parts = [demonstration_header(meta), delimited(brain)]
    parts.extend(delimited(record) for record in records)
    if trailing_meta:
        parts.append(meta.SerializeToString())
    return b"".join(parts)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _read_varint(data: bytes, offset: int, what: str, path: Path) -> tuple[int, int]:
    """Decode the base-128 varint at ``offset``; return ``(value, offset after it)``."""
    value = 0
    for shift_index in range(5):
        if offset >= len(data):
            raise DemonstrationError(
                f"{path}: file ends inside the length prefix of the {what}; the file is truncated."
            )
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << (7 * shift_index)
        if byte < 0x80:
            return value, offset
    raise DemonstrationError(f"{path}: invalid length prefix for the {what}; not a .demo file.")


def _read_delimited(data: bytes, offset: int, what: str, path: Path) -> tuple[bytes, int]:
    length, start = _read_varint(data, offset, what, path)
    end = start + length
    if end > len(data):
        raise DemonstrationError(
            f"{path}: the {what} needs {length} bytes at offset {start} but the file has only "
            f"{len(data) - start} left; the file is truncated."
        )
    return data[start:end], end


def _read_meta(data: bytes, path: Path) -> DemonstrationMeta:
    if len(data) <= BRAIN_PARAMETERS_OFFSET:
        raise DemonstrationError(
            f"{path}: {len(data)} bytes is too short for a .demo file (the header alone is "
            f"{BRAIN_PARAMETERS_OFFSET} bytes)."
        )
    length, start = _read_varint(data, 0, "demonstration meta-data", path)
    proto = DemonstrationMetaProto()
    try:
        if start + length > BRAIN_PARAMETERS_OFFSET:
            raise DecodeError(
                f"its length prefix announces {length} bytes, more than the "
                f"{BRAIN_PARAMETERS_OFFSET}-byte header holds"
            )
        proto.ParseFromString(data[start : start + length])
    except DecodeError as error:
        raise DemonstrationError(
            f"{path}: not a Unity .demo file (the header is not demonstration meta-data: {error})."
        ) from None
    if proto.api_version not in SUPPORTED_API_VERSIONS:
        raise DemonstrationVersionError(
            f"{path}: demonstration format version {proto.api_version} is not supported "
            f"(supported: {sorted(SUPPORTED_API_VERSIONS)}). Record it again with a "
            "supported ML-Agents version."
        )
    if proto.number_steps < 0 or proto.number_episodes < 0:
        raise DemonstrationError(
            f"{path}: not a Unity .demo file (negative step or episode count in the header)."
        )
    return DemonstrationMeta(
        name=proto.demonstration_name,
        api_version=proto.api_version,
        number_steps=proto.number_steps,
        number_episodes=proto.number_episodes,
        mean_reward=proto.mean_reward,
    )


def _decode_observation(
    observation: ObservationProto, spec: ObservationSpec, where: str
) -> np.ndarray:
    shape = tuple(int(d) for d in spec.shape)
    if tuple(observation.shape) != shape:
        raise DemonstrationError(
            f"{where}: shape {tuple(observation.shape)} differs from the first record's {shape}."
        )
    if observation.compression_type == PNG:
        data, mapping = observation.compressed_data, list(observation.compressed_channel_mapping)
        try:
            return decode_png_observation(data, shape, mapping)
        except UnityObservationException as error:
            if len(shape) != 3 or shape[2] > 4:
                raise DemonstrationError(f"{where}: {error}") from error
            first_error = error
        # Legacy (H, W, C) layout: decode channel-first, then restore the recorded layout.
        try:
            chw = decode_png_observation(data, (shape[2], shape[0], shape[1]), mapping)
        except UnityObservationException:
            raise DemonstrationError(f"{where}: {first_error}") from first_error
        return np.ascontiguousarray(np.moveaxis(chw, 0, -1))
    values = np.asarray(observation.float_data.data, dtype=np.float32)
    expected = int(np.prod(shape, dtype=np.int64))
    if values.size != expected:
        raise DemonstrationError(
            f"{where}: {values.size} float values recorded, shape {shape} needs {expected}."
        )
    return values.reshape(shape)


def _split_actions(
    record: AgentInfoActionPairProto, spec: ActionSpec, where: str
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(continuous, discrete, has_action)``; deprecated flat actions are split by the spec."""
    action = record.action_info
    n_continuous, n_branches = spec.continuous_size, len(spec.discrete_branches)
    if len(action.continuous_actions) == 0 and len(action.discrete_actions) == 0:
        flat = np.asarray(action.vector_actions_deprecated, dtype=np.float32)
        if flat.size == 0:
            return (
                np.zeros(n_continuous, dtype=np.float32),
                np.zeros(n_branches, dtype=np.int32),
                False,
            )
        if flat.size != n_continuous + n_branches:
            raise DemonstrationError(
                f"{where}: {flat.size} recorded action value(s), but the action spec "
                f"({spec}) needs {n_continuous + n_branches}. Actions of actuator components "
                "are not described in .demo files; record with Behavior Parameters actions only."
            )
        continuous = flat[:n_continuous].copy()
        discrete = np.rint(flat[n_continuous:]).astype(np.int32)
        return continuous, discrete, True
    continuous = np.asarray(action.continuous_actions, dtype=np.float32)
    discrete = np.asarray(action.discrete_actions, dtype=np.int32)
    if continuous.size != n_continuous or discrete.size != n_branches:
        raise DemonstrationError(
            f"{where}: recorded {continuous.size} continuous and {discrete.size} discrete "
            f"action value(s), but the action spec ({spec}) needs {n_continuous} and "
            f"{n_branches}."
        )
    return continuous, discrete, True


def _step_from_record(
    record: AgentInfoActionPairProto, spec: BehaviorSpec, index: int, path: Path
) -> DemonstrationStep:
    info = record.agent_info
    where = f"{path}: record {index}"
    specs = spec.observation_specs
    if len(info.observations) != len(specs):
        raise DemonstrationError(
            f"{where} has {len(info.observations)} observation(s), the first record had "
            f"{len(specs)}."
        )
    observations = [
        _decode_observation(obs, obs_spec, f"{where}, observation {i} ({obs_spec.name!r})")
        for i, (obs, obs_spec) in enumerate(zip(info.observations, specs, strict=True))
    ]
    continuous, discrete, has_action = _split_actions(record, spec.action_spec, where)
    mask: np.ndarray | None = None
    if len(info.action_mask) > 0:
        mask = np.asarray(info.action_mask, dtype=bool)
    return DemonstrationStep(
        agent_id=info.id,
        observations=observations,
        reward=info.reward,
        done=info.done,
        interrupted=info.max_step_reached,
        action_mask=mask,
        continuous_actions=continuous,
        discrete_actions=discrete,
        has_action=has_action,
        group_id=info.group_id,
        group_reward=info.group_reward,
    )


def _read_file(
    file_path: Path, *, allow_empty: bool = False
) -> tuple[DemonstrationMeta, BrainParametersProto, list[AgentInfoActionPairProto]]:
    """The meta-data, brain parameters and ``number_steps`` records of one ``.demo`` file."""
    if file_path.is_dir():
        raise IsADirectoryError(
            f"{file_path} is a folder; pass one .demo file (e.g. "
            f"{[p.name for p in sorted(file_path.glob('*.demo'))][:3]}), or use "
            "load_demonstration, which reads a folder of them."
        )
    if not file_path.exists():
        raise FileNotFoundError(f"Demonstration file {file_path} does not exist.")
    data = file_path.read_bytes()
    meta = _read_meta(data, file_path)

    raw, offset = _read_delimited(data, BRAIN_PARAMETERS_OFFSET, "brain parameters", file_path)
    brain = BrainParametersProto()
    try:
        brain.ParseFromString(raw)
    except DecodeError as error:
        raise DemonstrationError(
            f"{file_path}: brain parameters at offset {BRAIN_PARAMETERS_OFFSET} are unreadable "
            f"({error}); not a Unity .demo file."
        ) from None
    if meta.number_steps == 0 and not allow_empty:
        raise DemonstrationError(
            f"{file_path}: the demonstration has no recorded steps (number_steps is 0)."
        )

    records: list[AgentInfoActionPairProto] = []
    for index in range(meta.number_steps):
        if offset >= len(data):
            raise DemonstrationError(
                f"{file_path}: file ends after {index} of the {meta.number_steps} records the "
                "header announces; the file is truncated."
            )
        raw, offset = _read_delimited(data, offset, f"record {index}", file_path)
        record = AgentInfoActionPairProto()
        try:
            record.ParseFromString(raw)
        except DecodeError as error:
            raise DemonstrationError(
                f"{file_path}: record {index} is unreadable ({error}); the file is corrupted."
            ) from None
        records.append(record)
    return meta, brain, records


def read_demonstration(path: str | os.PathLike[str]) -> Demonstration:
    """Read one Unity ``.demo`` file into a :class:`Demonstration` (decoded arrays).

    Reads exactly ``meta.number_steps`` records; anything after them (the trailing meta copy of
    newer files) is ignored. Observation specs come from the first record, the action spec from
    the brain parameters (deprecated fields when ``action_spec`` is empty). Records holding only
    ``vector_actions_deprecated`` are split into continuous then discrete values.

    Args:
        path: the ``.demo`` file.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        IsADirectoryError: if ``path`` is a folder.
        DemonstrationError: if the file is not a demonstration, is truncated, has an unsupported
            format version (:class:`DemonstrationVersionError`), has no recorded step, or has
            records inconsistent with its specs.
    """
    file_path = Path(path)
    meta, brain, records = _read_file(file_path)
    try:
        behavior_spec = behavior_spec_from_proto(brain, records[0].agent_info)
    except UnityObservationException as error:
        raise DemonstrationError(f"{file_path}: {error}") from error
    per_step = sum(4 * math.prod(o.shape) for o in behavior_spec.observation_specs)
    if per_step * len(records) > MAX_DECODED_BYTES:
        raise DemonstrationError(
            f"{file_path}: {len(records)} records of observations "
            f"{[tuple(o.shape) for o in behavior_spec.observation_specs]} would decode to "
            f"{per_step * len(records)} bytes of float32, over MAX_DECODED_BYTES "
            f"({MAX_DECODED_BYTES}); refused before decoding. Split the recording, or raise "
            "unity_gym.demo.MAX_DECODED_BYTES if the file is trusted and memory allows."
        )
    steps = [_step_from_record(r, behavior_spec, i, file_path) for i, r in enumerate(records)]
    return Demonstration(
        meta=meta,
        behavior_name=brain.brain_name,
        behavior_spec=behavior_spec,
        steps=steps,
    )


def get_demo_files(path: str | os.PathLike[str]) -> list[str]:
    """The ``.demo`` files at ``path``: the file itself, or those directly in a folder.

    Official rules (``mlagents.trainers.demo_loader.get_demo_files``): a file must end in
    ``.demo``; a folder contributes the entries whose names end in ``.demo`` (not its
    subfolders' files), here sorted by name (officially in ``os.listdir`` order, which is
    unspecified).

    Raises:
        ValueError: for a file not ending in ``.demo``, or a folder without ``.demo`` files.
        FileNotFoundError: if ``path`` does not exist.
    """
    text = os.fspath(path)
    if os.path.isfile(text):
        if not text.endswith(".demo"):
            raise ValueError(f"The path provided is not a '.demo' file: {text}.")
        return [text]
    if os.path.isdir(text):
        found = sorted(os.path.join(text, n) for n in os.listdir(text) if n.endswith(".demo"))
        if not found:
            raise ValueError(f"There are no '.demo' files in the provided directory {text}.")
        return found
    raise FileNotFoundError(f"The demonstration file or directory {text} does not exist.")


def load_demonstration(
    file_path: str | os.PathLike[str],
) -> tuple[BehaviorSpec, list[AgentInfoActionPairProto], int]:
    """Read a ``.demo`` file or a folder of them, as ML-Agents' trainers do.

    Official semantics (``mlagents.trainers.demo_loader.load_demonstration``): the files are
    :func:`get_demo_files`'s; their records are concatenated in that order; ``total_expected``
    is the sum of the files' ``number_steps``; the behavior spec is built from the first file
    that has a record (brain parameters plus its first record's observations) and the other
    files are not checked against it. For decoded arrays of one file use
    :func:`read_demonstration`.

    Returns:
        ``(behavior_spec, info_action_pairs, total_expected)``: the spec, every
        ``AgentInfoActionPairProto`` record, and the number of records the headers announce.

    Raises:
        FileNotFoundError, ValueError: as :func:`get_demo_files`.
        DemonstrationVersionError: (a :class:`RuntimeError`) for an unsupported format version.
        RuntimeError: if no file holds a record ("No BrainParameters found").
        DemonstrationError: for a file that is not a demonstration or is truncated.
    """
    behavior_spec: BehaviorSpec | None = None
    pairs: list[AgentInfoActionPairProto] = []
    total_expected = 0
    for name in get_demo_files(file_path):
        path = Path(name)
        meta, brain, records = _read_file(path, allow_empty=True)
        total_expected += meta.number_steps
        if behavior_spec is None and records:
            try:
                behavior_spec = behavior_spec_from_proto(brain, records[0].agent_info)
            except UnityObservationException as error:
                raise DemonstrationError(f"{path}: {error}") from error
        pairs.extend(records)
    if behavior_spec is None:
        raise RuntimeError(f"No BrainParameters found in demonstration file at {file_path}.")
    return behavior_spec, pairs, total_expected
