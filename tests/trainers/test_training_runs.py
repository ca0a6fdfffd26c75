"""End-to-end ``unity-train`` runs on Gymnasium environments: outputs, checkpoints, resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
import yaml
from gymnasium import spaces
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.networks.models import PolicyNetwork, build_normalizer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.envs import EMBEDDED_DEFAULT_SCENE, make_training_env
from trainers.settings import NetworkSettings, load_config_file, parse_run_options

pytestmark = pytest.mark.timeout(120)


def _scalars(behavior_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """All scalar series of every event file in ``behavior_dir``."""
    series: dict[str, list[tuple[int, float]]] = {}
    for event_file in sorted(behavior_dir.glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(event_file))
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            series.setdefault(tag, []).extend(
                (event.step, event.value) for event in accumulator.Scalars(tag)
            )
    return series


def _onnx_matches_torch(
    run_dir: Path,
    behavior: str,
    observation_space: spaces.Space[Any],
    action_space: spaces.Space[Any],
    network: dict[str, Any],
    squash: bool,
) -> None:
    """The final ONNX model's deterministic actions equal the checkpointed torch policy's."""
    layout = ObservationLayout.from_space(observation_space)
    actions = ActionLayout.from_space(action_space)
    settings = NetworkSettings(**network)
    policy = PolicyNetwork(
        layout, actions, settings, build_normalizer(layout, settings.normalize), squash=squash
    )
    state = load_checkpoint(run_dir / behavior / "checkpoint.pt")
    policy.load_state_dict(state["modules"]["policy"])
    session = onnxruntime.InferenceSession(str(run_dir / f"{behavior}.onnx"))
    rng = np.random.default_rng(0)
    observation_space.seed(0)
    samples = [observation_space.sample() for _ in range(16)]
    raw = layout.stack_single(samples)
    inputs = layout.to_tensors(raw, torch.device("cpu"))
    feeds = {f"obs_{i}": tensor.numpy() for i, tensor in enumerate(inputs)}
    mask = None
    if actions.has_discrete:
        allowed = rng.random((16, actions.discrete_size)) > 0.3
        allowed[:, 0] = True
        feeds["action_masks"] = allowed.astype(np.float32)
        mask = torch.from_numpy(feeds["action_masks"])
    names = [output.name for output in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, feeds), strict=True))
    assert outputs["version_number"].tolist() == [3.0]
    assert outputs["memory_size"].tolist() == [0.0]
    with torch.no_grad():
        dist = policy(inputs, mask)
        mean, argmax = dist.deterministic()
    if actions.has_continuous:
        assert mean is not None
        expected = dist.env_continuous(mean).numpy()
        np.testing.assert_allclose(outputs["deterministic_continuous_actions"], expected, atol=1e-5)
        assert outputs["continuous_actions"].shape == (16, actions.continuous_size)
        assert np.abs(outputs["continuous_actions"]).max() <= 1.0
        assert outputs["continuous_action_output_shape"].tolist() == [actions.continuous_size]
    if actions.has_discrete:
        assert argmax is not None
        np.testing.assert_array_equal(outputs["deterministic_discrete_actions"], argmax.numpy())
        sampled = outputs["discrete_actions"]
        assert sampled.shape == (16, len(actions.discrete_branches))
        offsets = np.cumsum([0, *actions.discrete_branches[:-1]])
        chosen = sampled + offsets  # sampled actions are never masked ones
        assert feeds["action_masks"][np.arange(16)[:, None], chosen].all()
        assert outputs["discrete_action_output_shape"].tolist() == [
            [float(b) for b in actions.discrete_branches]
        ]


def test_ppo_cartpole_writes_every_output(run_train: RunTrain) -> None:
    config = {"behaviors": {"CartPole": ppo_behavior()}}
    run = run_train(config, "--gym-id", "CartPole-v1", "--num-envs", "2", "--seed", "3")
    behavior_dir = run / "CartPole"

    scalars = _scalars(behavior_dir)
    for tag in (
        "Environment/Cumulative Reward",
        "Environment/Episode Length",
        "Losses/Policy Loss",
        "Losses/Value Loss",
        "Policy/Learning Rate",
        "Policy/Entropy",
        "Policy/Epsilon",
        "Policy/Beta",
        "Policy/Extrinsic Value Estimate",
    ):
        assert tag in scalars, tag
    assert sorted({step for step, _ in scalars["Environment/Cumulative Reward"]}) == [200, 400, 600]
    rates = [value for _, value in sorted(scalars["Policy/Learning Rate"])]
    assert rates[0] > rates[-1]  # linear schedule decays

    checkpoints = sorted(behavior_dir.glob("CartPole-*.pt"))
    assert [p.name for p in checkpoints] == ["CartPole-400.pt", "CartPole-600.pt"]
    assert sorted(p.name for p in behavior_dir.glob("CartPole-*.onnx")) == [
        "CartPole-400.onnx",
        "CartPole-600.onnx",
    ]
    assert (behavior_dir / "checkpoint.pt").is_file()
    assert not list(run.rglob("*.tmp"))
    state = load_checkpoint(behavior_dir / "checkpoint.pt")
    assert (state["step"], state["trainer_type"]) == (600, "ppo")
    assert state["update_count"] == 600 // 128

    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert [c["steps"] for c in status["CartPole"]["checkpoints"]] == [400, 600]
    assert status["CartPole"]["final_checkpoint"]["steps"] == 600
    assert status["metadata"]["torch_version"] == torch.__version__

    timers = json.loads((run / "run_logs" / "timers.json").read_text())
    assert timers["name"] == "root" and timers["count"] == 1
    learning = timers["children"]["TrainerController.start_learning"]
    loop = learning["children"]["TrainerController.advance"]
    assert loop["count"] == 300  # 600 agent steps / 2 slots
    assert loop["children"]["env_step"]["count"] == 300
    assert loop["children"]["ppo_update"]["count"] == 4
    for node in (timers, learning, loop):
        assert {"total", "count", "self", "children"} <= set(node)
    metadata = timers["metadata"]
    for key in ("start_time_seconds", "end_time_seconds", "python_version", "pytorch_version"):
        assert metadata[key]
    assert "--gym-id CartPole-v1" in metadata["command_line_arguments"]
    assert metadata["torch_device"] == "cpu"

    resolved = load_config_file(run / "configuration.yaml")  # merges its companion
    assert resolved["behaviors"]["CartPole"]["hyperparameters"]["buffer_size"] == 128
    assert resolved["env_settings"]["gym_id"] == "CartPole-v1"
    assert "gym_id" not in yaml.safe_load((run / "configuration.yaml").read_text())["env_settings"]
    assert resolved["checkpoint_settings"]["run_id"] == "run"

    _onnx_matches_torch(
        run,
        "CartPole",
        spaces.Box(-1.0, 1.0, (4,), np.float32),
        spaces.Discrete(2),
        {"hidden_units": 16, "num_layers": 1, "normalize": True},
        squash=False,
    )


def test_existing_run_needs_force_and_force_overwrites(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"behaviors": {"CartPole": ppo_behavior(max_steps=200)}}
    run = run_train(config, "--gym-id", "CartPole-v1")
    marker = run / "CartPole" / "marker.txt"
    marker.write_text("old run")
    run_train(config, "--gym-id", "CartPole-v1", expect=2)
    assert "already exists" in capsys.readouterr().err
    assert marker.exists()  # nothing was touched
    run_train(config, "--gym-id", "CartPole-v1", "--force")
    assert not marker.exists()
    assert (run / "CartPole" / "checkpoint.pt").is_file()


def test_resume_continues_from_the_saved_step(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    first = {"behaviors": {"CartPole": ppo_behavior(max_steps=400, keep_checkpoints=10)}}
    run = run_train(first, "--gym-id", "CartPole-v1", "--seed", "1")
    saved = load_checkpoint(run / "CartPole" / "checkpoint.pt")
    assert saved["step"] == 400
    run_train(first, "--gym-id", "CartPole-v1", "--resume", run_id="missing", expect=2)
    assert "cannot resume" in capsys.readouterr().err

    second = {"behaviors": {"CartPole": ppo_behavior(max_steps=800, keep_checkpoints=10)}}
    run_train(second, "--gym-id", "CartPole-v1", "--resume")
    assert "Resuming CartPole from step 400" in capsys.readouterr().err
    resumed = load_checkpoint(run / "CartPole" / "checkpoint.pt")
    assert resumed["step"] == 800
    assert resumed["update_count"] > saved["update_count"]
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert [c["steps"] for c in status["CartPole"]["checkpoints"]] == [200, 400, 600, 800]
    steps = [step for step, _ in _scalars(run / "CartPole")["Environment/Episode Length"]]
    assert sorted(steps) == [200, 400, 600, 800]  # summaries continue where the run stopped
    count_key = "encoder.normalizer.normalizers.0.count"
    assert float(saved["modules"]["policy"][count_key]) > 0  # the normalizer is saved ...
    # ... and restored: the rollouts of the resumed part were absorbed on top of it, each more
    # than buffer_size = 128 steps of whole trajectories, all of them within its 400 steps
    absorbed = float(resumed["modules"]["policy"][count_key]) - float(
        saved["modules"]["policy"][count_key]
    )
    assert (resumed["update_count"] - saved["update_count"]) * 129 <= absorbed <= 400
    adam_steps = resumed["optimizers"]["optimizer"]["state"][0]["step"]
    assert float(adam_steps) == resumed["update_count"] * 2 * (128 // 32)  # epochs x batches


def test_initialize_from_loads_weights_but_restarts_counting(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"behaviors": {"CartPole": ppo_behavior(max_steps=200)}}
    source = run_train(config, "--gym-id", "CartPole-v1", run_id="source")
    source_state = load_checkpoint(source / "CartPole" / "checkpoint.pt")
    frozen = {"behaviors": {"CartPole": ppo_behavior(max_steps=100, summary_freq=100)}}
    frozen["behaviors"]["CartPole"]["hyperparameters"]["buffer_size"] = 1000  # no update
    target = run_train(
        frozen, "--gym-id", "CartPole-v1", "--initialize-from", "source", run_id="target"
    )
    assert "Initialized CartPole from" in capsys.readouterr().err
    state = load_checkpoint(target / "CartPole" / "checkpoint.pt")
    assert state["step"] == 100 and state["update_count"] == 0
    for key, value in source_state["modules"]["policy"].items():
        torch.testing.assert_close(state["modules"]["policy"][key], value)
    run_train(config, "--gym-id", "CartPole-v1", "--initialize-from", "nope", run_id="x", expect=2)
    assert not (source.parent / "x").exists()  # a run that failed to start leaves nothing

    by_path = ppo_behavior(max_steps=100, init_path=str(source / "CartPole"))
    by_path["hyperparameters"]["buffer_size"] = 1000
    other = run_train({"behaviors": {"CartPole": by_path}}, "--gym-id", "CartPole-v1",
                      run_id="by-path")  # fmt: skip
    state = load_checkpoint(other / "CartPole" / "checkpoint.pt")
    for key, value in source_state["modules"]["critic"].items():
        torch.testing.assert_close(state["modules"]["critic"][key], value)


def test_inference_mode_acts_without_training_or_saving(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"behaviors": {"CartPole": ppo_behavior(max_steps=200)}}
    run = run_train(config, "--gym-id", "CartPole-v1")
    before = sorted(p.name for p in (run / "CartPole").iterdir() if p.suffix in (".pt", ".onnx"))
    capsys.readouterr()
    run_train(config, "--gym-id", "CartPole-v1", "--resume", "--inference")
    err = capsys.readouterr().err
    assert "Not Training." in err and "Training.\n" not in err.replace("Not Training.", "")
    after = sorted(p.name for p in (run / "CartPole").iterdir() if p.suffix in (".pt", ".onnx"))
    assert after == before


def test_sac_pendulum_continuous(run_train: RunTrain) -> None:
    config = {"behaviors": {"Pendulum": sac_behavior()}}
    run = run_train(config, "--gym-id", "Pendulum-v1", "--seed", "2")
    scalars = _scalars(run / "Pendulum")
    for tag in (
        "Losses/Q1 Loss",
        "Losses/Q2 Loss",
        "Losses/Policy Loss",
        "Policy/Continuous Entropy Coeff",
        "Policy/Learning Rate",
        "Environment/Cumulative Reward",
    ):
        assert tag in scalars, tag
    state = load_checkpoint(run / "Pendulum" / "checkpoint.pt")
    # one update per steps_per_update (4) agent steps once buffer_init_steps (64) are
    # collected, the last one at max_steps itself (ML-Agents' should_still_train:
    # step <= max_steps)
    assert state["update_count"] == (400 - 64) // 4 + 1
    assert set(state["modules"]) == {"policy", "q1", "q2", "q1_target", "q2_target"}
    _onnx_matches_torch(
        run,
        "Pendulum",
        spaces.Box(-8.0, 8.0, (3,), np.float32),
        spaces.Box(-2.0, 2.0, (1,), np.float32),
        {"hidden_units": 16, "num_layers": 1},
        squash=True,
    )


@pytest.mark.parametrize("behavior", [ppo_behavior, sac_behavior])
def test_action_masks_are_respected(run_train: RunTrain, behavior: Any) -> None:
    """The corridor raises on any masked action, so finishing the run proves masking works."""
    config = {"behaviors": {"MaskedCorridor": behavior(max_steps=300)}}
    run = run_train(config, "--gym-id", "trainer_toy_envs:MaskedCorridor-v0", "--num-envs", "2")
    assert (run / "MaskedCorridor.onnx").is_file()
    trainer_type = config["behaviors"]["MaskedCorridor"]["trainer_type"]
    _onnx_matches_torch(
        run,
        "MaskedCorridor",
        spaces.Box(0.0, 1.0, (6,), np.float32),
        spaces.Discrete(4),
        config["behaviors"]["MaskedCorridor"]["network_settings"],
        squash=trainer_type == "sac",
    )


@pytest.mark.parametrize("encoder", ["simple", "nature_cnn"])
def test_dict_observations_with_images(run_train: RunTrain, encoder: str) -> None:
    network = {"hidden_units": 16, "num_layers": 1, "normalize": True, "vis_encode_type": encoder}
    behavior = ppo_behavior(max_steps=160, network_settings=network)
    run = run_train({"behaviors": {"PixelsAndVector": behavior}}, "--gym-id",
                    "trainer_toy_envs:PixelsAndVector-v0")  # fmt: skip
    session = onnxruntime.InferenceSession(str(run / "PixelsAndVector.onnx"))
    shapes = {i.name: i.shape for i in session.get_inputs()}
    assert shapes == {
        "obs_0": ["batch", 3, 40, 40],
        "obs_1": ["batch", 2],
        "action_masks": ["batch", 5],
    }
    _onnx_matches_torch(
        run,
        "PixelsAndVector",
        spaces.Dict(
            {
                "camera": spaces.Box(0, 255, (40, 40, 3), np.uint8),
                "goal": spaces.Box(-1.0, 1.0, (2,), np.float32),
            }
        ),
        spaces.MultiDiscrete([2, 3]),
        network,
        squash=False,
    )


def test_hybrid_actions_and_float_chw_images(run_train: RunTrain) -> None:
    behavior = ppo_behavior(max_steps=160, network_settings={"hidden_units": 8, "num_layers": 1})
    run = run_train({"behaviors": {"Hybrid": behavior}}, "--gym-id",
                    "trainer_toy_envs:HybridTarget-v0")  # fmt: skip
    session = onnxruntime.InferenceSession(str(run / "Hybrid.onnx"))
    names = {o.name for o in session.get_outputs()}
    assert {"continuous_actions", "discrete_actions", "deterministic_continuous_actions"} <= names
    _onnx_matches_torch(
        run,
        "Hybrid",
        spaces.Box(0.0, 1.0, (1, 24, 24), np.float32),
        spaces.Dict(
            {
                "continuous": spaces.Box(-1.0, 1.0, (2,), np.float32),
                "discrete": spaces.MultiDiscrete([3]),
            }
        ),
        {"hidden_units": 8, "num_layers": 1},
        squash=False,
    )


@pytest.mark.parametrize(("behavior", "gym_id"), [(ppo_behavior, "CartPole-v1"),
                                                  (sac_behavior, "Pendulum-v1")])  # fmt: skip
def test_threaded_trainers_update_while_stepping(
    run_train: RunTrain, behavior: Any, gym_id: str
) -> None:
    config = {"behaviors": {"Agent": behavior(threaded=True)}}
    run = run_train(config, "--gym-id", gym_id)
    scalars = _scalars(run / "Agent")
    assert "Losses/Policy Loss" in scalars
    state = load_checkpoint(run / "Agent" / "checkpoint.pt")
    assert state["update_count"] > 0
    timers = json.loads((run / "run_logs" / "timers.json").read_text())
    assert any(name.startswith("trainer_thread.") for name in timers["children"])


def test_config_errors_exit_with_a_message(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {"behaviors": {"CartPole": ppo_behavior(hyperparameters={"batchsize": 3})}}
    run_train(bad, "--gym-id", "CartPole-v1", expect=2)
    assert (
        "behaviors.CartPole.hyperparameters.batchsize: unknown key; did you mean batch_size?"
        in capsys.readouterr().err
    )
    ungrouped = {"behaviors": {"CartPole": ppo_behavior(trainer_type="poca")}}
    run_train(ungrouped, "--gym-id", "CartPole-v1", run_id="ungrouped", expect=2)
    assert "behaviors.CartPole.trainer_type: poca trains agents in groups" in (
        capsys.readouterr().err
    )
    run_train({"behaviors": {}}, "--gym-id", "NoSuchEnv-v0", expect=2)
    assert "NoSuchEnv-v0" in capsys.readouterr().err


def test_the_suggested_default_scene_trains(tmp_path: Path) -> None:
    # no environment now means the Unity Editor (test_editor_mode.py); the built-in default
    # scene the Editor's advice names is selected with --scene
    options = parse_run_options(
        {"behaviors": {}, "env_settings": {"scene": EMBEDDED_DEFAULT_SCENE}}
    )
    training_env = make_training_env(options, seed=0, log_folder=tmp_path)
    try:
        assert training_env.description == f"built-in scene {EMBEDDED_DEFAULT_SCENE}"
        assert training_env.behavior_candidates[0] == EMBEDDED_DEFAULT_SCENE
        assert training_env.env.num_envs >= 1
    finally:
        training_env.env.close()
