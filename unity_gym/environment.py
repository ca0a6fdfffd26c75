"""``UnityEnvironment``: drive a Unity ML-Agents game from Python (drop-in for ``mlagents_envs``).

Replace ``from mlagents_envs.environment import UnityEnvironment`` with
``from unity_gym.environment import UnityEnvironment``; constructor arguments and methods are the
same. Differences are all in robustness: the server binds ``127.0.0.1`` (``host=`` to change it),
a launched game gets a free port unless ``base_port`` is given, messages up to 256 MiB are
accepted, version suffixes like ``1.5.0-exp`` are tolerated, errors say what went wrong (exit
code and log tail of a crashed game, the port nobody connected to, ...), and a launched game never
outlives its environment.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from unity_gym.base_env import (
    ActionTuple,
    AgentId,
    BaseEnv,
    BehaviorMapping,
    BehaviorName,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)
from unity_gym.communicator import DEFAULT_MAX_MESSAGE_BYTES, Communicator
from unity_gym.decoding import (
    behavior_spec_from_proto,
    encode_reset_input,
    encode_step_input,
    steps_from_proto,
)
from unity_gym.exceptions import (
    UnityActionException,
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityException,
    UnityGameExitedException,
    UnityTimeOutException,
)
from unity_gym.launcher import (
    PlayerProcess,
    build_player_args,
    describe_returncode,
    find_executable,
)
from unity_gym.protocol.communicator_objects.capabilities_pb2 import UnityRLCapabilitiesProto
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto
from unity_gym.protocol.communicator_objects.unity_output_pb2 import UnityOutputProto
from unity_gym.protocol.communicator_objects.unity_rl_initialization_input_pb2 import (
    UnityRLInitializationInputProto,
)
from unity_gym.protocol.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
from unity_gym.side_channels.side_channel import SideChannel
from unity_gym.side_channels.side_channel_manager import SideChannelManager
from unity_gym.side_channels.training_analytics_side_channel import (
    TrainingAnalyticsSideChannel,
)
from unity_gym.timers import hierarchical_timer, timed

__all__ = [
    "AgentNotDecidingError",
    "UnityEnvironment",
    "is_compatible_api_version",
    "parse_version",
]

logger = logging.getLogger(__name__)

_FAILURE_EXIT_GRACE = 1.0
"""Seconds a game gets to exit by itself after a failed exchange, before it is terminated."""

_VERSION_PATTERN = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` from the numeric prefix of ``text``; None if it has none.

    Anything after the numbers is ignored: ``"1.5.0-exp"`` and ``"1.5.0.1"`` give ``(1, 5, 0)``.
    """
    match = _VERSION_PATTERN.match(text)
    if match is None:
        return None
    major, minor, patch = (int(part) if part else 0 for part in match.groups())
    return major, minor, patch


def is_compatible_api_version(unity_version: str, python_version: str) -> bool:
    """Whether two communication API versions can talk (spec §3.6).

    Major 0 versions must agree on major and minor; later ones only on the major version.
    An unparsable version is incompatible.
    """
    unity, python = parse_version(unity_version), parse_version(python_version)
    if unity is None or python is None:
        return False
    if unity[0] == 0:
        return unity[:2] == python[:2]
    return unity[0] == python[0]


class AgentNotDecidingError(UnityActionException, IndexError):
    """An action was set for an agent that is not in the behavior's last DecisionSteps.

    Also an :class:`IndexError`, the type ``mlagents_envs`` raises here.
    """


def _shutdown_session(
    communicator: Communicator, player: PlayerProcess | None, exit_timeout: float
) -> None:
    """Tell the game to quit, stop the server, then make sure the game's processes are gone."""
    try:
        communicator.close()
    finally:
        if player is not None:
            player.close(timeout=exit_timeout)


