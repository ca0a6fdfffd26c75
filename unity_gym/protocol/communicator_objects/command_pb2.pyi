from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class CommandProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STEP: _ClassVar[CommandProto]
    RESET: _ClassVar[CommandProto]
    QUIT: _ClassVar[CommandProto]
STEP: CommandProto
RESET: CommandProto
QUIT: CommandProto
