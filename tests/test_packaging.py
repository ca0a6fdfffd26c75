"""The distributions built from this repository install and run on their own.

A wheel and a source distribution are built from a copy of the repository's packaged files
with setuptools' PEP 517 hooks (what ``python -m build --no-isolation`` calls: the sdist, then a
wheel built from the unpacked sdist, so a file the sdist forgets breaks the second wheel). Each
is installed with ``pip install --no-deps --no-index`` into a fresh venv that holds nothing else;
only afterwards a ``.pth`` file gives that venv the *dependencies* (numpy, torch, grpcio, ...)
from this interpreter's site-packages, which does not import the repository: the editable
install's finder sits in a ``.pth`` file of that folder, and ``.pth`` files of a folder added
by a ``.pth`` line are not processed. The commands then run from a folder outside the
repository with ``PYTHONPATH`` unset, and the test checks that ``unity_gym`` and ``trainers``
are imported from the venv, that the repository is not on ``sys.path`` and that the
repository-only ``benchmarks.peer_venv`` module is not importable.

What each installed copy must do: ``unity-train --scene 3DBall`` with a tiny config (the
built-in 3DBall player is launched from the installed package) writes its ONNX model, the
console scripts ``unity-gym-player`` and ``unity-train`` start, and the package data is there:
the protocol's ``.proto`` files and the bundled ``trainers/configs/*.yaml``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGED_PATHS = ("pyproject.toml", "README.md", "unity_gym", "trainers")
"""What setuptools reads to build the distributions (``[tool.setuptools.packages.find]``)."""

PROTO_FILES = sorted(
    path.name for path in (REPO_ROOT / "unity_gym/protocol/communicator_objects").glob("*.proto")
)
CONFIG_FILES = sorted(path.name for path in (REPO_ROOT / "trainers/configs").glob("*.yaml"))

TINY_CONFIG = textwrap.dedent(
    """\
    behaviors:
      3DBall:
        trainer_type: ppo
        hyperparameters: {batch_size: 32, buffer_size: 240, num_epoch: 1}
        network_settings: {hidden_units: 16, num_layers: 1, normalize: true}
        max_steps: 480
        time_horizon: 32
        summary_freq: 240
    """
)

pytestmark = pytest.mark.timeout(300)


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``command`` and return its output; fail the test with the output if it fails."""
    completed = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=240,
        check=False,
    )
    assert completed.returncode == 0, (
        f"{' '.join(command)} exited with {completed.returncode}:\n{completed.stdout[-4000:]}"
    )
    return completed.stdout


def _build(hook: str, source: Path, output: Path) -> Path:
    """Call setuptools' PEP 517 ``hook`` (``build_sdist`` or ``build_wheel``) in ``source``."""
    script = f"from setuptools import build_meta; print(build_meta.{hook}({str(output)!r}))"
    name = _run([sys.executable, "-c", script], cwd=source).strip().splitlines()[-1]
    return output / name


@pytest.fixture(scope="module")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"wheel": <wheel from the tree>, "sdist": <sdist>, "sdist-wheel": <wheel from it>}``."""
    root = tmp_path_factory.mktemp("packaging")
    source = root / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PACKAGED_PATHS:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    dist = root / "dist"
    dist.mkdir()
    sdist = _build("build_sdist", source, dist)
    wheel = _build("build_wheel", source, dist)
    unpacked = root / "unpacked"
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
            archive.extractall(unpacked, filter="data")
        else:
            archive.extractall(unpacked)
    (sdist_root,) = unpacked.iterdir()
    from_sdist = root / "from-sdist"
    from_sdist.mkdir()
    sdist_wheel = _build("build_wheel", sdist_root, from_sdist)
    return {"wheel": wheel, "sdist": sdist, "sdist-wheel": sdist_wheel}


def test_distributions_hold_the_package_data(distributions: dict[str, Path]) -> None:
    """Both archives carry every ``.proto`` file and every bundled trainer config."""
    wheel_names = set(zipfile.ZipFile(distributions["wheel"]).namelist())
    with tarfile.open(distributions["sdist"]) as archive:
        sdist_names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for names in (wheel_names, sdist_names):
        for proto in PROTO_FILES:
            assert f"unity_gym/protocol/communicator_objects/{proto}" in names
        for config in CONFIG_FILES:
            assert f"trainers/configs/{config}" in names
    assert "README.md" in sdist_names
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in wheel_names)


def _install(wheel: Path, venv: Path) -> Path:
    """A venv holding only ``wheel``, then given this interpreter's packages; its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    python = venv / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ],
        cwd=venv.parent,
    )
    purelib = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=venv.parent,
        ).strip()
    )
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n", encoding="utf-8")
    return python


@pytest.mark.parametrize("artifact", ["wheel", "sdist-wheel"])
def test_installed_copy_trains_and_plays(
    artifact: str, distributions: dict[str, Path], tmp_path: Path
) -> None:
    """The installed copy, away from the repository, trains 3DBall and runs the player."""
    venv = tmp_path / "venv"
    python = _install(distributions[artifact], venv)
    work = tmp_path / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["UNITY_GYM_CACHE_DIR"] = str(tmp_path / "cache")

    probe = textwrap.dedent(
        """\
        import importlib.resources, importlib.util, sys, unity_gym, trainers
        print(unity_gym.__file__)
        print(trainers.__file__)
        print(importlib.util.find_spec("benchmarks.peer_venv") is None)
        protos = importlib.resources.files("unity_gym.protocol") / "communicator_objects"
        print(sorted(p.name for p in protos.iterdir() if p.name.endswith(".proto")))
        configs = importlib.resources.files("trainers") / "configs"
        print(sorted(p.name for p in configs.iterdir() if p.name.endswith(".yaml")))
        print("\\n".join(sys.path))
        """
    )
    lines = _run([str(python), "-c", probe], cwd=work, env=env).splitlines()
    assert Path(lines[0]).is_relative_to(venv), lines[0]
    assert Path(lines[1]).is_relative_to(venv), lines[1]
    assert lines[2] == "True", "the repository's benchmarks package is importable"
    assert str(REPO_ROOT) not in lines[5:], "the repository is on sys.path"
    assert lines[3] == repr(PROTO_FILES)
    assert lines[4] == repr(CONFIG_FILES)

    scenes = _run([str(venv / "bin" / "unity-gym-player"), "--list-scenes"], cwd=work, env=env)
    assert "3DBall" in scenes
    _run([str(venv / "bin" / "unity-train"), "--help"], cwd=work, env=env)

    (work / "tiny.yaml").write_text(TINY_CONFIG, encoding="utf-8")
    _run(
        [
            str(venv / "bin" / "unity-train"),
            "tiny.yaml",
            "--scene",
            "3DBall",
            "--run-id",
            "packaged",
            "--seed",
            "1",
        ],
        cwd=work,
        env=env,
    )
    run_dir = work / "results" / "packaged"
    assert (run_dir / "3DBall.onnx").stat().st_size > 0
    assert (run_dir / "run_logs" / "timers.json").is_file()
    launchers = list((tmp_path / "cache").rglob("3DBall*"))
    assert launchers, "the built-in scene's launcher was not written to the cache"
    assert all(str(venv) in path.read_text(encoding="utf-8") for path in launchers)
