"""Finding, starting and reliably stopping a game executable (spec §7).

The game runs in its own session and process group, with its stdout/stderr captured to a file so
errors can quote its last lines. Nothing it starts may outlive us: the whole group is terminated on
:meth:`PlayerProcess.close`, when the object is garbage collected, at interpreter exit, and - on
Linux through ``PR_SET_PDEATHSIG``, elsewhere through a small watchdog process - when this Python
process dies without cleaning up (the captured output's temporary folder, which that process
can no longer remove, is removed by the next launch).

A process that learns its own parent has died (a vector env's worker process, see
:mod:`unity_gym.vector.backends.subprocess_pool`) calls :func:`kill_launched_games` before
exiting at once, so that its games' whole process groups go too, not only the game leaders that
``PR_SET_PDEATHSIG`` reaches.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from unity_gym.exceptions import UnityEnvironmentException

__all__ = [
    "PlayerProcess",
    "build_player_args",
    "describe_returncode",
    "find_executable",
    "kill_launched_games",
    "remove_orphaned_output_dirs",
    "user_log_file",
]

logger = logging.getLogger(__name__)

PORT_ARGUMENT = "--mlagents-port"
"""The only command-line option the Unity package itself reads."""

EXECUTABLE_EXTENSIONS = (".x86_64", ".x86", ".exe", ".app")
"""Extensions of built players; only a trailing one is stripped from a given path."""

LOG_TAIL_LINES = 20
"""How many lines of the game's output an error message quotes."""

OUTPUT_DIR_PREFIX = "unity_gym_player_"
"""Name prefix of the temporary folder holding a game's captured output."""

OWNERS_FILE = "owners"
"""File in that folder naming the launching process and the game (``pid start-time`` lines)."""


# --------------------------------------------------------------------------------------------
# Discovery and arguments
# --------------------------------------------------------------------------------------------


def _strip_trailing_extension(path: str) -> str:
    """``path`` without one trailing executable extension (never touches the middle of a path)."""
    trimmed = path.rstrip("/\\") or path
    for extension in EXECUTABLE_EXTENSIONS:
        if trimmed.lower().endswith(extension):
            return trimmed[: -len(extension)]
    return trimmed


def _candidates(stem: Path, platform: str) -> list[Path]:
    """Paths where a player built from ``stem`` lives on ``platform``, most specific first."""
    if platform.startswith("linux"):
        found = [Path(f"{stem}.x86_64"), Path(f"{stem}.x86")]
        if stem.is_dir():  # a build folder: its player executables, sorted for determinism
            found += sorted(stem.glob("*.x86_64")) + sorted(stem.glob("*.x86"))
        return found
    if platform == "darwin":
        macos = Path(f"{stem}.app") / "Contents" / "MacOS"
        return [macos / stem.name, *sorted(macos.glob("*"))]
    if platform == "win32":
        exes = sorted(p for p in stem.glob("*.exe") if not p.name.startswith("UnityCrashHandler"))
        return [Path(f"{stem}.exe"), *exes]
    return []


def find_executable(
    file_name: str | os.PathLike[str], *, platform: str | None = None, cwd: str | None = None
) -> Path:
    """Locate the player executable designated by ``file_name``.

    The given path is tried as-is first (relative paths against ``cwd``); then, after removing
    one *trailing* ``.x86_64``/``.x86``/``.exe``/``.app``, the platform's usual build layouts
    (Linux ``X.x86_64``/``X.x86`` or a build folder; macOS ``X.app/Contents/MacOS/X``; Windows
    ``X.exe`` or a folder with one). Directories elsewhere in the path are never altered.

    Args:
        file_name: what the user passed as ``file_name``.
        platform: ``sys.platform`` value to resolve for (default: the current one).
        cwd: directory relative paths are resolved against (default: the current one).

    Returns:
        The absolute path of an existing file.

    Raises:
        UnityEnvironmentException: listing every path that was tried.
    """
    platform = platform or sys.platform
    base = Path(cwd) if cwd is not None else Path.cwd()
    given = str(file_name).strip()
    if not given:
        raise UnityEnvironmentException(
            "file_name is empty. Pass the path of a built player, or None to connect to the "
            "Unity Editor."
        )
    tried: list[Path] = []
    as_given = base / Path(given).expanduser()
    tried.append(as_given)
    if as_given.is_file():
        return as_given.resolve()
    stem = base / Path(_strip_trailing_extension(given)).expanduser()
    for candidate in _candidates(stem, platform):
        if candidate in tried:
            continue
        tried.append(candidate)
        if candidate.is_file():
            return candidate.resolve()
    listing = "\n  ".join(str(p) for p in tried)
    raise UnityEnvironmentException(
        f"Couldn't launch the {given!r} environment: no executable found. Tried:\n  {listing}\n"
        "Pass the path of the built player (e.g. 'builds/3DBall.x86_64' or 'builds/3DBall'), "
        "or file_name=None to connect to the Unity Editor."
    )


