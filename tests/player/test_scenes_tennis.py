"""Tennis: the wire contract seen by the official peer (two teams, stacked vector observations),
points that end both agents' episodes with +1/-1, mirrored observations, determinism and a
heuristic that clearly beats chance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import Policy, idle_policy, play, player_alive, random_policy, terminal_reports

from unity_gym.player.scenes.tennis import TennisScene

pytestmark = pytest.mark.timeout(120)

#: Random steps of the default peer test (500 in the ``slow`` variant).
DEFAULT_RANDOM_STEPS = 150


def _per_team(first: Policy | None, second: Policy | None) -> Policy:
    def act(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        chosen = first if batch.spec.team_id == 0 else second
        return chosen(scene, batch, slots, obs) if chosen is not None else None

    return act


def test_behaviors_match_the_unity_scene() -> None:
    specs = TennisScene().behaviors()
    assert [s.full_name for s in specs] == ["Tennis?team=0", "Tennis?team=1"]
    for spec in specs:
        (sensor,) = spec.sensors
        assert (sensor.wire_name, sensor.wire_shape) == (
            "StackingSensor_size3_VectorSensor_size9",
            (27,),
        )
        assert spec.action_spec.continuous_size == 3 and spec.action_spec.discrete_size == 0
        assert spec.decision is not None and spec.decision.period == 5
        assert spec.decision.take_actions_between_decisions and spec.max_step == 0
        assert spec.agents_per_area == 1
    assert TennisScene.default_area_count == 18


def test_an_unreturned_serve_is_a_point_for_the_server_and_ends_both_episodes() -> None:
    played = play(TennisScene, seed=4, policy=idle_policy)
    played.step()
    served_to_b = played.scene.ball_position[:, 0] > 0
    ended: dict[int, list[Any]] = {}
    for _ in range(200):
        played.step()
        for report in terminal_reports(played.academy):
            ended.setdefault(report.agent_id // 2, []).append(report)
        if len(ended) == 18:
            break
    assert len(ended) == 18, "every serve lands untouched within 200 steps"
    for area, reports in ended.items():
        by_team = {r.behavior: r for r in reports}
        assert len(reports) == 2 and set(by_team) == {"Tennis?team=0", "Tennis?team=1"}
        a, b = by_team["Tennis?team=0"], by_team["Tennis?team=1"]
        assert (a.agent_id, b.agent_id) == (2 * area, 2 * area + 1)
        assert not a.interrupted and not b.interrupted
        # The receiver let the serve land on its own floor.
        expected = (1.0, -1.0) if served_to_b[area] else (-1.0, 1.0)
        assert (a.reward, b.reward) == expected


def test_observations_are_mirrored_for_team_one() -> None:
    seen: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {0: [], 1: []}

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        seen[batch.spec.team_id].append((obs[0][:, -9:].copy(), scene.ball_position[slots, 0]))
        return None

    played = play(TennisScene, seed=2, policy=_per_team(record, record))
    played.step(60)
    for team, sign in ((0, 1.0), (1, -1.0)):
        own_x = np.concatenate([o[:, 0] for o, _ in seen[team]])
        assert (own_x <= -1.0).all() and (own_x >= -12.0).all(), "everyone sees itself on the left"
        for obs, ball_x in seen[team]:
            np.testing.assert_allclose(obs[:, 4], sign * ball_x, atol=1e-5)


def test_heuristic_wins_against_an_idle_or_random_opponent_from_either_side() -> None:
    scripted_a = play(TennisScene, seed=1, policy=_per_team(None, idle_policy))
    scripted_a.step(1500)
    scripted_b = play(TennisScene, seed=1, policy=_per_team(idle_policy, None))
    scripted_b.step(1500)
    against_chance = play(TennisScene, seed=1, policy=_per_team(None, random_policy(6)))
    against_chance.step(1500)
    a_points = scripted_a.scene.points
    b_points = scripted_b.scene.points
    chance_points = against_chance.scene.points
    assert a_points[0] > 0.9 * a_points.sum() > 0
    assert b_points[1] > 0.9 * b_points.sum() > 0
    assert chance_points[0] > 5 * max(chance_points[1], 1)


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(TennisScene, seed=seed, policy=random_policy(3))
        played.step(200)
        return played.digests

    first = digests(12)
    assert digests(12) == first
    assert digests(13) != first


PEER_TENNIS = """
import hashlib

