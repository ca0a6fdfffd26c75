"""GAIL (generative adversarial imitation learning): reward for behaving like the demonstrations.

A discriminator ``D`` learns to tell demonstrated steps (``D -> 1``) from the policy's own
(``D -> 0``); the policy is rewarded ``-log(1 - D * (1 - 1e-7))`` on its steps, which grows as
they look demonstrated. ML-Agents facts followed (``gail_reward_provider.py``):

* the discriminator encodes the observations with the signal's ``network_settings`` (its own
  normalization, updated with the demonstration batches only); with ``use_actions`` the
  continuous actions, the one-hot discrete choices and the done flag join the encoded
  observations before the hidden layers; the estimate is one sigmoid unit (Glorot-uniform
  weights times 0.2);
* ``use_vail``: a variational bottleneck of 128 units (mean layer He-normal times 0.1, one
  learned standard deviation per unit, starting at 1) sits before the estimate; noise is
  drawn during training only. Its KL term is held near the information target 0.5 by a
  coefficient ``beta`` (starting at 0) that follows ``beta <- max(beta + 5e-4 * (KL - 0.5), 0)``
  at every update;
* loss, per update on a policy batch and a demonstration batch of the same size (drawn with
  replacement): ``-mean(log(D_expert + 1e-7) + log(1 - D_policy + 1e-7))``, plus
  ``beta * (KL - 0.5)`` with VAIL, plus 10 x the gradient penalty: the mean of
  ``(sqrt(|grad|^2 + 1e-7) - 1)^2``, the gradient of the summed estimate on inputs mixed
  element-wise at random between the two batches, taken with respect to the first
  observation input (as ML-Agents does);
* episode ends stop its returns (it does not ignore ``done``), Adam at ``learning_rate``.

TensorBoard: ``Policy/Gail Reward`` and ``Policy/Gail Value Estimate`` (the trainer's, named as
ML-Agents names them), ``Losses/GAIL Loss``, ``Policy/GAIL Policy Estimate``, ``Policy/GAIL Expert
Estimate``, ``Policy/GAIL Grad Mag Loss`` and, with VAIL, ``Policy/GAIL Beta`` and
``Losses/GAIL KL Loss``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from trainers.common.networks.models import Body, ObservationEncoder, build_normalizer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.imitation.demonstrations import Demonstrations, load_demonstrations
from trainers.reward_signals.base import RewardSignal, SignalBatch
from trainers.reward_signals.networks import action_features
from trainers.settings import GAILSettings

__all__ = ["DiscriminatorNetwork", "GAILSignal"]

EPSILON = 1e-7
GRADIENT_PENALTY_WEIGHT = 10.0
Z_SIZE = 128  # units of the VAIL bottleneck
BETA_STEP = 5e-4  # ML-Agents' alpha: how fast beta follows the KL term
MUTUAL_INFORMATION = 0.5  # the KL target of the bottleneck
INITIAL_BETA = 0.0
ESTIMATE_GAIN = 0.2
Z_MEAN_GAIN = 0.1


class DiscriminatorNetwork(nn.Module):
    """``D(observations[, actions, done])`` in ``(0, 1)``: how demonstrated a step looks."""

    beta: torch.Tensor

    def __init__(
        self, layout: ObservationLayout, action_layout: ActionLayout, settings: GAILSettings
    ) -> None:
        super().__init__()
        net = settings.network_settings
        self.use_actions = settings.use_actions
        self.use_vail = settings.use_vail
        self.branches = list(action_layout.discrete_branches)
        self.normalizer = build_normalizer(layout, net.normalize)
        self.encoder = ObservationEncoder(layout, net, self.normalizer)
        extra = action_layout.continuous_size + sum(self.branches) + 1 if self.use_actions else 0
        self.body = Body(self.encoder.output_size + extra, net, self.encoder.goal_size)
        size = net.hidden_units
        self.z_mean: nn.Linear | None = None
        self.z_sigma: nn.Parameter | None = None
        if self.use_vail:
            self.z_mean = nn.Linear(size, Z_SIZE)
            nn.init.kaiming_normal_(self.z_mean.weight, nonlinearity="linear")
            with torch.no_grad():
                self.z_mean.weight.mul_(Z_MEAN_GAIN)
            nn.init.zeros_(self.z_mean.bias)
            self.z_sigma = nn.Parameter(torch.ones(Z_SIZE))
            size = Z_SIZE
        #: VAIL's KL coefficient (a buffer: saved, never trained by gradients).
        self.register_buffer("beta", torch.tensor(INITIAL_BETA))
        self.estimator = nn.Linear(size, 1)
        nn.init.xavier_uniform_(self.estimator.weight, gain=ESTIMATE_GAIN)
        nn.init.zeros_(self.estimator.bias)

    def action_inputs(self, batch: SignalBatch) -> torch.Tensor:
        """Continuous actions, one-hot discrete choices and the done flag ``(n, size + 1)``."""
        parts = action_features(batch, self.branches)
        if batch.dones is None:
            raise RuntimeError(
                "GAIL with use_actions reads each step's done flag; the trainer's signal batch "
                "has none (SignalBatch.dones)."
            )
        parts.append(batch.dones.to(torch.float32).reshape(-1, 1))
        return torch.cat(parts, dim=1)

    def estimate(
        self,
        observations: list[torch.Tensor],
        actions: torch.Tensor | None,
        *,
        noise: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``D`` per step ``(n,)`` and, with VAIL, the bottleneck means ``(n, 128)``.

        Args:
            observations: network-format observations.
            actions: :meth:`action_inputs` (``use_actions`` only, else ``None``).
            noise: sample the VAIL code (training) instead of taking its mean.
        """
        features, goal = self.encoder(observations)
        if actions is not None:
            features = torch.cat([features, actions], dim=1)
        hidden = self.body(features, goal)
        z_mean = None
        if self.z_mean is not None and self.z_sigma is not None:
            z_mean = self.z_mean(hidden)
            hidden = z_mean + torch.randn_like(z_mean) * self.z_sigma * float(noise)
        return torch.sigmoid(self.estimator(hidden)).squeeze(1), z_mean


