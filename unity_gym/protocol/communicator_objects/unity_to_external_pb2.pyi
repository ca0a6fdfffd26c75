from unity_gym.protocol.communicator_objects import unity_message_pb2 as _unity_message_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
