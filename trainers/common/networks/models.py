"""Policy, value and Q networks built from an observation layout and ``network_settings``.

Every network encodes its inputs the same way (:class:`ObservationEncoder`): vector entries are
(optionally) normalized by the trainer's shared :class:`ObservationNormalizer` and concatenated;
image entries go through the ``vis_encode_type`` encoder of :mod:`trainers.common.networks.encoders`
producing ``hidden_units`` features; variable-length entries (``kind == "entities"``, Unity's
``BufferSensor``) are embedded entity by entity and pooled by residual self-attention into
:data:`ATTENTION_EMBEDDING_SIZE` features (see :class:`ObservationEncoder`). The encoding
feeds an MLP of ``num_layers`` x ``hidden_units`` SiLU layers, then (with
``network_settings.memory``) an LSTM (:class:`~trainers.common.networks.lstm.LSTMMemory`),
then a head. Goal-signal entries
(``ObservationEntry.goal``) are features too and, with ``goal_conditioning_type: hyper``
(ML-Agents' default), also generate the weights of the last hidden layer (:class:`HyperLinear`).

Initialization follows ML-Agents: dense weights are He-normal for a linear unit (standard
deviation ``gain / sqrt(fan_in)``) with gain 1 in hidden layers, 0.1 for discrete logits and
0.2 for Gaussian heads; value and Q heads are Glorot-uniform; biases are zero; convolutions keep
PyTorch's default initialization. (With orthogonal initialization, PPO settled on Basic's small
goal in 2 of 6 seeds; with this one it found the large goal in every seed tried.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional

from trainers.common.networks.attention import EntityEmbedding, ResidualSelfAttention
from trainers.common.networks.distributions import ActionDistribution, mask_logits
from trainers.common.networks.encoders import visual_encoder
from trainers.common.networks.lstm import LSTMMemory
from trainers.common.networks.normalizer import ObservationNormalizer
from trainers.common.networks.precision import heads_in_float32
from trainers.common.optimization.flat_adam import FlatAdam
from trainers.common.optimization.parameter_buffer import ParameterBuffer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.settings import NetworkSettings

__all__ = [
    "ATTENTION_EMBEDDING_SIZE",
    "Body",
    "HyperLinear",
    "ObservationEncoder",
    "PolicyNetwork",
    "QNetwork",
    "StackedBodies",
    "ValueNetwork",
    "body_stacks",
    "build_memory",
    "build_normalizer",
    "make_adam",
    "share_policy_body",
]


ATTENTION_EMBEDDING_SIZE = 128
"""Width of the entity embeddings and of the attention over them (ML-Agents'
``ObservationEncoder.ATTENTION_EMBEDDING_SIZE``, fixed whatever ``hidden_units`` is)."""

ABSENT_ENTITY_NORM = 0.01
"""An entity row whose squared values sum to less than this is absent (padding), as in
ML-Agents' ``get_zero_entities_mask``."""


def build_normalizer(layout: ObservationLayout, normalize: bool) -> ObservationNormalizer:
    """The shared normalizer: one running statistic per vector entry when ``normalize``."""
    sizes: list[int | None] = [
        entry.network_shape[0] if normalize and entry.kind == "vector" else None
        for entry in layout.entries
    ]
    return ObservationNormalizer(sizes)


def build_memory(settings: NetworkSettings) -> LSTMMemory | None:
    """The LSTM after the body when ``settings.memory`` asks for one, else ``None``."""
    if settings.memory is None:
        return None
    return LSTMMemory(settings.hidden_units, settings.memory.memory_size)


def _head_input_size(settings: NetworkSettings) -> int:
    """Features the heads read: the LSTM's output with memory, else the body's output."""
    memory = settings.memory
    return memory.memory_size // 2 if memory is not None else settings.hidden_units


