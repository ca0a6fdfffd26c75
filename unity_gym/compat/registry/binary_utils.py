"""``mlagents_envs.registry.binary_utils``: download, unpack and find registry executables.

Official facts followed (ml-agents 1.1.0 ``binary_utils``): downloads live in
``<tmp>/ml-agents-binaries/`` (``tmp/`` for zips and manifests, ``binaries/`` for unpacked
builds, each created with mode 755), a build unpacked from ``url`` for entry ``name`` in
``binaries/<name>-<md5(url)>/``, where the platform's executable (``*.x86_64``, ``*.app``,
``*.exe``, never ``UnityCrashHandler*``) is searched recursively; a download is guarded by a
per-name lock file in ``<tmp>``; unpacked files get mode 755; progress bars go to stdout;
manifests are YAML (:func:`load_local_manifest`, :func:`load_remote_manifest`).

Deliberate differences, so nothing hangs without a network: every request times out after
:data:`NETWORK_TIMEOUT_S` seconds, and a network that cannot be reached (no DNS, refused
connection, timeout) fails at once with :class:`RegistryNetworkError`, where the official code
tries :data:`DOWNLOAD_ATTEMPTS` times whatever the error; a failed transfer or extraction is
still retried up to that many times. The lock is an ``fcntl`` lock (no ``filelock``
dependency); elsewhere than POSIX downloads are not locked.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any, Final
from zipfile import ZipFile

import yaml

from unity_gym.compat.env_utils import validate_environment_path
from unity_gym.compat.logging_util import get_logger
from unity_gym.exceptions import UnityEnvironmentException

__all__ = [
    "BLOCK_SIZE",
    "DOWNLOAD_ATTEMPTS",
    "NETWORK_TIMEOUT_S",
    "RegistryNetworkError",
    "ZipFileWithProgress",
    "download_and_extract_zip",
    "get_local_binary_path",
    "get_local_binary_path_if_exists",
    "get_logger",
    "get_tmp_dirs",
    "load_local_manifest",
    "load_remote_manifest",
    "print_progress",
    "validate_environment_path",
]

logger = get_logger(__name__)

BLOCK_SIZE: Final = 8192
"""Bytes read from the network (and written) at a time."""
DOWNLOAD_ATTEMPTS: Final = 5
"""Tries of a download whose transfer or extraction fails (not of an unreachable network)."""
NETWORK_TIMEOUT_S: Final = 10.0
"""Seconds each network operation (connect, each read) may take."""

_FOLDER: Final = "ml-agents-binaries"
_DIR_MODE: Final = 0o755


class RegistryNetworkError(UnityEnvironmentException, OSError):
    """A registry manifest or executable could not be fetched: the network is unreachable.

    Also an :class:`OSError`, the family of the ``urllib`` errors the official module raises.
    """


def _unreachable(error: BaseException) -> bool:
    """Whether ``error`` means the host cannot be reached at all (retrying is pointless)."""
    if isinstance(error, urllib.error.HTTPError):
        return False
    if isinstance(error, urllib.error.URLError):
        return True
    return isinstance(error, socket.timeout | TimeoutError | ConnectionError)


def _open_url(url: str) -> Any:
    """``urlopen(url)`` with :data:`NETWORK_TIMEOUT_S`.

    Raises:
        RegistryNetworkError: if the host cannot be reached.
        urllib.error.HTTPError: for an HTTP error status (its reason names the url).
    """
    try:
        return urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT_S)
    except urllib.error.HTTPError as error:
        error.msg = f"{error.msg} {url}"
        raise
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise RegistryNetworkError(
            f"Could not reach {url} ({reason}); the network may be unavailable."
        ) from error


def _platform_pattern() -> str:
    if sys.platform.startswith("linux"):
        return "*.x86_64"
    if sys.platform == "darwin":
        return "*.app"
    if sys.platform == "win32":
        return "*.exe"
    raise NotImplementedError(f"No executable extension is known for platform {sys.platform!r}.")


def _url_folder(bin_dir: str, name: str, url: str) -> str:
    return os.path.join(bin_dir, f"{name}-{hashlib.md5(url.encode()).hexdigest()}")


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on file ``path`` (POSIX); no lock elsewhere."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def get_tmp_dirs(tmp_dir: str | None = None) -> tuple[str, str]:
    """``(zip folder, binaries folder)`` under ``<tmp_dir>/ml-agents-binaries``, created if needed.

    Args:
        tmp_dir: the base folder; the system's temporary folder (``/tmp`` on macOS) if ``None``.
    """
    base = tmp_dir or ("/tmp" if sys.platform == "darwin" else tempfile.gettempdir())
    root = os.path.join(base, _FOLDER)
    folders = (os.path.join(root, "tmp"), os.path.join(root, "binaries"))
    for folder in (root, *folders):
        if not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
            os.chmod(folder, _DIR_MODE)
    return folders


def get_local_binary_path_if_exists(name: str, url: str, tmp_dir: str | None = None) -> str | None:
    """The executable already unpacked for entry ``name`` from ``url``, or ``None``.

    A match that is not a launchable build has its folder removed (and ``None`` is returned),
    as officially.
    """
    _, bin_dir = get_tmp_dirs(tmp_dir)
    pattern = os.path.join(_url_folder(bin_dir, name, url), "**", _platform_pattern())
    for candidate in glob.glob(pattern, recursive=True):
        if "UnityCrashHandler64" in candidate:
            continue
        if validate_environment_path(candidate) is None:
            shutil.rmtree(candidate, ignore_errors=True)
            return None
        return candidate
    return None


def get_local_binary_path(name: str, url: str, tmp_dir: str | None = None) -> str:
    """The executable of entry ``name``, downloaded from ``url`` and unpacked first if needed.

    Raises:
        RegistryNetworkError: if ``url`` cannot be reached (at the first try).
        FileNotFoundError: if the downloaded zip holds no executable for this platform.
    """
    tmp = tmp_dir or tempfile.gettempdir()
    get_tmp_dirs(tmp_dir)  # creates ``tmp`` too, where the lock file goes
    with _locked(os.path.join(tmp, name + ".lock")):
        path = get_local_binary_path_if_exists(name, url, tmp_dir=tmp_dir)
        if path is None:
            logger.debug(f"Local environment {name} not found, downloading it from {url}")
        attempt = 0
        while path is None and attempt < DOWNLOAD_ATTEMPTS:
            attempt += 1
            try:
                download_and_extract_zip(url, name, tmp_dir=tmp_dir)
            except Exception as error:
                if _unreachable(error) or isinstance(error, RegistryNetworkError):
                    raise
                if attempt >= DOWNLOAD_ATTEMPTS:
                    raise
                logger.warning(
                    f"Attempt {attempt} / {DOWNLOAD_ATTEMPTS}: failed to download and extract "
                    f"the binary ({error})."
                )
                continue
            path = get_local_binary_path_if_exists(name, url, tmp_dir=tmp_dir)
    if path is None:
        raise FileNotFoundError(
            f"Binary not found: make sure {url} is a valid url to a zip folder holding a Unity "
            f"executable for this platform ({_platform_pattern()})."
        )
    return path


def download_and_extract_zip(url: str, name: str, tmp_dir: str | None = None) -> None:
    """Download the zip at ``url`` and unpack it as entry ``name``'s build (mode 755).

    Raises:
        RegistryNetworkError: if ``url`` cannot be reached.
        urllib.error.HTTPError: for an HTTP error status.
    """
    zip_dir, bin_dir = get_tmp_dirs(tmp_dir)
    target = _url_folder(bin_dir, name, url)
    if os.path.exists(target):
        shutil.rmtree(target)
    response = _open_url(url)
    total = int(response.headers.get("content-length") or 0)
    zip_path = os.path.join(zip_dir, f"{uuid.uuid4()}.zip")
    try:
        with open(zip_path, "wb") as handle:
            done = 0
            while block := response.read(BLOCK_SIZE):
                done += len(block)
                handle.write(block)
                print_progress(f"  Downloading {name}", done / total * 100 if total else 0)
            print("")
        with ZipFileWithProgress(zip_path, "r") as archive:
            archive.extract_zip(f"  Extracting  {name}", target)
        print("")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(zip_path)
    for path in glob.glob(target + "/**/*", recursive=True):
        os.chmod(path, _DIR_MODE)
    print_progress(f"  Cleaning up {name}", 100)
    print("")


def print_progress(prefix: str, percent: float) -> None:
    """Draw a one-line progress bar on stdout (``percent`` clamped to 0..100)."""
    bar_len = 20
    percent = min(100.0, max(0.0, percent))
    filled = min(int(percent / 100 * bar_len), bar_len)
    bar = "|" + "\u2588" * filled + " " * (bar_len - filled) + "|"
    print(f"{prefix} : {bar} {percent:3.0f}% \r", end="", flush=True)


def load_remote_manifest(url: str) -> dict[str, Any]:
    """The YAML manifest at ``url`` as a dictionary.

    Raises:
        RegistryNetworkError: if ``url`` cannot be reached.
        urllib.error.HTTPError: for an HTTP error status.
    """
    tmp, _ = get_tmp_dirs()
    response = _open_url(url)
    path = os.path.join(tmp, f"{uuid.uuid4()}.yaml")
    try:
        with open(path, "wb") as handle:
            while block := response.read(BLOCK_SIZE):
                handle.write(block)
        return load_local_manifest(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def load_local_manifest(path: str) -> dict[str, Any]:
    """The YAML manifest file at ``path`` as a dictionary."""
    with open(path, encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.safe_load(handle)
    return loaded


class ZipFileWithProgress(ZipFile):
    """A :class:`~zipfile.ZipFile` whose :meth:`extract_zip` draws a progress bar."""

    def extract_zip(self, prefix: str, path: str) -> None:
        """Extract every member into folder ``path``, drawing a bar headed ``prefix``."""
        members = self.namelist()
        for count, member in enumerate(members, start=1):
            self.extract(member, os.fspath(path))
            print_progress(prefix, count / len(members) * 100)
