"""Agents that leave a game mid-episode: DungeonEscape's sacrificed agents and vacant slots.

DungeonEscape (``unity_gym/player/scenes/dungeon_escape.py``) removes an agent that slays the
dragon or walks into the portal (Unity's ``SetActive(false)``): one terminal report, then
nothing until the group's episode ends and the agent comes back with a new id. The vector env
reports such a slot as ``info["vacant"]`` and keeps stepping the others (see
:mod:`unity_gym.vector.autoreset`). ``max_exchanges_per_step=12`` makes a step that waited for
the removed agent fail instead of silently playing the others on with repeated actions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from unity_gym.vector import UnityVectorEnv

pytestmark = pytest.mark.timeout(120)


def _flat(obs: dict[str, np.ndarray], slot: int) -> np.ndarray:
    return np.concatenate([np.ravel(obs[key][slot]) for key in sorted(obs)])


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_removed_agents_leave_vacant_slots_while_the_others_play_on(
    mode: AutoresetMode, backend: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=3,
        scene="DungeonEscape",
        num_processes=1,
        seed=1,
        backend=backend,
        autoreset_mode=mode,
        max_exchanges_per_step=12,
    )
    obs, info = env.reset(seed=1)
    env.action_space.seed(1)
    assert not info["vacant"].any() and info["_vacant"].all()
    seen_ids = set(info["agent_id"].tolist())
    previous_obs, previous_vacant = obs, info["vacant"].copy()
    previous_ended = np.zeros(3, dtype=bool)
    departures = arrivals = steps_beside_a_vacancy = 0
    for step in range(400):
        obs, rewards, terminated, truncated, info = env.step(env.action_space.sample())
        vacant, ended = info["vacant"], terminated | truncated
        for slot in range(3):
            if vacant[slot]:
                assert rewards[slot] == 0.0 and info["group_reward"][slot] == 0.0, step
                if previous_vacant[slot]:  # still vacant: nothing moves
                    assert not ended[slot], step
                    np.testing.assert_array_equal(
                        _flat(obs, slot), _flat(previous_obs, slot), err_msg=f"step {step}"
                    )
                    continue
                departures += 1
                if mode is AutoresetMode.NEXT_STEP:
                    # The terminal step came first; this step only found the agent gone.
                    assert previous_ended[slot] and not ended[slot], step
                    np.testing.assert_array_equal(_flat(obs, slot), _flat(previous_obs, slot))
                else:
                    # The step that ends the agent's episode: its final observation stays.
                    assert terminated[slot] and info["_final_obs"][slot], step
                    final = info["final_obs"][slot]
                    assert np.array_equal(
                        _flat(obs, slot),
                        np.concatenate([np.ravel(final[k]) for k in sorted(final)]),
                    )
            elif previous_vacant[slot]:
                # A new agent takes the slot: the first observation of its new episode.
                arrivals += 1
                assert info["agent_id"][slot] not in seen_ids, step
                assert rewards[slot] == 0.0 and not ended[slot], step
        if vacant.any() and (~vacant & ~ended).any():
            steps_beside_a_vacancy += 1
        seen_ids.update(info["agent_id"].tolist())
        previous_obs, previous_vacant, previous_ended = obs, vacant.copy(), ended
    assert departures >= 2 and arrivals >= 1
    assert steps_beside_a_vacancy >= 20
