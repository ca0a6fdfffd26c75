"""``import unity_gym.mlagents_compat`` serves ``mlagents_envs`` from unity_gym.

Every check runs in a fresh interpreter (``compat_processes``) so the aliases never enter this
process's ``sys.modules``. The official package, where a test needs it, is the reference peer's
(``benchmarks/peer_venv.py``) or a stand-in package written to a temporary folder.
"""

from __future__ import annotations

import ast
import subprocess
import textwrap
from pathlib import Path

import pytest
from compat_processes import run_python, run_python_json

pytestmark = pytest.mark.timeout(180)

# The official modules the hook must serve, with the unity_gym module that defines each name the
# official module defines (checked against the official sources in the peer test below).
OFFICIAL_NAMES: dict[str, dict[str, str]] = {
    "mlagents_envs": {},
    "mlagents_envs.base_env": dict.fromkeys(
        [
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
        ],
        "unity_gym.base_env",
    ),
    "mlagents_envs.environment": {
        "UnityEnvironment": "unity_gym.environment",
        "env_utils": "unity_gym.compat",
    },
    "mlagents_envs.exception": dict.fromkeys(
        [
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
        ],
        "unity_gym.exceptions",
    ),
    "mlagents_envs.timers": dict.fromkeys(
        [
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
        ],
        "unity_gym.timers",
    ),
    "mlagents_envs.side_channel": {
        "IncomingMessage": "unity_gym.side_channels",
        "OutgoingMessage": "unity_gym.side_channels",
        "SideChannel": "unity_gym.side_channels",
        "DefaultTrainingAnalyticsSideChannel": "unity_gym.side_channels",
    },
    "mlagents_envs.side_channel.side_channel": {
        "SideChannel": "unity_gym.side_channels.side_channel"
    },
    "mlagents_envs.side_channel.engine_configuration_channel": dict.fromkeys(
        ["EngineConfig", "EngineConfigurationChannel"],
        "unity_gym.side_channels.engine_configuration_channel",
    ),
    "mlagents_envs.side_channel.environment_parameters_channel": {
        "EnvironmentParametersChannel": "unity_gym.side_channels.environment_parameters_channel"
    },
    "mlagents_envs.side_channel.float_properties_channel": {
        "FloatPropertiesChannel": "unity_gym.side_channels.float_properties_channel"
    },
    "mlagents_envs.side_channel.stats_side_channel": dict.fromkeys(
        ["EnvironmentStats", "StatList", "StatsAggregationMethod", "StatsSideChannel"],
        "unity_gym.side_channels.stats_side_channel",
    ),
    "mlagents_envs.side_channel.raw_bytes_channel": {
        "RawBytesChannel": "unity_gym.side_channels.raw_bytes_channel"
    },
    "mlagents_envs.side_channel.incoming_message": {
        "IncomingMessage": "unity_gym.side_channels.messages"
    },
    "mlagents_envs.side_channel.outgoing_message": {
        "OutgoingMessage": "unity_gym.side_channels.messages"
    },
    "mlagents_envs.side_channel.side_channel_manager": {
        "SideChannelManager": "unity_gym.side_channels.side_channel_manager"
    },
    "mlagents_envs.side_channel.default_training_analytics_side_channel": {
        "DefaultTrainingAnalyticsSideChannel": (
            "unity_gym.side_channels.training_analytics_side_channel"
        )
    },
}
# Official names the compat module documents as left out (the modules' logger objects).
DOCUMENTED_OMISSIONS = {"logger"}
STANDIN_SOURCE = '__version__ = "0.0-standin"\n'


def test_find_spec_sees_the_aliases_only_after_the_import() -> None:
    facts = run_python_json(
        textwrap.dedent(
            """
            import importlib.util, json
            before = importlib.util.find_spec("mlagents_envs")
            import unity_gym.mlagents_compat
            root = importlib.util.find_spec("mlagents_envs")
            leaf = importlib.util.find_spec("mlagents_envs.side_channel.raw_bytes_channel")
            print(json.dumps({
                "before": None if before is None else before.origin,
                "root": [root.name, root.origin, root.submodule_search_locations],
                "leaf": [leaf.name, leaf.origin, leaf.submodule_search_locations],
                "missing": importlib.util.find_spec("some_other_package_xyz") is None,
            }))
            """
        )
    )
    assert facts["before"] is None  # the official package is not installed in this venv
    assert facts["root"] == ["mlagents_envs", "unity_gym.mlagents_compat", []]
    assert facts["leaf"] == [
        "mlagents_envs.side_channel.raw_bytes_channel",
        "unity_gym.mlagents_compat",
        None,
    ]
    assert facts["missing"] is True  # names outside mlagents_envs are left to the other finders


