"""Action distributions of a policy: a diagonal Gaussian and masked categorical branches.

:class:`ActionDistribution` bundles both parts of a (possibly hybrid) action. Continuous actions
are Gaussian in an unbounded space; :meth:`ActionDistribution.env_continuous` maps them to the
``[-1, 1]`` range the environment receives, either by clipping to ``[-3, 3]`` and dividing by 3
(PPO, ML-Agents' convention) or by ``tanh`` (SAC). Discrete branches take a float mask
(``1`` = allowed, ``0`` = masked, branches concatenated): masked logits are pushed to ``-1e8``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional

__all__ = ["ActionDistribution", "mask_logits"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def mask_logits(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Push masked logits to ``-1e8`` (``allowed`` is 1 for allowed actions, 0 for masked ones).

    Written with multiplications only, so it exports to ONNX without boolean ops.
    """
    return logits * allowed - 1e8 * (1.0 - allowed)


def _equal_sizes(branch_logits: list[torch.Tensor]) -> bool:
    """Whether every branch has as many choices (they can then be handled as one tensor)."""
    return len({logits.shape[-1] for logits in branch_logits}) == 1


def _inverse_cdf_sample(probabilities: torch.Tensor) -> torch.Tensor:
    """One index per row and branch from ``probabilities`` ``(n, branches, size)``: ``(n,
    branches)`` int64.

    The index is the number of cumulative probabilities at or below ``u * total`` (``u``
    uniform in ``[0, 1)``), so a choice of probability 0 (a masked action) is never drawn and
    rounding cannot push the index past the branch. For SoccerTwos' 3 branches of 3 on 4 to 16
    rows, this (one softmax, one draw) took 45 µs where a ``torch.multinomial`` per branch took
    118 µs.
    """
    cumulative = probabilities.cumsum(dim=-1)
    threshold = torch.rand_like(cumulative[..., :1]) * cumulative[..., -1:]
    return (cumulative <= threshold).sum(dim=-1)


