"""Hierarchical wall-clock profiling with a very cheap ``@timed`` decorator.

Timed blocks nest: a block entered while another is running becomes its child, so the same function
called from two places is accounted twice, once under each caller. Each thread has its own
:class:`TimerStack` (the main thread's is the default, global one). The tree exports as JSON in
the shape (keys and key order) of ``mlagents_envs.timers``::

    {"name": "root", "gauges": {name: {"value", "min", "max", "count"}}, "metadata": {key: str},
     "total": s, "count": 1, "self": s, "children": {name: node, ...}}

where every node is ``{"total": s, "count": n, "self": s, "children": {...}}``, with
``"is_parallel": true`` between ``count`` and ``self`` when it aggregates blocks that ran
concurrently (e.g. in worker processes), in which case its children may add up to more than its
total. Keys with nothing to say are left out: ``children`` on a leaf node, ``gauges`` when no gauge
was set, ``metadata`` when it is empty. Readers of a tree (:func:`merge_timer_tree`,
:meth:`TimerNode.from_dict`) take a missing ``children`` as no children.

Example::

    @timed
    def step(): ...

    with hierarchical_timer("rollout"):
        step()
    write_timer_tree("run_logs/timers.json")
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from unity_gym.temp_files import create_temp_beside

__all__ = [
    "TIMER_FORMAT_VERSION",
    "FuncT",
    "GaugeNode",
    "TimerNode",
    "TimerStack",
    "add_metadata",
    "get_timer_root",
    "get_timer_stack",
    "get_timer_stack_for_thread",
    "get_timer_tree",
    "hierarchical_timer",
    "merge_gauges",
    "merge_timer_tree",
    "reset_timers",
    "set_gauge",
    "set_timer_stack",
    "timed",
    "write_timer_tree",
]

TIMER_FORMAT_VERSION = "0.1.0"
"""Version of the JSON layout, recorded in the tree's metadata."""

_clock = time.perf_counter
FuncT = TypeVar("FuncT", bound=Callable[..., Any])
"""The type of a function :func:`timed` wraps (``mlagents_envs.timers.FuncT``)."""