def test_every_official_module_path_serves_unity_gym_objects() -> None:
    facts = run_python_json(
        textwrap.dedent(
            f"""
            import importlib, json, sys
            import unity_gym.mlagents_compat as compat
            expected = {OFFICIAL_NAMES!r}
            report = {{"modules": {{}}, "not_ours": [], "all_not_ours": []}}
            for name, homes in expected.items():
                module = importlib.import_module(name)
                report["modules"][name] = [module.__name__, module.__spec__.name,
                                           sys.modules[name] is module, sorted(module.__all__)]
                for attr, home in homes.items():
                    if getattr(module, attr) is not getattr(importlib.import_module(home), attr):
                        report["not_ours"].append(f"{{name}}.{{attr}}")
                for attr in module.__all__:
                    value = getattr(module, attr)
                    if getattr(value, "__module__", "unity_gym").split(".")[0] not in (
                        "unity_gym", "builtins", "typing"
                    ):
                        report["all_not_ours"].append(f"{{name}}.{{attr}}")
            import mlagents_envs
            report["version"] = mlagents_envs.__version__
            report["aliased"] = sorted(compat.ALIASED_MODULES)
            report["lazy"] = mlagents_envs.side_channel.stats_side_channel.__name__
            print(json.dumps(report))
            """
        )
    )
    assert sorted(facts["modules"]) == sorted(OFFICIAL_NAMES) == facts["aliased"]
    for name, (module_name, spec_name, registered, exported) in facts["modules"].items():
        assert module_name == spec_name == name
        assert registered
        assert set(OFFICIAL_NAMES[name]) <= set(exported), name
    assert facts["not_ours"] == []
    assert facts["all_not_ours"] == []
    assert facts["version"] == "1.1.0"
    assert facts["lazy"] == "mlagents_envs.side_channel.stats_side_channel"


def test_module_not_provided_is_refused_with_what_to_use_instead() -> None:
    facts = run_python_json(
        textwrap.dedent(
            """
            import importlib, json
            import unity_gym.mlagents_compat
            import mlagents_envs
            errors = {}
            for name in ["mlagents_envs.rpc_communicator", "mlagents_envs.mock_communicator"]:
                try:
                    importlib.import_module(name)
                except ModuleNotFoundError as exc:
                    errors[name] = [exc.name, str(exc)]
            try:
                mlagents_envs.rpc_communicator
            except AttributeError as exc:
                errors["attribute"] = str(exc)
            print(json.dumps(errors))
            """
        )
    )
    rpc_name, rpc_text = facts["mlagents_envs.rpc_communicator"]
    assert rpc_name == "mlagents_envs.rpc_communicator"
    assert "not provided by unity_gym.mlagents_compat" in rpc_text
    assert "unity_gym.communicator" in rpc_text
    mock_name, mock_text = facts["mlagents_envs.mock_communicator"]
    assert mock_name == "mlagents_envs.mock_communicator"
    assert "default_registry['3DBall'].make()" in mock_text
    assert facts["attribute"] == "module 'mlagents_envs' has no attribute 'rpc_communicator'"


def test_importing_twice_or_reloading_keeps_one_hook_first() -> None:
    facts = run_python_json(
        textwrap.dedent(
            """
            import importlib, json, sys
            import unity_gym.mlagents_compat as compat
            from mlagents_envs.environment import UnityEnvironment as first
            import unity_gym.mlagents_compat
            compat.install()
            compat = importlib.reload(compat)
            compat.install()
            from mlagents_envs.environment import UnityEnvironment as second
            import unity_gym.environment
            hooks = [type(h).__module__ for h in sys.meta_path].count(compat.__name__)
            print(json.dumps({
                "hooks": hooks,
                "first": type(sys.meta_path[0]).__module__,
                "same": first is second is unity_gym.environment.UnityEnvironment,
            }))
            """
        )
    )
    assert facts == {"hooks": 1, "first": "unity_gym.mlagents_compat", "same": True}


def _standin_package(folder: Path) -> Path:
    """A third-party ``mlagents_envs`` package (not ours) to stand for the official one."""
    package = folder / "mlagents_envs"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(STANDIN_SOURCE)
    (package / "exception.py").write_text("class UnityException(Exception):\n    pass\n")
    return folder