def user_log_file(additional_args: Sequence[str]) -> Path | None:
    """The file given after a ``-logFile`` option (any letter case) in ``additional_args``."""
    for index, arg in enumerate(additional_args):
        if arg.lower() == "-logfile" and index + 1 < len(additional_args):
            value = additional_args[index + 1]
            return None if value == "-" else Path(value)
    return None


def build_player_args(
    *,
    port: int,
    worker_id: int,
    no_graphics: bool,
    log_folder: str | os.PathLike[str] | None,
    additional_args: Sequence[str] = (),
) -> list[str]:
    """Command-line arguments for the player, in the official order.

    ``-nographics -batchmode`` (if ``no_graphics``), ``--mlagents-port PORT``,
    ``-logFile <log_folder>/Player-<worker_id>.log`` (if ``log_folder`` is set and the user did not
    pass ``-logFile`` themselves), then ``additional_args``.
    """
    args: list[str] = []
    if no_graphics:
        args += ["-nographics", "-batchmode"]
    args += [PORT_ARGUMENT, str(port)]
    user_set_log = any(arg.lower() == "-logfile" for arg in additional_args)
    if log_folder is not None and not user_set_log:
        args += ["-logFile", str(Path(log_folder) / f"Player-{worker_id}.log")]
    args += list(additional_args)
    return args


def describe_returncode(returncode: int) -> str:
    """Human description of a process return code, naming the signal for negative codes."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"return code {returncode} ({name})"
    return f"return code {returncode}"


def _tail(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of the text file at ``path`` (empty if unreadable)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except OSError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()[-lines:]


# --------------------------------------------------------------------------------------------
# Spawning: a long-lived thread so PR_SET_PDEATHSIG follows the process, not a short-lived thread
# --------------------------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with_parent(parent_pid: int) -> None:
    """Child-side set-up (runs between fork and exec): get SIGKILL when the parent dies."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


class _Spawner:
    """Starts processes from one daemon thread that lives as long as the interpreter.

    Linux delivers the parent-death signal when the *thread* that forked the child exits; forking
    from a thread that never exits makes it mean "when this process dies".
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._owner_pid = os.getpid()

    def run(self, job: Callable[[], Any]) -> Any:
        """Run ``job`` on the spawner thread and return its result (or raise its exception)."""
        with self._lock:
            if self._thread is None or self._owner_pid != os.getpid():
                # first use, or we are a forked copy whose spawner thread does not exist
                self._jobs = queue.SimpleQueue()
                self._owner_pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._serve, args=(self._jobs,), name="unity-gym-spawner", daemon=True
                )
                self._thread.start()
            future: Future[Any] = Future()
            self._jobs.put((job, future))
        return future.result()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
        while True:
            job, future = jobs.get()
            try:
                future.set_result(job())
            except BaseException as error:
                future.set_exception(error)


_SPAWNER = _Spawner()

_WATCHDOG_SOURCE = """
import os, signal, sys, time
group = int(sys.argv[1])
sys.stdin.buffer.read()
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(group, sig)
    except OSError:
        break
    time.sleep(2.0)