class GAILSignal(RewardSignal):
    """The ``gail`` reward signal (see the module docstring).

    Args:
        settings: the signal's settings.
        layout: the trainer's observation entries.
        action_layout: the trainer's actions.
        device: where the discriminator lives.
        behavior_name: named in configuration errors.
        path: the settings' configuration path, named in errors.

    Raises:
        ConfigError: the demonstrations cannot be read or do not fit the behavior.
    """

    key = "gail"
    name = "Gail"  # ML-Agents capitalizes the provider's name: "Policy/Gail Reward"

    def __init__(
        self,
        settings: GAILSettings,
        layout: ObservationLayout,
        action_layout: ActionLayout,
        device: torch.device,
        *,
        behavior_name: str = "",
        path: str = "reward_signals.gail",
    ) -> None:
        super().__init__(settings)
        assert settings.demo_path is not None  # required by GAILSettings
        self.layout = layout
        self.device = device
        self.demonstrations: Demonstrations = load_demonstrations(
            settings.demo_path,
            layout,
            action_layout,
            behavior_name=behavior_name,
            key=f"{path}.demo_path",
        )
        self.network = DiscriminatorNetwork(layout, action_layout, settings).to(device)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=settings.learning_rate)

    def _actions(self, batch: SignalBatch) -> torch.Tensor | None:
        return self.network.action_inputs(batch) if self.network.use_actions else None

    def evaluate(self, batch: SignalBatch) -> np.ndarray:
        with torch.no_grad():
            estimate, _ = self.network.estimate(
                batch.observations, self._actions(batch), noise=False
            )
            rewards = -torch.log(1.0 - estimate * (1.0 - EPSILON))
        return rewards.cpu().numpy().astype(np.float32)

    def expert_batch(self, size: int) -> SignalBatch:
        """``size`` demonstrated steps drawn at random with replacement (as ML-Agents)."""
        rows = torch.randint(len(self.demonstrations), (size,)).numpy()
        return self.demonstrations.batch(rows, self.layout, self.device)

    def loss(
        self, policy: SignalBatch, expert: SignalBatch
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """The discriminator's total loss on a policy and an expert batch of equal size, with
        its TensorBoard statistics; updates VAIL's ``beta``."""
        network = self.network
        policy_estimate, policy_mean = network.estimate(
            policy.observations, self._actions(policy), noise=True
        )
        expert_estimate, expert_mean = network.estimate(
            expert.observations, self._actions(expert), noise=True
        )
        discriminator = -(
            torch.log(expert_estimate + EPSILON) + torch.log(1.0 - policy_estimate + EPSILON)
        ).mean()
        stats = {
            "Policy/GAIL Policy Estimate": float(policy_estimate.detach().mean()),
            "Policy/GAIL Expert Estimate": float(expert_estimate.detach().mean()),
            "Losses/GAIL Loss": float(discriminator.detach()),
        }
        total = discriminator
        if network.z_sigma is not None and policy_mean is not None and expert_mean is not None:
            variance = network.z_sigma.square()
            kl = (
                -(
                    1.0
                    + variance.log()
                    - 0.5 * expert_mean.square()
                    - 0.5 * policy_mean.square()
                    - variance
                )
                .sum(dim=1)
                .mean()
            )
            with torch.no_grad():
                network.beta.copy_(
                    torch.clamp(network.beta + BETA_STEP * (kl - MUTUAL_INFORMATION), min=0.0)
                )
            # ML-Agents' loss takes beta before this update, but its gradient the updated one
            total = total + network.beta * (kl - MUTUAL_INFORMATION)
            stats["Policy/GAIL Beta"] = float(network.beta)
            stats["Losses/GAIL KL Loss"] = float(kl.detach())
        if GRADIENT_PENALTY_WEIGHT > 0.0:
            penalty = GRADIENT_PENALTY_WEIGHT * self.gradient_penalty(policy, expert)
            stats["Policy/GAIL Grad Mag Loss"] = float(penalty.detach())
            total = total + penalty
        return total, stats

    def gradient_penalty(self, policy: SignalBatch, expert: SignalBatch) -> torch.Tensor:
        """``mean((sqrt(|dD/dx|^2 + 1e-7) - 1)^2)`` at inputs ``x`` mixed element-wise at random
        between the two batches, the gradient taken with respect to the first observation."""
        mixed: list[torch.Tensor] = []
        for mine, theirs in zip(policy.observations, expert.observations, strict=True):
            weight = torch.rand(mine.shape, device=mine.device)
            mixed.append((weight * mine + (1.0 - weight) * theirs).requires_grad_(True))
        actions = None
        if self.network.use_actions:
            own, demonstrated = (
                self.network.action_inputs(policy),
                self.network.action_inputs(expert),
            )
            weight = torch.rand(own.shape, device=own.device)
            actions = weight * own + (1.0 - weight) * demonstrated
        estimate, _ = self.network.estimate(mixed, actions, noise=True)
        (gradient,) = torch.autograd.grad(estimate.sum(), mixed[0], create_graph=True)
        norm = (gradient.square().sum(dim=1) + EPSILON).sqrt()
        return (norm - 1.0).square().mean()

    def update(self, batch: SignalBatch) -> dict[str, float]:
        expert = self.expert_batch(len(batch.rewards))
        normalizer = self.network.normalizer
        if normalizer.normalizers:  # the demonstrations alone set the statistics (ML-Agents)
            with torch.no_grad():
                normalizer.update([entry.reshape(len(entry), -1) for entry in expert.observations])
        loss, stats = self.loss(batch, expert)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return stats

    def modules(self) -> dict[str, nn.Module]:
        return {"discriminator": self.network}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"optimizer": self.optimizer}
