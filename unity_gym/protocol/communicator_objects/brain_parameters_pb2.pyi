from unity_gym.protocol.communicator_objects import space_type_pb2 as _space_type_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ActionSpecProto(_message.Message):
    __slots__ = ("num_continuous_actions", "num_discrete_actions", "discrete_branch_sizes", "action_descriptions")
    NUM_CONTINUOUS_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    NUM_DISCRETE_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    DISCRETE_BRANCH_SIZES_FIELD_NUMBER: _ClassVar[int]
    ACTION_DESCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    num_continuous_actions: int
    num_discrete_actions: int
    discrete_branch_sizes: _containers.RepeatedScalarFieldContainer[int]
    action_descriptions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, num_continuous_actions: _Optional[int] = ..., num_discrete_actions: _Optional[int] = ..., discrete_branch_sizes: _Optional[_Iterable[int]] = ..., action_descriptions: _Optional[_Iterable[str]] = ...) -> None: ...

class BrainParametersProto(_message.Message):
    __slots__ = ("vector_action_size_deprecated", "vector_action_descriptions_deprecated", "vector_action_space_type_deprecated", "brain_name", "is_training", "action_spec")
    VECTOR_ACTION_SIZE_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    VECTOR_ACTION_DESCRIPTIONS_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    VECTOR_ACTION_SPACE_TYPE_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    BRAIN_NAME_FIELD_NUMBER: _ClassVar[int]
    IS_TRAINING_FIELD_NUMBER: _ClassVar[int]
    ACTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    vector_action_size_deprecated: _containers.RepeatedScalarFieldContainer[int]
    vector_action_descriptions_deprecated: _containers.RepeatedScalarFieldContainer[str]
    vector_action_space_type_deprecated: _space_type_pb2.SpaceTypeProto
    brain_name: str
    is_training: bool
    action_spec: ActionSpecProto
    def __init__(self, vector_action_size_deprecated: _Optional[_Iterable[int]] = ..., vector_action_descriptions_deprecated: _Optional[_Iterable[str]] = ..., vector_action_space_type_deprecated: _Optional[_Union[_space_type_pb2.SpaceTypeProto, str]] = ..., brain_name: _Optional[str] = ..., is_training: _Optional[bool] = ..., action_spec: _Optional[_Union[ActionSpecProto, _Mapping]] = ...) -> None: ...
