"""Run code written for the official ``mlagents_envs`` package on unity_gym, unchanged.

Importing this module puts an import hook first on :data:`sys.meta_path`. From then on, in this
process, ``mlagents_envs`` and the submodules listed in :data:`ALIASED_MODULES` are served by
unity_gym, even where the official package is installed too::

    import unity_gym.mlagents_compat  # noqa: F401  (once, before the mlagents_envs imports)

    from mlagents_envs.environment import UnityEnvironment
    from mlagents_envs.side_channel.engine_configuration_channel import (
        EngineConfigurationChannel,
    )

    engine = EngineConfigurationChannel()
    env = UnityEnvironment(file_name="builds/3DBall", no_graphics=True, side_channels=[engine])
    env.reset()  # env is a unity_gym.environment.UnityEnvironment

Libraries that take an ``mlagents_envs`` environment work the same way, e.g. TorchRL's
``UnityMLAgentsWrapper(env)``. Import this module before such a library if the library checks
for ``mlagents_envs`` when it is imported (TorchRL's ``UnityMLAgentsEnv`` does).

Each ``mlagents_envs`` module is a thin module of its own (its ``__name__`` and ``__spec__`` are
the official module's name) whose attributes are unity_gym's objects: classes, functions and
enums are identical, so ``isinstance`` and ``except`` clauses work across both names, and state
such as the timer stacks lives in unity_gym's modules. Rebinding an attribute of an alias module
(e.g. ``mock.patch("mlagents_envs.environment.UnityEnvironment")``) does not change unity_gym's
module. Accessing a submodule as an attribute (``mlagents_envs.base_env``) imports it. Thin
modules, rather than unity_gym's module objects under a second name, because the layouts differ
(``side_channel.incoming_message`` and ``outgoing_message`` are one unity_gym module,
``exception`` is ``unity_gym.exceptions``), because each alias then exports exactly the official
names, and because unity_gym's modules keep their own names and attributes.

An alias module exports the names that the official module defines, plus the official package's
own names it imports (``mlagents_envs.environment.ActionTuple``, ``env_utils``, ...). Left out:
the ``logger`` objects, ``mlagents_envs.__release_tag__``, and what the official modules of
:data:`ALIASED_MODULES` import from the standard library, typing, protobuf and their RPC layer
(``RpcCommunicator``, ``steps_from_proto`` in ``environment``, ``STEP``, ...).
``mlagents_envs.__version__`` is ``"1.1.0"``, the official release whose API this mirrors.
Keyword names are the official ones (``OutgoingMessage.write_bool(b=...)``,
``write_int32(i=...)``, ``write_float32(f=...)``, ``write_float32_list(float_list=...)``,
``write_string(s=...)``, ``set_raw_bytes(buffer=...)``, ``GaugeNode.update(new_value=...)``);
``UnityWorkerInUseException.MESSAGE_TEMPLATE`` does not exist.

Every other ``mlagents_envs.<path>`` is served from ``unity_gym.compat.<path>`` when that mirror
module exists (:data:`COMPAT_PACKAGE`; the alias exports the mirror's ``__all__``):

* ``mlagents_envs.registry`` (``UnityEnvRegistry``, ``default_registry``; submodules
  ``unity_env_registry``, ``base_registry_entry``, ``remote_registry_entry``,
  ``binary_utils``): ``default_registry["3DBall"].make(**kwargs)`` opens unity_gym's built-in
  scene with no download; the other official examples are downloaded from the official manifest
  when the network allows (:mod:`unity_gym.compat.registry.unity_env_registry`);
* ``mlagents_envs.env_utils``, ``mlagents_envs.logging_util`` (``set_log_level`` also sets
  the level of unity_gym's own ``unity_gym`` and ``trainers`` loggers) and
  ``mlagents_envs.rpc_utils`` (built on :mod:`unity_gym.decoding`);
* ``mlagents_envs.communicator_objects.*_pb2``: unity_gym's generated protocol classes
  (:mod:`unity_gym.protocol`), not the gRPC stubs ``unity_to_external_pb2_grpc``;
* ``mlagents_envs.envs``: ``UnityToGymWrapper``, ``UnityParallelEnv``, ``UnityAECEnv`` and their
  base class on Gymnasium spaces and today's PettingZoo API (each module of
  :mod:`unity_gym.compat.envs` lists where and why it departs from the official wrapper), and one
  PettingZoo factory per registry entry (``from mlagents_envs.envs import Tennis``).

Not provided, as they are the official RPC layer, which unity_gym replaces with its own
(:mod:`unity_gym.communicator`): ``mlagents_envs.communicator``, ``rpc_communicator`` and
``mock_communicator`` (and the gRPC stubs ``communicator_objects.unity_to_external_pb2_grpc``);
importing one raises :class:`ModuleNotFoundError` saying what to use instead
(:data:`OFFICIAL_MODULES_NOT_PROVIDED`). A path that mlagents_envs 1.1.0 does not have, such as
``mlagents_envs.envs.unity_vec_env`` (in ML-Agents' repository after that release, and imported by
its ``tests/test_unity_vec_env.py``), raises :class:`ModuleNotFoundError` saying that 1.1.0 has
no such module.

One deliberate difference in behaviour: a ``UnityEnvironment`` that launches an executable with
``base_port=None`` listens on a port the operating system picks, where the official one uses
``5005 + worker_id``, so that parallel environments never collide; pass ``base_port=5005``
(and ``worker_id``) for the official port.

The official package and this one cannot share a process: importing this module after an
official ``mlagents_envs`` module raises :class:`ImportError`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import MappingProxyType, ModuleType
from typing import Final

__all__ = [
    "ALIASED_MODULES",
    "COMPAT_PACKAGE",
    "MLAGENTS_ENVS_VERSION",
    "OFFICIAL_MODULES_NOT_PROVIDED",
    "install",
]

MLAGENTS_ENVS_VERSION: Final = "1.1.0"
"""``mlagents_envs.__version__``: the official release whose API the aliases mirror."""

_ROOT: Final = "mlagents_envs"
COMPAT_PACKAGE: Final = "unity_gym.compat"
"""Where the official modules without a unity_gym counterpart live, in the official layout:
``mlagents_envs.<path>`` is served from ``unity_gym.compat.<path>`` (its ``__all__``) when that
module exists."""
_ORIGIN: Final = "unity_gym.mlagents_compat"
"""``__spec__.origin`` of every alias module; tells ours from the official package's modules."""

