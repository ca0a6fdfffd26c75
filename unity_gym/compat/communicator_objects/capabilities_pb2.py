"""Mirror of the official module of this name (see the package docstring)."""

from __future__ import annotations

from typing import Any

from unity_gym.compat.communicator_objects._public_names import public_names
from unity_gym.protocol.communicator_objects import capabilities_pb2 as _generated

__all__ = public_names(_generated)


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(_generated, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
