"""Run one benchmark on an earlier commit and on the working tree, in turn, in one run.

"No regression against the commit before the change" is read off this: the benchmark (any
script of ``benchmarks/`` with its arguments) runs in a temporary ``git worktree`` of ``BASE``
and in this working tree, alternating for ``--rounds`` rounds, so that both sides see the same
machine load. Each side imports its own tree (``PYTHONPATH`` and the working directory are that
tree; games started by the benchmark run that tree's player). The reference peer venv
(``.peer-venv``) is shared. Every run's output is printed; each ``--pick`` pattern (a regular
expression whose first group is a number; ``^`` and ``$`` match at line boundaries) is then
looked up in every output and tabled per side, with the working tree's median over the base's
median.

Usage::

    python -m benchmarks.compare_commits BASE [--rounds 3] [--pick REGEX ...] \\
        -- benchmarks/bridge_throughput.py --steps 2000

Exit status: 0 when every run succeeded (whatever the figures say), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Side", "main", "picked_values", "run_side"]

REPO_ROOT = Path(__file__).resolve().parents[1]
PEER_VENV = ".peer-venv"


@dataclass
class Side:
    """One side of the comparison: a tree and what its runs printed."""

    name: str
    tree: Path
    outputs: list[str] = field(default_factory=list)
    failures: int = 0


def run_side(side: Side, command: Sequence[str], round_index: int) -> None:
    """Run ``python COMMAND`` in ``side.tree`` with that tree first on the import path; keep and
    print its output."""
    env = dict(os.environ, PYTHONPATH=str(side.tree))
    print(f"\n===== {side.name} ({side.tree}), round {round_index + 1} =====", flush=True)
    done = subprocess.run(
        [sys.executable, *command],
        cwd=side.tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    print(done.stdout, end="", flush=True)
    side.outputs.append(done.stdout)
    if done.returncode not in (0, 1):  # benchmarks exit 1 for a goal not met
        side.failures += 1
        print(f"[{side.name}: exit status {done.returncode}]", flush=True)


def picked_values(pattern: str, outputs: Sequence[str]) -> list[float]:
    """The number captured by ``pattern``'s first group at its first match in each output
    (``^`` and ``$`` match at the start and end of every line of it)."""
    compiled = re.compile(pattern, re.MULTILINE)
    values = []
    for output in outputs:
        match = compiled.search(output)
        if match is not None:
            values.append(float(match.group(1)))
    return values


def _table(patterns: Sequence[str], base: Side, head: Side) -> list[str]:
    lines = [f"{'figure':<48} {'base':<28} {'working tree':<28} tree/base (medians)"]
    for pattern in patterns:
        before = picked_values(pattern, base.outputs)
        after = picked_values(pattern, head.outputs)
        ratio = "n/a"
        if before and after and statistics.median(before):
            ratio = f"{statistics.median(after) / statistics.median(before):.3f}"
        shown = [" ".join(f"{value:g}" for value in values) or "-" for values in (before, after)]
        lines.append(f"{pattern[:48]:<48} {shown[0]:<28} {shown[1]:<28} {ratio}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (module documentation)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: compare_commits BASE [options] -- SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare against (any git revision)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per side, alternating")
    parser.add_argument(
        "--pick", action="append", default=[], help="regex whose first group is a figure"
    )
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command or args.rounds < 1:
        parser.error("give the benchmark after '--' and --rounds of at least 1")
    revision = subprocess.run(
        ["git", "rev-parse", "--verify", f"{args.base}^{{commit}}"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if revision.returncode != 0:
        parser.error(f"{args.base!r} is not a commit of this repository")
    commit = revision.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="compare-commits-") as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--quiet", "--detach", str(tree), commit],
            cwd=REPO_ROOT, check=True,
        )  # fmt: skip
        try:
            if (REPO_ROOT / PEER_VENV).is_dir():
                (tree / PEER_VENV).symlink_to(REPO_ROOT / PEER_VENV)
            base = Side(f"base {commit[:10]}", tree)
            head = Side("working tree", REPO_ROOT)
            for round_index in range(args.rounds):
                for side in (base, head):
                    run_side(side, command, round_index)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)],
                cwd=REPO_ROOT, check=False,
            )  # fmt: skip
    print(f"\n$ python {' '.join(command)}   ({args.rounds} rounds per side, alternating)")
    if args.pick:
        print("\n".join(_table(args.pick, base, head)))
    return 0 if base.failures == head.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
