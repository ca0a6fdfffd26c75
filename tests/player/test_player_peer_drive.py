"""The official ``mlagents_envs`` 1.1.0 drives each built scene: reset, 500 random steps, side
channels in both directions, close, and the player process exits by itself.

``SCENARIOS`` check scene-specific facts; ``test_official_peer_drives_every_registered_scene``
drives every scene of the registry (new scenes are picked up without editing this file).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from process_utils import group_members

from unity_gym.player.scenes import get_scene_class, scene_names

QUIT_ON_CLOSE = re.compile(
    r"Quitting: the trainer (closed the connection \(status 400\)|disappeared)"
)

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
    # The official close() answers with status 400 and stops its server without grace, so the
    # player sees either the 400 or the connection dropping; both must end it normally.
    assert QUIT_ON_CLOSE.search(log), log[-2000:]
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


GENERIC_DRIVE = """
engine = EngineConfigurationChannel()
params = EnvironmentParametersChannel()
stats = StatsSideChannel()
env = open_env(SCENE, extra=EXTRA, side_channels=[engine, params, stats], log_folder=LOG_FOLDER,
               seed=5)
pid = env._process.pid
engine.set_configuration_parameters(time_scale=9.0)
params.set_float_parameter("unused_by_any_scene", 1.5)
env.reset()
names = sorted(env.behavior_specs)
rng = np.random.default_rng(1)
report = {n: {"decisions": 0, "terminals": 0, "fully_masked": 0, "bad_shapes": 0,
              "non_finite": 0, "duplicate_ids": 0} for n in names}

def check(name, batch, spec, row):
    shapes = [tuple(o.shape[1:]) for o in batch.obs]
    if shapes != [tuple(o.shape) for o in spec.observation_specs]:
        row["bad_shapes"] += 1
    if any(o.shape[0] != len(batch) for o in batch.obs):
        row["bad_shapes"] += 1
    if not all(np.isfinite(o).all() for o in batch.obs) or not np.isfinite(batch.reward).all():
        row["non_finite"] += 1
    if len(set(batch.agent_id.tolist())) != len(batch):
        row["duplicate_ids"] += 1

for _ in range(500):
    for name in names:
        spec = env.behavior_specs[name]
        d, t = env.get_steps(name)
        row = report[name]
        row["decisions"] += len(d)
        row["terminals"] += len(t)
        check(name, d, spec, row)
        check(name, t, spec, row)
        n = len(d)
        if n == 0:
            continue
        branches = spec.action_spec.discrete_branches
        discrete = np.zeros((n, len(branches)), dtype=np.int32)
        for b, size in enumerate(branches):
            mask = d.action_mask[b] if d.action_mask is not None else np.zeros((n, size), bool)
            for i in range(n):
                allowed = np.flatnonzero(~mask[i])
                if len(allowed) == 0:
                    row["fully_masked"] += 1
                    continue
                discrete[i, b] = rng.choice(allowed)
        env.set_actions(name, ActionTuple(
            continuous=rng.uniform(-1, 1, (n, spec.action_spec.continuous_size)).astype(np.float32),
            discrete=discrete if branches else None,
        ))
    env.step()
collected = sorted(stats.get_and_reset_stats())
code = close_env(env)
emit({"names": names, "report": report, "stats": collected, "code": code, "pid": pid})
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the orphan check reads /proc")
@pytest.mark.parametrize("scene", scene_names())
def test_official_peer_drives_every_registered_scene(
    scene: str, peer: Callable[..., Any], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    # Two training areas keep 500 steps cheap in the big scenes (32 agents with ray casts); one
    # where an area already holds several agents with cameras (each renders its own picture).
    scene_class = get_scene_class(scene)
    behaviors = scene_class().behaviors()
    per_area = sum(b.agents_per_area for b in behaviors)
    cameras = any(s.name == "CameraSensor" for b in behaviors for s in b.sensors)
    areas = 1 if cameras and per_area >= 2 else min(2, scene_class.default_area_count)
    extra = ["--num-agents", str(per_area * areas)]
    source = (
        GENERIC_DRIVE.replace("SCENE", repr(scene))
        .replace("LOG_FOLDER", repr(str(logs)))
        .replace("EXTRA", repr(extra))
    )
    result = peer(source, timeout=170)

    assert result["names"], f"{scene}: no behavior after reset"
    assert all(n.split("?team=")[0] for n in result["names"])
    for name, row in result["report"].items():
        assert row["decisions"] > 0, f"{name}: no agent ever requested a decision"
        assert row["bad_shapes"] == 0, f"{name}: observations do not match the behavior spec"
        assert row["non_finite"] == 0, f"{name}: NaN or infinite observations/rewards"
        assert row["duplicate_ids"] == 0, f"{name}: an agent id twice in one batch"
        assert row["fully_masked"] == 0, f"{name}: a branch had every action masked"
    assert result["code"] == 0, "the player must exit by itself after close()"
    assert group_members(result["pid"]) == [], "the player left processes behind"
    log = (logs / "Player-0.log").read_text()
    assert "engine configuration: time_scale=9" in log
    # The official close() answers with status 400 and stops its server without grace, so the
    # player sees either the 400 or the connection dropping; both must end it normally.
    assert QUIT_ON_CLOSE.search(log), log[-2000:]
    ended = [n for n, row in result["report"].items() if row["terminals"]]
    for name in ended:
        assert f"Player/Cumulative Reward/{name}" in result["stats"], "stats channel silent"
