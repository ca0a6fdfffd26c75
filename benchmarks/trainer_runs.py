"""Helpers the training benchmarks share: run ``unity-train`` to a step budget, read its
summaries and TensorBoard scalars, and race it against the official ``mlagents-learn`` to a
reward (the mean reward, or the mean group reward of a cooperative game) on one executable of a
built-in scene.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from benchmarks.mlagents_learn_3dball import (
    _LEARN_WITH_LEGACY_ONNX_EXPORT,
    ensure_onnx,
    parse_summaries,
)
from benchmarks.peer_runner import free_port, peer_process_environment
from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv
from benchmarks.seeds import (
    Figure,
    Goal,
    add_seed_arguments,
    chosen_seeds,
    format_table,
    seed_workdir,
    summarize_figures,
)
from benchmarks.train_3dball import ContenderProcess, ContenderResult, run_until_target

__all__ = [
    "GROUP_REWARD",
    "Part",
    "RunStoppedError",
    "ScalarPoint",
    "Trainer",
    "add_common_arguments",
    "budget_shortfall",
    "last_scalar",
    "mean_of_last",
    "mlagents_learn_command",
    "race_mlagents_learn",
    "run_parts",
    "run_until_group_reward",
    "scalar_series",
    "train",
    "train_all",
    "train_mlagents_learn",
    "with_max_steps",
]

Trainer = Literal["unity-train", "mlagents-learn"]
"""Who trains a run of :func:`train`."""
Part = Callable[[argparse.Namespace, Path], "Sequence[Figure] | None"]
"""One part of a benchmark, run once per seed (``args.seed``) in that seed's folder: the figures
it measured, each with its goal (:mod:`benchmarks.seeds`), or None when it could not run (the
reason printed)."""

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The TensorBoard tag of a group's cumulative reward per group episode (ML-Agents' name; POCA).
GROUP_REWARD = "Environment/Group Cumulative Reward"
#: A summary line of ``unity-train`` or ``mlagents-learn``: behavior, step and the rest.
_SUMMARY_LINE = re.compile(
    r"\] (?P<behavior>[^.\s]+)\. Step: (?P<step>\d+)\. Time Elapsed: [\d.]+ s\.(?P<rest>.*)"
)
#: ``mlagents-learn`` shows the mean group reward in its summary line when there is one.
_MEAN_GROUP_REWARD = re.compile(r"Mean Group Reward: (?P<mean>-?\d+(?:\.\d+)?)")


def with_max_steps(config: dict[str, Any], steps: int, summaries: int = 20) -> dict[str, Any]:
    """``config`` with a step budget: the behavior with the largest ``max_steps`` gets
    ``steps``, the others the same fraction of theirs (so a game whose behaviors decide at
    different rates, such as WallJump's, keeps the config's proportions); each behavior writes
    ``summaries`` summaries over its budget."""
    out = yaml.safe_load(yaml.safe_dump(config))
    behaviors = out["behaviors"].values()
    largest = max(int(behavior.get("max_steps", 500_000)) for behavior in behaviors)
    for behavior in behaviors:
        share = int(behavior.get("max_steps", 500_000)) / largest
        behavior["max_steps"] = max(int(steps * share), 1)
        behavior["summary_freq"] = max(behavior["max_steps"] // summaries, 100)
    return out


def mean_of_last(output: str, behavior: str, tail: int) -> tuple[float, int]:
    """The mean of the last ``tail`` summaries' mean rewards in ``output``, and their count
    (nan, 0 without any summary)."""
    summaries = [s for line in output.splitlines() for s in parse_summaries(line, behavior)]
    last = summaries[-tail:]
    if not last:
        return float("nan"), 0
    return sum(s.mean_reward for s in last) / len(last), len(last)


class RunStoppedError(RuntimeError):
    """A run stopped before its budget (Ctrl-C, or ``unity-train`` stopped by a signal): its
    checkpoints are in the workdir, and the same command with ``--workdir`` continues it."""


def train(
    config: dict[str, Any],
    name: str,
    workdir: Path,
    flags: Sequence[str],
    seed: int,
    trainer: Trainer = "unity-train",
) -> str:
    """Run ``unity-train`` on ``config`` to its ``max_steps``; returns its console output, every
    invocation's (kept in ``<workdir>/<name>.log``).

    With ``trainer="mlagents-learn"`` the official ``mlagents-learn`` 1.1.0 of the reference peer
    venv trains instead, with the same config, seed, results folder and run id; ``flags`` are
    then its own (such as ``--env BUILD --num-envs 1``; see :func:`mlagents_learn_command`), and
    it exports ``<workdir>/results/<name>/<Behavior>.onnx`` as ``unity-train`` does. Its
    summary lines have the same form, so the same budget checks apply.

    A run that an earlier invocation left in ``workdir`` (``--workdir``) is continued with
    ``--resume`` when it is short of its budget, and not trained again when complete; it must
    have been started with the same config, flags and seed, except that a larger step budget
    (``max_steps``, and the ``summary_freq`` that follows it) continues a run to the new budget
    (as ``mlagents-learn --resume`` with a raised ``max_steps``). Ctrl-C asks ``unity-train`` to
    save and stop (a second Ctrl-C kills it; see :func:`_wait_saving`).

    Raises:
        RunStoppedError: if ``unity-train`` stopped before a behavior's ``max_steps`` (it saves and
            exits with status 0 when stopped; see :func:`budget_shortfall`), Ctrl-C included.
        RuntimeError: if ``unity-train`` failed, or ``workdir`` holds this run with other
            settings.
        PeerUnavailableError: ``mlagents-learn`` was asked for and the reference peer venv is
            unavailable.
    """
    path, log = workdir / f"{name}.yaml", workdir / f"{name}.log"
    settings = workdir / f"{name}.settings.json"
    kept_settings: dict[str, Any] = {"config": config, "flags": list(flags), "seed": seed}
    if trainer != "unity-train":  # runs kept before this option keep matching
        kept_settings["trainer"] = trainer
    wanted = json.dumps(kept_settings, sort_keys=True, default=str)
    run_dir = workdir / "results" / name
    resume = run_dir.is_dir() and any(run_dir.iterdir())
    if resume:
        kept = settings.read_text(encoding="utf-8") if settings.is_file() else ""
        if kept != wanted and not _only_budget_raised(kept, wanted):
            raise RuntimeError(
                f"{name}: {run_dir} holds a run started with other settings (config, flags or "
                "seed); choose another --workdir, or delete that folder to start over"
            )
        previous = log.read_text(encoding="utf-8") if log.is_file() else ""
        if not budget_shortfall(previous, config):
            print(f"\n== {name}: complete in {workdir}, not trained again", flush=True)
            return previous
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    settings.write_text(wanted, encoding="utf-8")
    shared = [
        str(path), "--run-id", name, "--results-dir", str(workdir / "results"),
        "--seed", str(seed), *flags, *(["--resume"] if resume else []),
    ]  # fmt: skip
    env: dict[str, str] | None = None
    if trainer == "mlagents-learn":
        command = mlagents_learn_command(shared)
        env = peer_process_environment()
    else:
        command = [sys.executable, "-m", "trainers", *shared]
    print(f"\n== {name}\n$ {trainer} {' '.join(shared)}", flush=True)
    with log.open("ab") as sink:
        start = sink.tell()  # a byte offset: this invocation's output follows it
        # A session of its own: a terminal's Ctrl-C reaches it once, through _wait_saving.
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with _RUNNING_LOCK:
            _RUNNING.add(process)
        try:
            interrupted = _wait_saving(lambda: process.poll() is not None)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(process)
    logged = log.read_bytes()
    output = logged.decode("utf-8", errors="replace")
    shown = [
        f"  {line}"
        for line in logged[start:].decode("utf-8", errors="replace").splitlines()
        if "Mean Reward" in line or "lesson" in line.lower() or "Error" in line
    ]
    print("\n".join([f"-- {name} finished", *shown]), flush=True)  # one block per run
    if process.returncode != 0 and not interrupted:
        print(output[-3000:], flush=True)
        raise RuntimeError(f"{name}: {trainer} exited with {process.returncode}")
    shortfalls = budget_shortfall(output, config)
    if shortfalls:
        raise RunStoppedError(
            f"{name}: {trainer} stopped before its budget ({'; '.join(shortfalls)}), so its "
            "results are not the budget's"
        )
    if interrupted:
        raise RunStoppedError(f"{name}: stopped by Ctrl-C (at the end of its budget)")
    return output


def mlagents_learn_command(arguments: Sequence[str]) -> list[str]:
    """The command line of the official ``mlagents-learn`` 1.1.0 (reference peer venv, ONNX
    export as :mod:`benchmarks.mlagents_learn_3dball` makes it) with ``arguments`` and a free
    ``--base-port``, ``--no-graphics`` and ``--torch-device cpu``; run it with
    :func:`benchmarks.peer_runner.peer_process_environment`.

    Raises:
        PeerUnavailableError: the reference peer venv is unavailable.
    """
    python = ensure_peer_venv(learn=True)
    ensure_onnx(python)
    return [
        str(python), "-c", _LEARN_WITH_LEGACY_ONNX_EXPORT, *arguments,
        "--base-port", str(free_port()), "--no-graphics", "--torch-device", "cpu",
    ]  # fmt: skip


def _only_budget_raised(kept: str, wanted: str) -> bool:
    """Whether the run settings ``wanted`` (JSON, as :func:`train` keeps them) differ from
    ``kept`` only in larger ``max_steps`` (and their ``summary_freq``) of some behaviors."""
    if not kept:
        return False
    old, new = json.loads(kept), json.loads(wanted)
    old_behaviors = old["config"].get("behaviors", {})
    new_behaviors = new["config"].get("behaviors", {})
    if old_behaviors.keys() != new_behaviors.keys():
        return False
    budget = ("max_steps", "summary_freq")
    for behavior, settings in new_behaviors.items():
        before = old_behaviors[behavior]
        if int(settings.get("max_steps", 500_000)) < int(before.get("max_steps", 500_000)):
            return False
        for one in (settings, before):
            for key in budget:
                one.pop(key, None)
    return bool(old == new)


#: The ``unity-train`` processes :func:`train` waits for now.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


def _wait_saving(finished: Callable[[], bool]) -> bool:
    """Wait until ``finished()``; True when Ctrl-C came meanwhile.

    The first Ctrl-C sends SIGINT to every running ``unity-train`` (which finishes its step,
    saves and exits) and goes on waiting; the second kills them and their games and is raised.
    Only the main thread sees Ctrl-C, within a poll period even when the signal reached another
    thread (a blocking wait there would not wake).
    """
    interrupted = False
    while True:
        try:
            while not finished():
                time.sleep(0.2)
            return interrupted
        except KeyboardInterrupt:
            with _RUNNING_LOCK:
                running = [process for process in _RUNNING if process.poll() is None]
            if interrupted:
                for process in running:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                raise
            interrupted = True
            print(
                f"\nCtrl-C: {len(running)} unity-train run(s) save and stop "
                "(Ctrl-C again kills them unsaved)",
                flush=True,
            )
            for process in running:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGINT)


def train_mlagents_learn(
    config: dict[str, Any], scene: str, name: str, workdir: Path, seed: int
) -> str:
    """Train ``config`` with the official ``mlagents-learn`` 1.1.0 of the reference peer venv as
    run ``name`` in ``workdir`` (continued as :func:`train` continues its runs), on one game
    process of the built-in ``scene``'s executable (built once in ``<workdir>/build-<scene>``,
    so it has the scene's stock areas, as ``unity-train --scene`` does); returns its console
    output. It exports ``<workdir>/results/<name>/<Behavior>.onnx``.

    Raises:
        PeerUnavailableError: the reference peer venv (with ``onnx``, which its exporter needs)
            cannot be had.
        RunStoppedError, RuntimeError: as :func:`train`.
    """
    from unity_gym.player.build import build_executable

    ensure_onnx(ensure_peer_venv(learn=True))
    build = build_executable(scene, workdir / f"build-{scene}").with_suffix("")
    flags = ["--env", str(build), "--num-envs", "1", "--timeout-wait", "120"]
    return train(config, name, workdir, flags, seed, "mlagents-learn")


def train_all(
    runs: Sequence[tuple[str, dict[str, Any]]],
    workdir: Path,
    flags: Sequence[str],
    seed: int,
    concurrent: bool = False,
) -> list[str]:
    """:func:`train` each ``(name, config)`` of ``runs``, one after another or, with
    ``concurrent``, all at once (each run's trainer and game wait on each other, so one run keeps
    about one core busy: two runs side by side on two cores take little longer than one).
    Returns the console outputs in the order of ``runs``; with ``concurrent``, a failed
    run's error (see :func:`train`) is raised once every run has ended."""
    if not concurrent:
        return [train(config, name, workdir, flags, seed) for name, config in runs]
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        futures = [pool.submit(train, config, name, workdir, flags, seed) for name, config in runs]
        if _wait_saving(lambda: all(future.done() for future in futures)):
            raise RunStoppedError("stopped by Ctrl-C")
        return [future.result() for future in futures]


