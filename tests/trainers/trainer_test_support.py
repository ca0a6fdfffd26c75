"""Tiny behavior configs, a PPO trainer built from one, and a ``unity-train`` process whose
output can be waited on, shared by the trainer tests.

Test modules import these by name, so they live in a uniquely named module rather than in
``conftest.py`` (several test folders have a ``conftest`` module).
"""

from __future__ import annotations

import contextlib
import copy
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from gymnasium import spaces
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from trainers.common.bookkeeping.stats import StatsReporter
from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.common.trainer import TrainerContext
from trainers.contract import BehaviorStep
from trainers.ppo.trainer import PPOTrainer
from trainers.sac.trainer import SACTrainer
from trainers.settings import parse_run_options

RunTrain = Callable[..., Path]

REPO_ROOT = Path(__file__).resolve().parents[2]


class TrainerProcess:
    """A ``unity-train`` process (``python -m trainers ARGS`` in ``cwd``) whose stderr lines a
    thread collects, so a test can wait for a line while the run goes on."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trainers", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in iter(self.process.stderr.readline, ""):
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = 90.0) -> str:
        """The first stderr line so far that contains ``text``, waiting for it if needed.

        Raises:
            AssertionError: the process ended, or ``timeout`` passed, without such a line.
        """
        deadline = time.monotonic() + timeout
        while True:
            found = next((line for line in self.seen if text in line), None)
            if found is not None:
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.process.poll() is not None and self.lines.empty()):
                raise AssertionError(f"never saw {text!r}; output:\n{''.join(self.seen)}")
            with contextlib.suppress(queue.Empty):
                self.seen.append(self.lines.get(timeout=min(remaining, 1.0)))

    def finish(self, timeout: float = 120.0) -> tuple[int, str]:
        """Wait for the exit; the exit status and the whole stderr."""
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code, "".join(self.seen)

    def stop(self) -> None:
        """Kill the process if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def ppo_behavior(**overrides: Any) -> dict[str, Any]:
    """A small, fast PPO behavior config (deep-merged with ``overrides``)."""
    base: dict[str, Any] = {
        "trainer_type": "ppo",
        "hyperparameters": {
            "batch_size": 32,
            "buffer_size": 128,
            "learning_rate": 3.0e-4,
            "beta": 5.0e-3,
            "epsilon": 0.2,
            "lambd": 0.95,
            "num_epoch": 2,
        },
        "network_settings": {"hidden_units": 16, "num_layers": 1, "normalize": True},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "max_steps": 600,
        "time_horizon": 32,
        "summary_freq": 200,
        "checkpoint_interval": 200,
        "keep_checkpoints": 2,
    }
    return _merge(base, overrides)


def sac_behavior(**overrides: Any) -> dict[str, Any]:
    """A small, fast SAC behavior config (deep-merged with ``overrides``)."""
    base: dict[str, Any] = {
        "trainer_type": "sac",
        "hyperparameters": {
            "batch_size": 32,
            "buffer_size": 5000,
            "learning_rate": 1.0e-3,
            "buffer_init_steps": 64,
            "tau": 0.01,
            "steps_per_update": 4.0,
            "init_entcoef": 0.5,
        },
        "network_settings": {"hidden_units": 16, "num_layers": 1},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "max_steps": 400,
        "time_horizon": 16,
        "summary_freq": 200,
        "checkpoint_interval": 200,
        "keep_checkpoints": 2,
    }
    return _merge(base, overrides)


def training_context(
    behavior_name: str,
    behavior: dict[str, Any],
    observation_layout: ObservationLayout,
    action_layout: ActionLayout,
    artifact_dir: Path,
    seed: int = 0,
) -> TrainerContext:
    """The context of a training trainer on the CPU for ``behavior`` (a config dict), without
    checkpoints, its statistics written to ``artifact_dir``."""
    options = parse_run_options({"behaviors": {behavior_name: behavior}})
    return TrainerContext(
        behavior_name=behavior_name,
        settings=options.trainer_settings_for(behavior_name),
        observation_layout=observation_layout,
        action_layout=action_layout,
        device=torch.device("cpu"),
        seed=seed,
        training=True,
        artifact_dir=artifact_dir,
        stats=StatsReporter(behavior_name, artifact_dir, time.monotonic()),
        checkpoints=None,
    )


