"""Gymnasium ids, game settings and the cached executables of built-in scenes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import unity_gym
from unity_gym.player.scenes import scene_names
from unity_gym.registration import (
    CACHE_DIR_ENV_VAR,
    DEFAULT_ENV_ID,
    ENTRY_POINT,
    GameSettings,
    builtin_executable,
    register_envs,
    scene_agents_per_area,
    scene_behaviors,
    scene_env_id,
)

pytestmark = pytest.mark.timeout(120)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        cwd=REPO_ROOT,
        check=False,
    )


def test_import_registers_default_and_one_id_per_scene() -> None:
    assert unity_gym.__version__
    expected = [DEFAULT_ENV_ID] + [scene_env_id(s) for s in scene_names()]
    for env_id in expected:
        spec = gymnasium.spec(env_id)
        assert spec.entry_point == ENTRY_POINT
        assert spec.nondeterministic is True
        assert spec.max_episode_steps is None
    assert gymnasium.spec("Unity-3DBall-v0").kwargs == {"scene": "3DBall"}
    assert gymnasium.spec(DEFAULT_ENV_ID).kwargs == {}
    assert register_envs() == []  # idempotent


def test_make_with_module_prefix_works_without_import_and_import_is_light() -> None:
    code = (
        "import sys, gymnasium\n"
        "env = gymnasium.make('unity_gym:Unity-v0')\n"
        "obs, info = env.reset(seed=3)\n"
        "print(env.observation_space.shape, env.action_space.shape, info['agent_id'])\n"
        "env.close()\n"
        "print('torch' in sys.modules, 'pettingzoo' in sys.modules)\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "(8,) (2,) 0"
    light = _run_python(
        "import sys, unity_gym\n"
        "print(sorted(m for m in ('torch', 'pettingzoo', 'stable_baselines3') if m in sys.modules))"
    )
    assert light.returncode == 0, light.stderr
    assert light.stdout.strip() == "[]"


def test_builtin_executable_is_cached_and_rebuilt_when_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(tmp_path))
    path = builtin_executable("basic")
    assert path.name == "Basic.x86_64" and tmp_path in path.parents
    assert os.access(path, os.X_OK)
    content = path.read_bytes()
    assert b"--scene Basic" in content
    stamp = path.stat().st_mtime_ns
    assert builtin_executable("Basic") == path and path.stat().st_mtime_ns == stamp
    path.write_text("#!/bin/sh\nexit 1\n")
    assert builtin_executable("Basic").read_bytes() == content
    assert [p.name for p in path.parent.iterdir()] == ["Basic.x86_64"]  # no staging left
    with pytest.raises(ValueError, match="available scenes"):
        builtin_executable("NoSuchScene")


def test_game_settings_defaults_and_player_args() -> None:
    default = GameSettings()
    assert default.scene == "3DBall" and default.is_builtin
    assert default.single_area().player_args() == ["--num-agents", "1"]
    settings = GameSettings(
        scene="stress",
        scene_options={"teams": 2, "action_mask": True},
        additional_args=["--realtime"],
    )
    assert settings.scene == "Stress"
    assert settings.single_area().player_args() == [
        "--num-agents",
        "2",
        "--option",
        "teams=2",
        "--option",
        "action_mask=true",
        "--realtime",
    ]
    assert scene_agents_per_area("Tennis") == 2
    assert GameSettings(scene="Tennis", num_agents=4).single_area().num_agents == 4
    assert GameSettings(file_name="x/Game").single_area().player_args() == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"file_name": "Game", "scene": "Basic"}, "either file_name"),
        ({"file_name": "Game", "num_agents": 2}, "only apply to built-in scenes"),
        ({"scene": "Nope"}, "unknown scene 'Nope'; available scenes"),
        ({"width": 80}, "width and height go together"),
        ({"num_agents": 0}, "num_agents must be a positive"),
        ({"num_areas": 0}, "num_areas must be at least 1"),
        ({"additional_args": "--a b"}, "must be a list"),
        ({"env_params": {"mass": "heavy"}}, "finite number or a sampler dict"),
        ({"env_params": {"mass": {"sampler_type": "beta"}}}, "sampler_type must be one of"),
        (
            {"env_params": {"mass": {"sampler_type": "uniform", "min_value": 1}}},
            r"missing \['max_value'\]",
        ),
    ],
)
def test_game_settings_reject_bad_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GameSettings(**kwargs)  # type: ignore[arg-type]


def test_sampler_dicts_in_flat_and_yaml_shapes_are_accepted() -> None:
    GameSettings(
        env_params={
            "a": 1.5,
            "b": {"sampler_type": "uniform", "min_value": 1, "max_value": 2, "seed": 3},
            "c": {"sampler_type": "gaussian", "sampler_parameters": {"mean": 0, "st_dev": 1}},
            "d": {"sampler_type": "multirangeuniform", "intervals": [[0, 1], [2, 3]]},
        }
    )


@pytest.mark.parametrize(
    ("scene", "options", "counts"),
    [
        ("Tennis", {}, {"Tennis?team=0": 1, "Tennis?team=1": 1}),
        ("WallJump", {}, {"BigWallJump?team=0": 1, "SmallWallJump?team=0": 1}),
        ("Hallway", {"max_step": 600}, {"Hallway?team=0": 1}),
    ],
)
def test_scene_behaviors_are_what_the_running_game_reports(
    scene: str, options: dict[str, object], counts: dict[str, int]
) -> None:
    """A built-in scene's declaration (per training area) matches the specs the bridge reads
    from the running game, for every behavior that reported."""
    declared = scene_behaviors(scene, options, scene_agents_per_area(scene, options), num_areas=1)
    assert {name: count for name, (_, count) in declared.items()} == counts
    game = GameSettings(scene=scene, scene_options=options).single_area().launch()
    try:
        game.reset()
        reported = dict(game.behavior_specs)
        assert reported  # at least the behavior that decides first
        for name, spec in reported.items():
            assert declared[name][0] == spec
    finally:
        game.close()
    with pytest.raises(ValueError, match="NoSuchScene"):
        scene_behaviors("NoSuchScene")
