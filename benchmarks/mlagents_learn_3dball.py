"""The official ``mlagents-learn`` 1.1.0 trains PPO on the headless player's 3DBall executable.

Uses ML-Agents' 3DBall PPO configuration (spec §10: batch 64, buffer 12000, learning rate 3e-4
linear, beta 1e-3, epsilon 0.2, lambda 0.99, 3 epochs, 128x2 normalized network, gamma 0.99,
time horizon 1000, summary every 12000 steps) with ``max_steps`` lowered to ``--max-steps``
(default 50k). ``mlagents-learn`` runs in the reference peer venv (built with the training
extras by ``benchmarks.peer_venv.ensure_peer_venv(learn=True)``) and launches the executable
itself, exactly as it would launch a Unity build (with two stack fixes: ``onnx`` is installed
in the peer venv and the TorchScript ONNX exporter is selected, as torch 2.13 defaults to one that
mlagents 1.1.0 predates). The script prints the reward trajectory from
``mlagents-learn``'s summaries and fails (exit 1) if training errors out or stops early.

Usage::

    python benchmarks/mlagents_learn_3dball.py [--max-steps 50000] [--seed 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.peer_runner import free_port, peer_process_environment  # noqa: E402
from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv  # noqa: E402

__all__ = ["Summary", "ensure_onnx", "main", "parse_summaries", "trainer_config"]

BEHAVIOR = "3DBall"
SUMMARY_FREQ = 12000
#: ``onnx`` for mlagents' model export; 1.16.2 still works with the peer's protobuf 3.20.3.
ONNX_REQUIREMENT = "onnx==1.16.2"

# mlagents 1.1.0 exports its policy with torch.onnx.export's TorchScript exporter; torch >= 2.9
# defaults to the torch.export-based one (which needs onnxscript), so ask for the former.
_LEARN_WITH_LEGACY_ONNX_EXPORT = """
import sys
import torch.onnx

_export = torch.onnx.export

def _legacy_export(*args, **kwargs):
    kwargs.setdefault("dynamo", False)
    return _export(*args, **kwargs)

torch.onnx.export = _legacy_export
from mlagents.trainers.learn import main

sys.argv = ["mlagents-learn", *sys.argv[1:]]
main()
"""

_SUMMARY = re.compile(
    r"\[INFO\] (?P<behavior>[^.\s]+)\. Step: (?P<step>\d+)\. Time Elapsed: (?P<elapsed>[\d.]+) s\."
    r" Mean Reward: (?P<mean>-?[\d.]+)\. Std of Reward: (?P<std>-?[\d.]+)\."
)


@dataclass(frozen=True)
class Summary:
    """One ``mlagents-learn`` summary line."""

    step: int
    elapsed_seconds: float
    mean_reward: float
    std_reward: float


def trainer_config(max_steps: int) -> str:
    """ML-Agents' ``config/ppo/3DBall.yaml`` with ``max_steps`` replaced."""
    return f"""\
behaviors:
  {BEHAVIOR}:
    trainer_type: ppo
    hyperparameters:
      batch_size: 64
      buffer_size: 12000
      learning_rate: 0.0003
      beta: 0.001
      epsilon: 0.2
      lambd: 0.99
      num_epoch: 3
      learning_rate_schedule: linear
    network_settings:
      normalize: true
      hidden_units: 128
      num_layers: 2
      vis_encode_type: simple
    reward_signals:
      extrinsic:
        gamma: 0.99
        strength: 1.0
    keep_checkpoints: 5
    max_steps: {max_steps}
    time_horizon: 1000
    summary_freq: {SUMMARY_FREQ}
"""


def parse_summaries(output: str, behavior: str = BEHAVIOR) -> list[Summary]:
    """The summary lines of ``behavior`` found in ``mlagents-learn``'s output, in order."""
    return [
        Summary(
            step=int(m["step"]),
            elapsed_seconds=float(m["elapsed"]),
            mean_reward=float(m["mean"]),
            std_reward=float(m["std"]),
        )
        for m in _SUMMARY.finditer(output)
        if m["behavior"] == behavior
    ]


