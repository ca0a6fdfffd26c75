"""The benchmarks' seed helper (:mod:`benchmarks.seeds`): each seed's figure, the median, the
worst seed and the spread, judged against the figure's goal; ``--seeds`` / ``--seed``; a run
folder per seed; and one real multi-seed benchmark run (``benchmarks.multiagent --only tennis
--seeds 1 2`` on a tiny budget: real ``unity-train`` and player processes).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from benchmarks.seeds import (
    Figure,
    Goal,
    add_seed_arguments,
    chosen_seeds,
    format_table,
    seed_workdir,
    summarize,
    summarize_figures,
)


def test_goal_directions_and_strictness() -> None:
    assert Goal(0.9).met(0.9) and not Goal(0.9).met(0.89)
    assert not Goal(0.0, strict=True).met(0.0) and Goal(0.0, strict=True).met(0.01)
    assert Goal(0.5, higher=False).met(0.5) and not Goal(0.5, higher=False).met(0.51)
    assert not Goal(1.0, higher=False, strict=True).met(1.0)
    assert not Goal(0.0).met(math.nan) and not Goal(0.0, higher=False).met(math.nan)
    assert str(Goal(0.9)) == ">= 0.9" and str(Goal(0.5, higher=False, strict=True)) == "< 0.5"


def test_median_worst_and_spread_of_a_higher_is_better_figure() -> None:
    summary = summarize("win rate", Goal(0.9), {1: 0.94, 2: 0.51, 3: 0.92})
    assert summary.median == pytest.approx(0.92)
    assert summary.worst == pytest.approx(0.51)
    assert summary.spread == pytest.approx(0.43)
    assert summary.median_met and not summary.worst_met and not summary.met


def test_the_worst_of_a_lower_is_better_figure_is_the_largest() -> None:
    summary = summarize("ratio", Goal(0.5, higher=False), {1: 0.27, 2: 0.35, 3: 0.48})
    assert (summary.median, summary.worst) == (0.35, 0.48)
    assert summary.spread == pytest.approx(0.21)
    assert summary.met
    failing = summarize("ratio", Goal(0.5, higher=False), {1: 0.27, 2: 0.6, 3: 0.7})
    assert failing.worst == 0.7 and not failing.median_met and not failing.worst_met


def test_an_even_number_of_seeds_takes_the_mean_of_the_middle_two() -> None:
    summary = summarize("margin", Goal(0.0, strict=True), {1: 0.3, 2: -0.1})
    assert summary.median == pytest.approx(0.1) and summary.worst == pytest.approx(-0.1)
    assert summary.median_met and not summary.worst_met


def test_an_unmeasured_seed_is_the_worst_and_fails() -> None:
    higher = summarize("win rate", Goal(0.9), {1: 0.95, 2: math.nan, 3: 0.97})
    assert higher.median == pytest.approx(0.95) and higher.median_met
    assert math.isnan(higher.worst) and not higher.worst_met and not higher.met
    assert math.isnan(higher.spread)
    lower = summarize("ratio", Goal(0.5, higher=False), {1: math.nan, 2: math.nan, 3: 0.2})
    assert lower.median == math.inf and not lower.median_met


def test_a_figure_without_goal_is_shown_and_always_met() -> None:
    summary = summarize("seconds", None, {1: 30.0, 2: 10.0, 3: 20.0})
    assert (summary.median, summary.worst, summary.spread) == (20.0, 10.0, 20.0)
    assert summary.met
    with pytest.raises(ValueError, match="no seed"):
        summarize("seconds", None, {})


def test_figures_are_matched_by_name_across_seeds() -> None:
    per_seed = {
        1: [Figure("ratio", 0.3, Goal(0.5, higher=False)), Figure("seconds", 40.0)],
        2: [Figure("ratio", 0.4, Goal(0.5, higher=False))],
    }
    ratio, seconds = summarize_figures(per_seed)
    assert ratio.name == "ratio" and ratio.values == {1: 0.3, 2: 0.4} and ratio.met
    assert seconds.goal is None and seconds.values[1] == 40.0 and math.isnan(seconds.values[2])


def test_the_table_shows_each_seed_and_the_verdict() -> None:
    summaries = [
        summarize("Tennis win rate", Goal(0.9), {1: 0.94, 2: 0.51, 3: 0.92}),
        summarize("seconds", None, {1: 1.0, 2: 2.0, 3: math.nan}),
    ]
    table = format_table("part tennis", summaries)
    lines = table.splitlines()
    assert lines[0] == "part tennis (seeds 1, 2, 3)"
    assert lines[1].split() == [
        "figure", "seed", "1", "seed", "2", "seed", "3", "median", "worst", "spread", "goal",
        "met", "(median,", "worst)",
    ]  # fmt: skip
    assert lines[2].split() == [
        "Tennis", "win", "rate", "0.94", "0.51", "0.92", "0.92", "0.51", "0.43", ">=", "0.9",
        "NOT", "met", "(yes,", "no)",
    ]  # fmt: skip
    assert lines[3].split() == [
        "seconds", "1", "2", "n/a", "n/a", "n/a", "n/a", "-", "(no", "goal)",
    ]  # fmt: skip


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_seed_arguments(parser)
    return parser.parse_args(argv)


def test_seeds_and_seed_choose_the_seeds() -> None:
    assert chosen_seeds(_parse()) == [1]
    assert chosen_seeds(_parse("--seed", "4")) == [4]
    assert chosen_seeds(_parse("--seeds", "3", "1", "2")) == [3, 1, 2]
    with pytest.raises(ValueError, match="each seed once"):
        chosen_seeds(_parse("--seeds", "1", "1"))
    with pytest.raises(SystemExit):
        _parse("--seed", "1", "--seeds", "2")


def test_each_seed_has_its_folder_and_an_old_flat_workdir_serves_one_seed(
    tmp_path: Path,
) -> None:
    assert seed_workdir(tmp_path, 2, [1, 2]) == tmp_path / "seed2"
    (tmp_path / "results").mkdir()
    assert seed_workdir(tmp_path, 2, [2]) == tmp_path
    with pytest.raises(ValueError, match="before --seeds"):
        seed_workdir(tmp_path, 2, [1, 2])
    (tmp_path / "seed1").mkdir()
    assert seed_workdir(tmp_path, 2, [2]) == tmp_path / "seed2"


@pytest.mark.timeout(180)
def test_a_benchmark_runs_each_seed_in_its_folder_and_judges_them_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.multiagent import main

    common = ["--only", "tennis", "--tennis-steps", "600", "--eval-episodes", "2"]
    code = main([*common, "--seeds", "1", "2", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    for seed in (1, 2):
        assert (tmp_path / f"seed{seed}" / "results" / "tennis" / "Tennis.onnx").is_file()
        assert f"Tennis, 600 steps, seed {seed}" in out
    settings = (tmp_path / "seed2" / "tennis.settings.json").read_text(encoding="utf-8")
    assert '"seed": 2' in settings
    table = out[out.index("part tennis (seeds 1, 2)") :].splitlines()
    name = "Tennis win rate vs random"
    row = next(line for line in table if line.strip().startswith(name))
    first, second, median, worst, spread, *goal = row.strip()[len(name) :].split()
    rates = [float(first), float(second)]
    assert float(median) == pytest.approx(sum(rates) / 2)
    assert float(worst) == pytest.approx(min(rates))
    assert float(spread) == pytest.approx(max(rates) - min(rates))
    met = min(rates) >= 0.9
    assert goal[:2] == [">=", "0.9"] and ("NOT met" not in row) == met
    assert code == (0 if met else 1), out[-3000:]

    code = main([*common, "--seed", "2", "--workdir", str(tmp_path)])
    again = capsys.readouterr().out
    assert "tennis: complete in" in again and str(tmp_path / "seed2") in again
    assert "part tennis (seeds 2)" in again and code == (0 if rates[1] >= 0.9 else 1)


@pytest.mark.parametrize(
    ("part", "what", "count"),
    [("tennis", "courts", "0"), ("tennis", "courts", "-3"), ("tennis", "courts", "two"),
     ("soccer", "fields", "0")],
)  # fmt: skip
def test_an_area_count_below_one_is_refused_before_anything_runs(
    part: str, what: str, count: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.multiagent import main

    with pytest.raises(SystemExit) as exited:
        main(["--only", part, f"--{part}-areas", count, "--workdir", str(tmp_path)])
    assert exited.value.code == 2
    stock = {"tennis": 18, "soccer": 8}[part]
    message = capsys.readouterr().err
    assert f"is not a number of {what}" in message and f"stock {stock})" in message
    assert not any(tmp_path.iterdir()), "nothing was trained"