"""


def _start_watchdog(process_group: int) -> subprocess.Popen[bytes]:
    """A helper process that kills ``process_group`` when its stdin closes (we died or closed)."""
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG_SOURCE, str(process_group)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


# --------------------------------------------------------------------------------------------
# Process group termination
# --------------------------------------------------------------------------------------------

_LIVE_GROUPS: dict[int, int] = {}
"""Process group of each game launched and not yet stopped -> pid of the process launching it."""

_LIVE_GROUPS_LOCK = threading.Lock()


def _remember_group(process_group: int) -> None:
    with _LIVE_GROUPS_LOCK:
        _LIVE_GROUPS[process_group] = os.getpid()


def _forget_group(process_group: int) -> None:
    with _LIVE_GROUPS_LOCK:
        _LIVE_GROUPS.pop(process_group, None)


def kill_launched_games() -> list[int]:
    """SIGKILL the whole process group of every game this process launched and has not stopped.

    For a process about to exit without its usual cleanup (no grace, no waiting, no removal of
    temporary folders: a later launch removes those, see :func:`remove_orphaned_output_dirs`),
    e.g. a worker process whose parent died. Safe from any thread and at any time; games
    launched by another process (a parent this process was forked from) are left alone. On
    Windows, which has no process groups, nothing is done.

    Returns:
        The process groups signalled.
    """
    me = os.getpid()
    with _LIVE_GROUPS_LOCK:
        groups = [group for group, owner in _LIVE_GROUPS.items() if owner == me]
    if os.name != "posix":  # pragma: no cover - no process groups to signal
        return []
    for group in groups:
        _signal_group(group, signal.SIGKILL)
    return groups


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), [] if unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _group_alive(process_group: int) -> bool:
    """True while some non-zombie process belongs to ``process_group``.

    Zombies are skipped on Linux (via ``/proc``): orphans reparented to an init that does not
    reap (common in containers) would otherwise look alive forever.
    """
    try:
        os.killpg(process_group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not sys.platform.startswith("linux") or not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields after the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(process_group) and fields[0] not in "ZX":
            return True
    return False


def _signal_group(process_group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process_group, sig)


def _terminate_group(
    popen: subprocess.Popen[bytes],
    process_group: int,
    watchdog: subprocess.Popen[bytes] | None,
    temp_dir: str | None,
    term_grace: float,
) -> None:
    """Stop every process of ``process_group`` (SIGTERM, ``term_grace`` seconds, SIGKILL).

    Safe to call at interpreter exit and more than once; never raises for already-dead processes.
    """
    if os.name == "posix":
        if popen.poll() is not None:
            popen.wait()  # reap the leader first so a zombie does not look like a live member
        _signal_group(process_group, signal.SIGTERM)
        _signal_group(process_group, signal.SIGCONT)  # a stopped game must run to act on it
        deadline = time.monotonic() + term_grace
        while time.monotonic() < deadline:
            if popen.poll() is not None:
                popen.wait()
                if not _group_alive(process_group):
                    break
            time.sleep(0.02)
        _signal_group(process_group, signal.SIGKILL)
    else:  # pragma: no cover - Windows has no process groups to signal
        with contextlib.suppress(OSError):
            popen.kill()
    _forget_group(process_group)  # only now: killed, its group id must not be signalled again
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(timeout=5.0)
    if watchdog is not None:
        if watchdog.stdin is not None:
            with contextlib.suppress(OSError):
                watchdog.stdin.close()
        with contextlib.suppress(OSError):
            watchdog.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=5.0)
    if temp_dir is not None:
        shutil.rmtree(temp_dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The running player
# --------------------------------------------------------------------------------------------

ExitCallback = Callable[["PlayerProcess"], None]


class _ExitNotifier:
    """Runs callbacks once the process has exited (held by the watcher thread, not the player)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.callbacks: list[ExitCallback] = []
        self.exited = False


def _watch_exit(
    popen: subprocess.Popen[bytes],
    notifier: _ExitNotifier,
    player_ref: weakref.ReferenceType[PlayerProcess],
) -> None:
    popen.wait()
    with notifier.lock:
        notifier.exited = True
        callbacks = list(notifier.callbacks)
        notifier.callbacks.clear()
    player = player_ref()
    if player is None:
        return
    for callback in callbacks:
        try:
            callback(player)
        except Exception:  # a failing observer must not hide the others
            logger.exception("exit callback %r failed", callback)


