"""unity_gym's modules import downward only: no import cycle, no module importing its package
root (or an ancestor package's root), and no component importing one above it.

Which imports count: every ``import``/``from ... import`` statement anywhere in a module, parsed
with ``ast`` from the source tree: module-level, function-level (deferred) and ``if
TYPE_CHECKING:`` imports alike, relative ones resolved. ``from pkg import name`` counts as an
import of ``pkg.name`` when that is a module, else of ``pkg``. Implicit imports of parent
packages (Python runs ``unity_gym/__init__`` before ``unity_gym.x``) are not edges: the root's
own imports are lazy (``importlib`` on first attribute access).

Layers (a component is ``unity_gym.<name>``; the root package is ``unity_gym``), low to high:
foundation (exceptions, version, wire messages, timers) -> the bridge's parts (base_env, side
channels, launcher, behavior names) -> decoding, communicator, spaces -> environment, demo files
-> the game lifecycle (``game``) -> fronts (gym_env, vector, pettingzoo, sb3, compat,
registration, mlagents_compat) -> the root. The headless player sits beside the bridge: it may use
the wire messages, side channels, demo files and behavior names, and the observation spaces (to
feed ONNX models as a trainer fed them), nothing that drives a game.
:data:`ALLOWED` is the table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import unity_gym

PACKAGE = Path(unity_gym.__file__).resolve().parent

FOUNDATION = {
    "exceptions",
    "version",
    "protocol",
    "temp_files",
    "timers",
    "player_process",
    "lazy_exports",
}
PARTS = FOUNDATION | {"base_env", "side_channels", "launcher", "behavior_names"}
CODECS = PARTS | {"decoding", "communicator", "spaces"}
BRIDGE = CODECS | {"environment", "demo"}
PLAYER_USES = {
    "player_process",
    "lazy_exports",
    "exceptions",
    "protocol",
    "side_channels",
    "demo",
    "behavior_names",
    "decoding",
    "temp_files",
    "base_env",
    "spaces",
}
GAME = BRIDGE | {"player"}
FRONT_BASE = GAME | {"game"}

ALLOWED: dict[str, set[str]] = {
    "exceptions": set(),
    "player_process": set(),
    "lazy_exports": set(),
    "version": set(),
    "protocol": set(),
    "temp_files": set(),
    "timers": {"temp_files"},
    "base_env": {"exceptions"},
    "behavior_names": {"exceptions"},
    "launcher": {"exceptions"},
    "side_channels": {"exceptions", "protocol", "version"},
    "decoding": PARTS,
    "communicator": PARTS,
    "spaces": PARTS,
    "environment": CODECS,
    "demo": CODECS,
    "player": PLAYER_USES,
    "game": GAME,
    "gym_env": FRONT_BASE,
    "vector": FRONT_BASE | {"gym_env"},
    "pettingzoo": FRONT_BASE | {"gym_env", "vector"},
    "sb3": FRONT_BASE | {"vector"},
    "compat": FRONT_BASE | {"registration"},
    "registration": FRONT_BASE,
    "mlagents_compat": FRONT_BASE | {"compat"},
}
"""Per component, the other components it may import."""


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["unity_gym", *path.relative_to(PACKAGE).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imports(modules: dict[str, tuple[Path, bool]]) -> set[tuple[str, str]]:
    edges = set()
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join(here + ([node.module] if node.module else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    edges.add((name, target))
    return edges


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "unity_gym"


def test_no_module_imports_its_package_root() -> None:
    bad = [
        f"{source} imports {target}"
        for source, target in _imports(_modules())
        if source.startswith(target + ".")
    ]
    assert bad == []


def test_no_component_imports_a_layer_above_it() -> None:
    modules = _modules()
    assert set(ALLOWED) >= {_component(m) for m in modules} - {"unity_gym"}
    bad = sorted(
        f"{source} imports {target}"
        for source, target in _imports(modules)
        if _component(source) != "unity_gym"
        and _component(target) != _component(source)
        and _component(target) not in ALLOWED[_component(source)]
    )
    assert bad == []


def test_there_is_no_import_cycle() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for source, target in _imports(modules):
        graph[source].add(target)
    # Tarjan's strongly connected components; a component of two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                cycles.append(sorted(members))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert cycles == []