@pytest.fixture(params=["stand-in", "official"])
def installed_package(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A folder that holds an importable non-unity_gym ``mlagents_envs`` package."""
    if request.param == "stand-in":
        return _standin_package(tmp_path)
    peer_python: Path = request.getfixturevalue("peer_python")
    located = subprocess.run(
        [str(peer_python), "-c", "import mlagents_envs; print(mlagents_envs.__path__[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    # Only the package itself: the peer's other site-packages (old numpy, ...) stay out.
    (tmp_path / "mlagents_envs").symlink_to(Path(located.stdout.strip()), target_is_directory=True)
    return tmp_path


def test_official_package_imported_first_is_a_clear_import_error(installed_package: Path) -> None:
    proc = run_python(
        textwrap.dedent(
            """
            import sys
            import mlagents_envs, mlagents_envs.exception
            try:
                import unity_gym.mlagents_compat
            except ImportError as exc:
                assert "unity_gym.mlagents_compat" not in sys.modules
                assert mlagents_envs.__spec__.origin != "unity_gym.mlagents_compat"
                print(exc)
                sys.exit(3)
            """
        ),
        python_path=[installed_package],
    )
    assert proc.returncode == 3, proc.stderr
    message = proc.stdout
    assert "both cannot be used in one process" in message
    assert "mlagents_envs, mlagents_envs.exception" in message
    assert "Import unity_gym.mlagents_compat before anything that imports mlagents_envs" in message


def test_installed_but_not_imported_official_package_loses_to_the_hook(
    installed_package: Path,
) -> None:
    facts = run_python_json(
        textwrap.dedent(
            """
            import importlib.util, json
            before = importlib.util.find_spec("mlagents_envs").origin
            import unity_gym.mlagents_compat
            import mlagents_envs.exception
            from mlagents_envs.environment import UnityEnvironment
            print(json.dumps({
                "before": before,
                "after": importlib.util.find_spec("mlagents_envs").origin,
                "exception": mlagents_envs.exception.UnityException.__module__,
                "env": UnityEnvironment.__module__,
                "version": mlagents_envs.__version__,
            }))
            """
        ),
        python_path=[installed_package],
    )
    assert facts["before"].startswith(str(installed_package))
    assert facts["after"] == "unity_gym.mlagents_compat"
    assert facts["exception"] == "unity_gym.exceptions"
    assert facts["env"] == "unity_gym.environment"
    assert facts["version"] == "1.1.0"


_INTERNAL = ("communicator_objects", "rpc_communicator", "rpc_utils", "logging_util")


def _official_public_names(source: Path, internal: tuple[str, ...] = _INTERNAL) -> list[str]:
    """Public names an official module defines or imports from the official package (those of
    the ``internal`` modules aside: by default its RPC and logging layers), read from its
    source."""
    names: set[str] = set()
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.startswith("mlagents_envs") and not any(p in module for p in internal):
                names.update(alias.asname or alias.name for alias in node.names)
    return sorted(n for n in names if not n.startswith("_"))


@pytest.mark.peer
def test_aliases_export_exactly_the_official_names(peer_python: Path) -> None:
    """Every public name an official module defines (or imports from the official package) is
    exported by its alias, except the documented omissions; the alias adds none."""
    located = subprocess.run(
        [str(peer_python), "-c", "import mlagents_envs; print(mlagents_envs.__path__[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    root = Path(located.stdout.strip()).parent
    official: dict[str, list[str]] = {}
    for name in OFFICIAL_NAMES:
        path = root / name.replace(".", "/")
        official[name] = _official_public_names(
            path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        )
    exported = run_python_json(
        "import importlib, json\nimport unity_gym.mlagents_compat\n"
        f"modules = {list(official)!r}\n"
        "print(json.dumps({n: sorted(importlib.import_module(n).__all__) for n in modules}))"
    )
    for name, names in official.items():
        assert exported[name] == sorted(set(names) - DOCUMENTED_OMISSIONS), name
        assert set(OFFICIAL_NAMES[name]) <= set(names), name
    left_out = {n for names in official.values() for n in names} - {
        n for names in exported.values() for n in names
    }
    assert left_out == DOCUMENTED_OMISSIONS


MLAGENTS_ENVS_SCRIPT = """
import json
import sys

import unity_gym.mlagents_compat  # the one added line; the rest is an mlagents_envs script

import numpy as np
import mlagents_envs.environment
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityActionException
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)

engine = EngineConfigurationChannel()
params = EnvironmentParametersChannel()
env = UnityEnvironment(
    file_name=sys.argv[1], no_graphics=True, timeout_wait=60, side_channels=[engine, params]
)
engine.set_configuration_parameters(time_scale=20.0)
params.set_float_parameter("scale", 1.0)
env.reset()
behavior_name = list(env.behavior_specs)[0]
spec = env.behavior_specs[behavior_name]
decision_steps, terminal_steps = env.get_steps(behavior_name)
agents = len(decision_steps)
try:
    env.set_actions(behavior_name, ActionTuple(continuous=np.zeros((agents, 99))))
    bad_action = "accepted"
