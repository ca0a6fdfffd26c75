"""``unity_gym.game``: settings, the scene catalogue and the environment-parameter schema, one
concept a module, with ``unity_gym.registration`` re-exporting them under their old paths.

Facts followed: ML-Agents' ``ParameterRandomizationType`` lists ``uniform``, ``gaussian``,
``multirangeuniform`` and ``constant``; a constant is sent with ``set_float_parameter``.
"""

from __future__ import annotations

import pytest

from unity_gym import registration
from unity_gym.game import catalogue, env_params, settings
from unity_gym.side_channels.environment_parameters_channel import EnvironmentParametersChannel


def test_registration_re_exports_the_moved_names() -> None:
    assert registration.GameSettings is settings.GameSettings
    assert registration.DEFAULT_SCENE == settings.DEFAULT_SCENE == "3DBall"
    assert registration.scene_behaviors is catalogue.scene_behaviors
    assert registration.builtin_executable is catalogue.builtin_executable
    assert registration.apply_env_param is env_params.apply_env_param


def test_the_catalogue_answers_without_running_a_scene() -> None:
    assert "3DBall" in catalogue.builtin_scene_names()
    layout = catalogue.scene_layout("Stress", {"teams": 2}, None)
    assert sorted(layout.agents_per_area) == ["Stress?team=0", "Stress?team=1"]
    assert catalogue.scene_agents_per_area("Stress", {"teams": 2}) == sum(
        layout.agents_per_area.values()
    )
    assert catalogue.scene_summary("3DBall")
    with pytest.raises(ValueError, match="Nope"):
        catalogue.scene_layout("Nope")


def test_the_sampler_schema_covers_the_trainers_constant_sampler() -> None:
    assert set(env_params.SAMPLER_PARAMETERS) == {
        "uniform",
        "gaussian",
        "multirangeuniform",
        "constant",
    }
    game = settings.GameSettings(env_params={"gravity": {"sampler_type": "constant", "value": 2}})
    channel = EnvironmentParametersChannel()
    for key, value in (game.env_params or {}).items():
        env_params.apply_env_param(channel, key, value, 0)
    with pytest.raises(ValueError, match="needs \\['value'\\]"):
        settings.GameSettings(env_params={"gravity": {"sampler_type": "constant"}})
