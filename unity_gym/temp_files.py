"""Temporary files created beside their target, with the permissions a plain ``open`` gives.

:func:`tempfile.mkstemp` always creates mode ``0600``; a file that then replaces its target
(atomic writes of checkpoints, ONNX models, ``configuration.yaml``, ``timers.json``,
``training_status.json``, recorded demonstrations) would keep that mode whatever the process
umask. :func:`create_temp_beside` creates the file with mode ``0666`` masked by the umask
instead, as ``open(path, "w")`` (and TensorBoard's event files, and log files) do.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

__all__ = ["create_temp_beside"]

_ATTEMPTS = 100
_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
)


def create_temp_beside(path: str | os.PathLike[str], suffix: str = ".tmp") -> tuple[int, Path]:
    """Create a new, empty file in ``path``'s folder, named ``.<name>.<random><suffix>``.

    The file is opened write-only (binary) and created with mode ``0666 & ~umask``; it is
    never an existing file (``O_EXCL``). The folder must exist.

    Args:
        path: the file the temporary one will replace (its folder and name are used).
        suffix: the end of the temporary file's name.

    Returns:
        The open file descriptor (the caller closes it) and the temporary file's path.

    Raises:
        OSError: the folder is missing or not writable (or no free name was found).
    """
    target = Path(path)
    for _ in range(_ATTEMPTS):
        candidate = target.parent / f".{target.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(candidate, _FLAGS, 0o666), candidate
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name found", str(target.parent))