except UnityActionException as exc:
    bad_action = type(exc).__module__
rewards, episodes_ended, steps_with_agents = [], 0, 0
for _ in range(60):
    decision_steps, terminal_steps = env.get_steps(behavior_name)
    env.set_actions(behavior_name, spec.action_spec.random_action(len(decision_steps)))
    env.step()
    decision_steps, terminal_steps = env.get_steps(behavior_name)
    rewards.extend(decision_steps.reward.tolist() + terminal_steps.reward.tolist())
    episodes_ended += len(terminal_steps)
    steps_with_agents += len(decision_steps) + len(terminal_steps) > 0
result = {
    "is_mlagents_env": isinstance(env, mlagents_envs.environment.UnityEnvironment),
    "class": f"{type(env).__module__}.{type(env).__qualname__}",
    "behavior": behavior_name,
    "agents": agents,
    "continuous": spec.action_spec.continuous_size,
    "obs_shapes": [list(o.shape) for o in spec.observation_specs],
    "bad_action": bad_action,
    "steps_with_agents": steps_with_agents,
    "max_reward": max(rewards),
    "episodes_ended": episodes_ended,
}
process = env.process
env.close()
result["exit_code"] = process.returncode
print(json.dumps(result))
"""


def test_unchanged_mlagents_envs_script_drives_the_3dball_player(
    scene_builds: dict[str, Path],
) -> None:
    code = f"import sys\nsys.argv[1:] = [{str(scene_builds['3DBall'])!r}]\n{MLAGENTS_ENVS_SCRIPT}"
    facts = run_python_json(code)
    assert facts["is_mlagents_env"] is True
    assert facts["class"] == "unity_gym.environment.UnityEnvironment"
    assert facts["behavior"] == "3DBall?team=0"
    assert facts["agents"] == 12
    assert facts["continuous"] == 2
    assert facts["obs_shapes"] == [[8]]
    assert facts["bad_action"] == "unity_gym.exceptions"  # caught by the mlagents_envs name
    assert facts["steps_with_agents"] == 60  # each step ends when some agent reports
    assert facts["max_reward"] == pytest.approx(0.1)  # 3DBall's reward for a ball kept up
    assert facts["episodes_ended"] >= 1  # random actions drop balls within 60 steps
    assert facts["exit_code"] == 0


def test_every_module_of_the_official_wheel_is_served_or_refused_as_official(
    peer_python: Path,
) -> None:
    """Each module file of the official mlagents_envs 1.1.0 wheel (the reference peer's) imports
    through the hook, except ``OFFICIAL_MODULES_NOT_PROVIDED`` (the official RPC layer), which
    is refused as an official module; a path the wheel does not have, such as
    ``mlagents_envs.envs.unity_vec_env`` that ML-Agents' repository added after 1.1.0 (its
    ``tests/test_unity_vec_env.py`` imports it), is refused as not being a 1.1.0 module."""
    located = subprocess.run(
        [str(peer_python), "-c", "import mlagents_envs; print(mlagents_envs.__path__[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    package = Path(located.stdout.strip())
    official = sorted(
        ".".join(("mlagents_envs", *path.relative_to(package).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in package.rglob("*.py")
    )
    assert "mlagents_envs.envs.unity_vec_env" not in official
    facts = run_python_json(
        textwrap.dedent(
            f"""
            import importlib, json
            import unity_gym.mlagents_compat as compat
            report = {{"served": [], "refused": {{}}, "not_provided": sorted(
                compat.OFFICIAL_MODULES_NOT_PROVIDED)}}
            for name in {[*official, "mlagents_envs.envs.unity_vec_env"]!r}:
                try:
                    module = importlib.import_module(name)
                    assert module.__spec__.origin == "unity_gym.mlagents_compat", name
                    report["served"].append(name)
                except ModuleNotFoundError as exc:
                    report["refused"][name] = [exc.name, str(exc)]
            print(json.dumps(report))
            """
        )
    )
    refused = facts["refused"]
    assert sorted(set(refused) - {"mlagents_envs.envs.unity_vec_env"}) == facts["not_provided"]
    assert set(facts["not_provided"]) <= set(official)
    assert sorted(facts["served"]) == sorted(set(official) - set(facts["not_provided"]))
    for name in facts["not_provided"]:
        assert refused[name][0] == name
        assert "is part of the official ml-agents package" in refused[name][1], name
    vec_name, vec_text = refused["mlagents_envs.envs.unity_vec_env"]
    assert vec_name == "mlagents_envs.envs.unity_vec_env"
    assert "is not a module of mlagents_envs 1.1.0" in vec_text
    assert "unity_gym.sb3" in vec_text
