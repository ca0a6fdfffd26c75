"""``unity-train`` plugins through entry points, as ML-Agents' ``mlagents.plugins``.

Official facts followed (mlagents 1.1.0 ``mlagents/plugins/trainer_type.py`` and
``stats_writer.py``): a trainer-type plugin returns ``(trainer classes, settings classes)`` by
``trainer_type`` name; a stats-writer plugin takes the run options and returns a list of
writers; a plugin that fails is logged and left out. A real package is built and installed
with pip into a folder of its own, then ``unity-train`` runs in a subprocess with that folder
on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from trainer_test_support import ppo_behavior

REPO = Path(__file__).resolve().parents[2]

PLUGIN_MODULE = '''
"""A test plugin: PPO under another name that leaves a marker, and a file stats writer."""
from dataclasses import dataclass
from pathlib import Path

from trainers.common.bookkeeping.stats import StatsWriter
from trainers.ppo.trainer import PPOTrainer
from trainers.settings import PPOHyperparameters


@dataclass
class MarkedHyperparameters(PPOHyperparameters):
    marker: str = "unset"


class MarkedTrainer(PPOTrainer):
    trainer_type = "marked_ppo"

    def __init__(self, context):
        super().__init__(context)
        hyper = self.settings.hyperparameters
        (context.artifact_dir / "marker.txt").write_text(f"{type(hyper).__name__} {hyper.marker}")


class FileWriter(StatsWriter):
    def __init__(self, path):
        self.path = Path(path)

    def write_stats(self, category, values, step):
        with self.path.open("a") as out:
            for key, summary in values.items():
                out.write(f"{category}\\t{step}\\t{key}\\t{summary.mean}\\n")


def trainer_types():
    return {"marked_ppo": MarkedTrainer}, {"marked_ppo": MarkedHyperparameters}


def stats_writers(options):
    return [FileWriter(options.checkpoint_settings.run_dir / "plugin_stats.tsv")]
'''


def _package(root: Path, name: str, module: str, source: str, entry_points: str) -> Path:
    root.mkdir(parents=True)
    (root / f"{module}.py").write_text(source)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{name}"
            version = "0.1"

            [tool.setuptools]
            py-modules = ["{module}"]
            """
        )
        + entry_points
    )
    return root


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed plugin and a broken one (pip --target)."""
    base = tmp_path_factory.mktemp("plugins")
    good = _package(
        base / "good",
        "unity-train-marked-plugin",
        "marked_plugin",
        PLUGIN_MODULE,
        '[project.entry-points."unity_train.trainer_type"]\n'
        'marked = "marked_plugin:trainer_types"\n'
        '[project.entry-points."unity_train.stats_writer"]\n'
        'file = "marked_plugin:stats_writers"\n',
    )
    broken = _package(
        base / "broken",
        "unity-train-broken-plugin",
        "broken_plugin",
        "import module_that_does_not_exist\n",
        '[project.entry-points."unity_train.trainer_type"]\n'
        'broken = "broken_plugin:trainer_types"\n',
    )
    site = base / "site"
    for package in (good, broken):
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"),
                *("-q", "--no-index", "--target", str(site), str(package)),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            pytest.skip(f"pip cannot build the test plugin offline: {proc.stderr[-1500:]}")
    return site


def _train(
    site: Path, cwd: Path, config: dict[str, object], *flags: str
) -> subprocess.CompletedProcess[str]:
    path = cwd / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(REPO)]))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainers",
            str(path),
            "--results-dir",
            str(cwd / "results"),
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=env,
    )


def test_plugin_trainer_and_stats_writer_are_used(plugin_site: Path, tmp_path: Path) -> None:
    behavior = ppo_behavior(max_steps=1200, summary_freq=400)
    behavior["trainer_type"] = "marked_ppo"
    behavior["hyperparameters"]["marker"] = "from-config"
    proc = _train(
        plugin_site, tmp_path, {"behaviors": {"3DBall": behavior}}, "--scene", "3DBall",
        "--run-id", "plugged",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "results" / "plugged"
    assert (run / "3DBall" / "marker.txt").read_text() == "MarkedHyperparameters from-config"
    assert "with MARKED_PPO" in proc.stderr
    rows = [line.split("\t") for line in (run / "plugin_stats.tsv").read_text().splitlines()]
    keys = {key for _, _, key, _ in rows}
    assert {"Environment/Cumulative Reward", "Losses/Policy Loss", "Is Training"} <= keys
    assert {category for category, *_ in rows} == {"3DBall"}
    assert {int(step) // 400 for _, step, _, _ in rows} >= {1, 2, 3}
    written = yaml.safe_load((run / "configuration.yaml").read_text())
    assert written["behaviors"]["3DBall"]["hyperparameters"]["marker"] == "from-config"
    # the broken plugin is named with its distribution, and the run went on without it
    assert "unity_train.trainer_type plugin 'broken'" in proc.stderr
    assert "unity-train-broken-plugin 0.1" in proc.stderr
    assert "ModuleNotFoundError" in proc.stderr


def test_unknown_trainer_type_lists_built_in_and_plugin_types(
    plugin_site: Path, tmp_path: Path
) -> None:
    behavior = ppo_behavior(max_steps=64)
    behavior["trainer_type"] = "nope"
    proc = _train(plugin_site, tmp_path, {"behaviors": {"B": behavior}}, "--gym-id", "CartPole-v1")
    assert proc.returncode == 2
    assert "behaviors.B.trainer_type: 'nope' is not a trainer type; known: ppo, sac, poca, " \
        "marked_ppo" in proc.stderr  # fmt: skip
    assert "Plugins that failed to load: unity_train.trainer_type plugin 'broken'" in proc.stderr
