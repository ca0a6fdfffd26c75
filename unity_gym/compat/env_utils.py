"""``mlagents_envs.env_utils``: find and start a Unity executable, as the official module does.

Official facts followed (ml-agents 1.1.0 ``env_utils``): :func:`get_platform` is
:data:`sys.platform`; :func:`validate_environment_path` returns the path to launch for a build
name (with or without ``.x86_64``/``.x86``/``.exe``/``.app``), or ``None`` when nothing matches;
:func:`launch_executable` starts it in a new session with the given arguments, output to
``/dev/null`` unless the env_utils logger is at DEBUG, and raises
:class:`~unity_gym.exceptions.UnityEnvironmentException` when the build is not found or cannot
be executed. The lookup is :func:`unity_gym.launcher.find_executable`'s (the layouts Unity writes
per platform), so the path returned is absolute where the official one may be relative, and only
a *trailing* extension is stripped (the official strips ``.app``/``.exe``/... anywhere in the
path). ``UnityEnvironment`` itself launches through :class:`unity_gym.launcher.PlayerProcess`
(process-group cleanup, captured output), not through this function.
"""

from __future__ import annotations

import subprocess
import sys

from unity_gym.compat.logging_util import DEBUG, get_logger
from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.launcher import find_executable

__all__ = [
    "DEBUG",
    "UnityEnvironmentException",
    "get_logger",
    "get_platform",
    "launch_executable",
    "validate_environment_path",
]

logger = get_logger(__name__)


def get_platform() -> str:
    """The operating system as :data:`sys.platform` names it (``linux``, ``darwin``, ``win32``)."""
    return sys.platform


def validate_environment_path(env_path: str) -> str | None:
    """The executable to launch for build ``env_path``, or ``None`` if there is none.

    Args:
        env_path: a build's path, with or without its platform extension (``builds/3DBall``,
            ``builds/3DBall.x86_64``, a build folder).
    """
    try:
        found = find_executable(env_path, platform=get_platform())
    except UnityEnvironmentException:
        return None
    logger.debug(f"The launch string is {found}")
    return str(found)


def launch_executable(file_name: str, args: list[str]) -> subprocess.Popen[bytes]:
    """Start the Unity executable of build ``file_name`` with command-line ``args``.

    The process gets a session of its own (Ctrl+C in this terminal does not reach it); its
    output is discarded unless this module's logger is at DEBUG level. The caller owns the
    process: nothing here stops it.

    Raises:
        UnityEnvironmentException: if no executable matches ``file_name``, or it cannot be
            executed (permissions).
    """
    launch_string = validate_environment_path(file_name)
    if launch_string is None:
        raise UnityEnvironmentException(
            f"Couldn't launch the {file_name} environment. Provided filename does not match any "
            "environments: pass the path of a built player (e.g. 'builds/3DBall.x86_64')."
        )
    logger.debug(f"Running {launch_string} with args {args}")
    output = subprocess.DEVNULL if logger.getEffectiveLevel() > DEBUG else None
    try:
        return subprocess.Popen(
            [launch_string, *args], start_new_session=True, stdout=output, stderr=output
        )
    except PermissionError as error:
        raise UnityEnvironmentException(
            f"Error when trying to launch environment {launch_string}: permission denied. Make "
            f'it executable, e.g. "chmod -R 755 {launch_string}".'
        ) from error