class UnityEnvironment(BaseEnv):
    """A Unity game (a built player or the Editor) driven over the ML-Agents protocol.

    Args:
        file_name: path of the built player; None waits for the Unity Editor (press Play).
        worker_id: offset added to ``base_port``; must be 0 with the Editor.
        base_port: first port; None means a free port for a launched player and 5004 for the
            Editor; 0 always means a free port. The port used is :attr:`port`.
        seed: random seed sent to the game.
        no_graphics: pass ``-nographics -batchmode`` to the player.
        no_graphics_monitor: like ``no_graphics`` for every worker except worker 0.
        timeout_wait: seconds to wait for each message of the game.
        additional_args: extra command-line arguments for the player.
        side_channels: side channels to serve; a training analytics channel is added unless
            one is given.
        log_folder: folder for the player's ``-logFile`` (``Player-<worker_id>.log``) and its
            captured stdout/stderr; a temporary folder (captured output only) when None.
        num_areas: number of training areas the game should replicate.
        host: interface the server binds (default: this machine only).
        max_message_bytes: largest message accepted from the game; a larger one is read, then
            refused with an error that names its size.
        shutdown_timeout: seconds :meth:`close` lets the game exit by itself before its
            processes are terminated.

    Raises:
        UnityEnvironmentException: bad arguments, a player that cannot be found or started or
            that exits, or an incompatible API version.
        UnityWorkerInUseException: the port is taken.
        UnityTimeOutException: the game did not connect within ``timeout_wait``.
    """

    API_VERSION = "1.5.0"
    """Communication API version spoken by this package."""
    PACKAGE_VERSION = "1.1.0"
    """``mlagents_envs`` release announced to the game (the one this package mirrors)."""
    DEFAULT_EDITOR_PORT = 5004
    BASE_ENVIRONMENT_PORT = 5005
    _PORT_COMMAND_LINE_ARG = "--mlagents-port"

    def __init__(
        self,
        file_name: str | Path | None = None,
        worker_id: int = 0,
        base_port: int | None = None,
        seed: int = 0,
        no_graphics: bool = False,
        no_graphics_monitor: bool = False,
        timeout_wait: float = 60,
        additional_args: Sequence[str] | None = None,
        side_channels: Sequence[SideChannel] | None = None,
        log_folder: str | Path | None = None,
        num_areas: int = 1,
        *,
        host: str = "127.0.0.1",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        shutdown_timeout: float = 10.0,
    ) -> None:
        self._loaded = False
        port = self._resolve_port(file_name, worker_id, base_port)
        _check_arguments(seed, num_areas, timeout_wait, additional_args)
        self._worker_id = worker_id
        self._timeout_wait = float(timeout_wait)
        self._specs: dict[BehaviorName, BehaviorSpec] = {}
        self._state: dict[BehaviorName, tuple[DecisionSteps, TerminalSteps]] = {}
        self._actions: dict[BehaviorName, ActionTuple] = {}
        self._owned_actions: set[BehaviorName] = set()
        self._needs_reset = True
        self.academy_capabilities: UnityRLCapabilitiesProto | None = None

        channels = list(side_channels or [])
        analytics: TrainingAnalyticsSideChannel | None = None
        if all(c.channel_id != TrainingAnalyticsSideChannel.CHANNEL_ID for c in channels):
            analytics = TrainingAnalyticsSideChannel()
            channels.append(analytics)
        self._side_channel_manager = SideChannelManager(channels)

        executable = find_executable(file_name) if file_name is not None else None
        self._communicator = Communicator(
            port,
            host=host,
            timeout_wait=self._timeout_wait,
            max_message_bytes=max_message_bytes,
            worker_id=worker_id,
            peer_label="the Unity Editor" if executable is None else f"the game {executable}",
            start=executable is None,  # a game is launched before gRPC threads run (fork)
        )
        self._process: PlayerProcess | None = None
        if executable is not None:
            log_dir = Path(log_folder).resolve() if log_folder is not None else None
            args = build_player_args(
                port=self._communicator.port,
                worker_id=worker_id,
                no_graphics=no_graphics or (no_graphics_monitor and worker_id != 0),
                log_folder=log_dir,
                additional_args=list(additional_args or []),
            )
            try:
                self._process = PlayerProcess.launch(
                    executable, args, output_dir=log_dir, worker_id=worker_id
                )
            except BaseException:
                self._communicator.close()
                raise
            self._communicator.peer_label = f"the game {executable} (pid {self._process.pid})"
            self._process.on_exit(_exit_reporter(self._communicator))
            self._communicator.start()
        else:
            logger.info(
                "Listening on port %d. Start training by pressing the Play button in the Unity "
                "Editor.",
                self._communicator.port,
            )
        self._finalizer = weakref.finalize(
            self, _shutdown_session, self._communicator, self._process, shutdown_timeout
        )
        self._loaded = True
        try:
            self._handshake(seed, num_areas)
        except BaseException:
            self._abort()
            raise
        if analytics is not None:
            analytics.environment_initialized()

    # ----------------------------------------------------------------------------------------
    # construction helpers
    # ----------------------------------------------------------------------------------------

    @classmethod
    def _resolve_port(
        cls, file_name: str | Path | None, worker_id: int, base_port: int | None
    ) -> int:
        if not isinstance(worker_id, int) or worker_id < 0:
            raise UnityEnvironmentException(
                f"worker_id must be a non-negative integer, got {worker_id!r}."
            )
        if file_name is None and worker_id != 0:
            raise UnityEnvironmentException(
                "If the environment name is None, the worker-id must be 0 in order to connect "
                f"with the Editor (got worker_id={worker_id})."
            )
        if base_port is None:
            return 0 if file_name is not None else cls.DEFAULT_EDITOR_PORT
        if not isinstance(base_port, int) or not 0 <= base_port <= 65535:
            raise UnityEnvironmentException(
                f"base_port must be an integer port in [0, 65535] (0 = any free port), got "
                f"{base_port!r}."
            )
        if base_port == 0:
            return 0
        port = base_port + worker_id
        if port > 65535:
            raise UnityEnvironmentException(
                f"base_port + worker_id = {port} is not a valid port (max 65535); lower base_port."
            )
        return port

    def _handshake(self, seed: int, num_areas: int) -> None:
        capabilities = UnityRLCapabilitiesProto(
            baseRLCapabilities=True,
            concatenatedPngObservations=True,
            compressedChannelMapping=True,
            hybridActions=True,
            trainingAnalytics=True,
            variableLengthObservation=True,
            multiAgentGroups=True,
        )
        inputs = UnityInputProto(
            rl_initialization_input=UnityRLInitializationInputProto(
                seed=seed,
                communication_version=self.API_VERSION,
                package_version=self.PACKAGE_VERSION,
                capabilities=capabilities,
                num_areas=num_areas,
            )
        )
        output = self._guarded(lambda: self._communicator.initialize(inputs))
        init = output.rl_initialization_output
        unity_version = init.communication_version
        if not is_compatible_api_version(unity_version, self.API_VERSION):
            raise UnityEnvironmentException(
                "The communication API version is not compatible between Unity and python. "
                f"Python API: {self.API_VERSION}, Unity API: {unity_version!r} (package "
                f"{init.package_version!r}). Use a Unity ML-Agents package speaking API "
                f"{self.API_VERSION.split('.')[0]}.x (com.unity.ml-agents 2.0 or later)."
            )
        logger.info(
            "Connected to Unity environment with package version %s and communication version %s",
            init.package_version,
            unity_version,
        )
        if not init.capabilities.baseRLCapabilities:
            logger.warning(
                "The Unity process does not advertise the base RL capabilities; upgrade the Unity "
                "package (Unity package %s, Python API %s).",
                init.package_version,
                self.API_VERSION,
            )
        self.academy_capabilities = init.capabilities
        self._update_behavior_specs(output)

    # ----------------------------------------------------------------------------------------
    # public API
    # ----------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on (and that was passed to the player)."""
        return self._communicator.port

    @property
    def process(self) -> PlayerProcess | None:
        """The launched player, or None when connected to the Editor."""
        return self._process

    @property
    def worker_id(self) -> int:
        """The ``worker_id`` given to the constructor."""
        return self._worker_id

    @property
    def behavior_specs(self) -> Mapping[BehaviorName, BehaviorSpec]:
        """Specs of every behavior seen so far (empty until the first :meth:`reset`)."""
        return BehaviorMapping(self._specs)

    @timed
    def reset(self) -> None:
        """Restart the simulation and collect the first decisions of every behavior.

        Raises:
            UnityEnvironmentException: if the environment is closed or the game exited.
            UnityCommunicatorStoppedException: if the game quit.
            UnityTimeOutException: if no agent reported within ``timeout_wait``.
        """
        self._require_loaded()
        side_channel = self._side_channel_manager.generate_side_channel_messages()
        self._send(encode_reset_input(side_channel))
        self._needs_reset = False

    @timed
    def step(self) -> None:
        """Send the actions set since the last step (zeros for agents without) and advance.

        The first call resets the environment if :meth:`reset` was never called.

        Raises:
            UnityEnvironmentException: if the environment is closed or the game exited.
            UnityCommunicatorStoppedException: if the game quit.
            UnityTimeOutException: if no agent reported within ``timeout_wait``.
        """
        if self._needs_reset:
            self.reset()
            return
        self._require_loaded()
        for name, spec in self._specs.items():
            if name not in self._actions:
                deciding = len(self._state[name][0]) if name in self._state else 0
                if deciding:
                    self._actions[name] = spec.action_spec.empty_action(deciding)
        side_channel = self._side_channel_manager.generate_side_channel_messages()
        self._send(encode_step_input(self._actions, side_channel))

    def get_steps(self, behavior_name: BehaviorName) -> tuple[DecisionSteps, TerminalSteps]:
        """The last decision and terminal batches of ``behavior_name``.

        Raises:
            UnityActionException: for an unknown behavior (the message lists the known ones).
        """
        spec = self._spec_of(behavior_name)
        state = self._state.get(behavior_name)
        if state is None:
            return DecisionSteps.empty(spec), TerminalSteps.empty(spec)
        return state

    def set_actions(self, behavior_name: BehaviorName, action: ActionTuple) -> None:
        """Set the actions of every agent in the last DecisionSteps of ``behavior_name``.

        Raises:
            UnityActionException: for an unknown behavior, or actions whose type, shape or values
                do not fit (the message says what was expected and what was given).
        """
        spec = self._spec_of(behavior_name)
        if behavior_name not in self._state:
            return
        deciding = len(self._state[behavior_name][0])
        self._actions[behavior_name] = spec.action_spec.validate_action(
            action, deciding, behavior_name
        )
        self._owned_actions.discard(behavior_name)

    def set_action_for_agent(
        self, behavior_name: BehaviorName, agent_id: AgentId, action: ActionTuple
    ) -> None:
        """Set the action of one agent (``action`` has one row); others keep theirs or zeros.

        Raises:
            UnityActionException: for an unknown behavior or an action that does not fit.
            AgentNotDecidingError: if the agent is not in the last DecisionSteps.
        """
        spec = self._spec_of(behavior_name)
        if behavior_name not in self._state:
            return
        action_spec = spec.action_spec
        action = action_spec.validate_action(action, 1, behavior_name)
        decision_steps = self._state[behavior_name][0]
        row = decision_steps.agent_id_to_index.get(int(agent_id))
        if row is None:
            raise AgentNotDecidingError(
                f"agent_id {agent_id} did not request a decision at the previous step of "
                f"behavior {behavior_name!r}; deciding agents: {decision_steps.agent_id.tolist()}."
            )
        current = self._actions.get(behavior_name)
        if current is None:
            current = action_spec.empty_action(len(decision_steps))
        elif behavior_name not in self._owned_actions:  # never write into the caller's arrays
            current = ActionTuple(current.continuous.copy(), current.discrete.copy())
        self._actions[behavior_name] = current
        self._owned_actions.add(behavior_name)
        current.continuous[row] = action.continuous[0]
        current.discrete[row] = action.discrete[0]

    def close(self) -> None:
        """Ask the game to quit, stop the server and make sure the game's processes are gone.

        Safe to call more than once.
        """
        self._loaded = False
        if hasattr(self, "_finalizer"):
            self._finalizer()

    def __enter__(self) -> UnityEnvironment:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # internals
    # ----------------------------------------------------------------------------------------

    def _require_loaded(self) -> None:
        if not self._loaded:
            raise UnityEnvironmentException(
                "No Unity environment is loaded: it was closed or its game stopped. Create a new "
                "UnityEnvironment."
            )

    def _spec_of(self, behavior_name: BehaviorName) -> BehaviorSpec:
        spec = self._specs.get(behavior_name)
        if spec is None:
            known = sorted(self._specs)
            hint = "" if known else " No behavior is known yet: call reset() first."
            raise UnityActionException(
                f"The group {behavior_name!r} does not correspond to an existing agent group in "
                f"the environment. Known behaviors: {known}.{hint}"
            )
        return spec

    def _send(self, rl_input: UnityRLInputProto) -> None:
        """Exchange ``rl_input`` for the game's next output and update specs and state."""
        inputs = UnityInputProto(rl_input=rl_input)
        with hierarchical_timer("communicator.exchange"):
            output = self._guarded(lambda: self._communicator.exchange(inputs))
        self._update_behavior_specs(output)
        self._update_state(output)
        self._actions.clear()
        self._owned_actions.clear()

    def _guarded(self, operation: Any) -> UnityOutputProto:
        """Run a communicator operation; on failure, close and raise with the game's story.

        An interrupted wait (Ctrl-C) also closes: the game's pending call cannot be resumed.
        """
        try:
            result: UnityOutputProto = operation()
            return result
        except KeyboardInterrupt:
            self._abort()
            raise
        except UnityException as error:
            enriched = self._explain(error)
            self._abort()
            if enriched is error:
                raise
            raise enriched from error

    def _abort(self) -> None:
        """Tear down after a failure: the game is presumed stuck, so it gets a short grace."""
        self._loaded = False
        if self._process is not None and self._process.is_stopped():
            # A frozen game reads no goodbye and cannot exit by itself: stop it first, so the
            # server does not wait out its grace for the game's undeliverable call.
            self._process.close()
        try:
            self._communicator.close()
        finally:
            if self._process is not None:
                self._process.close(timeout=_FAILURE_EXIT_GRACE)
            self._finalizer()

    def _explain(self, error: UnityException) -> UnityException:
        """Add what is known about the launched game to a communication error."""
        player = self._process
        if player is None:
            return error
        if isinstance(error, UnityCommunicatorStoppedException):
            code = player.wait(timeout=2.0)
            if code is not None and code != 0:
                return UnityCommunicatorStoppedException(f"{error}\n{player.describe_exit()}")
            return error
        if isinstance(error, UnityTimeOutException):
            return UnityTimeOutException(f"{error}\n{player.describe_exit()}")
        return error

    def _update_behavior_specs(self, output: UnityOutputProto) -> None:
        agent_infos = output.rl_output.agentInfos
        for parameters in output.rl_initialization_output.brain_parameters:
            name = parameters.brain_name
            if name in agent_infos and len(agent_infos[name].value) > 0:
                self._specs[name] = behavior_spec_from_proto(parameters, agent_infos[name].value[0])
                logger.info("Connected new brain: %s", name)
            else:
                logger.warning(
                    "The game sent the parameters of behavior %r without agent data; ignoring "
                    "them until it sends both together.",
                    name,
                )

    def _update_state(self, output: UnityOutputProto) -> None:
        rl_output = output.rl_output
        agent_infos = rl_output.agentInfos
        for name, spec in self._specs.items():
            if name in agent_infos:
                self._state[name] = steps_from_proto(agent_infos[name].value, spec, name)
            else:
                self._state[name] = (DecisionSteps.empty(spec), TerminalSteps.empty(spec))
        self._side_channel_manager.process_side_channel_message(rl_output.side_channel)


