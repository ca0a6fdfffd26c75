"""Acting with an exported ONNX policy: the models ``unity-train`` exports, and ML-Agents' own.

The tensor names are ML-Agents' (model API 3; ``unity-train`` writes them in
:mod:`trainers.common.checkpoints.onnx_export`):

* inputs ``obs_0`` ... ``obs_{k-1}`` (float32; vectors ``(batch, size)``, cameras
  ``(batch, C, H, W)`` in ``[0, 1]``, variable-length sensors ``(batch, entities, size)``),
  ``action_masks`` ``(batch, sum(branches))`` for discrete actions (1 = allowed), and for a
  recurrent policy ``recurrent_in`` ``(batch, 1, memory_size)``;
* outputs ``continuous_actions`` (sampled) and ``deterministic_continuous_actions`` (the mean),
  ``discrete_actions`` and ``deterministic_discrete_actions`` (the most likely branch values),
  ``recurrent_out`` (the memories after the step) and constants (``version_number``,
  ``memory_size``, ``*_output_shape``).

:class:`OnnxPolicy` runs such a file with onnxruntime (the ``onnx`` extra:
``pip install 'unity-gym[onnx]'``) on batches of network inputs; the benchmarks use it too
(:mod:`benchmarks.policy_eval`). :class:`BehaviorModel` binds one to a behavior of the headless
player (``--model``): it checks that the model's inputs and outputs fit the behavior, turns the
agents' observations into the model's inputs, keeps each agent's memories (zeros at each
episode begin, as Unity's inference does) and acts as an
:class:`~unity_gym.player.academy.Decider`. :func:`assign_models` reads ``--model`` arguments.

Which sensor feeds ``obs_i``: ``unity-train`` numbers its inputs in the order of the Gymnasium
observation space it trained on (:class:`unity_gym.spaces.ObservationAdapter`: the sensors by
name, sorted), ML-Agents in the agent's sensor order; the two agree for every built-in scene.
The first order whose shapes fit the model's inputs is used. A camera input may also be
channels-last ``(H, W, C)`` and a vector input may take a sensor's values flattened.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .errors import PlayerError
from .specs import BehaviorSpec, SensorSpec

if TYPE_CHECKING:
    from .academy import AgentBatch

__all__ = [
    "BehaviorModel",
    "ModelError",
    "OnnxPolicy",
    "assign_models",
    "install_hint",
    "load_models",
    "trainer_input_order",
]

logger = logging.getLogger("unity_gym.player")

#: The pip command that installs onnxruntime.
INSTALL_ONNX = "pip install 'unity-gym[onnx]'"
_MASKS = "action_masks"
_MEMORY_IN = "recurrent_in"
_MEMORY_OUT = "recurrent_out"
_CONTINUOUS = "continuous_actions"
_DISCRETE = "discrete_actions"
_DETERMINISTIC = "deterministic_"

Conversion = Literal["same", "channels_last", "flatten"]


class ModelError(ValueError):
    """An ONNX model cannot be loaded or does not fit what it is asked to act for."""


def install_hint() -> str:
    """Why onnxruntime is needed and how to install it."""
    return f"playing an ONNX model needs onnxruntime: {INSTALL_ONNX}"


class OnnxPolicy:
    """An exported policy: runs an ONNX file with ML-Agents' tensor names on CPU.

    Args:
        path: the ``.onnx`` file.
        sampled: act on the sampled actions (``continuous_actions`` / ``discrete_actions``,
            what Unity's inference plays unless *Deterministic Inference* is set) instead of
            the deterministic ones (``deterministic_*``). A model without deterministic outputs
            (older ML-Agents exports) is always played sampled.

    Attributes:
        path: the file.
        observation_shapes: the shape of each ``obs_i`` input without the batch dimension
            (``None`` for a dimension the model leaves open).
        mask_size: entries of the ``action_masks`` input (0: the model takes none).
        memory_size: entries of each agent's memory (0: not recurrent).
        continuous_size: continuous actions the model outputs.
        discrete_size: discrete branches the model outputs.
        discrete_branches: the branch sizes from ``discrete_action_output_shape`` (empty when
            the model does not say).
        sampled: whether the sampled outputs are played.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ModelError: onnxruntime is missing, the file is not a model onnxruntime can load, or
            the model lacks ``obs_*`` inputs or action outputs.
    """

    def __init__(self, path: Path | str, sampled: bool = False) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(
                f"{self.path} does not exist; did the training run finish and export its model?"
            )
        try:
            import onnxruntime
        except ImportError:
            raise ModelError(install_hint()) from None
        try:
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            self._session = onnxruntime.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(
                f"{self.path} is not an ONNX model onnxruntime can run: {exc}"
            ) from None
        inputs = {node.name: node for node in self._session.get_inputs()}
        count = sum(1 for name in inputs if name.startswith("obs_"))
        if count == 0 or any(f"obs_{i}" not in inputs for i in range(count)):
            raise ModelError(
                f"{self.path} has inputs {sorted(inputs)}; a policy takes obs_0, obs_1, ... "
                "(ML-Agents' names, which unity-train exports)"
            )
        self._inputs = inputs
        self.observation_shapes: list[tuple[int | None, ...]] = [
            _static(inputs[f"obs_{i}"].shape[1:]) for i in range(count)
        ]
        self.mask_size = _last_dimension(inputs[_MASKS].shape) if _MASKS in inputs else 0
        self.memory_size = _last_dimension(inputs[_MEMORY_IN].shape) if _MEMORY_IN in inputs else 0
        outputs = {node.name: node for node in self._session.get_outputs()}
        deterministic = any(name.startswith(_DETERMINISTIC) for name in outputs)
        self.sampled = sampled or not deterministic
        prefix = "" if self.sampled else _DETERMINISTIC
        self._actions = [
            name for name in (prefix + _CONTINUOUS, prefix + _DISCRETE) if name in outputs
        ]
        if not self._actions:
            raise ModelError(
                f"{self.path} has outputs {sorted(outputs)}; a policy outputs "
                f"{prefix}{_CONTINUOUS} and/or {prefix}{_DISCRETE}"
            )
        self._outputs = list(self._actions)
        if self.memory_size:
            if _MEMORY_OUT not in outputs:
                raise ModelError(f"{self.path} takes {_MEMORY_IN} but has no {_MEMORY_OUT} output")
            self._outputs.append(_MEMORY_OUT)
        self.continuous_size = (
            _last_dimension(outputs[prefix + _CONTINUOUS].shape)
            if prefix + _CONTINUOUS in outputs
            else 0
        )
        self.discrete_size = (
            _last_dimension(outputs[prefix + _DISCRETE].shape)
            if prefix + _DISCRETE in outputs
            else 0
        )
        self.discrete_branches: tuple[int, ...] = ()
        if "discrete_action_output_shape" in outputs and self._all_static():
            found = self._session.run(["discrete_action_output_shape"], self._zeros(1))[0]
            self.discrete_branches = tuple(int(b) for b in np.asarray(found).reshape(-1))

    @property
    def observation_count(self) -> int:
        """The number of ``obs_i`` inputs."""
        return len(self.observation_shapes)

    def run(
        self,
        observations: Sequence[np.ndarray],
        action_masks: np.ndarray | None = None,
        memories: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """The model's actions for a batch of ``observations``.

        Args:
            observations: one ``(n, ...)`` array per ``obs_*`` input, in order.
            action_masks: ``(n, mask_size)``, 1 = allowed; None: every action allowed.
            memories: ``(n, memory_size)`` memories of a recurrent model; None: zeros.

        Returns:
            ``continuous_actions`` ``(n, c)`` float32 and/or ``discrete_actions`` ``(n, b)``
            int64 (sampled or deterministic, as the policy was made), and for a recurrent
            model ``memories`` ``(n, memory_size)``, to pass to the next call.

        Raises:
            ValueError: another number of observation arrays than the model's inputs.
        """
        if len(observations) != self.observation_count:
            raise ValueError(
                f"the model takes {self.observation_count} observation inputs, not "
                f"{len(observations)}; evaluate the model on the scene it was trained on."
            )
        rows = len(observations[0])
        feed: dict[str, np.ndarray] = {
            f"obs_{i}": np.asarray(obs, np.float32) for i, obs in enumerate(observations)
        }
        if self.mask_size:
            feed[_MASKS] = (
                np.ones((rows, self.mask_size), np.float32)
                if action_masks is None
                else np.asarray(action_masks, np.float32)
            )
        if self.memory_size:
            held = np.zeros((rows, self.memory_size), np.float32) if memories is None else memories
            feed[_MEMORY_IN] = np.asarray(held, np.float32).reshape(rows, 1, self.memory_size)
        found = self._session.run(self._outputs, feed)
        result = {
            name.removeprefix(_DETERMINISTIC): np.asarray(value)
            for name, value in zip(self._actions, found, strict=False)
        }
        if self.memory_size:
            result["memories"] = np.asarray(found[-1], np.float32).reshape(rows, self.memory_size)
        return result

    def _all_static(self) -> bool:
        return all(None not in shape for shape in self.observation_shapes)

    def _zeros(self, rows: int) -> dict[str, np.ndarray]:
        feed = {
            f"obs_{i}": np.zeros((rows, *(d or 1 for d in shape)), np.float32)
            for i, shape in enumerate(self.observation_shapes)
        }
        if self.mask_size:
            feed[_MASKS] = np.ones((rows, self.mask_size), np.float32)
        if self.memory_size:
            feed[_MEMORY_IN] = np.zeros((rows, 1, self.memory_size), np.float32)
        return feed


def _static(dimensions: Sequence[Any]) -> tuple[int | None, ...]:
    """ONNX dimensions with symbolic ones (names, None) as None."""
    return tuple(d if isinstance(d, int) and d > 0 else None for d in dimensions)


def _last_dimension(dimensions: Sequence[Any]) -> int:
    last = _static(dimensions[-1:])
    return int(last[0]) if last and last[0] is not None else 0


@dataclass(frozen=True)
class _Input:
    """How one model input is made: from which sensor (wire order), converted how."""

    sensor: int
    conversion: Conversion
    shape: tuple[int, ...]


def _fit(
    model: tuple[int | None, ...], sensor: SensorSpec
) -> tuple[Conversion, tuple[int, ...]] | None:
    """How a sensor's stacked observation becomes an input of shape ``model``, or None."""
    wire = sensor.wire_shape

    def matches(shape: tuple[int, ...]) -> bool:
        if len(shape) != len(model):
            return False
        return all(m is None or m == d for m, d in zip(model, shape, strict=True))

    if matches(wire):
        return "same", wire
    if len(wire) == 3 and matches((wire[1], wire[2], wire[0])):
        return "channels_last", (wire[1], wire[2], wire[0])
    size = int(np.prod(wire))
    if len(wire) != 3 and len(model) == 1 and model[0] in (None, size):
        return "flatten", (size,)
    return None


def _describe_model(policy: OnnxPolicy) -> str:
    return ", ".join(
        f"obs_{i} {tuple('?' if d is None else d for d in shape)}"
        for i, shape in enumerate(policy.observation_shapes)
    )


def _describe_sensors(spec: BehaviorSpec, order: Sequence[int]) -> str:
    sensors = [spec.sensors[i] for i in spec.wire_sensor_order()]
    return ", ".join(f"{sensors[i].wire_name} {sensors[i].wire_shape}" for i in order)


def trainer_input_order(spec: BehaviorSpec) -> list[int]:
    """The sensors (wire-order indices) of ``unity-train``'s inputs ``obs_0``, ``obs_1``, ...:
    the entries of the Gymnasium space it trains on (:class:`unity_gym.spaces.ObservationAdapter`
    with its defaults)."""
    from unity_gym.base_env import DimensionProperty, ObservationSpec, ObservationType
    from unity_gym.spaces import ObservationAdapter

    sensors = [spec.sensors[i] for i in spec.wire_sensor_order()]
    specs = [
        ObservationSpec(
            shape=sensor.wire_shape,
            dimension_property=tuple(
                DimensionProperty(p) for p in sensor.dimension_properties or ()
            ),
            observation_type=ObservationType(int(sensor.observation_type)),
            name=sensor.wire_name,
        )
        for sensor in sensors
    ]
    return [entry[0] for entry in ObservationAdapter(specs).entry_sensors]


class BehaviorModel:
    """An :class:`OnnxPolicy` acting for the agents of one behavior (an Academy
    :class:`~unity_gym.player.academy.Decider`).

    Args:
        policy: the loaded model.
        spec: the behavior it acts for.

    Raises:
        ModelError: the model's inputs or outputs do not fit the behavior; the message names
            what the model takes and what the behavior has.
    """

    def __init__(self, policy: OnnxPolicy, spec: BehaviorSpec) -> None:
        self.policy = policy
        self.spec = spec
        name = f"model {policy.path} does not fit behavior {spec.full_name}"
        wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
        orders = [trainer_input_order(spec), list(range(len(wire)))]
        plan: list[_Input] | None = None
        if policy.observation_count == len(wire):
            for order in orders:
                fits = [
                    _fit(shape, wire[s])
                    for shape, s in zip(policy.observation_shapes, order, strict=True)
                ]
                if all(fit is not None for fit in fits):
                    plan = [
                        _Input(s, fit[0], fit[1])
                        for s, fit in zip(order, fits, strict=True)
                        if fit is not None
                    ]
                    break
        if plan is None:
            raise ModelError(
                f"{name}: the model takes {_describe_model(policy)}; the behavior's observations "
                f"are {_describe_sensors(spec, orders[0])}. Play the model on the scene (and "
                "scene options) it was trained on."
            )
        self._plan = plan
        actions = spec.action_spec
        if policy.continuous_size != actions.continuous_size or (
            policy.discrete_size != actions.discrete_size
        ):
            raise ModelError(
                f"{name}: the model outputs {policy.continuous_size} continuous actions and "
                f"{policy.discrete_size} discrete branches; the behavior takes "
                f"{actions.continuous_size} and {actions.discrete_size} "
                f"{list(actions.discrete_branches)}"
            )
        if policy.discrete_branches and policy.discrete_branches != actions.discrete_branches:
            raise ModelError(
                f"{name}: the model's discrete branches are {list(policy.discrete_branches)}, "
                f"the behavior's {list(actions.discrete_branches)}"
            )
        if policy.mask_size not in (0, actions.mask_size):
            raise ModelError(
                f"{name}: the model's action_masks has {policy.mask_size} entries, the "
                f"behavior's branches add up to {actions.mask_size}"
            )
        self._memories: np.ndarray | None = None

    def inputs(self, observations: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The model's inputs for observations in wire order (stacked, ``(k, *wire_shape)``)."""
        result = []
        for item in self._plan:
            data = np.asarray(observations[item.sensor], np.float32)
            if item.conversion == "channels_last":
                data = np.transpose(data, (0, 2, 3, 1))
            elif item.conversion == "flatten":
                data = data.reshape(len(data), -1)
            result.append(np.ascontiguousarray(data))
        return result

    def decide(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        observations: Sequence[np.ndarray],
        action_masks: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The model's actions for the agents in ``slots`` (Unity's masks: true = disabled)."""
        allowed = None if action_masks is None else 1.0 - np.asarray(action_masks, np.float32)
        memories = None
        if self.policy.memory_size:
            if self._memories is None:
                self._memories = np.zeros((batch.size, self.policy.memory_size), np.float32)
            memories = self._memories[slots]
        found = self.policy.run(self.inputs(observations), allowed, memories)
        if self._memories is not None:
            self._memories[slots] = found["memories"]
        actions = self.spec.action_spec
        continuous = found.get("continuous_actions")
        discrete = found.get("discrete_actions")
        return (
            np.zeros((slots.size, 0), np.float32)
            if continuous is None
            else np.asarray(continuous, np.float32).reshape(slots.size, actions.continuous_size),
            np.zeros((slots.size, 0), np.int32)
            if discrete is None
            else np.asarray(discrete).astype(np.int32).reshape(slots.size, actions.discrete_size),
        )

    def episodes_ended(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Forget the memories of agents whose episode ended."""
        if self._memories is not None:
            self._memories[slots] = 0.0


def assign_models(arguments: Sequence[str], behaviors: Sequence[BehaviorSpec]) -> dict[str, Path]:
    """Which model each behavior plays, from ``--model`` arguments.

    An argument is ``PATH`` or ``BEHAVIOR=PATH``. ``BEHAVIOR`` is a full name (``Tennis?team=0``)
    or a plain name (``Tennis``: every team of it). A bare ``PATH`` plays the behaviors whose
    plain name is the file's stem (``unity-train`` exports ``<Behavior>.onnx``), or the scene's
    only behavior. Behaviors left without a model play the scene's heuristic.

    Returns:
        Full behavior name -> model file.

    Raises:
        PlayerError: on a behavior the scene does not have, a path that fits no behavior,
            several models for one behavior, or an empty argument.
    """
    full = [spec.full_name for spec in behaviors]
    plain = {spec.full_name: spec.name for spec in behaviors}
    listed = ", ".join(full)
    chosen: dict[str, Path] = {}
    for argument in arguments:
        targets: list[str] | None = None
        path_text = argument
        for name in sorted({*full, *plain.values()}, key=len, reverse=True):
            if argument.startswith(name + "="):
                targets = [b for b in full if name in (b, plain[b])]
                path_text = argument[len(name) + 1 :]
                break
        if targets is None and "=" in argument and not Path(argument).exists():
            named = argument.rsplit("=", 1)[0]
            if "/" not in named:
                raise PlayerError(
                    f"--model {argument!r}: the scene has no behavior {named!r} "
                    f"(behaviors: {listed})"
                )
        if not path_text:
            raise PlayerError(f"--model {argument!r}: no model file given")
        path = Path(path_text)
        if targets is None:
            targets = [b for b in full if plain[b] == path.stem]
            if not targets and len(full) == 1:
                targets = list(full)
            if not targets:
                raise PlayerError(
                    f"--model {argument!r}: the file's name matches no behavior of the scene "
                    f"and the scene has several; say which: --model BEHAVIOR={argument} "
                    f"(behaviors: {listed})"
                )
        for target in targets:
            if target in chosen:
                raise PlayerError(
                    f"--model: behavior {target} is given two models ({chosen[target]} and {path})"
                )
            chosen[target] = path
    return chosen


def load_models(
    assigned: Mapping[str, Path], behaviors: Sequence[BehaviorSpec], sampled: bool = False
) -> dict[str, BehaviorModel]:
    """Load and check the models of :func:`assign_models` (one session per file).

    Raises:
        PlayerError: a file is missing, onnxruntime is not installed, or a model does not fit
            its behavior.
    """
    specs = {spec.full_name: spec for spec in behaviors}
    loaded: dict[Path, OnnxPolicy] = {}
    result = {}
    for behavior, path in assigned.items():
        try:
            if path not in loaded:
                loaded[path] = OnnxPolicy(path, sampled)
            result[behavior] = BehaviorModel(loaded[path], specs[behavior])
        except FileNotFoundError:
            raise PlayerError(f"--model {path}: no such file") from None
        except ModelError as exc:
            raise PlayerError(str(exc)) from None
    return result
