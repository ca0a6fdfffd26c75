from unity_gym.protocol.communicator_objects import capabilities_pb2 as _capabilities_pb2
from unity_gym.protocol.communicator_objects import brain_parameters_pb2 as _brain_parameters_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UnityRLInitializationOutputProto(_message.Message):
    __slots__ = ("name", "communication_version", "log_path", "brain_parameters", "package_version", "capabilities")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_VERSION_FIELD_NUMBER: _ClassVar[int]
    LOG_PATH_FIELD_NUMBER: _ClassVar[int]
    BRAIN_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    PACKAGE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    communication_version: str
    log_path: str
    brain_parameters: _containers.RepeatedCompositeFieldContainer[_brain_parameters_pb2.BrainParametersProto]
    package_version: str
    capabilities: _capabilities_pb2.UnityRLCapabilitiesProto
    def __init__(self, name: _Optional[str] = ..., communication_version: _Optional[str] = ..., log_path: _Optional[str] = ..., brain_parameters: _Optional[_Iterable[_Union[_brain_parameters_pb2.BrainParametersProto, _Mapping]]] = ..., package_version: _Optional[str] = ..., capabilities: _Optional[_Union[_capabilities_pb2.UnityRLCapabilitiesProto, _Mapping]] = ...) -> None: ...