ALIASED_MODULES: Final = MappingProxyType(
    {
        "mlagents_envs": "unity_gym",
        "mlagents_envs.base_env": "unity_gym.base_env",
        "mlagents_envs.environment": "unity_gym.environment",
        "mlagents_envs.exception": "unity_gym.exceptions",
        "mlagents_envs.timers": "unity_gym.timers",
        "mlagents_envs.side_channel": "unity_gym.side_channels",
        "mlagents_envs.side_channel.default_training_analytics_side_channel": (
            "unity_gym.side_channels.training_analytics_side_channel"
        ),
        "mlagents_envs.side_channel.engine_configuration_channel": (
            "unity_gym.side_channels.engine_configuration_channel"
        ),
        "mlagents_envs.side_channel.environment_parameters_channel": (
            "unity_gym.side_channels.environment_parameters_channel"
        ),
        "mlagents_envs.side_channel.float_properties_channel": (
            "unity_gym.side_channels.float_properties_channel"
        ),
        "mlagents_envs.side_channel.incoming_message": "unity_gym.side_channels.messages",
        "mlagents_envs.side_channel.outgoing_message": "unity_gym.side_channels.messages",
        "mlagents_envs.side_channel.raw_bytes_channel": "unity_gym.side_channels.raw_bytes_channel",
        "mlagents_envs.side_channel.side_channel": "unity_gym.side_channels.side_channel",
        "mlagents_envs.side_channel.side_channel_manager": (
            "unity_gym.side_channels.side_channel_manager"
        ),
        "mlagents_envs.side_channel.stats_side_channel": (
            "unity_gym.side_channels.stats_side_channel"
        ),
    }
)
"""Each ``mlagents_envs`` module served by the hook, and the unity_gym module it stands for."""

_PACKAGES: Final = frozenset({"mlagents_envs", "mlagents_envs.side_channel"})

_BASE_ENV_NAMES: Final = (
    "ActionSpec",
    "ActionTuple",
    "AgentId",
    "BaseEnv",
    "BehaviorMapping",
    "BehaviorName",
    "BehaviorSpec",
    "DecisionStep",
    "DecisionSteps",
    "DimensionProperty",
    "GroupId",
    "ObservationSpec",
    "ObservationType",
    "TerminalStep",
    "TerminalSteps",
)
_EXCEPTION_NAMES: Final = (
    "UnityActionException",
    "UnityCommunicationException",
    "UnityCommunicatorStoppedException",
    "UnityEnvironmentException",
    "UnityException",
    "UnityObservationException",
    "UnityPolicyException",
    "UnitySideChannelException",
    "UnityTimeOutException",
    "UnityWorkerInUseException",
)
_MESSAGES: Final = ("IncomingMessage", "OutgoingMessage", "SideChannel")

