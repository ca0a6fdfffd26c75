"""The parts PPO (and POCA) and SAC build their policy from, assembled one way for both.

:class:`PolicyTrainer` is their common base: :meth:`PolicyTrainer.assemble_policy` sets its
``normalizer``, ``policy``, ``signals``, ``intrinsic`` and ``acting`` from :func:`assemble_policy`,
and :meth:`PolicyTrainer.assemble_cloning` its ``cloning`` from :func:`assemble_cloning`.

:func:`assemble_policy` builds, in this order, the shared observation normalizer
(``network_settings.normalize``), the policy network, the reward signals (``extrinsic`` first)
and the :class:`~trainers.common.networks.acting.ActingPolicy` that acts with the policy;
:func:`assemble_cloning` builds behavioral cloning (``behavioral_cloning``) on that policy. The
order is the order in which torch's generator initialises the parameters, so a trainer that
builds its critics or Q networks between the two calls keeps its numbers for a fixed seed.
As in ML-Agents, the normalizer is shared by every network of the trainer (its
``network_settings.normalize``), the signals are those of ``reward_signals`` (ML-Agents'
``create_reward_provider``), and cloning trains the trainer's own policy (ML-Agents'
``BCModule`` on ``policy``).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainers.common.networks.acting import ActingPolicy
from trainers.common.networks.models import PolicyNetwork, build_normalizer
from trainers.common.networks.normalizer import ObservationNormalizer
from trainers.common.trainer import Trainer
from trainers.imitation import BehavioralCloning, build_behavioral_cloning
from trainers.reward_signals import RewardSignal, create_signals

__all__ = ["PolicyParts", "PolicyTrainer", "assemble_cloning", "assemble_policy"]


@dataclass
class PolicyParts:
    """What :func:`assemble_policy` built.

    Attributes:
        normalizer: the observation normalizer every network of the trainer shares.
        policy: the policy network (on the trainer's device).
        signals: the reward signals, extrinsic first (value head / Q stream ``j`` values
            signal ``j``).
        acting: the policy acting for every slot group, with each group's memory.
    """

    normalizer: ObservationNormalizer
    policy: PolicyNetwork
    signals: list[RewardSignal]
    acting: ActingPolicy

    @property
    def intrinsic(self) -> list[RewardSignal]:
        """The signals after the extrinsic one."""
        return self.signals[1:]


def assemble_policy(trainer: Trainer, *, squash: bool) -> PolicyParts:
    """The normalizer, policy, reward signals and acting policy of ``trainer`` (module docs).

    Args:
        trainer: the trainer being built (its context, settings, device and model lock).
        squash: squash continuous actions with tanh (SAC) instead of clipping them (PPO).

    Raises:
        ConfigError: a reward signal cannot be built (e.g. GAIL's demonstrations).
    """
    context = trainer.context
    net = trainer.settings.network_settings
    layout = context.observation_layout
    normalizer = build_normalizer(layout, net.normalize)
    policy = PolicyNetwork(layout, context.action_layout, net, normalizer, squash=squash).to(
        trainer.device
    )
    signals = create_signals(
        trainer.settings.reward_signals,
        layout,
        context.action_layout,
        trainer.device,
        behavior_name=trainer.behavior_name,
        path=f"behaviors.{trainer.behavior_name}.reward_signals",
    )
    acting = ActingPolicy(
        policy,
        layout,
        trainer.device,
        deterministic=net.deterministic,
        lock=trainer.model_lock,
    )
    return PolicyParts(normalizer, policy, signals, acting)


def assemble_cloning(
    trainer: Trainer, policy: PolicyNetwork, *, learning_rate: float, batch_size: int
) -> BehavioralCloning | None:
    """Behavioral cloning of ``trainer``'s ``policy`` (``None`` without ``behavioral_cloning``).

    Raises:
        ConfigError: the demonstrations cannot be read or do not fit the behavior.
        UnsupportedFeatureError: ``behavioral_cloning`` with ``network_settings.memory``.
    """
    context = trainer.context
    return build_behavioral_cloning(
        trainer.settings,
        policy,
        context.observation_layout,
        context.action_layout,
        behavior_name=trainer.behavior_name,
        learning_rate=learning_rate,
        batch_size=batch_size,
        device=trainer.device,
        rng=trainer.rng,
        lock=trainer.model_lock,
    )


class PolicyTrainer(Trainer):
    """A trainer whose policy, reward signals and cloning come from this module (PPO, SAC).

    Subclasses call :meth:`assemble_policy` and then, once the networks that are built between
    the two exist, :meth:`assemble_cloning` in their ``__init__`` (module docs: the order keeps
    the numbers of a fixed seed).
    """

    #: The observation normalizer every network of the trainer shares.
    normalizer: ObservationNormalizer
    #: The policy network.
    policy: PolicyNetwork
    #: The reward signals, extrinsic first (value head / Q stream ``j`` values signal ``j``).
    signals: list[RewardSignal]
    #: The signals after the extrinsic one.
    intrinsic: list[RewardSignal]
    #: The policy acting for every slot group, with each group's memory.
    acting: ActingPolicy
    #: Behavioral cloning after every update (``None`` without ``behavioral_cloning``).
    cloning: BehavioralCloning | None

    def assemble_policy(self, *, squash: bool) -> None:
        """Build and set the normalizer, policy, signals and acting policy
        (:func:`assemble_policy`)."""
        parts = assemble_policy(self, squash=squash)
        self.normalizer = parts.normalizer
        self.policy = parts.policy
        self.signals = parts.signals
        self.intrinsic = parts.intrinsic
        self.acting = parts.acting

    def assemble_cloning(self, *, learning_rate: float, batch_size: int) -> None:
        """Build and set behavioral cloning of the policy (:func:`assemble_cloning`)."""
        self.cloning = assemble_cloning(
            self, self.policy, learning_rate=learning_rate, batch_size=batch_size
        )
