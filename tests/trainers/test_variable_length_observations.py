"""Variable-length observations (Unity's ``BufferSensor``) through the trainers' networks.

An entry named in ``metadata["variable_length_keys"]`` is a set of entities, ``(max_entities,
entity_size)`` with rows of zeros for absent ones. The networks embed each entity with the
encoded fixed features and pool them with residual self-attention (ML-Agents' facts, see
:class:`trainers.common.networks.models.ObservationEncoder`), so the encoding does not depend on
the order of the entities or on how many absent rows pad them out, and the ONNX model takes the
entities as ``(batch, max_entities, entity_size)``.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import onnxruntime
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from trainer_test_support import RunTrain, ppo_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.checkpoints.onnx_export import export_policy
from trainers.common.networks.attention import EntityEmbedding
from trainers.common.networks.models import (
    ATTENTION_EMBEDDING_SIZE,
    PolicyNetwork,
    QNetwork,
    ValueNetwork,
    build_normalizer,
)
from trainers.common.spaces import ActionLayout, ObservationLayout, UnsupportedSpaceError
from trainers.settings import NetworkSettings
from unity_gym.pettingzoo import parallel_env

pytestmark = pytest.mark.timeout(120)

MAX_ENTITIES = 5
ENTITY_SIZE = 3
SPACE = spaces.Dict(  # Gymnasium sorts the keys: obs_0 is "Position", obs_1 "Tiles"
    {
        "Position": spaces.Box(-np.inf, np.inf, (4,), np.float32),
        "Tiles": spaces.Box(-np.inf, np.inf, (MAX_ENTITIES, ENTITY_SIZE), np.float32),
    }
)
ACTIONS = spaces.MultiDiscrete([3, 3, 3])
SETTINGS = NetworkSettings(hidden_units=16, num_layers=2, normalize=True)


def _policy(space: spaces.Space = SPACE, keys: tuple[str, ...] = ("Tiles",)) -> PolicyNetwork:
    torch.manual_seed(0)
    layout = ObservationLayout.from_space(space, entity_keys=keys)
    normalizer = build_normalizer(layout, SETTINGS.normalize)
    return PolicyNetwork(layout, ActionLayout.from_space(ACTIONS), SETTINGS, normalizer,
                         squash=False)  # fmt: skip


def _entities(batch: int, present: int, seed: int = 1) -> torch.Tensor:
    """``batch`` rows of ``present`` random entities followed by zero rows."""
    generator = torch.Generator().manual_seed(seed)
    tiles = torch.zeros(batch, MAX_ENTITIES, ENTITY_SIZE)
    tiles[:, :present] = torch.rand(batch, present, ENTITY_SIZE, generator=generator) + 0.5
    return tiles


def test_the_layout_marks_the_named_entry_and_the_encoder_follows_ml_agents_sizes() -> None:
    policy = _policy()
    layout = ObservationLayout.from_space(SPACE, entity_keys=("Tiles",))
    assert [(e.name, e.kind, e.network_shape) for e in layout.entries] == [
        ("Position", "vector", (4,)),
        ("Tiles", "entities", (MAX_ENTITIES, ENTITY_SIZE)),
    ]
    encoder = policy.encoder
    # fixed features (4) + the attention's pooled output (128, whatever hidden_units is)
    assert encoder.output_size == 4 + ATTENTION_EMBEDDING_SIZE
    assert isinstance(encoder.self_encoder, EntityEmbedding)
    assert encoder.self_encoder.layer.in_features == 4
    # each entity is embedded after the 128-wide encoded self
    (embedding,) = encoder.entity_embeddings
    assert isinstance(embedding, EntityEmbedding)
    assert embedding.layer.in_features == ATTENTION_EMBEDDING_SIZE + ENTITY_SIZE
    assert policy.encoder.normalizer.entry_index == [0]  # the entities are not normalized
    # without the key, the same Box is a flat vector of 15 features
    plain = ObservationLayout.from_space(SPACE)
    assert plain.entries[1].kind == "vector" and plain.entries[1].network_shape == (15,)


def test_the_encoding_ignores_entity_order_and_absent_rows() -> None:
    policy = _policy()
    position = torch.randn(6, 4)
    tiles = _entities(6, present=3)
    features, _ = policy.encoder([position, tiles])
    shuffled = tiles[:, [2, 0, 4, 1, 3]]  # present entities reordered among the padding
    again, _ = policy.encoder([position, shuffled])
    torch.testing.assert_close(features, again, rtol=1e-5, atol=1e-5)
    # a different entity changes the encoding; the fixed features pass through unchanged
    changed = tiles.clone()
    changed[:, 1] += 1.0
    other, _ = policy.encoder([position, changed])
    assert not torch.allclose(features[:, 4:], other[:, 4:])
    torch.testing.assert_close(features[:, :4], other[:, :4])
    # no entity present: the pooled part is zero
    empty, _ = policy.encoder([position, torch.zeros(6, MAX_ENTITIES, ENTITY_SIZE)])
    assert torch.count_nonzero(empty[:, 4:]) == 0


def test_a_space_of_entities_alone_is_encoded_without_a_self() -> None:
    box = SPACE["Tiles"]
    policy = _policy(box, keys=("Tiles",))
    assert policy.encoder.self_encoder is None
    assert policy.encoder.output_size == ATTENTION_EMBEDDING_SIZE
    (embedding,) = policy.encoder.entity_embeddings
    assert isinstance(embedding, EntityEmbedding) and embedding.layer.in_features == ENTITY_SIZE
    distribution = policy([_entities(2, present=2)])
    _, discrete = distribution.sample()
    assert discrete is not None and discrete.shape == (2, 3)  # 2 agents, 3 branches


def test_critics_encode_entities_too() -> None:
    layout = ObservationLayout.from_space(SPACE, entity_keys=("Tiles",))
    normalizer = build_normalizer(layout, False)
    critic = ValueNetwork(layout, SETTINGS, normalizer)
    q = QNetwork(layout, ActionLayout.from_space(ACTIONS), SETTINGS, normalizer)
    observations = [torch.randn(3, 4), _entities(3, present=4)]
    assert critic(observations).shape == (3,)
    assert q(observations).shape == (3, 9)


def test_a_named_entry_that_is_not_a_2d_box_is_refused() -> None:
    with pytest.raises(UnsupportedSpaceError, match=r"'Position'.*2-D Box"):
        ObservationLayout.from_space(SPACE, entity_keys=("Position",))


def test_the_onnx_model_takes_the_entities_and_matches_torch(tmp_path: Path) -> None:
    policy = _policy()
    layout = ObservationLayout.from_space(SPACE, entity_keys=("Tiles",))
    policy.encoder.normalizer.update([torch.randn(64, 4) * 3 + 1, None])
    path = tmp_path / "Sorter.onnx"
    export_policy(policy, layout, path)
    session = onnxruntime.InferenceSession(str(path))
    shapes = {i.name: i.shape for i in session.get_inputs()}
    assert shapes["obs_1"][1:] == [MAX_ENTITIES, ENTITY_SIZE]
    position = np.random.default_rng(3).normal(size=(4, 4)).astype(np.float32)
    tiles = _entities(4, present=2).numpy()
    tiles[1] = 0.0  # a row with no entity at all
    feeds = {"obs_0": position, "obs_1": tiles}
    if "action_masks" in shapes:
        feeds["action_masks"] = np.ones((4, 9), np.float32)
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, feeds), strict=True))
    assert policy.logits_head is not None
    with torch.no_grad():
        logits = policy.logits_head(
            policy.body(*policy.encoder([torch.from_numpy(position), torch.from_numpy(tiles)]))
        )
    expected = torch.cat([b.argmax(1, keepdim=True) for b in logits.split([3, 3, 3], 1)], 1)
    np.testing.assert_array_equal(outputs["deterministic_discrete_actions"], expected.numpy())


# ---- over a real player: the Stress scene's BufferSensor (``entities=MxS``) ----

STRESS_OPTIONS = {"entities": "4x3", "continuous": "0", "discrete": "3"}


def test_the_fronts_name_the_variable_length_sensor_and_pass_its_rows() -> None:
    env = gymnasium.make_vec(
        "unity_gym:Unity-v0",
        num_envs=None,  # type: ignore[arg-type]
        num_processes=1,
        scene="Stress",
        scene_options=STRESS_OPTIONS,
        num_areas=2,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    try:
        assert env.metadata["variable_length_keys"] == ("StressBuffer",)
        space = env.single_observation_space
        assert isinstance(space, spaces.Dict) and space["StressBuffer"].shape == (4, 3)
        obs, _ = env.reset(seed=1)
        seen = set()
        for _ in range(6):  # agent step count s (vector column 0): the first s % 5 rows are present
            obs, *_ = env.step(np.zeros((env.num_envs,), np.int64))
            rows = obs["StressBuffer"]
            present = int(obs["VectorSensor_size8"][0, 0]) % 5
            seen.add(present)
            assert np.all(rows[:, present:] == 0.0)
            assert np.all(rows[:, :present, 0] >= 1.0)
            np.testing.assert_allclose(rows[0, :present, 1] - rows[0, :present, 0], 0.1, atol=1e-5)
        assert seen == {0, 1, 2, 3, 4}  # none to all four entities
        layout = ObservationLayout.from_space(space, (), env.metadata["variable_length_keys"])
        assert [entry.kind for entry in layout.entries] == ["entities", "vector"]
    finally:
        env.close()
    pettingzoo = parallel_env(scene="Stress", scene_options=STRESS_OPTIONS)
    try:
        assert pettingzoo.metadata["variable_length_keys"] == {"Stress?team=0": ("StressBuffer",)}
    finally:
        pettingzoo.close()
    flat = parallel_env(scene="Stress", scene_options=STRESS_OPTIONS, flatten_obs=True)
    try:  # flattened, the rows are part of the vector: nothing is variable-length
        assert flat.metadata["variable_length_keys"] == {"Stress?team=0": ()}
    finally:
        flat.close()


def test_unity_train_trains_and_exports_a_policy_over_the_entities(run_train: RunTrain) -> None:
    config = {"behaviors": {"Stress": ppo_behavior(max_steps=256, summary_freq=128)}}
    options = [f"--option={key}={value}" for key, value in STRESS_OPTIONS.items()]
    run = run_train(config, "--scene", "Stress", "--seed", "2", "--no-graphics",
                    "--env-args", *options)  # fmt: skip
    state = load_checkpoint(run / "Stress" / "checkpoint.pt")
    assert state["step"] >= 256
    session = onnxruntime.InferenceSession(str(run / "Stress.onnx"))
    shapes = {i.name: i.shape for i in session.get_inputs()}
    assert shapes["obs_0"][1:] == [4, 3]  # StressBuffer sorts before VectorSensor_size8
    assert shapes["obs_1"][1:] == [8]
    tiles = np.zeros((2, 4, 3), np.float32)
    tiles[0, :2] = 1.0
    feeds = {"obs_0": tiles, "obs_1": np.zeros((2, 8), np.float32)}
    if "action_masks" in shapes:
        feeds["action_masks"] = np.ones((2, 3), np.float32)
    (actions,) = [
        out
        for out, meta in zip(session.run(None, feeds), session.get_outputs(), strict=True)
        if meta.name == "deterministic_discrete_actions"
    ]
    assert actions.shape == (2, 1) and set(actions.ravel()) <= {0, 1, 2}