_HOMES: Final[dict[str, str]] = {
    **dict.fromkeys(_BASE_ENV_NAMES, "unity_gym.base_env"),
    **dict.fromkeys(_EXCEPTION_NAMES, "unity_gym.exceptions"),
    "UnityEnvironment": "unity_gym.environment",
    "TIMER_FORMAT_VERSION": "unity_gym.timers",
    "FuncT": "unity_gym.timers",
    "merge_gauges": "unity_gym.timers",
    "env_utils": "unity_gym.compat.env_utils",
    "GaugeNode": "unity_gym.timers",
    "TimerNode": "unity_gym.timers",
    "TimerStack": "unity_gym.timers",
    "add_metadata": "unity_gym.timers",
    "get_timer_root": "unity_gym.timers",
    "get_timer_stack_for_thread": "unity_gym.timers",
    "get_timer_tree": "unity_gym.timers",
    "hierarchical_timer": "unity_gym.timers",
    "reset_timers": "unity_gym.timers",
    "set_gauge": "unity_gym.timers",
    "timed": "unity_gym.timers",
    "IncomingMessage": "unity_gym.side_channels.messages",
    "OutgoingMessage": "unity_gym.side_channels.messages",
    "SideChannel": "unity_gym.side_channels.side_channel",
    "SideChannelManager": "unity_gym.side_channels.side_channel_manager",
    "DefaultTrainingAnalyticsSideChannel": (
        "unity_gym.side_channels.training_analytics_side_channel"
    ),
    "EngineConfig": "unity_gym.side_channels.engine_configuration_channel",
    "EngineConfigurationChannel": "unity_gym.side_channels.engine_configuration_channel",
    "EnvironmentParametersChannel": "unity_gym.side_channels.environment_parameters_channel",
    "FloatPropertiesChannel": "unity_gym.side_channels.float_properties_channel",
    "RawBytesChannel": "unity_gym.side_channels.raw_bytes_channel",
    "EnvironmentStats": "unity_gym.side_channels.stats_side_channel",
    "StatList": "unity_gym.side_channels.stats_side_channel",
    "StatsAggregationMethod": "unity_gym.side_channels.stats_side_channel",
    "StatsSideChannel": "unity_gym.side_channels.stats_side_channel",
}
"""The unity_gym module that defines each exported name."""

_EXPORTS: Final[dict[str, tuple[str, ...]]] = {
    "mlagents_envs": (),
    "mlagents_envs.base_env": (*_BASE_ENV_NAMES, "UnityActionException"),
    "mlagents_envs.environment": (
        "UnityEnvironment",
        "ActionTuple",
        "AgentId",
        "BaseEnv",
        "BehaviorMapping",
        "BehaviorName",
        "BehaviorSpec",
        "DecisionSteps",
        "TerminalSteps",
        "DefaultTrainingAnalyticsSideChannel",
        "SideChannel",
        "SideChannelManager",
        "UnityActionException",
        "UnityCommunicatorStoppedException",
        "UnityEnvironmentException",
        "UnityTimeOutException",
        "env_utils",
        "hierarchical_timer",
        "timed",
    ),
    "mlagents_envs.exception": _EXCEPTION_NAMES,
    "mlagents_envs.timers": (
        "TIMER_FORMAT_VERSION",
        "FuncT",
        "GaugeNode",
        "TimerNode",
        "TimerStack",
        "add_metadata",
        "get_timer_root",
        "get_timer_stack_for_thread",
        "get_timer_tree",
        "hierarchical_timer",
        "merge_gauges",
        "reset_timers",
        "set_gauge",
        "timed",
    ),
    "mlagents_envs.side_channel": (*_MESSAGES, "DefaultTrainingAnalyticsSideChannel"),
    "mlagents_envs.side_channel.default_training_analytics_side_channel": (
        "DefaultTrainingAnalyticsSideChannel",
        *_MESSAGES,
        "UnityCommunicationException",
    ),
    "mlagents_envs.side_channel.engine_configuration_channel": (
        "EngineConfig",
        "EngineConfigurationChannel",
        *_MESSAGES,
        "UnityCommunicationException",
        "UnitySideChannelException",
    ),
    "mlagents_envs.side_channel.environment_parameters_channel": (
        "EnvironmentParametersChannel",
        *_MESSAGES,
        "UnityCommunicationException",
    ),
    "mlagents_envs.side_channel.float_properties_channel": ("FloatPropertiesChannel", *_MESSAGES),
    "mlagents_envs.side_channel.incoming_message": ("IncomingMessage",),
    "mlagents_envs.side_channel.outgoing_message": ("OutgoingMessage",),
    "mlagents_envs.side_channel.raw_bytes_channel": ("RawBytesChannel", *_MESSAGES),
    "mlagents_envs.side_channel.side_channel": _MESSAGES,
    "mlagents_envs.side_channel.side_channel_manager": (
        "SideChannelManager",
        "IncomingMessage",
        "SideChannel",
        "UnityEnvironmentException",
    ),
    "mlagents_envs.side_channel.stats_side_channel": (
        "EnvironmentStats",
        "StatList",
        "StatsAggregationMethod",
        "StatsSideChannel",
        "IncomingMessage",
        "SideChannel",
    ),
}
"""The names each alias module exports (its ``__all__``)."""

