"""``benchmarks/compare_commits.py``: a benchmark run on an earlier commit and on the working
tree in turn (a real ``git worktree`` of the repository), its picked figures tabled per side."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks.compare_commits import REPO_ROOT, main, picked_values

pytestmark = pytest.mark.timeout(120)


def _worktrees() -> str:
    listed = subprocess.run(["git", "worktree", "list"], cwd=REPO_ROOT, capture_output=True,
                            text=True, check=True)  # fmt: skip
    return listed.stdout


def test_picked_values_take_the_first_match_of_each_output() -> None:
    outputs = ["rate 5 then rate 6", "no figure here", "rate 7.5"]
    assert picked_values(r"rate ([\d.]+)", outputs) == [5.0, 7.5]
    table = ["figure   value\nours     4654  1930.3\nofficial 769", "ours 12\n"]
    assert picked_values(r"^ours\s+(\d+)", table) == [4654.0, 12.0]  # ^ starts every line
    assert picked_values(r"^official\s+(\d+)$", table) == [769.0]


def test_both_sides_run_in_turn_and_the_table_shows_each_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _worktrees()
    script = "import os, unity_gym; print('tree', os.getcwd()); print('rate 4')"
    status = main(["HEAD", "--rounds", "2", "--pick", r"rate (\d+)", "--", "-c", script])
    out = capsys.readouterr().out
    assert status == 0
    assert out.count("===== base ") == 2 and out.count("===== working tree") == 2
    assert "compare-commits-" in out and f"tree {REPO_ROOT}" in out  # each side in its tree
    (row,) = [line for line in out.splitlines() if line.startswith("rate (")]
    assert row.split()[-5:] == ["4", "4", "4", "4", "1.000"]
    assert _worktrees() == before  # the temporary worktree is removed


def test_a_failing_run_makes_the_exit_status_1_and_a_bad_base_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["HEAD", "--rounds", "1", "--", "-c", "raise SystemExit(3)"]) == 1
    assert "exit status 3" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main(["no-such-revision", "--", "-c", "pass"])
    assert refused.value.code == 2
    assert "'no-such-revision' is not a commit" in capsys.readouterr().err
    assert main(["HEAD"]) == 2  # no '--' before the benchmark
