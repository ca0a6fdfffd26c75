"""Judge a benchmark over several seeds: each seed's figure, the median, the worst seed and the
spread, against the figure's goal.

A learning benchmark's outcome depends on its seed (when learning takes off, which lessons a run
reaches), so a claim is made on several seeds: a goal is met when the median of the seeds' figures
AND the worst seed's figure meet it. The pure functions here (:func:`summarize`,
:func:`format_table`) do the arithmetic; :func:`add_seed_arguments`, :func:`chosen_seeds` and
:func:`seed_workdir` give every benchmark the same ``--seeds 1 2 3`` (``--seed N`` stays: one
seed) and the same run folders, ``<workdir>/seed<N>/``, so a stopped multi-seed benchmark
continues each seed where it stopped.

A figure that could not be measured (``nan``: a target never reached, no games played) counts
as the worst possible value: it fails its goal, and it is the worst seed.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Figure",
    "Goal",
    "SeedSummary",
    "add_seed_arguments",
    "chosen_seeds",
    "format_table",
    "seed_workdir",
    "summarize",
    "summarize_figures",
]


@dataclass(frozen=True)
class Goal:
    """What a figure must reach.

    Attributes:
        threshold: the bound.
        higher: higher values are better (the figure must be at least ``threshold``); False:
            lower values are better (at most ``threshold``).
        strict: the figure must pass ``threshold``, not only reach it (``>`` / ``<``).
    """

    threshold: float
    higher: bool = True
    strict: bool = False

    def met(self, value: float) -> bool:
        """Whether ``value`` meets the goal (never for ``nan``)."""
        if math.isnan(value):
            return False
        if self.higher:
            return value > self.threshold if self.strict else value >= self.threshold
        return value < self.threshold if self.strict else value <= self.threshold

    def worst(self) -> float:
        """The worst value a figure can have (what an unmeasured figure counts as)."""
        return -math.inf if self.higher else math.inf

    def __str__(self) -> str:
        sign = (">" if self.higher else "<") + ("" if self.strict else "=")
        return f"{sign} {self.threshold:g}"


@dataclass(frozen=True)
class Figure:
    """One figure a benchmark part measured on one seed.

    Attributes:
        name: what it is (the same name on every seed, e.g. ``"Tennis win rate"``).
        value: the measurement; ``nan`` when it could not be measured.
        goal: its goal; None for a figure shown for information (it does not decide the exit
            status).
    """

    name: str
    value: float
    goal: Goal | None = None


@dataclass(frozen=True)
class SeedSummary:
    """A figure over seeds.

    Attributes:
        name: the figure.
        goal: its goal (None: shown for information only).
        values: each seed's value, in the order the seeds ran (``nan``: not measured).
        median: the median over seeds, an unmeasured value counted as the worst possible
            (``-inf`` when higher is better, ``+inf`` otherwise); the plain median without a goal
            (``nan`` when some seed is unmeasured).
        worst: the worst seed's value (the smallest when higher is better, else the largest;
            ``nan`` when some seed is unmeasured); without a goal the smallest.
        spread: the largest value minus the smallest (``nan`` when some seed is unmeasured).
        median_met: whether the median meets the goal (True without a goal).
        worst_met: whether the worst seed meets it (True without a goal).
    """

    name: str
    goal: Goal | None
    values: dict[int, float]
    median: float
    worst: float
    spread: float
    median_met: bool
    worst_met: bool

    @property
    def met(self) -> bool:
        """Whether the median and the worst seed both meet the goal (True without a goal)."""
        return self.median_met and self.worst_met


def summarize(name: str, goal: Goal | None, values: Mapping[int, float]) -> SeedSummary:
    """The median, worst seed and spread of a figure's ``values`` (seed -> value) and whether
    they meet ``goal``.

    Raises:
        ValueError: ``values`` is empty.
    """
    if not values:
        raise ValueError(f"{name}: no seed has a value; run at least one seed")
    raw = list(values.values())
    unmeasured = any(math.isnan(value) for value in raw)
    spread = math.nan if unmeasured else max(raw) - min(raw)
    if goal is None:
        median = math.nan if unmeasured else statistics.median(raw)
        worst = math.nan if unmeasured else min(raw)
        return SeedSummary(name, None, dict(values), median, worst, spread, True, True)
    counted = [goal.worst() if math.isnan(value) else value for value in raw]
    median = statistics.median(counted)
    worst = math.nan if unmeasured else (min(counted) if goal.higher else max(counted))
    return SeedSummary(
        name, goal, dict(values), median, worst, spread, goal.met(median), goal.met(worst)
    )


def summarize_figures(per_seed: Mapping[int, Sequence[Figure]]) -> list[SeedSummary]:
    """Summarize each figure name over the seeds of ``per_seed`` (seed -> that seed's figures),
    in the order the names first appear; a seed without a figure counts it as unmeasured. The
    goal is the first seed's."""
    goals: dict[str, Goal | None] = {}
    for figures in per_seed.values():
        for figure in figures:
            goals.setdefault(figure.name, figure.goal)
    summaries = []
    for name, goal in goals.items():
        values = {
            seed: next((f.value for f in figures if f.name == name), math.nan)
            for seed, figures in per_seed.items()
        }
        summaries.append(summarize(name, goal, values))
    return summaries


def _shown(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return "n/a"
    return f"{value:.4g}"


def format_table(title: str, summaries: Sequence[SeedSummary]) -> str:
    """The figures of ``summaries`` as a text table: one row per figure with each seed's value,
    the median, the worst seed, the spread (max - min), the goal and whether the median and the
    worst seed meet it (``n/a``: not measured)."""
    if not summaries:
        return f"{title}: no figures"
    seeds = list(summaries[0].values)
    head = ["figure", *(f"seed {seed}" for seed in seeds), "median", "worst", "spread", "goal"]
    rows = [[*head, "met (median, worst)"]]
    for summary in summaries:
        values = [_shown(summary.values.get(seed, math.nan)) for seed in seeds]
        if summary.goal is None:
            verdict = "(no goal)"
        else:
            both = "met" if summary.met else "NOT met"
            verdict = f"{both} ({_yes(summary.median_met)}, {_yes(summary.worst_met)})"
        rows.append(
            [
                summary.name,
                *values,
                _shown(summary.median),
                _shown(summary.worst),
                _shown(summary.spread),
                "-" if summary.goal is None else str(summary.goal),
                verdict,
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) + 1)]
    lines = [f"{title} (seeds {', '.join(map(str, seeds))})"]
    for row in rows:
        lines.append(
            "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        )
    return "\n".join(line.rstrip() for line in lines)


def _yes(met: bool) -> str:
    return "yes" if met else "no"


def add_seed_arguments(parser: argparse.ArgumentParser) -> None:
    """``--seeds N [N ...]`` and ``--seed N`` (one seed; the default is seed 1), exclusive."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        metavar="N",
        help="run each part once per seed and judge it on the median and the worst seed",
    )
    group.add_argument("--seed", type=int, help="one seed (the same as --seeds N; default 1)")


def chosen_seeds(args: argparse.Namespace) -> list[int]:
    """The seeds ``--seeds`` or ``--seed`` chose (``[1]`` by default), without repeats.

    Raises:
        ValueError: a seed is given twice.
    """
    seeds = list(args.seeds) if args.seeds else [1 if args.seed is None else args.seed]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {' '.join(map(str, seeds))}: give each seed once")
    return seeds


def seed_workdir(workdir: Path, seed: int, seeds: Sequence[int]) -> Path:
    """The run folder of ``seed``: ``<workdir>/seed<N>``.

    A folder a benchmark filled before ``--seeds`` existed holds its runs directly
    (``<workdir>/results``, no ``seed<N>`` folder): with one seed it is used as it is, so
    ``--seed N --workdir DIR`` continues such runs.

    Raises:
        ValueError: several seeds are asked of such a folder (move its content into
            ``<workdir>/seed<N>`` for the seed it was trained with).
    """
    own = workdir / f"seed{seed}"
    legacy = (workdir / "results").is_dir() and not any(workdir.glob("seed*"))
    if not legacy:
        return own
    if len(seeds) == 1:
        print(f"{workdir} holds runs from before --seeds: seed {seed} uses it as it is", flush=True)
        return workdir
    raise ValueError(
        f"{workdir} holds runs from before --seeds (in {workdir / 'results'}); move what it "
        f"holds into {workdir}/seed<N> for the seed N it was trained with, or choose another "
        "--workdir"
    )