OFFICIAL_MODULES_NOT_PROVIDED: Final = frozenset(
    {
        "mlagents_envs.communicator",
        "mlagents_envs.communicator_objects.unity_to_external_pb2_grpc",
        "mlagents_envs.mock_communicator",
        "mlagents_envs.rpc_communicator",
    }
)
"""The modules of the official mlagents_envs 1.1.0 wheel that the hook refuses: its RPC layer,
which unity_gym replaces with :mod:`unity_gym.communicator`. Every other module of that wheel is
served; a path outside the wheel is refused as not being a 1.1.0 module."""

_NOT_PROVIDED_HINTS: Final = {
    "mlagents_envs.rpc_communicator": (
        "unity_gym's bridge has its own gRPC layer (unity_gym.communicator); open games with "
        "mlagents_envs.environment.UnityEnvironment."
    ),
    "mlagents_envs.communicator": (
        "unity_gym's bridge has its own gRPC layer (unity_gym.communicator); open games with "
        "mlagents_envs.environment.UnityEnvironment."
    ),
    "mlagents_envs.communicator_objects.unity_to_external_pb2_grpc": (
        "These are the official gRPC stubs; unity_gym's bridge makes its own gRPC server "
        "(unity_gym.communicator), and the message classes are served by the other "
        "mlagents_envs.communicator_objects modules."
    ),
    "mlagents_envs.mock_communicator": (
        "It is a test double of the official RPC layer; test against a real game instead, e.g. "
        "a built-in scene: mlagents_envs.registry.default_registry['3DBall'].make()."
    ),
}


def _not_provided_message(fullname: str) -> str:
    """Why ``fullname`` is refused: an official module left out, or no 1.1.0 module at all."""
    if fullname not in OFFICIAL_MODULES_NOT_PROVIDED:
        return (
            f"{fullname} is not a module of mlagents_envs {MLAGENTS_ENVS_VERSION}, the official "
            "release that unity_gym.mlagents_compat mirrors (it may come from another ml-agents "
            "version); check the module path, or use the unity_gym API directly (e.g. "
            "unity_gym.sb3 for Stable-Baselines3 vector environments)."
        )
    hint = next(
        (text for prefix, text in _NOT_PROVIDED_HINTS.items() if _within(fullname, prefix)),
        "Use the unity_gym API directly for it.",
    )
    return (
        f"{fullname} is part of the official ml-agents package and is not provided by "
        "unity_gym.mlagents_compat, which serves the modules of ALIASED_MODULES and those that "
        f"unity_gym.compat mirrors (see the unity_gym.mlagents_compat docstring). {hint}"
    )


def _resolve(export: str) -> object:
    """unity_gym's object for an exported name: an attribute of its home, or the home module
    itself when the name is the module's (``env_utils``)."""
    home = _HOMES[export]
    module = importlib.import_module(home)
    if home.rsplit(".", 1)[-1] == export:
        return module
    return getattr(module, export)


def _compat_name(fullname: str) -> str:
    """The :mod:`unity_gym.compat` module that mirrors official module ``fullname``."""
    return COMPAT_PACKAGE + fullname[len(_ROOT) :]


def _compat_spec(fullname: str) -> ModuleSpec | None:
    """The spec of the :mod:`unity_gym.compat` module mirroring ``fullname``, if there is one."""
    try:
        return importlib.util.find_spec(_compat_name(fullname))
    except ModuleNotFoundError:  # a parent package of the mirror does not exist
        return None


