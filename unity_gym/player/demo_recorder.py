"""Demonstration recording of heuristic play, like Unity's Demonstration Recorder (spec §8).

:class:`RecordingAcademy` plays a scene without a trainer and hands every report of one behavior
to a :class:`DemoRecorder`, which writes a ``.demo`` file that ``unity_gym.demo`` and the official
``mlagents`` demo loader read.

Contracts (where they differ from, or refine, Unity's recorder):

* Every agent of the recorded behavior is recorded (all areas), not a single agent.
* ``--record-steps N`` counts agent steps, i.e. ``AgentInfoActionPairProto`` records, as Unity's
  ``NumStepsToRecord`` does; exactly ``N`` are written and the player quits after the Academy
  step that produced the ``N``-th.
* Records are written episode by episode: an agent's records stay in memory until its episode
  ends, then go to the file together, so each episode is a contiguous run of records (loaders
  pair a record with the next one). Episodes still running at the end are written last, in slot
  order.
* A decision record carries the action the heuristic chose for its observation (Unity stores the
  previous decision's action there); a terminal record carries the last action the agent took.
* ``number_episodes`` = terminal records + unfinished episodes written; ``mean_reward`` = the sum
  of the recorded rewards divided by ``number_episodes``.
* The file is written to a temporary file next to the target and renamed when recording ends;
  a failed run leaves no file.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from unity_gym.behavior_names import BehaviorSelectionError, MultipleBehaviorsError
from unity_gym.behavior_names import select_behavior as pick_behavior
from unity_gym.demo import (
    API_VERSION,
    BRAIN_PARAMETERS_OFFSET,
    delimited,
    demonstration_header,
    sanitize_demonstration_name,
)
from unity_gym.protocol.communicator_objects.agent_action_pb2 import AgentActionProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)
from unity_gym.temp_files import create_temp_beside

from .academy import Academy, AgentBatch
from .encoding import length_delimited
from .errors import PlayerError
from .scenes.base import Scene
from .wire import AgentReports, OutputBuilder, brain_parameters

__all__ = ["DemoRecorder", "RecordingAcademy", "RecordingSummary", "select_behavior"]

logger = logging.getLogger("unity_gym.player")

DEMO_SUFFIX = ".demo"


@dataclass(frozen=True)
class RecordingSummary:
    """What a finished recording holds (the values of its meta-data)."""

    path: Path
    name: str
    number_steps: int
    number_episodes: int
    mean_reward: float


def select_behavior(batches: list[AgentBatch], behavior: str | None) -> AgentBatch:
    """The batch to record: ``behavior`` or the only one, by the rule of
    :func:`unity_gym.behavior_names.select_behavior` (full name, or plain name when unique).

    Raises:
        PlayerError: if ``behavior`` matches nothing or several, or is ``None`` with several
            behaviors.
    """
    by_name = {batch.name: batch for batch in batches}
    try:
        return by_name[
            pick_behavior(
                by_name,
                behavior,
                option="--record-behavior ",
                choose="a demonstration records one: choose it with --record-behavior NAME",
            )
        ]
    except (BehaviorSelectionError, MultipleBehaviorsError) as error:
        raise PlayerError(str(error)) from None


class DemoRecorder:
    """Writes the reports of one behavior, with their actions, as a ``.demo`` file.

    Args:
        path: the file to create (must end in ``.demo``; its folder must exist).
        batch: the recorded behavior's agents.
        max_records: number of agent steps to record (``>= 1``).

    Raises:
        PlayerError: if the path is unusable (wrong suffix, a folder, no such folder, not
            writable) or ``max_records < 1``.
    """

    def __init__(self, path: Path, batch: AgentBatch, max_records: int) -> None:
        if max_records < 1:
            raise PlayerError(f"--record-steps must be at least 1, got {max_records}")
        self.path = _check_target(path)
        self.name = sanitize_demonstration_name(self.path.stem)
        self.max_records = max_records
        self._batch = batch
        self._builder = OutputBuilder([batch.spec], None)
        spec = batch.spec.action_spec
        self._last_continuous = np.zeros((batch.size, spec.continuous_size), np.float32)
        self._last_discrete = np.zeros((batch.size, spec.discrete_size), np.int32)
        self._segments: dict[int, list[bytes]] = {}
        self.records = 0
        self.episodes = 0
        self.total_reward = 0.0
        brain = brain_parameters(batch.spec, None)
        brain.is_training = False
        try:
            # 0666 & ~umask like the other outputs (tempfile.mkstemp would give 0600)
            handle, temp_name = create_temp_beside(self.path, ".partial")
        except OSError as exc:
            raise PlayerError(
                f"cannot write the demonstration into {self.path.parent}: {exc.strerror or exc}; "
                "choose a writable folder for --record-demo"
            ) from None
        self._temp = Path(temp_name)
        self._file: IO[bytes] | None = os.fdopen(handle, "wb")
        self._file.write(b"\x00" * BRAIN_PARAMETERS_OFFSET + delimited(brain))

    @property
    def complete(self) -> bool:
        """All ``max_records`` agent steps are recorded."""
        return self.records >= self.max_records

    def record(self, queued: list[AgentReports]) -> None:
        """Record ``queued`` reports in order, after the heuristic set the batch's actions."""
        batch = self._batch
        for reports in queued:
            if self.complete:
                return
            infos = self._builder.encode_agent_infos(batch.name, reports)
            slots = reports.slots
            if reports.done:
                continuous = self._last_continuous[slots].copy()
                discrete = self._last_discrete[slots].copy()
                self._last_continuous[slots] = 0.0
                self._last_discrete[slots] = 0
            else:
                continuous, discrete = batch._continuous[slots], batch._discrete[slots]
                self._last_continuous[slots] = continuous
                self._last_discrete[slots] = discrete
            rewards = reports.rewards.tolist()
            for row, slot in enumerate(slots.tolist()):
                if self.complete:
                    return
                action = AgentActionProto(
                    continuous_actions=continuous[row].tolist(),
                    discrete_actions=discrete[row].tolist(),
                )
                pair = infos[row] + length_delimited(2, action.SerializeToString())
                self._segments.setdefault(slot, []).append(delimited(pair))
                self.records += 1
                self.total_reward += float(rewards[row])
                if reports.done:
                    self._flush(slot)

    def finish(self) -> RecordingSummary:
        """Write the unfinished episodes and the meta-data, then move the file into place.

        Raises:
            PlayerError: if nothing was recorded or the file cannot be written.
        """
        if self.records == 0:
            self.discard()
            raise PlayerError(
                f"no agent step of {self._batch.name} was recorded; {self.path} not written"
            )
        for slot in sorted(self._segments):
            self._flush(slot)
        meta = DemonstrationMetaProto(
            api_version=API_VERSION,
            demonstration_name=self.name,
            number_steps=self.records,
            number_episodes=self.episodes,
            mean_reward=self.total_reward / self.episodes,
        )
        file = self._require_file()
        try:
            file.write(meta.SerializeToString())
            file.seek(0)
            file.write(demonstration_header(meta))
            file.close()
            self._file = None
            os.replace(self._temp, self.path)
        except OSError as exc:
            self.discard()
            raise PlayerError(f"cannot write the demonstration {self.path}: {exc}") from None
        return RecordingSummary(
            self.path, self.name, self.records, self.episodes, float(meta.mean_reward)
        )

    def discard(self) -> None:
        """Drop the recording: close and delete the temporary file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._temp.unlink(missing_ok=True)

    def _flush(self, slot: int) -> None:
        segment = self._segments.pop(slot, None)
        if segment:
            self._require_file().write(b"".join(segment))
            self.episodes += 1

    def _require_file(self) -> IO[bytes]:
        if self._file is None:
            raise PlayerError(f"the recording of {self.path} is already closed")
        return self._file


def _check_target(path: Path) -> Path:
    if path.suffix != DEMO_SUFFIX:
        raise PlayerError(
            f"--record-demo {str(path)!r} must name a {DEMO_SUFFIX} file (loaders only read "
            f"that suffix), e.g. {path.with_suffix(DEMO_SUFFIX).name}"
        )
    if path.is_dir():
        raise PlayerError(f"--record-demo {str(path)!r} is a folder; name a {DEMO_SUFFIX} file")
    if not path.parent.is_dir():
        raise PlayerError(
            f"--record-demo {str(path)!r}: folder {str(path.parent)!r} does not exist; create it "
            "first"
        )
    return path


class RecordingAcademy(Academy):
    """An :class:`Academy` playing heuristically that records one behavior into a ``.demo``.

    ``environment_step()`` returns ``False`` (with :attr:`quit_reason` set) once the recorder
    is complete. Call :meth:`finish_recording` (or :meth:`discard_recording`) when done.

    Args:
        scene: as for :class:`Academy`.
        demo_path: the ``.demo`` file to write.
        record_steps: agent steps to record.
        record_behavior: behavior to record (``None`` = the scene's only behavior).
        **kwargs: the other :class:`Academy` arguments; there must be no ``connection``.

    Raises:
        PlayerError: with a trainer connection, an unknown or ambiguous behavior, or an
            unusable path.
    """

    def __init__(
        self,
        scene: Scene,
        *,
        demo_path: Path,
        record_steps: int,
        record_behavior: str | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("connection") is not None:
            raise PlayerError("demonstrations are recorded from heuristic play, without a trainer")
        super().__init__(scene, **kwargs)
        self._recorded = select_behavior(self.batches, record_behavior)
        self.recorder = DemoRecorder(demo_path, self._recorded, record_steps)

    def environment_step(self) -> bool:
        """One Academy step; ``False`` also when the recording is complete."""
        running = super().environment_step()
        if running and self.recorder.complete:
            self.quit_reason = f"recorded --record-steps {self.recorder.max_records} agent steps"
            return False
        return running

    def finish_recording(self) -> RecordingSummary:
        """Write the file (see :meth:`DemoRecorder.finish`)."""
        return self.recorder.finish()

    def discard_recording(self) -> None:
        """Delete the partial recording."""
        self.recorder.discard()

    def _decide_heuristically(self) -> None:
        queued = list(self._recorded.queued)
        super()._decide_heuristically()
        self.recorder.record(queued)