def ppo_trainer(
    behavior_name: str,
    behavior: dict[str, Any],
    observation_layout: ObservationLayout,
    action_layout: ActionLayout,
    artifact_dir: Path,
    seed: int = 0,
) -> PPOTrainer:
    """A :class:`PPOTrainer` in :func:`training_context`."""
    return PPOTrainer(
        training_context(
            behavior_name, behavior, observation_layout, action_layout, artifact_dir, seed
        )
    )


def sac_trainer(behavior: dict[str, Any], action_space: Any, artifact_dir: Path) -> SACTrainer:
    """A :class:`SACTrainer` of behavior ``B`` for 2-float observations in
    :func:`training_context`."""
    observations = ObservationLayout.from_space(spaces.Box(-5, 5, (2,), np.float32))
    return SACTrainer(
        training_context(
            "B", behavior, observations, ActionLayout.from_space(action_space), artifact_dir
        )
    )


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def shipped_config(behavior_name: str, trainer: str) -> dict[str, Any]:
    """``trainers/configs/<behavior_name>_<trainer>.yaml``, as shipped."""
    path = REPO_ROOT / "trainers" / "configs" / f"{behavior_name}_{trainer}.yaml"
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def shortened_run(
    run_train: RunTrain,
    config: dict[str, Any],
    behavior_name: str,
    max_steps: int,
    *args: str,
    **hyperparameters: Any,
) -> Path:
    """Train a shipped config with only the run and the sizes that decide when the first update
    happens shortened (PPO: horizon 32, buffer 320, batches of 64, one epoch; SAC: batches of 64
    after 200 random steps, 20 updates a step; ``hyperparameters`` override these), then check
    that its trainer updated with finite losses. ``args`` are ``unity-train``'s flags.

    Returns:
        The run's results folder.
    """
    behavior = config["behaviors"][behavior_name]
    trainer = behavior["trainer_type"]
    behavior.update(max_steps=max_steps, summary_freq=500, checkpoint_interval=10**6)
    if trainer == "ppo":
        behavior["time_horizon"] = 32
        behavior["hyperparameters"].update(buffer_size=320, batch_size=64, num_epoch=1)
    else:
        behavior["hyperparameters"].update(
            batch_size=64, buffer_init_steps=200, steps_per_update=20.0
        )
    behavior["hyperparameters"].update(hyperparameters)
    run = run_train(config, *args)
    state = load_checkpoint(run / behavior_name / "checkpoint.pt")
    assert state["trainer_type"] == trainer and state["update_count"] >= 1
    loss = "Losses/Policy Loss" if trainer == "ppo" else "Losses/Q1 Loss"
    values = tensorboard_scalars(run / behavior_name)[loss]
    assert values and all(np.isfinite(values)), f"{loss}: {values}"
    return run