class TimerNode:
    """Accumulated time of one block of code at one place in the call tree.

    Attributes:
        children: child nodes by block name, in first-entered order.
        total: seconds spent in the block, children included.
        count: number of times the block ran.
        is_parallel: the node aggregates blocks that ran concurrently.
        parent: the enclosing node, ``None`` for a root.
    """

    __slots__ = ("children", "count", "is_parallel", "parent", "total")

    def __init__(self, parent: TimerNode | None = None) -> None:
        self.children: dict[str, TimerNode] = {}
        self.total = 0.0
        self.count = 0
        self.is_parallel = False
        self.parent = parent

    def get_child(self, name: str) -> TimerNode:
        """The child called ``name``, created empty if missing."""
        child = self.children.get(name)
        if child is None:
            child = self.children[name] = TimerNode(self)
        return child

    def add_time(self, elapsed: float) -> None:
        """Record one run of the block lasting ``elapsed`` seconds."""
        self.total += elapsed
        self.count += 1

    def merge(
        self, other: TimerNode, root_name: str | None = None, is_parallel: bool = True
    ) -> None:
        """Add ``other``'s times and counts into this node, recursively.

        Args:
            other: the tree to add; it is not modified.
            root_name: if given, merge into the child of that name instead of this node.
            is_parallel: mark every merged node as having run concurrently.
        """
        target = self.get_child(root_name) if root_name else self
        target.total += other.total
        target.count += other.count
        target.is_parallel = target.is_parallel or is_parallel or other.is_parallel
        for name, child in other.children.items():
            target.get_child(name).merge(child, is_parallel=is_parallel)

    def self_time(self) -> float:
        """Seconds spent in the block outside its children (never negative)."""
        return max(0.0, self.total - sum(c.total for c in self.children.values()))

    @classmethod
    def from_dict(cls, tree: Mapping[str, Any], parent: TimerNode | None = None) -> TimerNode:
        """Rebuild a node (and its subtree) from its JSON form, e.g. another process's tree.

        A node without ``children`` (a leaf, as :func:`get_timer_tree` writes it) gets none.

        Raises:
            ValueError: if a node lacks a numeric ``total`` or ``count``.
        """
        node = cls(parent)
        try:
            node.total = float(tree["total"])
            node.count = int(tree["count"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"Not a timer tree node (needs numeric 'total' and 'count'): {dict(tree)!r:.200}"
            ) from error
        node.is_parallel = bool(tree.get("is_parallel", False))
        for name, child in (tree.get("children") or {}).items():
            node.children[name] = cls.from_dict(child, node)
        return node

    def __repr__(self) -> str:
        children = list(self.children)
        return f"TimerNode(total={self.total:.6f}, count={self.count}, children={children})"


class GaugeNode:
    """Latest value of a metric, with its minimum, maximum and number of updates.

    As ``mlagents_envs.timers.GaugeNode``: each node remembers when its value was last set
    (``time.time()``), and :meth:`merge` keeps the later of the two values.
    """

    __slots__ = ("_timestamp", "count", "max_value", "min_value", "value")

    def __init__(self, value: float) -> None:
        self.value = value
        self.min_value = value
        self.max_value = value
        self.count = 1
        self._timestamp = time.time()

    @property
    def min(self) -> float:
        """Smallest value seen (alias of ``min_value``)."""
        return self.min_value

    @property
    def max(self) -> float:
        """Largest value seen (alias of ``max_value``)."""
        return self.max_value

    def update(self, new_value: float) -> None:
        """Record a new latest value (keyword ``new_value`` as officially)."""
        self.value = new_value
        self.min_value = min(self.min_value, new_value)
        self.max_value = max(self.max_value, new_value)
        self.count += 1
        self._timestamp = time.time()

    def merge(self, other: GaugeNode) -> None:
        """Fold ``other`` in: min, max and count combine; the value set later wins.

        As officially, ties keep this node's value.
        """
        if self._timestamp < other._timestamp:
            self.value = other.value
            self._timestamp = other._timestamp
        self.min_value = min(self.min_value, other.min_value)
        self.max_value = max(self.max_value, other.max_value)
        self.count += other.count

    def as_dict(self) -> dict[str, float]:
        """JSON form: ``{"value", "min", "max", "count"}``."""
        return {
            "value": self.value,
            "min": self.min_value,
            "max": self.max_value,
            "count": self.count,
        }


class TimerStack:
    """One thread's timer tree, the block currently running, gauges and metadata.

    Use :func:`hierarchical_timer` or :func:`timed` rather than :meth:`push` / :meth:`pop`
    directly, so entries and exits always pair up.
    """

    __slots__ = ("current", "gauges", "metadata", "root", "start_time")

    def __init__(self) -> None:
        self.root = TimerNode()
        self.current = self.root
        self.start_time = _clock()
        self.gauges: dict[str, GaugeNode] = {}
        self.metadata: dict[str, str] = {}
        self._add_default_metadata()

    @property
    def stack(self) -> list[TimerNode]:
        """Nodes from the root to the block currently running."""
        path: list[TimerNode] = []
        node: TimerNode | None = self.current
        while node is not None:
            path.append(node)
            node = node.parent
        path.reverse()
        return path

    def push(self, name: str) -> TimerNode:
        """Enter block ``name`` under the current one and return its node."""
        node = self.current.get_child(name)
        self.current = node
        return node

    def pop(self) -> None:
        """Leave the current block (no-op at the root)."""
        parent = self.current.parent
        if parent is not None:
            self.current = parent

    def reset(self) -> None:
        """Forget all times, counts, gauges and metadata and restart the root clock.

        Blocks running right now stay in the tree (with zeroed totals), so they and any timer
        entered later keep recording into the new tree.
        """
        path = self.stack
        for node, child in itertools.pairwise(path):
            node.children = {name: c for name, c in node.children.items() if c is child}
        path[-1].children = {}
        for node in path:
            node.total = 0.0
            node.count = 0
            node.is_parallel = False
        self.start_time = _clock()
        self.gauges = {}
        self.metadata = {}
        self._add_default_metadata()

    def get_root(self) -> TimerNode:
        """The root node, its total set to the time since creation/reset and its count to 1."""
        root = self.root
        root.total = _clock() - self.start_time
        root.count = 1
        return root

    def get_timing_tree(self, node: TimerNode | None = None) -> dict[str, Any]:
        """The JSON-ready tree of ``node`` (the whole tree, with gauges and metadata, if None)."""
        if node is not None:
            return _node_dict(node)
        tree: dict[str, Any] = {"name": "root"}
        if self.gauges:
            tree["gauges"] = {name: gauge.as_dict() for name, gauge in self.gauges.items()}
        if self.metadata:
            self.metadata["end_time_seconds"] = str(int(time.time()))
            tree["metadata"] = dict(self.metadata)
        tree.update(_node_dict(self.get_root()))
        return tree

    def set_gauge(self, name: str, value: float) -> None:
        """Record ``value`` as the latest value of gauge ``name`` (NaN is ignored)."""
        if math.isnan(value):
            return
        gauge = self.gauges.get(name)
        if gauge is None:
            self.gauges[name] = GaugeNode(value)
        else:
            gauge.update(value)

    def add_metadata(self, key: str, value: str) -> None:
        """Store a string in the tree's ``metadata``."""
        self.metadata[key] = value

    def _add_default_metadata(self) -> None:
        self.metadata["timer_format_version"] = TIMER_FORMAT_VERSION
        self.metadata["start_time_seconds"] = str(int(time.time()))
        self.metadata["python_version"] = sys.version
        self.metadata["command_line_arguments"] = " ".join(sys.argv)


def _node_dict(node: TimerNode) -> dict[str, Any]:
    """One node's JSON form: ``total``, ``count``, [``is_parallel``], ``self``, [``children``]."""
    result: dict[str, Any] = {"total": node.total, "count": node.count}
    if node.is_parallel:
        result["is_parallel"] = True
    children = {name: _node_dict(child) for name, child in node.children.items()}
    result["self"] = max(0.0, node.total - sum(child["total"] for child in children.values()))
    if children:
        result["children"] = children
    return result


# ----------------------------------------------------------------------------- per-thread stacks

_stacks_by_thread: dict[int, TimerStack] = {}


class _ThreadStacks(threading.local):
    """Holds ``stack``, created on first use in each thread."""

    stack: TimerStack

    def __init__(self) -> None:
        self.stack = TimerStack()
        _stacks_by_thread[threading.get_ident()] = self.stack


_local = _ThreadStacks()


def get_timer_stack() -> TimerStack:
    """The calling thread's timer stack (the global one in the main thread)."""
    return _local.stack


def set_timer_stack(stack: TimerStack) -> TimerStack:
    """Make ``stack`` the calling thread's timer stack and return the previous one.

    Timed blocks running at the moment of the switch finish in the stack they started in.
    """
    previous = _local.stack
    _local.stack = stack
    _stacks_by_thread[threading.get_ident()] = stack
    return previous


def get_timer_stack_for_thread(thread: threading.Thread) -> TimerStack | None:
    """The timer stack of a started thread that has used timers, else ``None``."""
    if thread.ident is None:
        return None
    return _stacks_by_thread.get(thread.ident)


# ----------------------------------------------------------------------------- timing


class _HierarchicalTimer:
    __slots__ = ("_entered", "_name", "_node", "_parent", "_stack", "_start")

    def __init__(self, name: str, timer_stack: TimerStack | None) -> None:
        self._name = name
        self._stack = timer_stack

    def __enter__(self) -> TimerNode:
        stack = self._stack or _local.stack
        parent = stack.current
        node = parent.children.get(self._name)
        if node is None:
            node = parent.children[self._name] = TimerNode(parent)
        self._entered = stack
        self._parent = parent
        self._node = node
        stack.current = node
        self._start = _clock()
        return node

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        node = self._node
        node.total += _clock() - self._start
        node.count += 1
        self._entered.current = self._parent


def hierarchical_timer(
    name: str, timer_stack: TimerStack | None = None
) -> AbstractContextManager[TimerNode]:
    """Context manager timing its block as child ``name`` of the running block.

    ``with hierarchical_timer("update") as node:`` gives the block's :class:`TimerNode`. The time
    is recorded even if the block raises.

    Args:
        name: block name, unique among its siblings.
        timer_stack: stack to record into; the calling thread's when ``None``.
    """
    return _HierarchicalTimer(name, timer_stack)


def timed(func: FuncT) -> FuncT:
    """Decorator timing every call of ``func`` under its ``__qualname__``.

    Records into the calling thread's stack. Adds a few hundred nanoseconds per call.
    """
    name = func.__qualname__
    local = _local
    clock = _clock

    @functools.wraps(func)
    def timed_call(*args: Any, **kwargs: Any) -> Any:
        stack = local.stack
        parent = stack.current
        node = parent.children.get(name)
        if node is None:
            node = parent.children[name] = TimerNode(parent)
        stack.current = node
        start = clock()
        try:
            return func(*args, **kwargs)
        finally:
            node.total += clock() - start
            node.count += 1
            stack.current = parent

    return timed_call  # type: ignore[return-value]


# ----------------------------------------------------------------------------- module helpers


def set_gauge(name: str, value: float, timer_stack: TimerStack | None = None) -> None:
    """Record ``value`` as the latest value of gauge ``name`` (NaN is ignored)."""
    (timer_stack or _local.stack).set_gauge(name, value)


def add_metadata(key: str, value: str, timer_stack: TimerStack | None = None) -> None:
    """Store ``key = value`` (a string) in the tree's metadata."""
    (timer_stack or _local.stack).add_metadata(key, value)


def get_timer_tree(timer_stack: TimerStack | None = None) -> dict[str, Any]:
    """The JSON-ready timer tree (schema in the module docstring)."""
    return (timer_stack or _local.stack).get_timing_tree()


def get_timer_root(timer_stack: TimerStack | None = None) -> TimerNode:
    """The root :class:`TimerNode`, its total updated to the elapsed time."""
    return (timer_stack or _local.stack).get_root()


def reset_timers(timer_stack: TimerStack | None = None) -> None:
    """Clear the timer tree, gauges and metadata (see :meth:`TimerStack.reset`)."""
    (timer_stack or _local.stack).reset()


def merge_gauges(gauges: Mapping[str, GaugeNode], timer_stack: TimerStack | None = None) -> None:
    """Fold ``gauges`` (e.g. another stack's ``gauges``) into a stack's gauges.

    Official semantics (``mlagents_envs.timers.merge_gauges``): a gauge the stack already has is
    merged with :meth:`GaugeNode.merge` (the later value wins); a new one is added as the given
    node object itself, not a copy.

    Args:
        gauges: gauges by name.
        timer_stack: stack to merge into; the calling thread's when ``None``.
    """
    stack = timer_stack or _local.stack
    for name, gauge in gauges.items():
        existing = stack.gauges.get(name)
        if existing is None:
            stack.gauges[name] = gauge
        else:
            existing.merge(gauge)


def merge_timer_tree(
    tree: Mapping[str, Any],
    root_name: str | None = None,
    is_parallel: bool = True,
    timer_stack: TimerStack | None = None,
) -> None:
    """Add a tree from :func:`get_timer_tree` (e.g. a worker process's) under the running block.

    Times and counts are added, so send each period's tree once and reset it in the worker
    (or send a tree only once, at the end). Gauges are merged too; metadata is not.

    Args:
        tree: the JSON tree to add; nodes without ``children`` and a root without ``gauges``
            (the shape :func:`get_timer_tree` and ``mlagents_envs`` write) are accepted.
        root_name: merge under a child of that name (e.g. ``"worker_3"``) rather than directly
            into the running block.
        is_parallel: mark the merged nodes as having run concurrently.
        timer_stack: stack to merge into; the calling thread's when ``None``.

    Raises:
        ValueError: if ``tree`` is not a timer tree.
    """
    stack = timer_stack or _local.stack
    stack.current.merge(TimerNode.from_dict(tree), root_name=root_name, is_parallel=is_parallel)
    for name, values in (tree.get("gauges") or {}).items():
        incoming = GaugeNode(float(values["value"]))
        incoming.min_value = float(values["min"])
        incoming.max_value = float(values["max"])
        incoming.count = int(values["count"])
        existing = stack.gauges.get(name)
        if existing is None:
            stack.gauges[name] = incoming
        else:
            existing.merge(incoming)


def write_timer_tree(path: str | os.PathLike[str], timer_stack: TimerStack | None = None) -> None:
    """Write the timer tree as indented JSON to ``path``, atomically.

    The JSON goes to a temporary file in the same folder, which then replaces ``path``, so readers
    never see a partial file. Missing parent folders are created.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(get_timer_tree(timer_stack), indent=4)
    fd, temp_name = create_temp_beside(target)  # 0666 & ~umask, not mkstemp's 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.write("\n")
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