def _within(name: str, package: str) -> bool:
    """Whether ``name`` is ``package`` or one of its submodules."""
    return name == package or name.startswith(package + ".")


_MISSING: Final = object()


def _submodule_getter(package: str) -> Callable[[str], object]:
    """A package's ``__getattr__``: imports the alias submodule ``package.<attr>`` on access;
    for a :mod:`unity_gym.compat` mirror, other names come from the mirror's own
    ``__getattr__``."""

    def __getattr__(attr: str) -> object:  # noqa: N807 (the PEP 562 hook's name)
        child = f"{package}.{attr}"
        if child in ALIASED_MODULES or _compat_spec(child) is not None:
            return importlib.import_module(child)
        if package not in ALIASED_MODULES and not attr.startswith("__"):
            # a mirror's own lazy names (e.g. the registry's PettingZoo factories)
            value = getattr(importlib.import_module(_compat_name(package)), attr, _MISSING)
            if value is not _MISSING:
                return value
        raise AttributeError(f"module {package!r} has no attribute {attr!r}")

    return __getattr__


class _MlagentsEnvsImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the alias modules of :data:`ALIASED_MODULES` (module docs)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        """A spec for an alias module, ``None`` outside ``mlagents_envs``.

        Raises:
            ModuleNotFoundError: for an ``mlagents_envs`` submodule that is not aliased.
        """
        if fullname in ALIASED_MODULES:
            return importlib.util.spec_from_loader(
                fullname, self, origin=_ORIGIN, is_package=fullname in _PACKAGES
            )
        if _within(fullname, _ROOT):
            mirror = _compat_spec(fullname)
            if mirror is None:
                raise ModuleNotFoundError(_not_provided_message(fullname), name=fullname)
            return importlib.util.spec_from_loader(
                fullname,
                self,
                origin=_ORIGIN,
                is_package=mirror.submodule_search_locations is not None,
            )
        return None

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        """Use the default module creation."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Fill ``module`` with unity_gym's objects for the names it exports."""
        name = module.__name__
        namespace = vars(module)
        if name in ALIASED_MODULES:
            exports = _EXPORTS[name]
            for export in exports:
                namespace[export] = _resolve(export)
            home = ALIASED_MODULES[name]
        else:
            home = _compat_name(name)
            implementation = importlib.import_module(home)
            exports = tuple(implementation.__all__)
            for export in exports:
                namespace[export] = getattr(implementation, export)
        namespace["__all__"] = list(exports)
        namespace["__doc__"] = f"``{name}`` served by unity_gym.mlagents_compat from {home}."
        if name == _ROOT:
            namespace["__version__"] = MLAGENTS_ENVS_VERSION
        if module.__spec__ is not None and module.__spec__.submodule_search_locations is not None:
            namespace["__getattr__"] = _submodule_getter(name)


def _is_alias(module: object) -> bool:
    return getattr(getattr(module, "__spec__", None), "origin", None) == _ORIGIN


def _official_modules() -> list[str]:
    """Names of ``mlagents_envs`` modules in :data:`sys.modules` that are not our aliases."""
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if _within(name, _ROOT) and module is not None and not _is_alias(module)
    )


def _is_stale_importer(hook: object) -> bool:
    kind = type(hook)
    return kind.__module__ == __name__ and kind.__qualname__ == _MlagentsEnvsImporter.__qualname__


_IMPORTER: Final = _MlagentsEnvsImporter()


def install() -> None:
    """Put the import hook first on :data:`sys.meta_path`; a no-op once it is there.

    Importing this module calls it. Call it again only if something removed the hook.

    Raises:
        ImportError: if official ``mlagents_envs`` modules are already imported in this process.
    """
    official = _official_modules()
    if official:
        shown = ", ".join(official[:5]) + (", ..." if len(official) > 5 else "")
        raise ImportError(
            "unity_gym.mlagents_compat cannot serve mlagents_envs in this process: the official "
            f"package is already imported ({shown}), and both cannot be used in one process. "
            "Import unity_gym.mlagents_compat before anything that imports mlagents_envs, or "
            "run the official package in a separate process (or uninstall it)."
        )
    if _IMPORTER in sys.meta_path:
        return
    # A hook left by an earlier import of this module (importlib.reload) gives way to this one.
    sys.meta_path[:] = [hook for hook in sys.meta_path if not _is_stale_importer(hook)]
    sys.meta_path.insert(0, _IMPORTER)


install()
