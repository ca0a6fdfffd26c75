"""Hierarchical timers: tree shape, counts, self time, gauges, metadata, merging, threads, JSON.

The JSON tree has the shape of ``mlagents_envs.timers`` (checked against a hand-written tree here
and against the official package itself when the reference peer venv is there).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from unity_gym import timers
from unity_gym.timers import (
    GaugeNode,
    TimerNode,
    TimerStack,
    add_metadata,
    get_timer_root,
    get_timer_stack,
    get_timer_tree,
    hierarchical_timer,
    merge_timer_tree,
    reset_timers,
    set_gauge,
    set_timer_stack,
    timed,
    write_timer_tree,
)

pytestmark = pytest.mark.timeout(60)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_stack() -> Iterator[TimerStack]:
    """Each test records into its own stack; the global one is restored afterwards."""
    stack = TimerStack()
    previous = set_timer_stack(stack)
    try:
        yield stack
    finally:
        set_timer_stack(previous)


def spin(seconds: float) -> None:
    """Busy-wait ``seconds`` of wall-clock time (measured with the timers' own clock)."""
    end = timers._clock() + seconds
    while timers._clock() < end:
        pass


@timed
def leaf() -> str:
    spin(0.002)
    return "leaf"


@timed
def branch(times: int) -> int:
    for _ in range(times):
        leaf()
    return times


class Worker:
    @timed
    def work(self, x: int, *, scale: int = 2) -> int:
        """Docstring survives decoration."""
        return x * scale


def test_timed_nests_by_caller_and_counts() -> None:
    assert branch(3) == 3
    assert leaf() == "leaf"
    children = get_timer_root().children
    assert set(children) == {"branch", "leaf"}
    assert children["branch"].count == 1
    assert children["branch"].children["leaf"].count == 3
    assert children["leaf"].count == 1
    assert children["leaf"].children == {}
    tree = get_timer_tree()
    assert "children" not in tree["children"]["leaf"]
    assert "children" not in tree["children"]["branch"]["children"]["leaf"]


def test_timed_uses_qualname_and_keeps_signature_and_metadata() -> None:
    assert Worker().work(3, scale=5) == 15
    assert "Worker.work" in get_timer_root().children
    assert Worker.work.__doc__ == "Docstring survives decoration."
    assert Worker.work.__name__ == "work"


def test_times_add_up_and_self_time(fresh_stack: TimerStack) -> None:
    with hierarchical_timer("outer") as outer:
        spin(0.01)
        with hierarchical_timer("inner") as inner:
            spin(0.02)
    assert isinstance(outer, TimerNode) and outer.children["inner"] is inner
    assert inner.total >= 0.02
    assert outer.total >= inner.total + 0.01
    tree = get_timer_tree()
    outer_dict = tree["children"]["outer"]
    inner_dict = outer_dict["children"]["inner"]
    assert outer_dict["self"] == pytest.approx(outer_dict["total"] - inner_dict["total"])
    assert outer_dict["self"] >= 0.01
    assert inner_dict["self"] == inner_dict["total"]
    assert tree["total"] >= outer_dict["total"]
    assert tree["count"] == 1


def test_time_recorded_when_block_raises() -> None:
    with pytest.raises(ZeroDivisionError), hierarchical_timer("fails"):
        spin(0.001)
        _ = 1 / 0

    @timed
    def broken() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        broken()
    root = get_timer_root()
    assert root.children["fails"].count == 1
    assert root.children["fails"].total >= 0.001
    assert root.children["test_time_recorded_when_block_raises.<locals>.broken"].count == 1
    # The stack is back at the root: a new block is a root child, not a child of "fails".
    with hierarchical_timer("after"):
        pass
    assert "after" in root.children


def test_explicit_stack_argument() -> None:
    other = TimerStack()
    with hierarchical_timer("elsewhere", other):
        pass
    assert "elsewhere" in other.root.children
    assert "elsewhere" not in get_timer_root().children


def test_push_pop_and_stack_path(fresh_stack: TimerStack) -> None:
    a = fresh_stack.push("a")
    b = fresh_stack.push("b")
    assert fresh_stack.stack == [fresh_stack.root, a, b]
    fresh_stack.pop()
    fresh_stack.pop()
    fresh_stack.pop()  # extra pop at the root is harmless
    assert fresh_stack.current is fresh_stack.root


def test_gauges() -> None:
    set_gauge("reward", 1.0)
    set_gauge("reward", -2.0)
    set_gauge("reward", 0.5)
    set_gauge("reward", float("nan"))
    set_gauge("loss", 3.0)
    gauges = get_timer_tree()["gauges"]
    assert gauges == {
        "reward": {"value": 0.5, "min": -2.0, "max": 1.0, "count": 3},
        "loss": {"value": 3.0, "min": 3.0, "max": 3.0, "count": 1},
    }
    node = GaugeNode(2.0)
    node.update(5.0)
    assert (node.value, node.min, node.max, node.count) == (5.0, 2.0, 5.0, 2)


def test_metadata() -> None:
    add_metadata("run_id", "r1")
    metadata = get_timer_tree()["metadata"]
    assert metadata["run_id"] == "r1"
    assert metadata["timer_format_version"] == timers.TIMER_FORMAT_VERSION
    for key in ("start_time_seconds", "end_time_seconds", "python_version"):
        assert key in metadata
    assert all(isinstance(v, str) for v in metadata.values())


def test_reset_clears_everything(fresh_stack: TimerStack) -> None:
    leaf()
    set_gauge("g", 1.0)
    add_metadata("k", "v")
    reset_timers()
    tree = get_timer_tree()
    assert "children" not in tree and "gauges" not in tree
    assert "k" not in tree["metadata"]


def test_reset_inside_running_block_keeps_recording() -> None:
    """A worker that sends and resets its tree from inside a timed loop keeps a usable tree."""
    with hierarchical_timer("loop"):
        leaf()
        reset_timers()
        leaf()
    leaf()
    children = get_timer_root().children
    assert list(children) == ["loop", "leaf"]
    assert children["loop"].count == 1
    assert children["loop"].children["leaf"].count == 1  # only the one after the reset
    assert children["leaf"].count == 1


def worker_tree() -> dict[str, Any]:
    stack = TimerStack()
    with hierarchical_timer("env_step", stack), hierarchical_timer("decode", stack):
        pass
    with hierarchical_timer("env_step", stack):
        pass
    stack.set_gauge("fps", 30.0)
    return stack.get_timing_tree()


def test_merge_timer_tree_under_running_block_marks_parallel() -> None:
    tree_a, tree_b = worker_tree(), worker_tree()
    with hierarchical_timer("collect"):
        merge_timer_tree(tree_a, root_name="workers")
        merge_timer_tree(tree_b, root_name="workers")
    set_gauge("fps", 10.0)
    merged = get_timer_tree()["children"]["collect"]["children"]["workers"]
    assert merged["is_parallel"] is True
    assert merged["count"] == 2
    assert merged["total"] == pytest.approx(tree_a["total"] + tree_b["total"])
    step = merged["children"]["env_step"]
    assert step["count"] == 4 and step["is_parallel"] is True
    assert step["children"]["decode"]["count"] == 2
    fps = get_timer_tree()["gauges"]["fps"]
    assert fps == {"value": 10.0, "min": 10.0, "max": 30.0, "count": 3}
    # Blocks that did not come from the merge are not parallel.
    assert "is_parallel" not in get_timer_tree()["children"]["collect"]


def test_merge_without_root_name_and_not_parallel() -> None:
    with hierarchical_timer("host"):
        merge_timer_tree(worker_tree(), is_parallel=False)
    host = get_timer_tree()["children"]["host"]
    assert host["children"]["env_step"]["count"] == 2
    assert "is_parallel" not in host and "is_parallel" not in host["children"]["env_step"]


def test_merge_rejects_non_trees() -> None:
    with pytest.raises(ValueError, match="Not a timer tree"):
        merge_timer_tree({"children": {}})


def test_timer_node_merge_api() -> None:
    a, b = TimerNode(), TimerNode()
    b.get_child("x").add_time(1.5)
    b.get_child("x").get_child("y").add_time(0.5)
    a.merge(b, root_name="sub", is_parallel=True)
    sub = a.children["sub"]
    assert sub.is_parallel and sub.children["x"].total == 1.5
    assert sub.children["x"].children["y"].count == 1
    assert sub.children["x"].parent is sub
    assert sub.children["x"].self_time() == 1.0


def test_set_timer_stack_returns_previous(fresh_stack: TimerStack) -> None:
    replacement = TimerStack()
    assert set_timer_stack(replacement) is fresh_stack
    assert get_timer_stack() is replacement
    leaf()
    assert "leaf" in replacement.root.children
    assert "leaf" not in fresh_stack.root.children
    assert set_timer_stack(fresh_stack) is replacement


def test_threads_have_isolated_stacks(fresh_stack: TimerStack) -> None:
    results: dict[str, Any] = {}

    def in_thread() -> None:
        with hierarchical_timer("thread_block"):
            leaf()
        results["tree"] = get_timer_tree()
        results["stack"] = get_timer_stack()

    with hierarchical_timer("main_block"):
        thread = threading.Thread(target=in_thread)
        thread.start()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert list(results["tree"]["children"]) == ["thread_block"]
    assert results["stack"] is not fresh_stack
    assert timers.get_timer_stack_for_thread(thread) is results["stack"]
    assert list(get_timer_tree()["children"]) == ["main_block"]
    assert "children" not in get_timer_tree()["children"]["main_block"]


def check_node_schema(node: dict[str, Any]) -> None:
    assert isinstance(node["total"], float)
    assert isinstance(node["count"], int)
    assert isinstance(node["self"], float)
    assert node.get("is_parallel", True) is True
    extra = set(node) - {"total", "count", "self", "children", "is_parallel"}
    assert not extra, extra
    if "children" in node:  # only where there are children, as in mlagents_envs
        assert isinstance(node["children"], dict) and node["children"]
        for child in node["children"].values():
            check_node_schema(child)


def test_json_schema(tmp_path: Path) -> None:
    branch(2)
    merge_timer_tree(worker_tree(), root_name="workers")
    set_gauge("g", 1.0)
    tree = json.loads(json.dumps(get_timer_tree()))
    assert tree["name"] == "root"
    assert set(tree["gauges"]["g"]) == {"value", "min", "max", "count"}
    assert isinstance(tree["metadata"], dict)
    root_node = {k: v for k, v in tree.items() if k not in {"name", "gauges", "metadata"}}
    check_node_schema(root_node)


def shape(tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` with timings and metadata values replaced by placeholders; keys, their order,
    counts, flags and gauges are kept, so that trees of different runs compare by shape."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if key in ("total", "self"):
            out[key] = "<seconds>"
        elif key == "metadata":
            out[key] = {name: "<text>" for name in value}
        elif key == "children":
            out[key] = {name: shape(child) for name, child in value.items()}
        else:
            out[key] = value
    return out


def test_tree_has_exactly_the_mlagents_shape() -> None:
    """Keys, their order, and ``children`` only on nodes that have children."""
    with hierarchical_timer("outer"):
        leaf()
        leaf()
    leaf()
    merge_timer_tree(worker_tree(), root_name="workers")
    add_metadata("run_id", "r1")
    s = "<seconds>"
    expected = {
        "name": "root",
        "gauges": {"fps": {"value": 30.0, "min": 30.0, "max": 30.0, "count": 1}},
        "metadata": {
            "timer_format_version": "<text>",
            "start_time_seconds": "<text>",
            "python_version": "<text>",
            "command_line_arguments": "<text>",
            "run_id": "<text>",
            "end_time_seconds": "<text>",
        },
        "total": s,
        "count": 1,
        "self": s,
        "children": {
            "outer": {
                "total": s,
                "count": 1,
                "self": s,
                "children": {"leaf": {"total": s, "count": 2, "self": s}},
            },
            "leaf": {"total": s, "count": 1, "self": s},
            "workers": {
                "total": s,
                "count": 1,
                "is_parallel": True,
                "self": s,
                "children": {
                    "env_step": {
                        "total": s,
                        "count": 2,
                        "is_parallel": True,
                        "self": s,
                        "children": {
                            "decode": {"total": s, "count": 1, "is_parallel": True, "self": s}
                        },
                    }
                },
            },
        },
    }
    got = shape(get_timer_tree())
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # the same key order too
    reset_timers()
    assert list(get_timer_tree()) == ["name", "metadata", "total", "count", "self"]


def test_merge_accepts_nodes_without_children() -> None:
    worker = {
        "name": "root",
        "total": 2.0,
        "count": 1,
        "self": 0.5,
        "children": {"step": {"total": 1.5, "count": 3, "self": 1.5}},
    }
    with hierarchical_timer("host"):
        merge_timer_tree(worker, root_name="worker")
        merge_timer_tree({"total": 1.0, "count": 1, "self": 1.0}, root_name="worker")
    merged = get_timer_tree()["children"]["host"]["children"]["worker"]
    assert merged == {
        "total": 3.0,
        "count": 2,
        "is_parallel": True,
        "self": 1.5,
        "children": {"step": {"total": 1.5, "count": 3, "is_parallel": True, "self": 1.5}},
    }
    assert TimerNode.from_dict({"total": 1.0, "count": 2}).children == {}


# Builds the same tree with the timers module named in argv[1] and prints the shapes of that tree
# and of the tree after a reset.
_SHAPE_SNIPPET = f"""
from __future__ import annotations
import json, sys
from typing import Any

{inspect.getsource(shape)}
module = __import__(sys.argv[1], fromlist=["TimerStack"])

@module.timed
def leaf():
    pass

module.reset_timers()
with module.hierarchical_timer("outer"):
    leaf()
    leaf()
leaf()
worker = module.TimerStack()
with module.hierarchical_timer("env_step", worker):
    with module.hierarchical_timer("decode", worker):
        pass
module.get_timer_root().merge(worker.get_root(), root_name="workers", is_parallel=True)
module.set_gauge("fps", 30.0)
module.add_metadata("run_id", "r1")
trees = [shape(module.get_timer_tree())]
module.reset_timers()
trees.append(shape(module.get_timer_tree()))
print(json.dumps(trees))
"""


def _tree_shapes(python: str | Path, module: str) -> str:
    proc = subprocess.run(
        [str(python), "-c", _SHAPE_SNIPPET, module],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.peer
def test_tree_shape_equals_the_official_packages(peer_python: Path) -> None:
    """Every node has exactly the keys of ``mlagents_envs.timers``' node, in the same order."""
    ours = _tree_shapes(sys.executable, "unity_gym.timers")
    official = _tree_shapes(peer_python, "mlagents_envs.timers")
    assert json.loads(ours) == json.loads(official)
    assert ours == official  # key order included


def test_write_timer_tree_is_atomic_and_complete(tmp_path: Path) -> None:
    leaf()
    target = tmp_path / "run_logs" / "timers.json"
    write_timer_tree(target)
    first = json.loads(target.read_text())
    assert first["children"]["leaf"]["count"] == 1
    # Overwrite: the new content replaces the old file in one step, no temp files remain.
    leaf()
    inode_before = os.stat(target).st_ino
    write_timer_tree(str(target))
    assert json.loads(target.read_text())["children"]["leaf"]["count"] == 2
    assert os.listdir(target.parent) == ["timers.json"]
    assert os.stat(target).st_ino != inode_before  # replaced, not rewritten in place


def test_write_timer_tree_failure_leaves_old_file(tmp_path: Path) -> None:
    target = tmp_path / "timers.json"
    target.write_text("old")
    add_metadata("bad", object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        write_timer_tree(target)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["timers.json"]