def assert_body_configs(
    behavior_name: str,
    *,
    hidden_units: int,
    ppo_sizes: tuple[int, int, int],
    sac_sizes: tuple[int, int, float, int],
) -> None:
    """The shipped PPO and SAC configs of one of ML-Agents' jointed-body examples (Worm, Crawler,
    Walker) equal ML-Agents' ``config/ppo`` and ``config/sac`` files: what those share (learning
    rate 3e-4, PPO's beta, epsilon, lambd and epochs, SAC's tau and entropy, networks normalised
    with 3 layers of ``hidden_units``, time horizon 1000, summaries every 30000, gamma 0.995, 5
    checkpoints) and the sizes given: PPO (batch, buffer, max steps), SAC (batch, buffer, steps
    per update, which is also the reward signal's, max steps)."""
    network = {
        "normalize": True,
        "hidden_units": hidden_units,
        "num_layers": 3,
        "vis_encode_type": "simple",
    }
    ppo = shipped_config(behavior_name, "ppo")["behaviors"][behavior_name]
    assert ppo["trainer_type"] == "ppo"
    assert ppo["hyperparameters"] == {
        "batch_size": ppo_sizes[0],
        "buffer_size": ppo_sizes[1],
        "learning_rate": 3.0e-4,
        "beta": 5.0e-3,
        "epsilon": 0.2,
        "lambd": 0.95,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    }
    assert (ppo["max_steps"], ppo["time_horizon"], ppo["summary_freq"]) == (
        ppo_sizes[2],
        1000,
        30000,
    )
    sac = shipped_config(behavior_name, "sac")["behaviors"][behavior_name]
    assert sac["trainer_type"] == "sac"
    assert sac["hyperparameters"] == {
        "learning_rate": 3.0e-4,
        "learning_rate_schedule": "constant",
        "batch_size": sac_sizes[0],
        "buffer_size": sac_sizes[1],
        "buffer_init_steps": 0,
        "tau": 0.005,
        "steps_per_update": sac_sizes[2],
        "save_replay_buffer": False,
        "init_entcoef": 1.0,
        "reward_signal_steps_per_update": sac_sizes[2],
    }
    assert (sac["max_steps"], sac["time_horizon"], sac["summary_freq"]) == (
        sac_sizes[3],
        1000,
        30000,
    )
    for behavior in (ppo, sac):
        assert behavior["network_settings"] == network
        assert behavior["reward_signals"] == {"extrinsic": {"gamma": 0.995, "strength": 1.0}}
        assert behavior["keep_checkpoints"] == 5


def assert_trains_and_exports(
    run_train: RunTrain,
    behavior_name: str,
    trainer: str,
    inputs: list[tuple[str, list[int]]],
    actions: int,
    *args: str,
) -> None:
    """A :func:`shortened_run` (2000 steps) of the shipped ``trainer`` config of
    ``behavior_name`` with ``unity-train`` flags ``args`` ends episodes, and the ONNX model it
    exports takes ``inputs`` (name, shape without the batch) and gives ``actions`` continuous
    actions."""
    import onnxruntime

    config = shipped_config(behavior_name, trainer)
    run = shortened_run(run_train, config, behavior_name, 2000, *args)
    scalars = tensorboard_scalars(run / behavior_name)
    assert scalars["Environment/Cumulative Reward"], "episodes ended"
    session = onnxruntime.InferenceSession(str(run / f"{behavior_name}.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    for expected in inputs:
        assert expected in shapes, shapes
    feeds = {i.name: np.zeros((3, *i.shape[1:]), np.float32) for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, feeds), strict=True))
    assert outputs["continuous_actions"].shape == (3, actions)


def tensorboard_scalars(behavior_dir: Path) -> dict[str, list[float]]:
    """Every TensorBoard scalar a behavior wrote: tag -> values in step order."""
    series: dict[str, list[float]] = {}
    for event_file in sorted(behavior_dir.glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(event_file))
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            series.setdefault(tag, []).extend(e.value for e in accumulator.Scalars(tag))
    return series


def adam_steps(state: dict[str, Any], name: str) -> float:
    """The step count of checkpoint optimizer ``name`` (its first parameter's)."""
    return float(state["optimizers"][name]["state"][0]["step"])


def random_outcome(
    rng: np.random.Generator, terminated: np.ndarray, truncated: np.ndarray, size: int
) -> BehaviorStep:
    """The environment's answer for ``len(terminated)`` slots of ``size`` random vector
    observations: random rewards, every slot valid, a fresh final observation where an episode
    ended (``terminated | truncated``)."""
    slots = len(terminated)
    done = terminated | truncated
    final = rng.uniform(-1, 1, (slots, size)).astype(np.float32)
    observations = [rng.uniform(-1, 1, (slots, size)).astype(np.float32)]
    return BehaviorStep(
        observations=observations,
        action_mask=None,
        rewards=rng.normal(size=slots).astype(np.float32),
        terminated=terminated,
        truncated=truncated,
        valid=np.ones(slots, dtype=bool),
        final_observations=[np.where(done[:, None], final, observations[0])],
        final_action_mask=None,
    )
