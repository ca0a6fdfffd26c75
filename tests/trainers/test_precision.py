"""``torch_settings.precision``: the setting and flag, every network's heads in float32 inside a
``bf16-mixed`` update while its body computes in bfloat16, and short ``unity-train`` runs of
PPO, SAC and POCA on built-in scenes (real players over gRPC) whose updates ran in bfloat16."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn
from torch.nn import functional
from torch.overrides import TorchFunctionMode
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior, tensorboard_scalars

from trainers.cli import build_parser, options_from_args
from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.networks.models import (
    Body,
    PolicyNetwork,
    QNetwork,
    ValueNetwork,
    build_normalizer,
)
from trainers.common.networks.precision import cpu_has_bf16_units, update_precision
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.poca.networks import GroupCritic
from trainers.settings import ConfigError, MemorySettings, NetworkSettings, parse_run_options

pytestmark = pytest.mark.timeout(180)

CPU = torch.device("cpu")
LAYOUT = ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (12,), np.float32))
DISCRETE = ActionLayout.from_space(spaces.MultiDiscrete([3, 3, 3]))
CONTINUOUS = ActionLayout.from_space(spaces.Box(-1.0, 1.0, (2,), np.float32))
SETTINGS = NetworkSettings(hidden_units=64, num_layers=2)


def test_the_precision_setting_and_flag() -> None:
    assert parse_run_options({}).torch_settings.precision == "float32"
    options = parse_run_options({"torch_settings": {"precision": "bf16-mixed"}})
    assert options.torch_settings.precision == "bf16-mixed"
    with pytest.raises(ConfigError, match=r"torch_settings\.precision: 'bf16'.*bf16-mixed"):
        parse_run_options({"torch_settings": {"precision": "bf16"}})
    args = build_parser().parse_args(["--torch-precision", "bf16-mixed"])
    assert options_from_args(args).torch_settings.precision == "bf16-mixed"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--torch-precision", "float16"])


def test_bfloat16_units_are_read_from_the_cpu_flags(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f amx_bf16 amx_tile\n")
    assert cpu_has_bf16_units(cpuinfo) is True
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n")
    assert cpu_has_bf16_units(cpuinfo) is True
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    assert cpu_has_bf16_units(cpuinfo) is False
    cpuinfo.write_text("processor\t: 0\n")
    assert cpu_has_bf16_units(cpuinfo) is None
    assert cpu_has_bf16_units(tmp_path / "missing") is None


@contextmanager
def _body_dtypes() -> Iterator[list[torch.dtype]]:
    """The output dtypes of every :class:`Body` forward pass inside the block."""
    seen: list[torch.dtype] = []

    def hook(module: nn.Module, inputs: Any, output: Any) -> None:
        if isinstance(module, Body):
            seen.append(output.dtype)

    handle = nn.modules.module.register_module_forward_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def _policy_outputs(action_layout: ActionLayout) -> Callable[[], list[torch.Tensor]]:
    torch.manual_seed(0)
    policy = PolicyNetwork(
        LAYOUT, action_layout, SETTINGS, build_normalizer(LAYOUT, False), squash=False
    )
    observations = [torch.randn(256, 12)]

    def outputs() -> list[torch.Tensor]:
        dist = policy(observations)
        actions = torch.zeros(256, len(dist.branch_logits), dtype=torch.long)
        parts = [*dist.branch_logits] if dist.branch_logits else [dist.mean]
        continuous = None if dist.mean is None else torch.zeros_like(dist.mean)
        return [*parts, dist.log_probs(continuous, actions if dist.branch_logits else None)]

    return outputs


def _recurrent_policy_outputs() -> list[torch.Tensor]:
    torch.manual_seed(0)
    settings = NetworkSettings(hidden_units=64, num_layers=1, memory=MemorySettings(4, 16))
    policy = PolicyNetwork(
        LAYOUT, DISCRETE, settings, build_normalizer(LAYOUT, False), squash=False
    )
    dist = policy.sequences([torch.randn(64, 12)], None, torch.zeros(16, 16))
    return list(dist.branch_logits)


def _value_outputs() -> list[torch.Tensor]:
    torch.manual_seed(0)
    critic = ValueNetwork(LAYOUT, SETTINGS, build_normalizer(LAYOUT, False), heads=2)
    return [critic([torch.randn(256, 12)])]


def _q_outputs() -> list[torch.Tensor]:
    torch.manual_seed(0)
    q = QNetwork(LAYOUT, CONTINUOUS, SETTINGS, build_normalizer(LAYOUT, False))
    return [q([torch.randn(256, 12)], torch.randn(256, 2))]


def _group_critic_outputs() -> list[torch.Tensor]:
    torch.manual_seed(0)
    critic = GroupCritic(LAYOUT, DISCRETE, SETTINGS, build_normalizer(LAYOUT, False))
    own = critic.encode([torch.randn(256, 12)])
    mates = critic.encode([torch.randn(256 * 2, 12)]).reshape(256, 2, -1)
    actions = critic.flat_actions(None, torch.randint(0, 3, (512, 3))).reshape(256, 2, -1)
    absent = torch.zeros(256, 2, dtype=torch.bool)
    absent[::3, 1] = True
    return [critic.values(own, mates, absent), critic.baselines(own, mates, actions, absent)]


NETWORKS: dict[str, Callable[[], list[torch.Tensor]]] = {
    "policy-discrete": lambda: _policy_outputs(DISCRETE)(),
    "policy-continuous": lambda: _policy_outputs(CONTINUOUS)(),
    "policy-memory": _recurrent_policy_outputs,
    "value": _value_outputs,
    "q": _q_outputs,
    "group-critic": _group_critic_outputs,
}


@pytest.mark.parametrize("network", list(NETWORKS))
def test_bf16_mixed_runs_bodies_in_bfloat16_and_heads_in_float32(network: str) -> None:
    compute = NETWORKS[network]
    with _body_dtypes() as full_dtypes:
        full = compute()
    with _body_dtypes() as mixed_dtypes, update_precision("bf16-mixed", CPU):
        mixed = compute()
    with _body_dtypes() as none_dtypes, update_precision("float32", CPU):
        unchanged = compute()
    assert set(full_dtypes) == set(none_dtypes) == {torch.float32}
    assert set(mixed_dtypes) == {torch.bfloat16}
    for exact, reduced, same in zip(full, mixed, unchanged, strict=True):
        assert reduced.dtype == exact.dtype == torch.float32
        torch.testing.assert_close(same, exact, rtol=0.0, atol=0.0)
        # bfloat16 inputs: close to float32, not equal to it
        torch.testing.assert_close(reduced, exact, rtol=0.05, atol=0.02)
        assert not torch.equal(reduced, exact)


def test_every_step_of_a_bf16_mixed_update_sees_the_weights_it_changed() -> None:
    # An update job takes all its optimizer steps inside one bf16-mixed region. Autocast's
    # weight cache would hand every later pass the bfloat16 weights of the first one: values
    # then stop following the optimizer, and the steps overshoot (SoccerTwos' critic ran away).
    torch.manual_seed(0)
    critic = ValueNetwork(LAYOUT, SETTINGS, build_normalizer(LAYOUT, False))
    optimizer = torch.optim.SGD(critic.parameters(), lr=0.05)
    observations = [torch.randn(256, 12)]
    with update_precision("bf16-mixed", CPU):
        before = critic(observations)
        before.square().mean().backward()
        optimizer.step()
        after = critic(observations).detach()
    with update_precision("bf16-mixed", CPU):
        fresh = critic(observations).detach()
    torch.testing.assert_close(after, fresh, rtol=0.0, atol=0.0)
    assert (after - before.detach()).abs().max() > 0.01


class _ProductDtypes(TorchFunctionMode):
    """Records the output dtype of every matrix product called in this thread (the stacked PPO
    pass calls ``baddbmm`` rather than a :class:`Body`)."""

    PRODUCTS = frozenset({functional.linear, torch.baddbmm, torch.bmm, torch.matmul})

    def __init__(self) -> None:
        super().__init__()
        self.dtypes: set[torch.dtype] = set()

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        result = func(*args, **(kwargs or {}))
        if func in self.PRODUCTS:
            self.dtypes.add(result.dtype)
        return result


def _trained(
    run_train: RunTrain, config: dict[str, Any], flags: tuple[str, ...], precision: str
) -> tuple[Path, set[torch.dtype]]:
    """Train ``config`` in-process; the run folder, and the dtypes its matrix products gave."""
    with _ProductDtypes() as products:
        run = run_train(config, *flags, "--torch-precision", precision, run_id=precision)
    return run, products.dtypes


RUNS: dict[str, tuple[dict[str, Any], tuple[str, ...], str]] = {
    "ppo": (
        {"behaviors": {"3DBall": ppo_behavior(max_steps=600)}},
        ("--scene", "3DBall", "--seed", "1"),
        "3DBall",
    ),
    "sac": (
        {"behaviors": {"3DBall": sac_behavior(max_steps=300)}},
        ("--scene", "3DBall", "--seed", "1"),
        "3DBall",
    ),
    "poca": (
        {
            "behaviors": {
                "PushBlockCollab": ppo_behavior(trainer_type="poca", max_steps=600, time_horizon=16)
            }
        },
        ("--scene", "PushBlockCollab", "--seed", "1"),
        "PushBlockCollab",
    ),
}


@pytest.mark.parametrize("trainer", list(RUNS))
def test_bf16_mixed_training_runs_end_to_end(run_train: RunTrain, trainer: str) -> None:
    config, flags, behavior = RUNS[trainer]
    run, dtypes = _trained(run_train, config, flags, "bf16-mixed")
    # acting in float32, updating in bfloat16
    assert dtypes == {torch.float32, torch.bfloat16}
    state = load_checkpoint(run / behavior / "checkpoint.pt")
    for name, module in state["modules"].items():
        for key, value in module.items():
            if value.is_floating_point():
                assert value.dtype in (torch.float32, torch.float64), f"{name}.{key}"
                assert torch.isfinite(value).all(), f"{name}.{key}"
    losses = tensorboard_scalars(run / behavior)
    value_losses = losses["Losses/Value Loss" if trainer != "sac" else "Losses/Q1 Loss"]
    assert value_losses and np.isfinite(value_losses).all()
    assert (run / f"{behavior}.onnx").is_file()
    timers = json.loads((run / "run_logs" / "timers.json").read_text(encoding="utf-8"))
    assert timers["metadata"]["torch_precision"] == "bf16-mixed"
    _, float32_dtypes = _trained(run_train, config, flags, "float32")
    assert float32_dtypes == {torch.float32}
