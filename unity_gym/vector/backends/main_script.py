"""Starting worker processes without running the user's main script again.

With ``spawn`` and ``forkserver``, ``multiprocessing`` runs the parent's main script again in every
child (as ``__mp_main__``) before unpickling the process object, so that objects defined there can
be found. A script that creates a vector env at module level, without an
``if __name__ == "__main__":`` guard, then creates one again in each child, which fails.

A game worker needs nothing from the main script when its payload refers to nothing defined there
(:func:`main_references`): :func:`without_main_script` then starts it without the re-run.
Otherwise the re-run happens, and :func:`refuse_main_reimport`, called before starting workers,
stops a child whose re-run is creating a vector env with :data:`MAIN_REIMPORT_EXIT_CODE`, which
the parent turns into an explanation.
"""

from __future__ import annotations

import contextlib
import functools
import io
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Iterator
from multiprocessing import spawn
from typing import Any, Protocol

__all__ = [
    "MAIN_REIMPORT_EXIT_CODE",
    "main_references",
    "refuse_main_reimport",
    "without_main_script",
]

MAIN_REIMPORT_EXIT_CODE = 78
"""Exit status of a worker whose re-run of the main script tried to create a vector env."""

_MAIN_MODULES = frozenset({"__main__", "__mp_main__"})
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")
_KEEPS_MAIN_OUT = "_unity_gym_keeps_main_out"
_launching = threading.local()
_install_lock = threading.Lock()


class _MainReferenceFinder(pickle.Pickler):
    """Pickles into nothing and records what the payload takes from the main module."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL)
        self.found: list[str] = []

    def reducer_override(self, obj: Any) -> Any:
        try:
            module = getattr(obj, "__module__", None)
            name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        except Exception:  # an object whose attribute lookup fails is not ours to judge
            return NotImplemented
        if module in _MAIN_MODULES:
            self.found.append(f"{module}.{name}")
        return NotImplemented


def main_references(payload: object) -> list[str]:
    """Names of the classes and functions of ``__main__`` that pickling ``payload`` refers to."""
    finder = _MainReferenceFinder()
    try:
        finder.dump(payload)
    except (pickle.PicklingError, TypeError, AttributeError):
        return []  # unpicklable: the start itself reports it
    return sorted(set(finder.found))


class _PreparationData(Protocol):
    """The signature of ``multiprocessing.spawn.get_preparation_data``."""

    def __call__(self, name: str) -> dict[str, Any]: ...


def _keep_main_out(original: _PreparationData) -> _PreparationData:
    """Wrap ``multiprocessing.spawn.get_preparation_data`` so that, while this thread is
    starting a worker through :func:`without_main_script`, the child is not told to run the
    main script again. Other threads and other process starts get the original data."""

    @functools.wraps(original)
    def preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        if getattr(_launching, "without_main", False):
            for key in _MAIN_KEYS:
                data.pop(key, None)
        return data

    setattr(preparation_data, _KEEPS_MAIN_OUT, True)
    return preparation_data


@contextlib.contextmanager
def without_main_script() -> Iterator[None]:
    """Within the block, processes this thread starts with spawn/forkserver skip the main script."""
    with _install_lock:
        current = spawn.get_preparation_data
        if not getattr(current, _KEEPS_MAIN_OUT, False):
            spawn.get_preparation_data = _keep_main_out(current)
    _launching.without_main = True
    try:
        yield
    finally:
        _launching.without_main = False


def refuse_main_reimport(start_method: str) -> None:
    """Stop a worker whose re-run of the main script is creating a vector env.

    Called before starting workers. In a ``spawn``/``forkserver`` child that is still
    bootstrapping (running the parent's main script), starting processes cannot work; exiting
    with :data:`MAIN_REIMPORT_EXIT_CODE` lets the parent raise the explanation.
    """
    if not getattr(multiprocessing.current_process(), "_inheriting", False):
        return
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None) or getattr(
        getattr(main, "__spec__", None), "name", "the main module"
    )
    sys.stderr.write(
        f"unity_gym: this child process runs {script} again (multiprocessing "
        f"{start_method!r} start), and that script creates a vector env at import time. Put "
        'that code under if __name__ == "__main__":. Stopping this process.\n'
    )
    sys.stderr.flush()
    os._exit(MAIN_REIMPORT_EXIT_CODE)  # nothing of this half-started worker needs cleaning up