class PlayerProcess:
    """A launched game: its own process group, captured output, guaranteed cleanup.

    Use :meth:`launch` to start one.

    Attributes:
        executable: the program that was started.
        args: its command-line arguments.
        output_path: file receiving the game's stdout and stderr.
        game_log_path: the ``-logFile`` path, if one was passed.
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        executable: Path,
        args: list[str],
        output_path: Path,
        game_log_path: Path | None,
        temp_dir: str | None,
        watchdog: subprocess.Popen[bytes] | None,
        term_grace: float,
    ) -> None:
        self._popen = popen
        self.executable = executable
        self.args = args
        self.output_path = output_path
        self.game_log_path = game_log_path
        self._process_group = popen.pid
        self._notifier = _ExitNotifier()
        self._cleanup = weakref.finalize(
            self, _terminate_group, popen, popen.pid, watchdog, temp_dir, term_grace
        )
        threading.Thread(
            target=_watch_exit,
            args=(popen, self._notifier, weakref.ref(self)),
            name=f"unity-gym-exit-watch-{popen.pid}",
            daemon=True,
        ).start()

    @classmethod
    def launch(
        cls,
        executable: str | os.PathLike[str],
        args: Sequence[str],
        *,
        output_dir: str | os.PathLike[str] | None = None,
        worker_id: int = 0,
        die_with_parent: bool = True,
        use_watchdog: bool | None = None,
        term_grace: float = 2.0,
    ) -> PlayerProcess:
        """Start ``executable args`` in a new session and process group.

        Args:
            executable: program to run (see :func:`find_executable`).
            args: its arguments (see :func:`build_player_args`).
            output_dir: where ``Player-<worker_id>-stdout.log`` is written; a temporary
                directory (removed on close; one a killed process left behind is removed by a
                later launch, see :func:`remove_orphaned_output_dirs`) when None.
            worker_id: used in the output file name.
            die_with_parent: make the game die when this process dies.
            use_watchdog: force (True) or forbid (False) the watchdog process used where
                ``PR_SET_PDEATHSIG`` is unavailable; by default only used there.
            term_grace: seconds between SIGTERM and SIGKILL when stopping the group.

        Raises:
            UnityEnvironmentException: if the program cannot be started (with the reason and
                what to do).
        """
        executable = Path(executable)
        temp_dir: str | None = None
        if output_dir is None:
            remove_orphaned_output_dirs()
            temp_dir = tempfile.mkdtemp(prefix=OUTPUT_DIR_PREFIX)
            output_dir = temp_dir
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        output_path = Path(output_dir) / f"Player-{worker_id}-stdout.log"
        command = [str(executable), *args]
        pdeathsig = die_with_parent and _PRCTL is not None and use_watchdog is not True
        watchdog_wanted = die_with_parent and os.name == "posix" and not pdeathsig
        if use_watchdog is False:
            watchdog_wanted = False
        parent_pid = os.getpid()

        def start() -> subprocess.Popen[bytes]:
            with output_path.open("ab") as sink:
                return subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=(lambda: _die_with_parent(parent_pid)) if pdeathsig else None,
                )

        try:
            popen: subprocess.Popen[bytes] = _SPAWNER.run(start)
        except PermissionError as error:
            _remove(temp_dir)
            raise UnityEnvironmentException(
                f"Couldn't start {executable}: permission denied ({error.strerror}). Make it "
                f'executable, e.g. "chmod 755 {executable}".'
            ) from error
        except OSError as error:
            _remove(temp_dir)
            raise UnityEnvironmentException(
                f"Couldn't start {executable}: {error.strerror or error}. Check that it is a "
                "player built for this platform (a script needs a '#!' line)."
            ) from error
        _remember_group(popen.pid)
        if temp_dir is not None:
            _write_owners(Path(temp_dir), popen.pid)
        watchdog = _start_watchdog(popen.pid) if watchdog_wanted else None
        logger.debug("launched %s (pid %d)", command, popen.pid)
        return cls(
            popen,
            executable=executable,
            args=list(args),
            output_path=output_path,
            game_log_path=user_log_file(args),
            temp_dir=temp_dir,
            watchdog=watchdog,
            term_grace=term_grace,
        )

    @property
    def popen(self) -> subprocess.Popen[bytes]:
        """The underlying :class:`subprocess.Popen`."""
        return self._popen

    @property
    def pid(self) -> int:
        """Process id of the game (also its process group id)."""
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status, or None while running."""
        return self._popen.poll()

    def is_running(self) -> bool:
        """True until the game process has exited."""
        return self._popen.poll() is None

    def is_stopped(self) -> bool:
        """True while the game is stopped (SIGSTOP/SIGTSTP, or held by a debugger; Linux only)."""
        return self.is_running() and _stat_fields(self.pid)[:1] in (["T"], ["t"])

    def on_exit(self, callback: ExitCallback) -> None:
        """Call ``callback(self)`` from a watcher thread once the process exits.

        If it has already exited, the callback runs immediately in the calling thread.
        """
        with self._notifier.lock:
            if not self._notifier.exited:
                self._notifier.callbacks.append(callback)
                return
        callback(self)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The last ``lines`` lines the game wrote to its ``-logFile`` and its captured output."""
        collected: list[str] = []
        for path in (self.game_log_path, self.output_path):
            if path is not None:
                collected += _tail(path, lines)
        return collected[-lines:]

    def describe_exit(self) -> str:
        """One paragraph on how the game ended, quoting its last log lines."""
        code = self._popen.poll()
        if code is not None:
            status = f"exited with {describe_returncode(code)}"
        elif self.is_stopped():
            status = "is stopped (SIGSTOP, Ctrl-Z or a debugger), so it cannot answer"
        else:
            status = "is still running"
        text = f"The game process {self.executable} (pid {self.pid}) {status}."
        tail = self.log_tail()
        if tail:
            text += f"\nLast {len(tail)} lines of its log:\n    " + "\n    ".join(tail)
        else:
            text += f"\nIt wrote nothing to {self.output_path}."
        return text

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` seconds for the game to exit; its return code or None."""
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self, timeout: float = 0.0) -> int | None:
        """Give the game ``timeout`` seconds to exit by itself, then stop its whole group.

        A stopped game (:meth:`is_stopped`) gets no grace, and is continued after SIGTERM so
        that it acts on it: stopping a frozen game takes no longer than stopping a running one.

        Returns:
            The game's return code.
        """
        if self._cleanup.alive and timeout > 0 and self.is_running() and not self.is_stopped():
            self.wait(timeout)  # a stopped game cannot exit by itself: no grace for it
        self._cleanup()
        return self._popen.poll()

    def __repr__(self) -> str:
        return f"PlayerProcess(pid={self.pid}, executable={str(self.executable)!r})"


