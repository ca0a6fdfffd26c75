"""Module attributes imported on first access (PEP 562), for packages that must import lightly.

``import unity_gym``, ``unity_gym.player`` and ``unity_gym.player.scenes`` export names whose
modules are heavy (the connection, the Academy, the scenes); each package hands its table to
:func:`lazy_exports` and imports a module only when one of its names is first used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` that import ``exports`` on first access.

    Args:
        package: the module's ``__name__``; relative module names resolve against it.
        exports: each exported name and the module that defines it (``"unity_gym.environment"``
            or ``".academy"``).
        namespace: the module's ``globals()``; a name is cached there once imported, so
            ``__getattr__`` runs once per name.

    Returns:
        ``(__getattr__, __dir__)`` to assign at the module's top level. ``__getattr__`` raises
        ``AttributeError`` for a name that is not exported.
    """

    def module_getattr(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def module_dir() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return module_getattr, module_dir