def _through_memory(
    memory: LSTMMemory, hidden: torch.Tensor, memories: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Body outputs of ``len(memories)`` sequences, rows in sequence order ``(S * L, H)``,
    through ``memory``: outputs ``(S * L, memory_size // 2)`` and the final memories."""
    sequences = hidden.reshape(len(memories), -1, hidden.shape[-1])
    outputs, final = memory(sequences, memories)
    return outputs.reshape(-1, outputs.shape[-1]), final


def _linear(in_size: int, out_size: int, gain: float) -> nn.Linear:
    """A dense layer, He-normal (linear unit) weights times ``gain``, zero bias."""
    layer = nn.Linear(in_size, out_size)
    nn.init.kaiming_normal_(layer.weight, nonlinearity="linear")
    with torch.no_grad():
        layer.weight.mul_(gain)
    nn.init.zeros_(layer.bias)
    return layer


def _value_head(in_size: int, out_size: int) -> nn.Linear:
    """A value or Q output layer: Glorot-uniform weights, zero bias."""
    layer = nn.Linear(in_size, out_size)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class ObservationEncoder(nn.Module):
    """Turns the list of network-format observation tensors into one feature vector.

    Variable-length entries follow ML-Agents' ``ObservationEncoder`` (``torch_entities/
    networks.py``, ``ModelUtils.create_input_processors`` and ``create_residual_self_attention``):
    the fixed features (vectors and image encodings, concatenated) are encoded once more into a
    :data:`ATTENTION_EMBEDDING_SIZE`-wide "self" (one dense layer with SiLU, T-Fixup
    initialization); each entity of each variable-length entry is concatenated after that self
    and embedded (:class:`EntityEmbedding`, :data:`ATTENTION_EMBEDDING_SIZE` wide; without fixed
    features the entity alone); the embeddings of all variable-length entries together go
    through one :class:`ResidualSelfAttention`, which ignores absent entities (rows whose
    squared values sum below :data:`ABSENT_ENTITY_NORM`) and averages over the present ones; its
    output is appended to the fixed features. Variable-length entries are not normalized.
    """

    def __init__(
        self,
        layout: ObservationLayout,
        settings: NetworkSettings,
        normalizer: ObservationNormalizer,
    ) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.visual_index: list[int] = []
        encoders: list[nn.Module] = []
        self.vector_index: list[int] = []
        #: Variable-length entries (pooled by the attention).
        self.entity_index: list[int] = []
        #: Goal-signal entries, also given to the body's hypernetwork (``hyper`` conditioning).
        self.goal_index: list[int] = []
        conditioned = settings.goal_conditioning_type == "hyper"
        size = 0
        for index, entry in enumerate(layout.entries):
            if conditioned and entry.goal:
                self.goal_index.append(index)
            if entry.kind == "image":
                self.visual_index.append(index)
                encoders.append(
                    visual_encoder(entry, settings.vis_encode_type, settings.hidden_units)
                )
                size += settings.hidden_units
            elif entry.kind == "entities":
                self.entity_index.append(index)
            else:
                self.vector_index.append(index)
                size += entry.network_shape[0]
        self.visual_encoders = nn.ModuleList(encoders)
        self.self_encoder: EntityEmbedding | None = None
        self.attention: ResidualSelfAttention | None = None
        embeddings: list[EntityEmbedding] = []
        if self.entity_index:
            width = ATTENTION_EMBEDDING_SIZE
            self_size = width if size else 0
            if size:
                self.self_encoder = EntityEmbedding(size, width)
            for index in self.entity_index:
                entity_size = layout.entries[index].network_shape[1]
                embeddings.append(EntityEmbedding(self_size + entity_size, width))
            self.attention = ResidualSelfAttention(width)
            size += width
        self.entity_embeddings = nn.ModuleList(embeddings)
        self.output_size = size
        self.goal_size = sum(layout.entries[i].network_shape[0] for i in self.goal_index)

    def forward(self, observations: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Encode a batch: features ``(n, output_size)`` (goal signals included) and the goal
        signals ``(n, goal_size)`` the body is conditioned on (``None`` without), both taken
        after normalization, as in ML-Agents."""
        normalized = self.normalizer(observations)
        parts = [normalized[i] for i in self.vector_index]
        for index, encoder in zip(self.visual_index, self.visual_encoders, strict=True):
            parts.append(encoder(normalized[index]))
        if self.attention is not None:
            parts.append(self._attend(parts, [normalized[i] for i in self.entity_index]))
        features = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
        if not self.goal_index:
            return features, None
        goals = [normalized[i] for i in self.goal_index]
        return features, goals[0] if len(goals) == 1 else torch.cat(goals, dim=1)

    def _attend(self, fixed: list[torch.Tensor], entries: list[torch.Tensor]) -> torch.Tensor:
        """The attention's pooled output ``(n, ATTENTION_EMBEDDING_SIZE)`` over every entity of
        the variable-length ``entries`` (each ``(n, max_entities, entity_size)``), each entity
        seen with the encoded fixed features."""
        assert self.attention is not None
        with torch.no_grad():
            absent = torch.cat(
                [(e.square().sum(dim=2) < ABSENT_ENTITY_NORM).to(e.dtype) for e in entries], dim=1
            )
        own = None
        if self.self_encoder is not None:
            own = self.self_encoder(fixed[0] if len(fixed) == 1 else torch.cat(fixed, dim=1))
        embedded = []
        for embedding, entities in zip(self.entity_embeddings, entries, strict=True):
            if own is not None:
                expanded = own.unsqueeze(1).expand(-1, entities.shape[1], -1)
                entities = torch.cat([expanded, entities], dim=2)
            embedded.append(embedding(entities))
        return self.attention(torch.cat(embedded, dim=1), absent)


def _layer_norm(x: torch.Tensor) -> torch.Tensor:
    """Layer normalization without learned scale and shift (written out so it exports to ONNX)."""
    centred = x - x.mean(dim=-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(dim=-1, keepdim=True) + 1e-5)


class HyperLinear(nn.Module):
    """A dense layer whose weights are computed from a goal signal by a small network.

    This is goal conditioning as ML-Agents' ``goal_conditioning_type: hyper`` describes it: the
    goal modulates the features multiplicatively instead of only being one more input feature,
    which is what lets a policy act differently for each goal of the same scene (GridWorld).
    The generating network has two SiLU layers of ``hidden`` units and a parameter-free layer
    norm; the generated weights start with standard deviation ``1 / sqrt(3 * in_size)``. The
    layer's bias is an ordinary parameter.
    """

    def __init__(self, in_size: int, out_size: int, goal_size: int, hidden: int) -> None:
        super().__init__()
        self.in_size, self.out_size = in_size, out_size
        self.hyper = nn.Sequential(
            _linear(goal_size, hidden, 1.0),
            nn.SiLU(),
            _linear(hidden, hidden, 1.0),
            nn.SiLU(),
        )
        self.weights = nn.Linear(hidden, in_size * out_size)
        bound = 1.0 / math.sqrt(hidden * in_size)
        nn.init.uniform_(self.weights.weight, -bound, bound)
        nn.init.zeros_(self.weights.bias)
        self.bias = nn.Parameter(torch.zeros(out_size))

    def forward(self, inputs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """``(n, out_size)``: each row's input times the weights its goal generated."""
        weight = self.weights(_layer_norm(self.hyper(goal)))
        weight = weight.reshape(-1, self.in_size, self.out_size)
        return torch.bmm(inputs.unsqueeze(1), weight).squeeze(1) + self.bias


class Body(nn.Module):
    """``num_layers`` x ``hidden_units`` SiLU layers; the last one is a :class:`HyperLinear`
    when the encoder has goal signals."""

    def __init__(self, in_size: int, settings: NetworkSettings, goal_size: int) -> None:
        super().__init__()
        hidden = settings.hidden_units
        plain = settings.num_layers - 1 if goal_size else settings.num_layers
        layers: list[nn.Module] = []
        size = in_size
        for _ in range(plain):
            layers += [_linear(size, hidden, 1.0), nn.SiLU()]
            size = hidden
        self.plain = nn.Sequential(*layers)
        self.conditional = HyperLinear(size, hidden, goal_size, hidden) if goal_size else None

    def forward(self, features: torch.Tensor, goal: torch.Tensor | None) -> torch.Tensor:
        """``(n, hidden_units)``."""
        hidden = self.plain(features)
        if self.conditional is not None:
            assert goal is not None, "a goal-conditioned body needs the goal signal"
            hidden = functional.silu(self.conditional(hidden, goal))
        return hidden


def body_stacks(bodies: Sequence[Body]) -> list[tuple[nn.Parameter, ...]]:
    """The parameter groups :class:`StackedBodies` runs on: for each layer, the weights of all
    ``bodies``, then their biases (pass them as ``stacks`` of a :class:`ParameterBuffer`).

    Raises:
        ValueError: no layers, a goal-conditioned body, or layers of different shapes.
    """
    if any(body.conditional is not None for body in bodies):
        raise ValueError("goal-conditioned bodies cannot be stacked")
    layers = [[m for m in body.plain if isinstance(m, nn.Linear)] for body in bodies]
    if not layers or not layers[0]:
        raise ValueError("there are no layers to stack")
    if len({tuple(layer.weight.shape for layer in linears) for linears in layers}) != 1:
        raise ValueError("stacked bodies need layers of the same shapes")
    stacks: list[tuple[nn.Parameter, ...]] = []
    for same_layer in zip(*layers, strict=True):
        stacks.append(tuple(layer.weight for layer in same_layer))
        stacks.append(tuple(layer.bias for layer in same_layer))
    return stacks


class StackedBodies:
    """Several plain :class:`Body` modules of one shape evaluated on the same features together:
    one batched matrix product per layer instead of one product per body and layer.

    Args:
        parameters: the :meth:`ParameterBuffer.stacked` leaves of :func:`body_stacks`' groups,
            in that order (per layer: weights ``(k, out, in)``, biases ``(k, out)``).
    """

    def __init__(self, parameters: Sequence[torch.Tensor]) -> None:
        self.weights = list(parameters[0::2])
        self.biases = list(parameters[1::2])

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        """``(k, n, hidden_units)``: the output of every body for ``features`` ``(n, in)``
        (views of the parameters are taken here, so that a parameter's ``requires_grad`` at
        call time decides whether gradients reach it)."""
        hidden = features.expand(len(self.weights[0]), -1, -1)
        for weight, bias in zip(self.weights, self.biases, strict=True):
            hidden = functional.silu(
                torch.baddbmm(bias.unsqueeze(1), hidden, weight.transpose(1, 2))
            )
        return hidden


class PolicyNetwork(nn.Module):
    """The actor: observations (and a discrete action mask) to an :class:`ActionDistribution`.

    Args:
        squash: SAC style (tanh-squashed actions, state-dependent standard deviation) when
            ``True``; PPO style (clipped actions, learned state-independent log std) otherwise.
    """

    def __init__(
        self,
        layout: ObservationLayout,
        action_layout: ActionLayout,
        settings: NetworkSettings,
        normalizer: ObservationNormalizer,
        *,
        squash: bool,
    ) -> None:
        super().__init__()
        self.action_layout = action_layout
        self.squash = squash
        self.encoder = ObservationEncoder(layout, settings, normalizer)
        self.body = Body(self.encoder.output_size, settings, self.encoder.goal_size)
        self.memory = build_memory(settings)
        hidden = _head_input_size(settings)
        size = action_layout.continuous_size
        self.mean_head = _linear(hidden, size, 0.2) if size else None
        self.log_std_head = _linear(hidden, size, 0.2) if size and squash else None
        self.log_std = nn.Parameter(torch.zeros(1, size)) if size and not squash else None
        self.branch_sizes = list(action_layout.discrete_branches)
        total = action_layout.discrete_size
        self.logits_head = _linear(hidden, total, 0.1) if total else None

    @property
    def memory_size(self) -> int:
        """Memory floats per agent (0 without memory)."""
        return 0 if self.memory is None else self.memory.memory_size

    def forward(
        self, observations: list[torch.Tensor], mask: torch.Tensor | None = None
    ) -> ActionDistribution:
        """The action distribution for a batch (``mask``: float, 1 = allowed; ``None`` = all).

        Raises:
            RuntimeError: the policy has memory (use :meth:`act` or :meth:`sequences`).
        """
        if self.memory is not None:
            raise RuntimeError("a recurrent policy acts with memories: use act() or sequences()")
        return self.distribution(self.body(*self.encoder(observations)), mask)

    def act(
        self,
        observations: list[torch.Tensor],
        mask: torch.Tensor | None,
        memories: torch.Tensor,
    ) -> tuple[ActionDistribution, torch.Tensor]:
        """One step of a recurrent policy: the distribution for each agent of the batch, given
        its memory ``(n, memory_size)``, and the memories after the step."""
        assert self.memory is not None, "act() is for recurrent policies"
        outputs, memories = self.memory.step(self.body(*self.encoder(observations)), memories)
        return self.distribution(outputs, mask), memories

    def sequences(
        self,
        observations: list[torch.Tensor],
        mask: torch.Tensor | None,
        memories: torch.Tensor,
    ) -> ActionDistribution:
        """The distributions of ``len(memories)`` sequences of equal length, their rows in
        sequence order (``memories``: each sequence's memory before its first step)."""
        return self.distribution(self.sequence_features(observations, memories), mask)

    def sequence_features(
        self, observations: list[torch.Tensor], memories: torch.Tensor
    ) -> torch.Tensor:
        """The heads' input for sequences as in :meth:`sequences`, ``(rows, memory_size // 2)``."""
        assert self.memory is not None, "sequence_features() is for recurrent policies"
        hidden, _ = _through_memory(self.memory, self.body(*self.encoder(observations)), memories)
        return hidden

    @heads_in_float32
    def distribution(
        self, hidden: torch.Tensor, mask: torch.Tensor | None = None
    ) -> ActionDistribution:
        """The action distribution given the heads' input ``hidden`` (the body's output, or
        the memory's with memory)."""
        mean = log_std = None
        if self.mean_head is not None:
            mean = self.mean_head(hidden)
            if self.log_std_head is not None:
                log_std = torch.clamp(self.log_std_head(hidden), -20.0, 2.0)
            else:
                log_std = self.log_std
        branch_logits: list[torch.Tensor] = []
        if self.logits_head is not None:
            logits = self.logits_head(hidden)
            if mask is not None:
                logits = mask_logits(logits, mask)
            branch_logits = list(torch.split(logits, self.branch_sizes, dim=1))
        return ActionDistribution(mean, log_std, branch_logits, self.squash)


class ValueNetwork(nn.Module):
    """State-value critic ``V(s)``: one value head per reward signal on a shared body.

    ``head`` values the extrinsic reward; ``signal_heads`` (``heads - 1`` of them, each
    Glorot-uniform like ``head``) value the other signals, in the trainer's signal order.
    With one head the values are ``(n,)``; with several, ``(n, heads)`` (extrinsic first).
    """

    def __init__(
        self,
        layout: ObservationLayout,
        settings: NetworkSettings,
        normalizer: ObservationNormalizer,
        heads: int = 1,
    ) -> None:
        super().__init__()
        self.encoder = ObservationEncoder(layout, settings, normalizer)
        self.body = Body(self.encoder.output_size, settings, self.encoder.goal_size)
        self.memory = build_memory(settings)
        size = _head_input_size(settings)
        self.head = _value_head(size, 1)
        self.signal_heads = nn.ModuleList([_value_head(size, 1) for _ in range(heads - 1)])

    def forward(self, observations: list[torch.Tensor]) -> torch.Tensor:
        """Values ``(n,)`` with one head, ``(n, heads)`` with several (no memory).

        Raises:
            RuntimeError: the critic has memory (use :meth:`sequences`, or :meth:`encode`,
                ``memory`` and :meth:`value`).
        """
        if self.memory is not None:
            raise RuntimeError("a recurrent critic needs memories: use sequences()")
        return self.value(self.encode(observations))

    def encode(self, observations: list[torch.Tensor]) -> torch.Tensor:
        """The body's output ``(n, hidden_units)`` (the memory's input, when there is one)."""
        return self.body(*self.encoder(observations))

    def sequences(self, observations: list[torch.Tensor], memories: torch.Tensor) -> torch.Tensor:
        """Values of ``len(memories)`` sequences of equal length, rows in sequence order
        (``memories``: each sequence's memory before its first step)."""
        assert self.memory is not None, "sequences() is for recurrent critics"
        hidden, _ = _through_memory(self.memory, self.encode(observations), memories)
        return self.value(hidden)

    @heads_in_float32
    def value(self, hidden: torch.Tensor) -> torch.Tensor:
        """Values given the heads' input ``hidden`` (the body's output, or the memory's with
        memory; shapes as :meth:`forward`)."""
        if not len(self.signal_heads):
            return self.head(hidden).squeeze(-1)
        return torch.cat([self.head(hidden), *(head(hidden) for head in self.signal_heads)], 1)


class QNetwork(nn.Module):
    """Action-value critic for SAC, one output stream per reward signal on a shared body.

    Continuous actions are inputs (``Q(s, a)``); with discrete actions every stream outputs one
    value per choice of every branch. Hybrid actions combine both, as ML-Agents' SAC Q networks
    do (continuous actions in, ``sum(branches)`` values out): ``Q(s, a_c)`` per discrete choice.
    ``head`` is the extrinsic stream; ``signal_heads`` (``streams - 1`` of them, Glorot-uniform
    like ``head``) are the other signals' streams, in the trainer's signal order (ML-Agents' SAC
    Q networks have one output per reward stream). Shapes with one stream: ``(n,)`` continuous
    only, ``(n, sum(branches))`` with discrete actions (discrete or hybrid); with several:
    ``(n, streams)`` and ``(n, streams, sum(branches))``.

    With ``network_settings.memory`` an LSTM follows the body (as in ML-Agents' SAC Q
    networks) and the network reads whole sequences (:meth:`sequences`).
    """

    def __init__(
        self,
        layout: ObservationLayout,
        action_layout: ActionLayout,
        settings: NetworkSettings,
        normalizer: ObservationNormalizer,
        streams: int = 1,
    ) -> None:
        super().__init__()
        #: Whether continuous actions are inputs.
        self.continuous = action_layout.has_continuous
        #: Whether the outputs are one value per discrete choice (else one value per stream).
        self.discrete = action_layout.has_discrete
        self.encoder = ObservationEncoder(layout, settings, normalizer)
        extra = action_layout.continuous_size if self.continuous else 0
        self.body = Body(self.encoder.output_size + extra, settings, self.encoder.goal_size)
        self.memory = build_memory(settings)
        outputs = action_layout.discrete_size if self.discrete else 1
        size = _head_input_size(settings)
        self.head = _value_head(size, outputs)
        self.signal_heads = nn.ModuleList([_value_head(size, outputs) for _ in range(streams - 1)])

    def forward(
        self, observations: list[torch.Tensor], actions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The Q values of every stream (shapes in the class docstring).

        Raises:
            RuntimeError: the network has memory (use :meth:`sequences`).
        """
        if self.memory is not None:
            raise RuntimeError("a recurrent Q network reads sequences: use sequences()")
        return self.values(self._encode(observations, actions))

    def sequences(
        self,
        observations: list[torch.Tensor],
        actions: torch.Tensor | None,
        memories: torch.Tensor,
    ) -> torch.Tensor:
        """The Q values of ``len(memories)`` sequences of equal length, rows in sequence order
        (``memories``: each sequence's memory before its first step; shapes as
        :meth:`forward`)."""
        assert self.memory is not None, "sequences() is for recurrent Q networks"
        hidden, _ = _through_memory(self.memory, self._encode(observations, actions), memories)
        return self.values(hidden)

    def _encode(
        self, observations: list[torch.Tensor], actions: torch.Tensor | None
    ) -> torch.Tensor:
        """The body's output ``(n, hidden_units)`` for the observations (and, continuous,
        the actions)."""
        features, goal = self.encoder(observations)
        if self.continuous:
            assert actions is not None
            features = torch.cat([features, actions], dim=1)
        return self.body(features, goal)

    @heads_in_float32
    def values(self, hidden: torch.Tensor) -> torch.Tensor:
        """Every stream's Q values given the heads' input ``hidden`` (the body's output, or
        the memory's with memory; shapes as :meth:`forward`)."""
        values = self.head(hidden)
        if len(self.signal_heads):
            values = torch.stack([values, *(head(hidden) for head in self.signal_heads)], dim=1)
        return values if self.discrete else values.squeeze(-1)


def make_adam(
    parameters: Sequence[torch.Tensor],
    learning_rate: float,
    eps: float = 1e-8,
    stacks: Sequence[Sequence[torch.Tensor]] = (),
) -> FlatAdam:
    """Adam over ``parameters`` moved into one :class:`ParameterBuffer` (see :class:`FlatAdam`).

    Build it after the networks are on their device; ``stacks`` are passed to the buffer.
    """
    return FlatAdam(ParameterBuffer(parameters, stacks), learning_rate, eps=eps)


def share_policy_body(critic: ValueNetwork, policy: PolicyNetwork) -> None:
    """Make ``critic`` value heads on ``policy``'s encoder and body (PPO's ``shared_critic``,
    ML-Agents' ``SharedActorCritic``); ``critic``'s own encoder, body and memory are dropped
    (with memory, the heads read the policy's LSTM).

    The shared modules stay the policy's alone: they are not submodules of ``critic``, so
    ``critic.parameters()`` and ``critic.state_dict()`` hold only its heads, and the shared body
    is optimized, checkpointed and exported once, with the policy.
    """
    del critic.encoder, critic.body, critic.memory
    object.__setattr__(critic, "encoder", policy.encoder)
    object.__setattr__(critic, "body", policy.body)
    object.__setattr__(critic, "memory", policy.memory)
