from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class EngineConfigurationProto(_message.Message):
    __slots__ = ("width", "height", "quality_level", "time_scale", "target_frame_rate", "show_monitor")
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    QUALITY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TIME_SCALE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FRAME_RATE_FIELD_NUMBER: _ClassVar[int]
    SHOW_MONITOR_FIELD_NUMBER: _ClassVar[int]
    width: int
    height: int
    quality_level: int
    time_scale: float
    target_frame_rate: int
    show_monitor: bool
    def __init__(self, width: _Optional[int] = ..., height: _Optional[int] = ..., quality_level: _Optional[int] = ..., time_scale: _Optional[float] = ..., target_frame_rate: _Optional[int] = ..., show_monitor: _Optional[bool] = ...) -> None: ...
