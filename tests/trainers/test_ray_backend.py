"""``unity-train --backend ray`` on a real multi-node Ray cluster on loopback, and its errors.

The cluster comes from Ray's own test utilities (``ray.cluster_utils.Cluster``): a head node
without CPUs and three one-CPU nodes, each a separate raylet on 127.0.0.1. Games ask for one CPU
each, so two games land on two different nodes; the node of game 0 is removed in the middle of
training, and the game must come back on the node that is left free while training finishes.
This test process never becomes a Ray driver (it only starts and stops nodes); ``unity-train``
runs as a child process and joins the cluster with ``--ray-address``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_test_support import RunTrain

pytestmark = pytest.mark.timeout(240)

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "trainers" / "configs" / "3DBall_ppo.yaml"
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""Makes Ray keep 127.0.0.1 instead of swapping in the machine's outward address."""


@pytest.fixture
def loopback_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[Any]]]:
    """A head node (no CPU) and three worker nodes with one CPU each, all on 127.0.0.1."""
    for name, value in LOOPBACK.items():  # before Ray is imported: it reads them once
        monkeypatch.setenv(name, value)
    pytest.importorskip("ray", reason="Ray is not installed (pip install unity-gym[ray])")
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False},
    )
    try:
        nodes = [cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1") for _ in range(3)]
        cluster.wait_for_nodes()
        yield cluster, nodes
    finally:
        cluster.shutdown()


def _short_config(tmp_path: Path, max_steps: int) -> Path:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    behavior = config["behaviors"]["3DBall"]
    behavior["max_steps"] = max_steps
    behavior["summary_freq"] = 6000
    path = tmp_path / "3DBall.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class _Output:
    """Collects a child's stderr lines in a thread; :meth:`wait_for` a line matching a pattern."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        assert process.stderr is not None
        self._thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    text = "\n".join(self.lines[-40:])
                    raise AssertionError(f"no line matching {pattern!r}; output:\n{text}")
                self._changed.wait(min(remaining, 1.0))

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "\n".join(self.lines)


def test_games_spread_over_nodes_and_survive_a_lost_node(
    loopback_cluster: tuple[Any, list[Any]], tmp_path: Path
) -> None:
    cluster, nodes = loopback_cluster
    command = [
        sys.executable,
        "-m",
        "trainers",
        str(_short_config(tmp_path, max_steps=36000)),
        "--scene",
        "3DBall",
        "--num-envs",
        "2",
        "--backend",
        "ray",
        "--ray-address",
        cluster.address,
        "--seed",
        "1",
        "--run-id",
        "cluster",
        "--results-dir",
        str(tmp_path / "results"),
    ]
    env = {**os.environ, **LOOPBACK, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    output = _Output(process)
    try:
        first = output.wait_for(r"Game 0 runs on Ray node (\w+) \(127\.0\.0\.1\)", 120)
        second = output.wait_for(r"Game 1 runs on Ray node (\w+) \(127\.0\.0\.1\)", 5)
        assert first.group(1) != second.group(1), "the two games were not spread over two nodes"
        output.wait_for(r"3DBall\. Step: 6\d\d\d\. ", 120)  # training is under way
        (victim,) = [node for node in nodes if node.node_id.startswith(first.group(1))]
        cluster.remove_node(victim)
        process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = output.text()
    assert process.returncode == 0, text[-4000:]
    assert f"Game process 0 lost its Ray actor on Ray node {first.group(1)} (127.0.0.1)" in text
    moved = re.search(r"Game worker 0 runs on Ray node (\w+) \(127\.0\.0\.1\) now", text)
    assert moved is not None, text[-4000:]
    free = {node.node_id[:8] for node in nodes if node is not victim} - {second.group(1)}
    assert moved.group(1) in free  # the only node with a free CPU
    assert "Step: 36000." in text
    run = tmp_path / "results" / "cluster"
    assert (run / "3DBall.onnx").is_file()
    metadata = json.loads((run / "run_logs" / "timers.json").read_text())["metadata"]
    assert metadata["game_locations"] == (
        f"game 0: Ray node {moved.group(1)} (127.0.0.1); "
        f"game 1: Ray node {second.group(1)} (127.0.0.1)"
    )
    assert metadata["ray_cluster"] == cluster.address


def test_ray_options_without_the_ray_backend_are_refused(run_train: RunTrain) -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    run_train(config, "--scene", "3DBall", "--ray-game-cpus", "2", expect=2)


def test_a_missing_ray_is_a_clear_error(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['ray'] = None\n"  # what an environment without Ray sees
        "from trainers.cli import main\n"
        f"sys.exit(main([{str(CONFIG)!r}, '--scene', '3DBall', '--backend', 'ray', "
        f"'--results-dir', {str(tmp_path / 'results')!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert 'pip install "unity-gym[ray]"' in result.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


@pytest.mark.slow  # the Ray PettingZoo env has its own tests; this one adds unity-train on top
def test_games_with_several_behaviors_train_in_ray_actors(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install unity-gym[ray])")
    config = yaml.safe_load((REPO / "trainers" / "configs" / "Tennis_ppo.yaml").read_text())
    behavior = config["behaviors"]["Tennis"]
    behavior["max_steps"], behavior["summary_freq"] = 1500, 500
    path = tmp_path / "Tennis.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "trainers",
        str(path),
        "--scene",
        "Tennis",
        "--num-envs",
        "2",
        "--backend",
        "ray",
        "--ray-address",
        "local",  # a Ray instance of this run's own, stopped at its end
        "--ray-game-cpus",
        "0",
        "--results-dir",
        str(tmp_path / "results"),
    ]
    result = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "PettingZoo, Ray actors, 2 game processes" in result.stderr
    run = next((tmp_path / "results").iterdir())
    assert (run / "Tennis.onnx").is_file()
    metadata = json.loads((run / "run_logs" / "timers.json").read_text())["metadata"]
    locations = metadata["game_locations"].split("; ")
    assert [where.split(":")[0] for where in locations] == ["game 0", "game 1"]
    assert all(": Ray node " in where for where in locations)
