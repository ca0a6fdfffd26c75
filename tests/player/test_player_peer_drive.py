"""The official ``mlagents_envs`` 1.1.0 drives built scenes: reset, 500 random steps, side
channels in both directions, close, and the player process exits by itself.

``SCENARIOS`` check scene-specific facts (what an environment parameter does, how agent ids
behave). Every scene of the registry is driven by the official peer in
``tests/peer/test_peer_differential.py``, which also checks each scene's soundness.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from process_utils import QUIT_ON_OFFICIAL_CLOSE

pytestmark = [pytest.mark.peer, pytest.mark.timeout(180)]

DRIVE = """
cfg = ARGS_SCENE
engine = EngineConfigurationChannel()
params = EnvironmentParametersChannel()
stats = StatsSideChannel()
env = open_env(cfg["scene"], extra=cfg["extra"], side_channels=[engine, params, stats],
               log_folder=LOG_FOLDER)
engine.set_configuration_parameters(time_scale=7.0)
for kind, key, *values in cfg["params"]:
    if kind == "float":
        params.set_float_parameter(key, values[0])
    else:
        params.set_uniform_sampler_parameters(key, values[0], values[1], values[2])
env.reset()
name = list(env.behavior_specs)[0]
spec = env.behavior_specs[name]
first = steps(env, name)
rng = np.random.default_rng(0)
column = cfg["column"]
seen, terminals, interrupted, ids = [], 0, 0, set(first["ids"])
for _ in range(500):
    d, t = env.get_steps(name)
    terminals += len(t)
    interrupted += int(t.interrupted.sum())
    ids.update(d.agent_id.tolist())
    if len(d):
        seen.extend(round(float(v), 5) for v in d.obs[0][:, column])
    n = len(d)
    env.set_actions(name, ActionTuple(
        continuous=rng.uniform(-1, 1, (n, spec.action_spec.continuous_size)).astype(np.float32),
        discrete=np.stack([rng.integers(0, b, n) for b in spec.action_spec.discrete_branches], 1)
        if spec.action_spec.discrete_branches else None,
    ))
    env.step()
terminals += len(env.get_steps(name)[1])
collected = {
    k: [len(v), float(np.mean([x for x, _ in v]))] for k, v in stats.get_and_reset_stats().items()
}
code = close_env(env)
emit({
    "name": name,
    "obs_shapes": [list(o.shape) for o in spec.observation_specs],
    "obs_names": [o.name for o in spec.observation_specs],
    "continuous": spec.action_spec.continuous_size,
    "branches": list(spec.action_spec.discrete_branches),
    "first": first, "seen": seen, "terminals": terminals, "interrupted": interrupted,
    "ids": sorted(ids), "stats": collected, "returncode": code,
})
"""

SCENARIOS: dict[str, dict[str, Any]] = {
    "3DBall": {
        "scene": "3DBall",
        "extra": [],
        "params": [["float", "scale", 2.0]],
        "column": 3,  # ball height relative to the platform
    },
    "Basic": {
        "scene": "Basic",
        "extra": [],
        "params": [["float", "start_position", 15.0]],
        "column": 15,  # one-hot position 15
    },
    "Stress": {
        "scene": "Stress",
        "extra": ["--option", "episode_length=40"],
        "params": [["uniform", "stress_value", 1.0, 2.0, 3]],
        "column": 5,  # stress_value read at episode begin
    },
}


def _drive(peer: Callable[..., Any], scenario: dict[str, Any], log_folder: Path) -> Any:
    source = DRIVE.replace("ARGS_SCENE", repr(scenario)).replace(
        "LOG_FOLDER", repr(str(log_folder))
    )
    return peer(source)


@pytest.mark.parametrize("scene", sorted(SCENARIOS))
def test_official_peer_drives_scene(scene: str, peer: Callable[..., Any], tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    result = _drive(peer, SCENARIOS[scene], logs)

    assert result["name"] == f"{scene}?team=0"
    assert result["returncode"] == 0, "the player must exit by itself after close()"
    log = (logs / "Player-0.log").read_text()
    assert "engine configuration: time_scale=7" in log
    assert QUIT_ON_OFFICIAL_CLOSE.search(log), log[-2000:]
    assert "profile:" in log
    reward_key = f"Player/Cumulative Reward/{scene}?team=0"
    assert result["stats"][reward_key][0] == result["terminals"] > 0

    first = result["first"]
    if scene == "3DBall":
        assert result["obs_shapes"] == [[8]] and result["obs_names"] == ["VectorSensor_size8"]
        assert result["continuous"] == 2 and result["branches"] == []
        assert first["ids"] == list(range(12))
        # scale 2 -> a resting ball sits 0.25 + 0.5 * 2 above the platform centre.
        assert 1.25 in result["seen"] and 0.75 not in result["seen"]
        assert set(result["ids"]) == set(range(12)), "3DBall ids are stable across episodes"
    elif scene == "Basic":
        assert result["obs_shapes"] == [[20]] and result["obs_names"] == ["Basic"]
        assert result["branches"] == [3] and result["continuous"] == 0
        assert first["obs"][0][0].index(1.0) == 15, "start_position read at episode begin"
        assert result["seen"].count(1.0) >= result["terminals"], "every new agent starts at 15"
        assert len(result["ids"]) == result["terminals"] + 1, "each episode has a new agent id"
    else:
        assert result["obs_names"] == ["VectorSensor_size8"]
        assert len(first["ids"]) == 4
        values = [v for v in result["seen"] if v != 0.0]
        assert values and all(1.0 <= v <= 2.0 for v in values)
        assert len(set(first["obs"][0][i][5] for i in range(4))) == 4, "a sampler draws anew"
        assert result["terminals"] > 0 and result["interrupted"] == 0
