"""``benchmarks.vector_async``: a short run on real games with ``--cpu-split`` and two process
counts, and its scaling table."""

from __future__ import annotations

import re
import sys

import pytest

from benchmarks.vector_async import main, scaling_table


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="--cpu-split reads /proc")
def test_cpu_split_and_the_scaling_table_of_a_run_over_two_process_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(
        ["--processes", "1", "2", "--step-time", "0.002", "--jitter", "0", "--seconds", "1",
         "--contenders", "unity-async", "--cpu-split"]
    )  # fmt: skip
    out = capsys.readouterr().out
    splits = re.findall(
        r"CPU per agent-step: main process \(1\) (\d+) us = ([\d.]+) of a core; (.*); "
        r"total (\d+) us",
        out,
    )
    assert len(splits) == 2, out  # one per process count
    for main_us, share, rest, total_us in splits:
        groups = {name: int(us) for name, us in re.findall(r"(\w+) \(\d+\) (\d+) us", rest)}
        # the game processes and their workers were found and charged some CPU
        assert groups["players"] > 0 and groups["workers"] > 0, out
        assert int(total_us) == pytest.approx(int(main_us) + sum(groups.values()), abs=2)
        assert 0 < float(share) <= 1.5
    rates = [float(rate) for rate in re.findall(r"unity-async .* -> +([\d.]+) agent-steps/s", out)]
    assert len(rates) == 2 and all(0 < rate <= 2 / 0.002 for rate in rates), out
    table = out[out.index("step time 0.002 s, jitter 0 (agent-steps/s):") :].splitlines()
    assert table[1].split(" | ") == ["  processes", "unity-async", "of linear"]
    # the table rounds the exact rates, the lines above print them to 0.1: equal within 0.55
    rows = [row.split(" | ") for row in table[2:4]]
    assert [row[0] for row in rows] == ["  1", "  2"] and rows[0][2] == "1.00"
    for row, rate in zip(rows, rates, strict=True):
        assert abs(float(row[1]) - rate) <= 0.55
    assert float(rows[1][2]) == pytest.approx(rates[1] / (2 * rates[0]), abs=0.01)


def test_scaling_table_ratios_to_the_peers_and_to_linear_scaling() -> None:
    rates = {
        2: {"unity-async": 1000.0, "gym-async": 800.0},
        8: {"unity-async": 3600.0, "gym-async": 4000.0},
        16: {"gym-async": 7000.0},
    }
    assert scaling_table(rates) == [
        "  processes | unity-async | gym-async | unity-async / gym-async | of linear",
        "  2 | 1000 | 800 | 1.25x | 1.00",
        "  8 | 3600 | 4000 | 0.90x | 0.90",  # 3600 / (4 x 1000)
        "  16 | - | 7000 | - | -",
    ]
