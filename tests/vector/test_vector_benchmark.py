"""``benchmarks.vector_async``: one short run with ``--cpu-split`` on a real game."""

from __future__ import annotations

import re
import sys

import pytest

from benchmarks.vector_async import main


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="--cpu-split reads /proc")
def test_cpu_split_accounts_the_main_process_the_player_and_the_worker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(
        ["--processes", "1", "--step-time", "0.002", "--jitter", "0", "--seconds", "1",
         "--contenders", "unity-async", "--cpu-split"]
    )  # fmt: skip
    out = capsys.readouterr().out
    split = re.search(
        r"CPU per agent-step: main process \(1\) (\d+) us = ([\d.]+) of a core; (.*); "
        r"total (\d+) us",
        out,
    )
    assert split, out
    main_us, total_us = int(split[1]), int(split[4])
    groups = dict(re.findall(r"(\w+) \(\d+\) (\d+) us", split[3]))
    # one game process and at least its worker were found and charged some CPU
    assert int(groups["players"]) > 0 and int(groups["workers"]) > 0, out
    assert total_us == pytest.approx(main_us + sum(map(int, groups.values())), abs=2)
    assert 0 < float(split[2]) <= 1.5
    rate = re.search(r"unity-async .* -> +([\d.]+) agent-steps/s", out)
    assert rate, out
    assert 0 < float(rate[1]) <= 1 / 0.002  # no faster than the simulated compute allows