def run(seed, steps, idle_steps=0):
    env = open_env("Tennis", seed=seed)
    out = {"pid": env._process.pid, "digests": [], "pairs": [], "unpaired": 0, "rewards": set()}
    try:
        env.reset()
        names = ["Tennis?team=0", "Tennis?team=1"]
        if idle_steps:
            out["spec"] = {
                "names": sorted(env.behavior_specs),
                "obs": [[[o.name, list(o.shape), [int(p) for p in o.dimension_property],
                          o.observation_type.value]
                         for o in env.behavior_specs[n].observation_specs] for n in names],
                "actions": [[env.behavior_specs[n].action_spec.continuous_size,
                             list(env.behavior_specs[n].action_spec.discrete_branches)]
                            for n in names],
                "ids": [env.get_steps(n)[0].agent_id.tolist() for n in names],
            }
        rng = np.random.default_rng(17)
        for step in range(idle_steps + steps):
            batches = [env.get_steps(n) for n in names]
            ended = [dict(zip(t.agent_id.tolist(), zip(t.reward.tolist(), t.interrupted.tolist())))
                     for _, t in batches]
            for id_a, (reward_a, cut_a) in ended[0].items():
                partner = ended[1].get(id_a + 1)
                if partner is None:
                    out["unpaired"] += 1
                    continue
                out["pairs"].append([id_a, reward_a, partner[0], cut_a or partner[1]])
            out["unpaired"] += sum(1 for i in ended[1] if i - 1 not in ended[0])
            for d, _ in batches:
                out["rewards"].update(round(r, 4) for r in d.reward.tolist())
            out["digests"].append(hashlib.md5(b"".join(
                np.ascontiguousarray(o).tobytes() for d, _ in batches for o in d.obs)).hexdigest())
            for n, (d, _) in zip(names, batches):
                if len(d):
                    scale = 0.0 if step < idle_steps else 1.0
                    actions = scale * rng.uniform(-1, 1, (len(d), 3))
                    env.set_actions(n, ActionTuple(continuous=actions.astype(np.float32)))
            env.step()
    finally:
        out["code"] = close_env(env)
    out["rewards"] = sorted(out["rewards"])
    return out

long_run = run(31, RANDOM_STEPS, idle_steps=40)
again = run(31, 0, idle_steps=40)
emit({"long": long_run, "again": again["digests"],
      "codes": [long_run["code"], again["code"]],
      "pids": [long_run["pid"], again["pid"]]})
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_plays_tennis(peer: Callable[..., Any]) -> None:
    """A shorter random run: the peer's pure-Python protobuf makes every step cost tens of ms."""
    _check_peer_run(peer(PEER_TENNIS.replace("RANDOM_STEPS", str(DEFAULT_RANDOM_STEPS))))


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_official_peer_plays_tennis_for_500_random_steps(peer: Callable[..., Any]) -> None:
    _check_peer_run(peer(PEER_TENNIS.replace("RANDOM_STEPS", "500"), timeout=270))


def _check_peer_run(result: Any) -> None:
    long_run = result["long"]
    spec = long_run["spec"]
    assert spec["names"] == ["Tennis?team=0", "Tennis?team=1"]
    assert spec["obs"] == [[["StackingSensor_size3_VectorSensor_size9", [27], [1], 0]]] * 2
    assert spec["actions"] == [[3, []], [3, []]]
    assert spec["ids"] == [list(range(0, 36, 2)), list(range(1, 36, 2))]
    # Every point ends both agents of the area in the same step, +1 for one and -1 for the other.
    pairs = long_run["pairs"]
    assert len(pairs) >= 18 and long_run["unpaired"] == 0
    assert all(sorted([a, b]) == [-1.0, 1.0] and not cut for _, a, b, cut in pairs)
    assert set(long_run["rewards"]) <= {0.0}, "decisions carry no reward"
    assert result["again"] == long_run["digests"][:40], "same seed, same actions, same run"
    assert result["codes"] == [0, 0]
    assert not any(player_alive(pid) for pid in result["pids"]), "no player left behind"
