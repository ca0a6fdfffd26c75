"""Writes synthetic ``.demo`` files laid out like Unity's DemonstrationWriter (spec §8).

A thin test-side wrapper of the public writer functions of :mod:`unity_gym.demo`.
"""

from __future__ import annotations

from collections.abc import Sequence

from unity_gym.demo import delimited, demonstration_bytes
from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)

__all__ = ["delimited", "demo_bytes"]


def demo_bytes(
    meta: DemonstrationMetaProto,
    brain: BrainParametersProto,
    records: Sequence[AgentInfoActionPairProto],
    trailing_meta: bool = True,
) -> bytes:
    """A file laid out exactly as Unity's DemonstrationWriter does."""
    return demonstration_bytes(meta, brain, records, trailing_meta=trailing_meta)