def _check_arguments(
    seed: int, num_areas: int, timeout_wait: float, additional_args: Sequence[str] | None
) -> None:
    if not isinstance(seed, int) or not -(2**31) <= seed < 2**31:
        raise UnityEnvironmentException(f"seed must be a 32-bit integer, got {seed!r}.")
    if not isinstance(num_areas, int) or num_areas < 1:
        raise UnityEnvironmentException(f"num_areas must be an integer >= 1, got {num_areas!r}.")
    if not timeout_wait > 0:
        raise UnityEnvironmentException(
            f"timeout_wait must be a positive number of seconds, got {timeout_wait!r}."
        )
    if isinstance(additional_args, str) or not all(
        isinstance(a, str) for a in additional_args or []
    ):
        raise UnityEnvironmentException(
            f"additional_args must be a list of strings, got {additional_args!r}."
        )


def _exit_reporter(communicator: Communicator) -> Any:
    """Callback for :meth:`PlayerProcess.on_exit` that fails the pending wait with the story."""

    def report(player: PlayerProcess) -> None:
        code = player.returncode
        status = describe_returncode(code) if code is not None else "an unknown status"
        communicator.notify_peer_exited(
            UnityGameExitedException(
                f"Environment shut down with {status}.\n{player.describe_exit()}"
            )
        )

    return report
