"""FlatAdam over a ParameterBuffer: torch.optim.Adam's arithmetic and state-dict layout."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from trainers.common.optimization.flat_adam import FlatAdam
from trainers.common.optimization.parameter_buffer import ParameterBuffer, polyak_update


def _network(seed: int) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.SiLU(), nn.Linear(5, 2))


def _loss(network: nn.Module, step: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(step)
    inputs = torch.randn(7, 3, generator=generator)
    return network(inputs).square().mean()


def _train(network: nn.Module, optimizer: torch.optim.Optimizer, steps: range) -> None:
    for step in steps:
        optimizer.zero_grad()
        _loss(network, step).backward()
        optimizer.step()


def test_parameters_keep_identity_shape_and_values_and_share_the_buffers() -> None:
    network = _network(0)
    before = {name: p.detach().clone() for name, p in network.named_parameters()}
    identities = [id(p) for p in network.parameters()]
    buffer = ParameterBuffer(list(network.parameters()))
    assert [id(p) for p in network.parameters()] == identities
    for name, parameter in network.named_parameters():
        torch.testing.assert_close(parameter.detach(), before[name], rtol=0, atol=0)
    assert buffer.data.numel() == sum(p.numel() for p in network.parameters())
    buffer.data.fill_(0.5)
    buffer.grad.fill_(2.0)
    for parameter in network.parameters():
        assert bool((parameter.detach() == 0.5).all())
        assert parameter.grad is not None and bool((parameter.grad == 2.0).all())


def test_backward_accumulates_into_the_gradient_buffer() -> None:
    network = _network(0)
    reference = _network(0)
    buffer = ParameterBuffer(list(network.parameters()))
    _loss(network, 0).backward()
    _loss(reference, 0).backward()
    expected = torch.cat([p.grad.reshape(-1) for p in reference.parameters()])  # type: ignore[union-attr]
    torch.testing.assert_close(buffer.grad, expected)
    buffer.zero_grad()
    assert bool((buffer.grad == 0).all())


@pytest.mark.parametrize("fused", [True, False])
def test_flat_adam_follows_torch_adam(fused: bool) -> None:
    ours, reference = _network(0), _network(0)
    optimizer = FlatAdam(ParameterBuffer(list(ours.parameters())), lr=0.01, fused=fused)
    assert optimizer.fused is fused
    torch_adam = torch.optim.Adam(reference.parameters(), lr=0.01, foreach=False)
    _train(ours, optimizer, range(20))
    _train(reference, torch_adam, range(20))
    assert optimizer.steps_taken == 20
    initial = _network(0)
    for mine, theirs, start in zip(
        ours.parameters(), reference.parameters(), initial.parameters(), strict=True
    ):
        assert float((theirs - start).detach().abs().max()) > 1e-3  # the trajectory went somewhere
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)


def test_learning_rate_is_read_from_the_parameter_group() -> None:
    network = _network(0)
    optimizer = FlatAdam(ParameterBuffer(list(network.parameters())), lr=0.01)
    optimizer.param_groups[0]["lr"] = 0.0
    before = [p.detach().clone() for p in network.parameters()]
    _train(network, optimizer, range(3))
    for parameter, old in zip(network.parameters(), before, strict=True):
        torch.testing.assert_close(parameter.detach(), old, rtol=0, atol=0)


@pytest.mark.parametrize("writer", ["flat", "torch"])
def test_state_dict_round_trips_with_torch_adam(writer: str) -> None:
    """A checkpoint of either optimizer resumes in the other on the same trajectory."""
    first = _network(0)
    if writer == "flat":
        optimizer: torch.optim.Optimizer = FlatAdam(ParameterBuffer(list(first.parameters())), 0.01)
    else:
        optimizer = torch.optim.Adam(first.parameters(), lr=0.01, fused=True)
    _train(first, optimizer, range(5))
    saved = io.BytesIO()
    torch.save({"model": first.state_dict(), "optimizer": optimizer.state_dict()}, saved)
    saved.seek(0)
    state = torch.load(saved, weights_only=True)
    assert set(state["optimizer"]["state"]) == set(range(4))
    assert set(state["optimizer"]["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}

    resumed, continued = _network(1), _network(1)
    resumed.load_state_dict(state["model"])
    continued.load_state_dict(state["model"])
    if writer == "flat":
        other: torch.optim.Optimizer = torch.optim.Adam(resumed.parameters(), lr=0.01)
        reference: torch.optim.Optimizer = FlatAdam(
            ParameterBuffer(list(continued.parameters())), 0.01
        )
    else:
        other = FlatAdam(ParameterBuffer(list(resumed.parameters())), 0.01)
        reference = torch.optim.Adam(continued.parameters(), lr=0.01)
    other.load_state_dict(state["optimizer"])
    reference.load_state_dict(state["optimizer"])
    _train(resumed, other, range(5, 10))
    _train(continued, reference, range(5, 10))
    _train(first, optimizer, range(5, 10))
    trained = zip(resumed.parameters(), continued.parameters(), first.parameters(), strict=True)
    for a, b, c in trained:
        torch.testing.assert_close(a, c, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(b, c, rtol=1e-5, atol=1e-6)


def test_stacked_leaf_is_the_members_memory() -> None:
    torch.manual_seed(0)
    left, right, other = nn.Linear(4, 3), nn.Linear(4, 3), nn.Linear(3, 1)
    parameters = [*left.parameters(), *other.parameters(), *right.parameters()]
    buffer = ParameterBuffer(parameters, [(left.weight, right.weight), (left.bias, right.bias)])
    weights = buffer.stacked(0)
    assert weights.shape == (2, 3, 4) and weights.is_leaf
    torch.testing.assert_close(weights[0], left.weight.detach(), rtol=0, atol=0)
    torch.testing.assert_close(weights[1], right.weight.detach(), rtol=0, atol=0)
    inputs = torch.randn(5, 4)
    (torch.bmm(inputs.expand(2, -1, -1), weights.transpose(1, 2)).sum() * 3).backward()
    expected = torch.autograd.grad((inputs @ left.weight.T).sum() * 3, left.weight)[0]
    torch.testing.assert_close(left.weight.grad, expected)
    torch.testing.assert_close(right.weight.grad, expected)
    assert other.weight.grad is not None and bool((other.weight.grad == 0).all())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda a, b: ParameterBuffer([]), "at least one"),
        (lambda a, b: ParameterBuffer([a.weight, a.weight]), "twice"),
        (lambda a, b: ParameterBuffer([a.weight, a.bias], [(a.weight, a.bias)]), "one shape"),
        (lambda a, b: ParameterBuffer([a.weight], [(a.weight, b.weight)]), "non-member"),
        (
            lambda a, b: ParameterBuffer([a.weight, nn.Parameter(torch.zeros(2).double())]),
            "one dtype",
        ),
    ],
)
def test_bad_layouts_are_refused(build: object, message: str) -> None:
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    with pytest.raises(ValueError, match=message):
        build(a, b)  # type: ignore[operator]


def _adam_state(network: nn.Module, **options: object) -> dict[str, object]:
    optimizer = torch.optim.Adam(network.parameters(), lr=0.01, **options)  # type: ignore[arg-type]
    _train(network, optimizer, range(2))
    return optimizer.state_dict()


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (lambda n: {"weights": []}, "not an optimizer state dict"),
        (
            lambda n: torch.optim.Adam(
                [{"params": [n[0].weight]}, {"params": [n[0].bias, *n[2].parameters()]}]
            ).state_dict(),
            "one parameter group, not 2",
        ),
        (
            lambda n: torch.optim.Adam(n[2].parameters()).state_dict(),
            "2 parameters, this optimizer 4",
        ),
        (lambda n: _adam_state(n, weight_decay=0.1), "weight_decay"),
        (lambda n: _adam_state(n, amsgrad=True), "amsgrad"),
        (
            lambda n: _adam_state(
                nn.Sequential(nn.Linear(3, 4), nn.SiLU(), nn.Linear(4, 2)), foreach=False
            ),
            r"exp_avg of parameter 0 has shape \(4, 3\), the parameter \(5, 3\)",
        ),
    ],
)
def test_foreign_state_dicts_are_refused_and_leave_the_optimizer_unchanged(
    state: object, message: str
) -> None:
    network = _network(0)
    optimizer = FlatAdam(ParameterBuffer(list(network.parameters())), lr=0.01)
    _train(network, optimizer, range(3))
    moments = optimizer.exp_avg.clone(), optimizer.exp_avg_sq.clone()
    with pytest.raises(ValueError, match=message):
        optimizer.load_state_dict(state(_network(1)))  # type: ignore[operator]
    assert optimizer.steps_taken == 3
    torch.testing.assert_close(optimizer.exp_avg, moments[0], rtol=0, atol=0)
    torch.testing.assert_close(optimizer.exp_avg_sq, moments[1], rtol=0, atol=0)
    assert optimizer.param_groups[0]["lr"] == 0.01


def test_a_second_parameter_group_is_refused() -> None:
    network = _network(0)
    optimizer = FlatAdam(ParameterBuffer(list(network[0].parameters())), lr=0.01)
    with pytest.raises(ValueError, match="single parameter group"):
        optimizer.add_param_group({"params": list(network[2].parameters())})


def test_the_optimizer_never_imports_the_torch_compiler() -> None:
    """``torch.optim.Optimizer`` imports ``torch._dynamo`` (over a second) on first use of
    ``add_param_group``/``state_dict``/``load_state_dict``; FlatAdam's whole life does not."""
    program = textwrap.dedent(
        """
        import sys
        import torch
        from trainers.common.optimization.flat_adam import FlatAdam
        from trainers.common.optimization.parameter_buffer import ParameterBuffer, polyak_update
        network = torch.nn.Linear(3, 2)
        optimizer = FlatAdam(ParameterBuffer(list(network.parameters())), lr=0.01)
        network(torch.ones(4, 3)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        optimizer.load_state_dict(optimizer.state_dict())
        print("torch._dynamo" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert result.stdout.strip() == "False", result.stderr


def test_polyak_update_moves_every_member_of_the_target_tau_of_the_way() -> None:
    source_net, target_net = _network(0), _network(1)
    expected = [
        0.25 * s.detach() + 0.75 * t.detach()
        for s, t in zip(source_net.parameters(), target_net.parameters(), strict=True)
    ]
    source = ParameterBuffer(list(source_net.parameters()))
    target = ParameterBuffer(list(target_net.parameters()))
    assert source.same_layout(target)
    polyak_update(source, target, 0.25)
    for parameter, value in zip(target_net.parameters(), expected, strict=True):
        torch.testing.assert_close(parameter.detach(), value)
    other = ParameterBuffer(list(nn.Linear(3, 4).parameters()))
    assert not source.same_layout(other)
    with pytest.raises(ValueError, match="same layout"):
        polyak_update(source, other, 0.25)