def _remove(directory: str | None) -> None:
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def _start_time(pid: int) -> str:
    """When ``pid`` started (clock ticks since boot), "" where unknown."""
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else ""


def _is_alive(pid: int, start_time: str) -> bool:
    """True while ``pid`` runs (a zombie does not) and, where known, is still the process that
    started at ``start_time`` (not a later one given the same pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat_fields(pid)
    if not fields:
        return True  # no /proc: trust the signal
    if fields[0] in ("Z", "X"):
        return False
    return not start_time or len(fields) <= 19 or fields[19] == start_time


def _write_owners(directory: Path, game_pid: int) -> None:
    """Name this process and the game in ``directory`` (see :func:`remove_orphaned_output_dirs`)."""
    me = os.getpid()
    with contextlib.suppress(OSError):
        (directory / OWNERS_FILE).write_text(
            f"{me} {_start_time(me)}\n{game_pid} {_start_time(game_pid)}\n", encoding="ascii"
        )


def remove_orphaned_output_dirs(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the temporary output folders that killed processes left behind.

    A game launched without ``output_dir`` writes its output to a temporary folder that
    :meth:`PlayerProcess.close` (or garbage collection, or interpreter exit) removes. A Python
    process killed outright (SIGKILL, a lost Ray actor) takes its game with it but cannot remove
    the folder; :meth:`PlayerProcess.launch` calls this to remove such folders, so they do not
    pile up. Only folders of this user whose owners file names a launching process and a game
    that have both exited are touched.

    Args:
        root: where to look (default: :func:`tempfile.gettempdir`).

    Returns:
        The folders removed.
    """
    base = Path(tempfile.gettempdir() if root is None else root)
    removed: list[Path] = []
    try:
        candidates = list(base.glob(f"{OUTPUT_DIR_PREFIX}*"))
    except OSError:
        return removed
    for directory in candidates:
        try:
            if hasattr(os, "getuid") and directory.stat().st_uid != os.getuid():
                continue
            owners = []
            for line in (directory / OWNERS_FILE).read_text(encoding="ascii").splitlines():
                pid, _, start_time = line.partition(" ")
                owners.append((int(pid), start_time.strip()))
        except (OSError, ValueError):
            continue  # not ours, being created, or from an older version: leave it
        if owners and not any(_is_alive(pid, start_time) for pid, start_time in owners):
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
    return removed
