"""Writes synthetic ``.demo`` files laid out like Unity's DemonstrationWriter (spec §8)."""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.message import Message

from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)


def delimited(message: Message) -> bytes:
    """``message`` serialized with a varint length prefix."""
    body = message.SerializeToString()
    size, prefix = len(body), bytearray()
    while True:
        byte = size & 0x7F
        size >>= 7
        if size:
            prefix.append(byte | 0x80)
        else:
            prefix.append(byte)
            return bytes(prefix) + body


def demo_bytes(
    meta: DemonstrationMetaProto,
    brain: BrainParametersProto,
    records: Sequence[AgentInfoActionPairProto],
    trailing_meta: bool = True,
) -> bytes:
    """A file laid out exactly as Unity's DemonstrationWriter does."""
    head = delimited(meta)
    assert len(head) <= 33
    data = head + b"\x00" * (33 - len(head)) + delimited(brain)
    data += b"".join(delimited(r) for r in records)
    if trailing_meta:
        data += meta.SerializeToString()
    return data
