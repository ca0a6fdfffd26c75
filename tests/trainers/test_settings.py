"""Configuration parsing: ML-Agents layout, defaults, CLI overrides and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainers.cli import build_parser, options_from_args
from trainers.settings import (
    ConfigError,
    PPOHyperparameters,
    SACHyperparameters,
    load_config_file,
    parse_run_options,
)

CONFIG_DIR = Path(__file__).resolve().parents[2] / "trainers" / "configs"


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_run_options(data)
    return str(info.value)


def test_unknown_nested_key_names_path_and_suggestion() -> None:
    message = _error({"behaviors": {"3DBall": {"hyperparameters": {"batchsize": 64}}}})
    assert message == (
        "behaviors.3DBall.hyperparameters.batchsize: unknown key; did you mean batch_size?"
    )


@pytest.mark.parametrize(
    ("data", "location"),
    [
        ({"behaviours": {}}, "behaviours: unknown key; did you mean behaviors?"),
        ({"env_settings": {"num_env": 2}}, "env_settings.num_env: unknown key; did you mean"),
        (
            {"behaviors": {"B": {"network_settings": {"hiden_units": 3}}}},
            "behaviors.B.network_settings.hiden_units: unknown key; did you mean hidden_units?",
        ),
        (
            {"behaviors": {"B": {"reward_signals": {"extrinsik": {}}}}},
            "behaviors.B.reward_signals.extrinsik: unknown key; did you mean extrinsic?",
        ),
    ],
)
def test_unknown_keys_everywhere(data: dict[str, Any], location: str) -> None:
    assert location in _error(data)


def test_poca_takes_ppo_hyperparameters() -> None:
    options = parse_run_options(
        {"behaviors": {"B": {"trainer_type": "poca", "hyperparameters": {"lambd": 0.9}}}}
    )
    settings = options.trainer_settings_for("B")
    assert settings.trainer_type == "poca"
    assert isinstance(settings.hyperparameters, PPOHyperparameters)
    assert settings.hyperparameters.lambd == 0.9
    assert "not a poca hyperparameter (it is a sac one)" in _error(
        {"behaviors": {"B": {"trainer_type": "poca", "hyperparameters": {"tau": 0.1}}}}
    )


def test_type_and_range_errors() -> None:
    assert "behaviors.B.max_steps: expected an integer" in _error(
        {"behaviors": {"B": {"max_steps": "lots"}}}
    )
    assert "behaviors.B.hyperparameters.buffer_size" in _error(
        {"behaviors": {"B": {"hyperparameters": {"batch_size": 64, "buffer_size": 32}}}}
    )
    assert "not a sac hyperparameter (it is a ppo one)" in _error(
        {"behaviors": {"B": {"trainer_type": "sac", "hyperparameters": {"beta": 0.1}}}}
    )
    assert "move it under 'behaviors:'" in _error({"3DBall": {"trainer_type": "ppo"}})


def test_defaults_schedules_and_numbers_like_mlagents() -> None:
    options = parse_run_options(
        {
            "behaviors": {
                "A": {"hyperparameters": {"learning_rate_schedule": "constant"}},
                "B": {
                    "trainer_type": "sac",
                    "max_steps": 5.0e5,
                    "hyperparameters": {"learning_rate": "3e-4", "steps_per_update": 10},
                },
            }
        }
    )
    ppo = options.behaviors["A"].hyperparameters
    assert isinstance(ppo, PPOHyperparameters)
    assert (ppo.beta_schedule, ppo.epsilon_schedule) == ("constant", "constant")
    assert ppo.batch_size == 1024 and ppo.buffer_size == 10240
    sac = options.behaviors["B"].hyperparameters
    assert isinstance(sac, SACHyperparameters)
    assert sac.learning_rate == pytest.approx(3e-4)
    assert sac.reward_signal_steps_per_update == 10.0
    assert options.behaviors["B"].max_steps == 500000
    assert options.behaviors["A"].time_horizon == 64


def test_default_settings_apply_to_listed_and_unlisted_behaviors() -> None:
    options = parse_run_options(
        {
            "default_settings": {"max_steps": 1234, "network_settings": {"hidden_units": 7}},
            "behaviors": {"Listed": {"network_settings": {"num_layers": 3}}},
        }
    )
    listed = options.behaviors["Listed"]
    assert (listed.max_steps, listed.network_settings.hidden_units) == (1234, 7)
    assert listed.network_settings.num_layers == 3
    other = options.trainer_settings_for("Unlisted")
    assert (other.max_steps, other.network_settings.hidden_units) == (1234, 7)


def test_unconfigured_behavior_without_defaults_is_an_error() -> None:
    options = parse_run_options({"behaviors": {"Known": {}}})
    with pytest.raises(ConfigError, match="'Other' is not configured"):
        options.trainer_settings_for("Other")


def test_environment_parameters_become_env_params() -> None:
    options = parse_run_options(
        {
            "env_settings": {"seed": 7},
            "environment_parameters": {
                "mass": 2,
                "scale": {
                    "sampler_type": "uniform",
                    "sampler_parameters": {"min_value": 0.5, "max_value": 3.0},
                },
                "width": {
                    "sampler_type": "gaussian",
                    "sampler_parameters": {"mean": 1.0, "st_dev": 0.1, "seed": 3},
                },
            },
        }
    )
    assert options.env_params() == {
        "mass": 2.0,
        "scale": {"sampler_type": "uniform", "min_value": 0.5, "max_value": 3.0, "seed": 7},
        "width": {"sampler_type": "gaussian", "mean": 1.0, "st_dev": 0.1, "seed": 3},
    }
    assert "sampler_type" in _error(
        {"environment_parameters": {"x": {"sampler_type": "zigzag", "sampler_parameters": {}}}}
    )


def test_cli_flags_override_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "behaviors:\n  B:\n    max_steps: 10\n"
        "env_settings:\n  env_path: some/build\n  num_envs: 3\n  seed: 1\n"
        "engine_settings:\n  time_scale: 5\n"
        "checkpoint_settings:\n  run_id: from-file\n"
    )
    args = build_parser().parse_args(
        [str(config), "--gym-id", "CartPole-v1", "--num-envs", "2", "--run-id", "cli",
         "--time-scale", "7", "--deterministic", "--torch-device", "cpu"]
    )  # fmt: skip
    options = options_from_args(args)
    env = options.env_settings
    assert (env.gym_id, env.env_path, env.num_envs, env.seed) == ("CartPole-v1", None, 2, 1)
    assert options.engine_settings.time_scale == 7.0
    assert options.checkpoint_settings.run_id == "cli"
    assert options.torch_settings.device == "cpu"
    assert options.behaviors["B"].network_settings.deterministic is True


def test_env_gym_prefix_and_exclusive_flags(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--env", "gym:Pendulum-v1", "--resume"])
    options = options_from_args(args)
    assert options.env_settings.gym_id == "Pendulum-v1"
    assert options.env_settings.env_path is None
    assert options.checkpoint_settings.resume is True
    # mlagents-learn 1.1.0 has no mutually exclusive group: --resume wins over --force
    both = options_from_args(build_parser().parse_args(["--resume", "--force"]))
    assert (both.checkpoint_settings.resume, both.checkpoint_settings.force) == (True, True)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--scene", "3DBall", "--gym-id", "CartPole-v1"])


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config_file(tmp_path / "nope.yaml")


REFERENCE = {  # spec §10: (trainer, batch, buffer, hidden, layers, normalize, gamma, horizon, max)
    "3DBall_ppo": ("ppo", 64, 12000, 128, 2, True, 0.99, 1000, 500000),
    "3DBall_sac": ("sac", 64, 200000, 64, 2, True, 0.99, 1000, 200000),
    "3DBallHard_ppo": ("ppo", 120, 12000, 128, 2, True, 0.99, 1000, 500000),
    "3DBallHard_sac": ("sac", 256, 500000, 128, 2, True, 0.99, 1000, 500000),
    "Visual3DBall_ppo": ("ppo", 256, 2560, 128, 2, False, 0.99, 64, 400000),
    "Basic_ppo": ("ppo", 32, 256, 20, 1, False, 0.9, 3, 500000),
    "Basic_sac": ("sac", 64, 50000, 20, 2, False, 0.99, 10, 500000),
    "GridWorld_ppo": ("ppo", 32, 256, 128, 1, False, 0.9, 5, 500000),
    "GridWorld_sac": ("sac", 128, 50000, 128, 1, False, 0.9, 5, 500000),
    "PushBlock_ppo": ("ppo", 128, 2048, 256, 2, False, 0.99, 64, 2000000),
    "PushBlock_sac": ("sac", 128, 50000, 256, 2, False, 0.99, 64, 2000000),
    "Walker_ppo": ("ppo", 2048, 20480, 256, 3, True, 0.995, 1000, 30000000),
    "Walker_sac": ("sac", 1024, 2000000, 256, 3, True, 0.995, 1000, 15000000),
    "Crawler_ppo": ("ppo", 2048, 20480, 512, 3, True, 0.995, 1000, 10000000),
    "Crawler_sac": ("sac", 256, 500000, 512, 3, True, 0.995, 1000, 5000000),
    "Worm_ppo": ("ppo", 2024, 20240, 512, 3, True, 0.995, 1000, 7000000),
    "Worm_sac": ("sac", 256, 500000, 512, 3, True, 0.995, 1000, 5000000),
    "Tennis_ppo": ("ppo", 2048, 20480, 256, 2, True, 0.99, 1000, 50000000),
    # the reference is POCA (not supported) with self-play: PPO with its hyperparameters
    "SoccerTwos_ppo": ("ppo", 2048, 20480, 512, 2, False, 0.99, 1000, 50000000),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_bundled_configs_match_the_reference(name: str) -> None:
    options = parse_run_options(load_config_file(CONFIG_DIR / f"{name}.yaml"))
    (settings,) = options.behaviors.values()
    hyper = settings.hyperparameters
    net = settings.network_settings
    actual = (
        settings.trainer_type,
        hyper.batch_size,
        hyper.buffer_size,
        net.hidden_units,
        net.num_layers,
        net.normalize,
        settings.extrinsic.gamma,
        settings.time_horizon,
        settings.max_steps,
    )
    assert actual == REFERENCE[name]


def test_every_bundled_config_parses() -> None:
    files = sorted(CONFIG_DIR.glob("*.yaml"))
    assert len(files) >= 14
    assert {path.stem for path in files} >= set(REFERENCE)
    for path in files:
        parse_run_options(load_config_file(path))


def test_multi_team_configs_keep_the_reference_schedules() -> None:
    for name in ("Tennis_ppo", "SoccerTwos_ppo"):
        options = parse_run_options(load_config_file(CONFIG_DIR / f"{name}.yaml"))
        (settings,) = options.behaviors.values()
        hyper = settings.hyperparameters
        assert isinstance(hyper, PPOHyperparameters)
        assert (hyper.learning_rate, hyper.learning_rate_schedule) == (3.0e-4, "constant")
        assert (hyper.beta, hyper.epsilon, hyper.lambd, hyper.num_epoch) == (5.0e-3, 0.2, 0.95, 3)
        assert settings.summary_freq == 10000


def test_every_builtin_example_scene_has_a_ppo_config_for_its_behavior() -> None:
    from unity_gym.player import get_scene_class, scene_names

    for scene in scene_names():
        if scene == "Stress":  # synthetic benchmark scene, not an ML-Agents example
            continue
        path = CONFIG_DIR / f"{scene}_ppo.yaml"
        assert path.is_file(), f"no bundled config for built-in scene {scene}"
        options = parse_run_options(load_config_file(path))
        names = {spec.name for spec in get_scene_class(scene)().behaviors()}
        assert set(options.behaviors) == names, scene


def test_network_options_once_refused_are_accepted() -> None:
    options = parse_run_options(
        {
            "behaviors": {
                "B": {
                    "hyperparameters": {"shared_critic": True},
                    "network_settings": {
                        "vis_encode_type": "match3",
                        "goal_conditioning_type": "none",
                    },
                }
            }
        }
    )
    settings = options.behaviors["B"]
    assert isinstance(settings.hyperparameters, PPOHyperparameters)
    assert settings.hyperparameters.shared_critic is True
    assert settings.network_settings.vis_encode_type == "match3"
    assert settings.network_settings.goal_conditioning_type == "none"
