from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class SpaceTypeProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    discrete: _ClassVar[SpaceTypeProto]
    continuous: _ClassVar[SpaceTypeProto]
discrete: SpaceTypeProto
continuous: SpaceTypeProto
