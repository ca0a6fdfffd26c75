"""Per-call overhead of ``@timed`` and ``hierarchical_timer``: ours versus mlagents_envs.timers.

Both sides run the same measurement snippet in a fresh interpreter: ours with this repository's
Python, the official one with the reference peer venv (``benchmarks/peer_venv.py``). The overhead is
the time of a decorated no-op call minus an undecorated one, taking the best of several interleaved
rounds (the least disturbed by other processes).

Usage::

    python benchmarks/timers_overhead.py [--calls 200000] [--rounds 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.peer_venv import PeerUnavailable, ensure_peer_venv  # noqa: E402

__all__ = ["main", "measure"]

# Runs in the measured interpreter; argv: module name, calls, rounds. Prints JSON (seconds/call).
_SNIPPET = """
import json, sys, time
module = __import__(sys.argv[1], fromlist=["timed", "hierarchical_timer"])
timed, hierarchical_timer = module.timed, module.hierarchical_timer
calls, rounds = int(sys.argv[2]), int(sys.argv[3])

def plain(x):
    return x

decorated = timed(plain)

def with_block(x):
    with hierarchical_timer("block"):
        return x

def loop(func, n):
    clock = time.perf_counter
    start = clock()
    for i in range(n):
        func(i)
    return (clock() - start) / n

best = {"plain": 1.0, "timed": 1.0, "block": 1.0}
for _ in range(rounds):
    best["plain"] = min(best["plain"], loop(plain, calls))
    best["timed"] = min(best["timed"], loop(decorated, calls))
    best["block"] = min(best["block"], loop(with_block, calls))
print(json.dumps(best))
"""


def measure(python: str | Path, module: str, calls: int, rounds: int) -> dict[str, float]:
    """Seconds per call of a plain, a ``@timed`` and a ``hierarchical_timer`` no-op function.

    Args:
        python: interpreter to run the snippet with.
        module: the timers module to import there (``unity_gym.timers`` or
            ``mlagents_envs.timers``).
        calls: calls per round.
        rounds: interleaved rounds; the fastest of each kind is kept.
    """
    proc = subprocess.run(
        [str(python), "-c", _SNIPPET, module, str(calls), str(rounds)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"measuring {module} with {python} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    """Measure both implementations and print µs/call with the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (best kept)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    ours = measure(sys.executable, "unity_gym.timers", args.calls, args.rounds)
    try:
        peer = ensure_peer_venv()
        official: dict[str, float] | None = measure(
            peer, "mlagents_envs.timers", args.calls, args.rounds
        )
    except PeerUnavailable as error:
        print(f"official timers not measured (reference peer unavailable): {error}")
        official = None

    def overhead(result: dict[str, float], kind: str) -> float:
        return (result[kind] - result["plain"]) * 1e6

    rows: dict[str, dict[str, float]] = {}
    for kind, label in (("timed", "@timed"), ("block", "hierarchical_timer")):
        row = {"ours_us": overhead(ours, kind)}
        if official is not None:
            row["official_us"] = overhead(official, kind)
            row["speedup"] = row["official_us"] / row["ours_us"]
        rows[label] = row

    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"added time per call (best of {args.rounds} rounds x {args.calls} calls)")
    print(f"{'':20s} {'unity_gym':>12s} {'mlagents_envs':>14s} {'official/ours':>14s}")
    for label, row in rows.items():
        official_text = f"{row['official_us']:.3f} µs" if "official_us" in row else "n/a"
        ratio_text = f"{row['speedup']:.1f}x" if "speedup" in row else "n/a"
        print(f"{label:20s} {row['ours_us']:9.3f} µs {official_text:>14s} {ratio_text:>14s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