def ensure_onnx(python: Path) -> None:
    """Install :data:`ONNX_REQUIREMENT` in the peer venv if ``onnx`` is missing (no deps, so the
    pinned protobuf stays).

    Raises:
        PeerUnavailableError: if pip fails.
    """
    probe = subprocess.run([str(python), "-c", "import onnx"], capture_output=True, check=False)
    if probe.returncode == 0:
        return
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            ONNX_REQUIREMENT,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if install.returncode != 0:
        raise PeerUnavailableError(
            f"cannot install {ONNX_REQUIREMENT} in the peer venv:\n{install.stderr[-2000:]}"
        )


def _run_learn(python: Path, workdir: Path, max_steps: int, seed: int) -> tuple[int, str]:
    from unity_gym.player.build import build_executable

    build = build_executable("3DBall", workdir / "build").with_suffix("")
    config = workdir / "3DBall.yaml"
    config.write_text(trainer_config(max_steps))
    command = [
        str(python),
        "-c",
        _LEARN_WITH_LEGACY_ONNX_EXPORT,
        str(config),
        "--env",
        str(build),
        "--run-id",
        "3DBall-unity-gym-player",
        "--results-dir",
        str(workdir / "results"),
        "--base-port",
        str(free_port()),
        "--seed",
        str(seed),
        "--no-graphics",
        "--force",
        "--torch-device",
        "cpu",
        "--timeout-wait",
        "120",
    ]
    print("$ mlagents-learn " + " ".join(command[3:]), flush=True)
    lines: list[str] = []
    proc = subprocess.Popen(
        command,
        cwd=workdir,
        env=peer_process_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            lines.append(line)
            if _SUMMARY.search(line) or "error" in line.lower() or "Exported" in line:
                print("  " + line.rstrip(), flush=True)
        returncode = proc.wait()
    except BaseException:
        os.killpg(proc.pid, 9)
        proc.wait()
        raise
    return returncode, "".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Train, print the reward trajectory; exit 0 only if training reached ``--max-steps``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=50_000, help="trainer steps")
    parser.add_argument("--seed", type=int, default=1, help="mlagents-learn --seed")
    parser.add_argument("--keep", type=Path, help="keep the results here (default: discard)")
    args = parser.parse_args(argv)
    if args.max_steps < SUMMARY_FREQ:
        parser.error(f"--max-steps must be at least the summary frequency ({SUMMARY_FREQ})")
    try:
        python = ensure_peer_venv(learn=True)
        ensure_onnx(python)
    except PeerUnavailableError as error:
        print(f"cannot run mlagents-learn: the reference peer venv is unavailable: {error}")
        return 2

    workdir = Path(tempfile.mkdtemp(prefix="mlagents-learn-3dball-"))
    started = time.perf_counter()
    try:
        returncode, output = _run_learn(python, workdir, args.max_steps, args.seed)
        onnx = sorted(p.name for p in (workdir / "results").rglob("*.onnx"))
        if args.keep is not None:
            shutil.copytree(workdir / "results", args.keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    wall = time.perf_counter() - started

    summaries = parse_summaries(output)
    print(f"\nmlagents-learn 1.1.0 PPO on the headless 3DBall (12 agents), {wall:.0f} s wall")
    print(f"{'step':>8s} {'elapsed s':>10s} {'mean reward':>12s} {'std':>8s}")
    for s in summaries:
        print(f"{s.step:8d} {s.elapsed_seconds:10.1f} {s.mean_reward:12.3f} {s.std_reward:8.3f}")
    print(f"exported models: {', '.join(onnx) or 'none'}")
    expected_last = args.max_steps // SUMMARY_FREQ * SUMMARY_FREQ
    reached = bool(summaries) and summaries[-1].step >= expected_last
    failed = returncode != 0 or "Traceback" in output or not reached or not onnx
    if failed:
        tail = "".join(output.splitlines(keepends=True)[-40:])
        print(f"FAILED: exit code {returncode}; last lines:\n{tail}")
        return 1
    print(f"OK: trained {args.max_steps} steps without error (exit code 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