def budget_shortfall(output: str, config: dict[str, Any]) -> list[str]:
    """The behaviors of ``config`` whose last summary in ``output`` is short of their
    ``max_steps`` (a run stopped by Ctrl-C exits with status 0 after saving, so its results
    must not be read as the budget's), each as ``"<behavior> at <step> of <max_steps> steps"``.

    A summary line (with a mean reward or saying that no episode ended) is written at each
    ``summary_freq`` multiple, so a completed behavior's last one is at least
    ``max_steps - summary_freq``; a behavior without any summary line counts as short.
    """
    short = []
    for behavior, settings in config.get("behaviors", {}).items():
        budget = int(settings.get("max_steps", 500_000))
        frequency = int(settings.get("summary_freq", 50_000))
        steps = [
            int(match["step"])
            for match in _SUMMARY_LINE.finditer(output)
            if match["behavior"] == behavior
        ]
        last = max(steps, default=0)
        if last < budget - frequency:
            short.append(f"{behavior} at {last} of {budget} steps")
    return short


@dataclass(frozen=True)
class ScalarPoint:
    """One TensorBoard scalar event."""

    wall_time: float
    step: int
    value: float


def scalar_series(run_dir: Path, tag: str) -> list[ScalarPoint]:
    """Every event of TensorBoard scalar ``tag`` in the event files under ``run_dir``, in
    the order they were written (empty if absent)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    points: list[ScalarPoint] = []
    # One accumulator per folder: it reads every event file there (a resumed run adds one).
    for folder in sorted({events.parent for events in run_dir.rglob("events.out.tfevents.*")}):
        accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        accumulator.Reload()
        if tag in accumulator.Tags()["scalars"]:
            points += [
                ScalarPoint(event.wall_time, event.step, event.value)
                for event in accumulator.Scalars(tag)
            ]
    return sorted(points, key=lambda point: point.wall_time)


def last_scalar(run_dir: Path, tag: str) -> float | None:
    """The last value of TensorBoard scalar ``tag`` under ``run_dir`` (None if absent)."""
    points = scalar_series(run_dir, tag)
    return points[-1].value if points else None


def run_until_group_reward(
    name: str,
    command: list[str],
    env: dict[str, str],
    target: float,
    time_limit: float,
    behavior: str,
    run_dir: Path,
) -> ContenderResult:
    """Run a trainer until a summary of ``behavior`` shows a mean group reward >= ``target``,
    it exits or ``time_limit`` seconds pass; the trainer and what it launched are stopped then.

    A summary's mean group reward is the ``Mean Group Reward`` of its line (``mlagents-learn``),
    else the :data:`GROUP_REWARD` scalar written for that step under ``run_dir``
    (``unity-train`` writes its TensorBoard scalars before the line). ``last_mean`` of the
    result is the last such value (nan without any).
    """
    seconds: float | None = None
    step, last_mean = 0, float("nan")
    tail: list[str] = []
    with ContenderProcess(name, command, env, time_limit) as run:
        for elapsed, line in run.lines():
            tail = [*tail[-14:], line]
            match = _SUMMARY_LINE.search(line)
            if match is None or match["behavior"] != behavior:
                if "Traceback" in line or "rror" in line:
                    print(f"  {line.rstrip()}", flush=True)
                continue
            step = int(match["step"])
            shown = _MEAN_GROUP_REWARD.search(match["rest"])
            if shown is not None:
                last_mean = float(shown["mean"])
            else:
                at_step = [p.value for p in scalar_series(run_dir, GROUP_REWARD) if p.step == step]
                last_mean = at_step[-1] if at_step else float("nan")
            print(
                f"  [{elapsed:6.1f} s] step {step}: mean group reward {last_mean:+.3f}", flush=True
            )
            if last_mean >= target:
                seconds = elapsed
                break
    note = ""
    if seconds is None:
        note = run.why_not(target)
        print(f"  {note}; last lines:\n{''.join(tail)}", flush=True)
    return ContenderResult(name, seconds, step, last_mean, note)


def race_mlagents_learn(
    config: dict[str, Any],
    scene: str,
    behavior: str,
    target: float,
    time_limit: float,
    seed: int,
    workdir: Path,
    group_reward: bool = False,
    goal: float = 0.5,
) -> list[Figure] | None:
    """Wall time from launch to the first summary of ``behavior`` with mean reward >=
    ``target``: ``unity-train`` then ``mlagents-learn`` (reference peer venv), on ``config``,
    one game process of one executable of built-in ``scene``. Prints both and their ratio.
    With ``group_reward``, the mean group reward is raced instead
    (:func:`run_until_group_reward`; for games whose agents have no reward of their own).

    Once ``unity-train`` has reached the target in ``t`` seconds, ``mlagents-learn`` runs at
    most ``t / goal + 60`` seconds (``2 t + 60`` for the default goal; never past
    ``time_limit``): if it has not reached the target by then, the goal is met and the ratio
    printed is an upper bound (``< t / its time``).

    Returns:
        The figures: the time ratio ``unity-train / mlagents-learn`` (goal <= ``goal``; the
        bound when ``mlagents-learn`` ran out of time, nan when ``unity-train`` did not reach the
        target) and each contender's seconds (nan: not reached; for information); None when the
        reference peer is unavailable (printed).
    """
    from unity_gym.player.build import build_executable

    shared = ["--num-envs", "1", "--run-id", "race", "--seed", str(seed), "--timeout-wait", "120"]
    try:
        learn = mlagents_learn_command(
            [*shared, "--results-dir", str(workdir / f"race-{scene}-mlagents-learn")]
        )
    except PeerUnavailableError as error:
        print(f"\nmlagents-learn race skipped: reference peer venv unavailable: {error}")
        return None
    for contender in ("unity-train", "mlagents-learn"):  # a race starts over (--workdir)
        shutil.rmtree(workdir / f"race-{scene}-{contender}", ignore_errors=True)
    build = build_executable(scene, workdir / f"build-{scene}").with_suffix("")
    path = workdir / f"race-{scene}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    where = [str(path), "--env", str(build)]
    commands = {
        "unity-train": [
            sys.executable, "-m", "trainers", *where, *shared,
            "--results-dir", str(workdir / f"race-{scene}-unity-train"),
        ],
        "mlagents-learn": [*learn[:3], *where, *learn[3:]],
    }  # fmt: skip
    results: dict[str, ContenderResult] = {}
    limits = {"unity-train": time_limit, "mlagents-learn": time_limit}
    for name, command in commands.items():
        env = peer_process_environment() if name == "mlagents-learn" else dict(os.environ)
        if group_reward:
            run_dir = workdir / f"race-{scene}-{name}" / "race"
            results[name] = run_until_group_reward(
                name, command, env, target, limits[name], behavior, run_dir
            )
        else:
            results[name] = run_until_target(
                name, command, env, target, limits[name], behavior=behavior
            )
        ours_so_far = results[name].seconds
        if name == "unity-train" and ours_so_far is not None:
            limits["mlagents-learn"] = min(time_limit, ours_so_far / goal + 60)
            print(f"  mlagents-learn runs at most {limits['mlagents-learn']:.0f} s", flush=True)
    what = "mean group reward" if group_reward else "mean reward"
    print(f"\n{scene}, time to {what} {target}, seed {seed}")
    for result in results.values():
        shown = "not reached" if result.seconds is None else f"{result.seconds:7.1f} s"
        print(
            f"  {result.name:15s} {shown} (step {result.step}, last mean {result.last_mean:+.3f})"
        )
    ours, theirs = results["unity-train"].seconds, results["mlagents-learn"].seconds
    ratio = math.nan
    if ours is not None and theirs is None and results["mlagents-learn"].note.startswith("time"):
        ratio = ours / limits["mlagents-learn"]
        print(
            f"  unity-train / mlagents-learn: < {ratio:.2f}x (mlagents-learn did not reach it in "
            f"{limits['mlagents-learn']:.0f} s; goal <= {goal:g}x)"
        )
    elif ours is None or theirs is None:
        print(f"  unity-train / mlagents-learn: n/a (goal <= {goal:g}x)")
    else:
        ratio = ours / theirs
        print(f"  unity-train / mlagents-learn: {ratio:.2f}x (goal <= {goal:g}x)")
    return [
        Figure(f"{scene} time ratio unity-train / mlagents-learn", ratio, Goal(goal, higher=False)),
        Figure(f"{scene} unity-train seconds", math.nan if ours is None else ours),
        Figure(f"{scene} mlagents-learn seconds", math.nan if theirs is None else theirs),
    ]


def add_common_arguments(parser: argparse.ArgumentParser, parts: Sequence[str]) -> None:
    """``--only``, ``--time-limit``, ``--seeds`` / ``--seed``, ``--tail``, ``--concurrent`` and
    ``--workdir``."""
    parser.add_argument("--only", action="append", choices=parts, help="parts to run")
    parser.add_argument("--time-limit", type=float, default=1800.0, help="seconds (race)")
    add_seed_arguments(parser)
    parser.add_argument("--tail", type=int, default=3, help="summaries averaged per run")
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="train a part's contenders at the same time (each run keeps about one core busy)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help=(
            "keep the runs in this folder (created if missing) instead of a temporary one; "
            "the same command with the same folder continues a run stopped before its budget "
            "(Ctrl-C saves) and does not retrain a complete one (races start over)"
        ),
    )


def run_parts(parts: dict[str, Part], args: argparse.Namespace, prefix: str) -> int:
    """Run the parts ``args.only`` chose (all by default), each once per seed of ``--seeds``
    (or ``--seed``), in ``<args.workdir>/seed<N>`` (:func:`benchmarks.seeds.seed_workdir`),
    else in a temporary folder, deleted at the end unless a run in it stopped before its budget
    (:class:`RunStoppedError`, Ctrl-C): then it is kept and named, for ``--workdir`` to continue.
    After a part's seeds, its figures are printed per seed with their median, worst seed and
    spread (:func:`benchmarks.seeds.format_table`); every part's table is printed again at the
    end.

    Returns:
        The exit status: 0 when the median and the worst seed of every figure of every part met
        its goal, 2 when a part could not run, 130 when a second Ctrl-C killed a run, 1
        otherwise (a figure short of its goal, a failed run or one stopped before its budget:
        these stop the benchmark, printing why; so does a bad ``--seeds`` or ``--workdir``).
    """
    chosen = [name for name in parts if not args.only or name in args.only]
    keep = args.workdir is not None
    workdir = Path(args.workdir) if keep else Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    tables: list[str] = []
    outcomes: list[bool | None] = []
    try:
        seeds = chosen_seeds(args)
        folders = {seed: seed_workdir(workdir, seed, seeds) for seed in seeds}
    except ValueError as error:
        print(f"error: {error}", flush=True)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
        return 1
    try:
        print(
            f"load average {os.getloadavg()[0]:.1f}; parts: {', '.join(chosen)}; "
            f"seeds: {' '.join(map(str, seeds))}",
            flush=True,
        )
        for name in chosen:
            per_seed: dict[int, Sequence[Figure]] = {}
            could_not_run = False
            for seed in seeds:
                folders[seed].mkdir(parents=True, exist_ok=True)
                figures = parts[name](
                    argparse.Namespace(**{**vars(args), "seed": seed}), folders[seed]
                )
                if figures is None:
                    could_not_run = True
                    break
                per_seed[seed] = figures
            if could_not_run:
                outcomes.append(None)
                continue
            summaries = summarize_figures(per_seed)
            tables.append(format_table(f"part {name}", summaries))
            print(f"\n{tables[-1]}", flush=True)
            outcomes.append(all(summary.met for summary in summaries))
    except RunStoppedError as stop:  # a training run (train), saved where it stopped
        keep = True
        print(
            f"\n{stop}.\nThe runs and their checkpoints are in {workdir}: the same command "
            f"with --workdir {workdir} continues them.",
            flush=True,
        )
        return 1
    except KeyboardInterrupt:  # not in train(), which turns Ctrl-C into RunStoppedError: a race
        keep = True
        print(
            f"\nStopped by Ctrl-C.\nThe runs so far are in {workdir}. The same command with "
            f"--workdir {workdir} reuses complete training runs and continues stopped ones, but "
            "starts a race to a target reward over: it times each run from its start.",
            flush=True,
        )
        return 130
    except RuntimeError as error:  # a failed run (its output printed) or a workdir mismatch
        print(f"\nerror: {error}", flush=True)
        return 1
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if len(tables) > 1:
        print(
            "\n== every part over its seeds (a goal is met when the median and the worst seed "
            "meet it)"
        )
        print("\n\n".join(tables), flush=True)
    if any(outcome is None for outcome in outcomes):
        return 2
    return 0 if all(outcomes) else 1