@dataclass
class ActionDistribution:
    """The policy's distribution over one batch of (continuous, discrete) actions.

    Attributes:
        mean: ``(n, continuous_size)`` Gaussian means, or ``None`` without continuous actions.
        log_std: matching log standard deviations (broadcastable to ``mean``).
        branch_logits: one ``(n, branch_size)`` masked-logit tensor per discrete branch.
        squash: ``True`` for tanh-squashed actions (SAC), ``False`` for clipped ones (PPO).
    """

    mean: torch.Tensor | None
    log_std: torch.Tensor | None
    branch_logits: list[torch.Tensor]
    squash: bool

    # -- sampling -------------------------------------------------------------------------

    def sample(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Random (pre-squash) continuous actions and discrete indices ``(n, branches)``."""
        continuous = None
        if self.mean is not None:
            assert self.log_std is not None
            continuous = self.mean + torch.randn_like(self.mean) * torch.exp(self.log_std)
        discrete = None
        if self.branch_logits and torch.onnx.is_in_onnx_export():
            # ONNX's Multinomial, as in ML-Agents' models (what Unity's inference expects)
            samples = [
                torch.multinomial(functional.softmax(logits, dim=-1), 1)
                for logits in self.branch_logits
            ]
            discrete = torch.cat(samples, dim=1)
        elif self.branch_logits:
            if _equal_sizes(self.branch_logits):
                stacked = torch.stack(self.branch_logits, dim=1)  # (n, branches, size)
                discrete = _inverse_cdf_sample(functional.softmax(stacked, dim=-1))
            else:
                discrete = torch.cat(
                    [
                        _inverse_cdf_sample(functional.softmax(logits, dim=-1).unsqueeze(1))
                        for logits in self.branch_logits
                    ],
                    dim=1,
                )
        return continuous, discrete

    def deterministic(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The most likely actions: Gaussian means and per-branch argmax indices."""
        discrete = None
        if self.branch_logits:
            discrete = torch.cat(
                [torch.argmax(logits, dim=-1, keepdim=True) for logits in self.branch_logits],
                dim=1,
            )
        return self.mean, discrete

    def env_continuous(self, raw: torch.Tensor) -> torch.Tensor:
        """Map pre-squash continuous actions to the ``[-1, 1]`` actions sent to the env."""
        if self.squash:
            return torch.tanh(raw)
        return torch.clamp(raw, -3.0, 3.0) / 3.0

    # -- likelihoods (PPO) -----------------------------------------------------------------

    def log_probs(
        self, continuous: torch.Tensor | None, discrete: torch.Tensor | None
    ) -> torch.Tensor:
        """Log-likelihoods ``(n, continuous_size + branches)`` of pre-squash continuous actions
        (one column per dimension) and discrete indices (one column per branch).

        PPO takes its probability ratios per column, as ML-Agents does, rather than of the
        joint likelihood (the columns' sum).
        """
        columns: list[torch.Tensor] = []
        if self.mean is not None:
            assert continuous is not None and self.log_std is not None
            log_std = self.log_std.expand_as(self.mean)
            z = (continuous - self.mean) / torch.exp(log_std)
            columns.append(-0.5 * z.square() - log_std - _LOG_SQRT_2PI)
        if self.branch_logits:
            assert discrete is not None
            if _equal_sizes(self.branch_logits):
                log_probs = functional.log_softmax(torch.stack(self.branch_logits, dim=1), dim=-1)
                columns.append(log_probs.gather(2, discrete.long().unsqueeze(2)).squeeze(2))
            else:
                for index, logits in enumerate(self.branch_logits):
                    log_probs = functional.log_softmax(logits, dim=-1)
                    columns.append(log_probs.gather(1, discrete[:, index : index + 1].long()))
        assert columns, "a distribution without actions has no likelihood"
        return columns[0] if len(columns) == 1 else torch.cat(columns, dim=1)

    def entropy(self) -> torch.Tensor:
        """The entropy PPO's and POCA's bonus maximizes, ``(n,)``, on ML-Agents' scale.

        Follows ML-Agents' ``ActionModel.evaluate``: the continuous part counts once, as the
        *mean* over its dimensions of the per-dimension Gaussian entropy (``GaussianDistInstance
        .entropy``, before squashing), and every discrete branch adds its categorical entropy.
        The joint entropy (a sum over dimensions) would multiply ``beta``'s pull on the standard
        deviations by the number of continuous actions: 3 on Tennis, 39 on Walker.
        """
        total: torch.Tensor | None = None
        if self.mean is not None:
            assert self.log_std is not None
            log_std = self.log_std.expand_as(self.mean)
            total = (log_std + 0.5 + _LOG_SQRT_2PI).mean(dim=-1)
        for logits in self.branch_logits:
            log_probs = functional.log_softmax(logits, dim=-1)
            branch = -(log_probs.exp() * log_probs).sum(dim=-1)
            total = branch if total is None else total + branch
        assert total is not None
        return total

    # -- reparameterized sampling (SAC) -----------------------------------------------------

    def rsample_squashed(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized tanh-squashed sample and its log-likelihood ``(n,)``."""
        assert self.mean is not None and self.log_std is not None
        log_std = self.log_std.expand_as(self.mean)
        noise = torch.randn_like(self.mean)
        raw = self.mean + noise * torch.exp(log_std)
        log_prob = (-0.5 * noise.square() - log_std - _LOG_SQRT_2PI).sum(dim=-1)
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), numerically stable.
        correction = 2.0 * (math.log(2.0) - raw - functional.softplus(-2.0 * raw))
        return torch.tanh(raw), log_prob - correction.sum(dim=-1)

    def branch_log_probs(self) -> list[torch.Tensor]:
        """Per-branch log-probabilities ``(n, branch_size)`` (masked actions ~ -1e8)."""
        return [functional.log_softmax(logits, dim=-1) for logits in self.branch_logits]
