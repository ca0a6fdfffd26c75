"""The public names of a generated ``_pb2`` module, shared by the mirror modules of this package
(a module of its own, so that they need not import their package root)."""

from __future__ import annotations

from types import ModuleType

__all__ = ["public_names"]


def public_names(module: ModuleType) -> list[str]:
    """The names a generated ``_pb2`` module defines for its users, sorted.

    Messages, enum wrappers, enum values and ``DESCRIPTOR``; not the protobuf modules it
    imports nor its private names.
    """
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    )
