"""Small synthetic ``.demo`` files and the real recordings' folder, for the imitation tests.

Test modules import these by name (several test folders have a ``conftest`` module).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from unity_gym.demo import demonstration_bytes
from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)

#: The real Unity recordings (``../shared/data/demos`` next to the repository).
DEMOS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "demos"


def real_demo(name: str) -> Path:
    """A real recording of :data:`DEMOS_DIR` (skips the test when the folder is absent)."""
    path = DEMOS_DIR / name
    if not path.is_file():
        pytest.skip(f"the real demonstrations folder {DEMOS_DIR} (with {name}) is absent")
    return path


def write_demo(
    path: Path,
    observations: Sequence[np.ndarray],
    *,
    continuous: np.ndarray | None = None,
    discrete: np.ndarray | None = None,
    branches: Sequence[int] = (),
    dones: Sequence[bool] = (),
    names: Sequence[str] = (),
) -> Path:
    """Write a ``.demo`` file of one agent's steps.

    Args:
        path: the file.
        observations: one ``(n, size)`` array per vector sensor.
        continuous: ``(n, continuous_size)`` recorded actions.
        discrete: ``(n, len(branches))`` recorded choices.
        branches: the discrete branch sizes.
        dones: per step, whether the episode ended there (default: never).
        names: the sensors' names (default: unnamed).
    """
    steps = len(observations[0])
    brain = BrainParametersProto(brain_name="Synthetic?team=0")
    brain.action_spec.num_continuous_actions = 0 if continuous is None else continuous.shape[1]
    brain.action_spec.num_discrete_actions = len(branches)
    brain.action_spec.discrete_branch_sizes.extend(branches)
    records = []
    for step in range(steps):
        record = AgentInfoActionPairProto()
        info = record.agent_info
        info.id = 1
        info.done = bool(dones[step]) if dones else False
        for index, sensor in enumerate(observations):
            obs = info.observations.add()
            obs.shape.append(sensor.shape[1])
            obs.float_data.data.extend(float(v) for v in sensor[step])
            obs.dimension_properties.append(1)
            if names:
                obs.name = names[index]
        if continuous is not None:
            record.action_info.continuous_actions.extend(float(v) for v in continuous[step])
        if discrete is not None:
            record.action_info.discrete_actions.extend(int(v) for v in discrete[step])
        records.append(record)
    meta = DemonstrationMetaProto(
        api_version=1, demonstration_name="Synthetic", number_steps=steps, number_episodes=1
    )
    path.write_bytes(demonstration_bytes(meta, brain, records))
    return path
