from unity_gym.protocol.communicator_objects import observation_pb2 as _observation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentInfoProto(_message.Message):
    __slots__ = ("reward", "done", "max_step_reached", "id", "action_mask", "observations", "group_id", "group_reward")
    REWARD_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    MAX_STEP_REACHED_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_MASK_FIELD_NUMBER: _ClassVar[int]
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_REWARD_FIELD_NUMBER: _ClassVar[int]
    reward: float
    done: bool
    max_step_reached: bool
    id: int
    action_mask: _containers.RepeatedScalarFieldContainer[bool]
    observations: _containers.RepeatedCompositeFieldContainer[_observation_pb2.ObservationProto]
    group_id: int
    group_reward: float
    def __init__(self, reward: _Optional[float] = ..., done: _Optional[bool] = ..., max_step_reached: _Optional[bool] = ..., id: _Optional[int] = ..., action_mask: _Optional[_Iterable[bool]] = ..., observations: _Optional[_Iterable[_Union[_observation_pb2.ObservationProto, _Mapping]]] = ..., group_id: _Optional[int] = ..., group_reward: _Optional[float] = ...) -> None: ...
