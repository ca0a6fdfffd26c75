"""``mlagents_envs.registry.remote_registry_entry``: an entry whose build is downloaded.

Official facts followed (ml-agents 1.1.0 ``RemoteRegistryEntry``): the constructor takes
``identifier, expected_reward, description, linux_url, darwin_url, win_url,
additional_args=None, tmp_dir=None``; :meth:`RemoteRegistryEntry.make` picks this platform's
url (:class:`FileNotFoundError` when it has none), downloads and unpacks the zip once
(:func:`~unity_gym.compat.registry.binary_utils.get_local_binary_path`), drops a ``file_name``
keyword, appends the entry's ``additional_args`` to the caller's, and passes every other keyword
to ``UnityEnvironment`` (here unity_gym's).
"""

from __future__ import annotations

import sys
from typing import Any

from unity_gym.base_env import BaseEnv
from unity_gym.compat.registry.base_registry_entry import BaseRegistryEntry
from unity_gym.compat.registry.binary_utils import get_local_binary_path
from unity_gym.environment import UnityEnvironment

__all__ = [
    "BaseEnv",
    "BaseRegistryEntry",
    "RemoteRegistryEntry",
    "UnityEnvironment",
    "get_local_binary_path",
]


def merged_additional_args(kwargs: dict[str, Any], extra: list[str] | None) -> dict[str, Any]:
    """``kwargs`` for ``UnityEnvironment`` as registry entries pass them.

    ``file_name`` is dropped (the entry chooses the build) and ``additional_args`` becomes the
    caller's list followed by the entry's ``extra`` ones (official ``RemoteRegistryEntry.make``).
    """
    passed = dict(kwargs)
    passed.pop("file_name", None)
    args = list(passed.get("additional_args") or [])
    args += list(extra or [])
    passed["additional_args"] = args
    return passed


class RemoteRegistryEntry(BaseRegistryEntry):
    """A registry entry that downloads its Unity build (a zip per platform) on first ``make``.

    Args:
        identifier: the environment's name.
        expected_reward: reward at which the task counts as solved, if known.
        description: human-readable description.
        linux_url: url of the Linux build's zip (one folder, the executable at its root).
        darwin_url: url of the macOS build's zip.
        win_url: url of the Windows build's zip.
        additional_args: command-line arguments always given to this build.
        tmp_dir: base folder for downloads instead of the system's temporary folder.
    """

    def __init__(
        self,
        identifier: str,
        expected_reward: float | None,
        description: str | None,
        linux_url: str | None,
        darwin_url: str | None,
        win_url: str | None,
        additional_args: list[str] | None = None,
        tmp_dir: str | None = None,
    ) -> None:
        super().__init__(identifier, expected_reward, description)
        self._linux_url = linux_url
        self._darwin_url = darwin_url
        self._win_url = win_url
        self._add_args = additional_args
        self._tmp_dir_override = tmp_dir

    def _url(self) -> str | None:
        if sys.platform.startswith("linux"):
            return self._linux_url
        if sys.platform == "darwin":
            return self._darwin_url
        if sys.platform == "win32":
            return self._win_url
        return None

    def make(self, **kwargs: Any) -> BaseEnv:
        """Download the build if needed and open it: ``UnityEnvironment(file_name=build, **kw)``.

        Args:
            **kwargs: ``UnityEnvironment`` keywords (``worker_id``, ``base_port``,
                ``no_graphics``, ``side_channels``, ...); ``file_name`` is ignored.

        Raises:
            FileNotFoundError: if the entry has no url for this platform, or the zip holds no
                executable.
            RegistryNetworkError: if the url cannot be reached (no network).
        """
        url = self._url()
        if url is None:
            raise FileNotFoundError(
                f"The entry {self.identifier} does not contain a valid url for this platform "
                f"({sys.platform})."
            )
        path = get_local_binary_path(self.identifier, url, tmp_dir=self._tmp_dir_override)
        return UnityEnvironment(file_name=path, **merged_additional_args(kwargs, self._add_args))
