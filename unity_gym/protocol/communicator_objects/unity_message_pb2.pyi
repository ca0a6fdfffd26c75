from unity_gym.protocol.communicator_objects import header_pb2 as _header_pb2
from unity_gym.protocol.communicator_objects import unity_output_pb2 as _unity_output_pb2
from unity_gym.protocol.communicator_objects import unity_input_pb2 as _unity_input_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UnityMessageProto(_message.Message):
    __slots__ = ("header", "unity_output", "unity_input")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    UNITY_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    UNITY_INPUT_FIELD_NUMBER: _ClassVar[int]
    header: _header_pb2.HeaderProto
    unity_output: _unity_output_pb2.UnityOutputProto
    unity_input: _unity_input_pb2.UnityInputProto
    def __init__(self, header: _Optional[_Union[_header_pb2.HeaderProto, _Mapping]] = ..., unity_output: _Optional[_Union[_unity_output_pb2.UnityOutputProto, _Mapping]] = ..., unity_input: _Optional[_Union[_unity_input_pb2.UnityInputProto, _Mapping]] = ...) -> None: ...
