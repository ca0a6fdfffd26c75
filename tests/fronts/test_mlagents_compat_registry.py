"""The official modules served from ``unity_gym.compat`` through ``mlagents_compat``: the
registry, ``env_utils``, ``logging_util``, ``rpc_utils``, ``communicator_objects``, and the
official keyword names and helpers added to the aliased modules.

Every check runs in a fresh interpreter (``compat_processes``) so the aliases never enter this
process. Nothing here needs a network: where the official code would reach the internet, the
snippet routes it to a closed local port (``https_proxy``/``http_proxy`` = 127.0.0.1:9), so the
failure path is exercised quickly and the same way online and offline.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import zipfile
from pathlib import Path

import pytest
from compat_processes import run_python_json
from test_mlagents_compat import _official_public_names

pytestmark = pytest.mark.timeout(240)

BUILTIN_IDS = [
    "3DBall",
    "Basic",
    "GridWorld",
    "Hallway",
    "PushBlock",
    "PushBlockCollab",
    "Pyramids",
    "SoccerTwos",
    "Tennis",
    "WallJump",
]
NO_NETWORK = """
import os
os.environ["https_proxy"] = os.environ["http_proxy"] = "http://127.0.0.1:9"
os.environ["UNITY_GYM_CACHE_DIR"] = {cache!r}
"""


def _offline(cache: Path, code: str) -> str:
    return NO_NETWORK.format(cache=str(cache)) + textwrap.dedent(code)


def test_default_registry_3dball_make_steps_the_builtin_scene(tmp_path: Path) -> None:
    """``default_registry["3DBall"].make(**kwargs)`` passes the keywords to UnityEnvironment and
    runs the stock 3DBall game (12 agents) over gRPC, with no download (official
    ``RemoteRegistryEntry.make`` keyword handling: ``file_name`` ignored, ``additional_args``
    kept)."""
    facts = run_python_json(
        _offline(
            tmp_path,
            """
            import json, time
            import unity_gym.mlagents_compat
            from mlagents_envs.registry import default_registry, UnityEnvRegistry
            from mlagents_envs.environment import UnityEnvironment
            from mlagents_envs.side_channel.engine_configuration_channel import (
                EngineConfigurationChannel,
            )
            started = time.monotonic()
            ids = list(default_registry)
            listing_s = time.monotonic() - started
            entry = default_registry["3DBall"]
            engine = EngineConfigurationChannel()
            env = entry.make(
                file_name="ignored", worker_id=1, no_graphics=True, side_channels=[engine],
                timeout_wait=60, additional_args=["--seed", "3"],
            )
            engine.set_configuration_parameters(time_scale=20.0)
            env.reset()
            name = list(env.behavior_specs)[0]
            spec = env.behavior_specs[name]
            decision, _ = env.get_steps(name)
            rewards = []
            for _ in range(5):
                decision, _ = env.get_steps(name)
                env.set_actions(name, spec.action_spec.random_action(len(decision)))
                env.step()
                decision, terminal = env.get_steps(name)
                rewards += decision.reward.tolist() + terminal.reward.tolist()
            print(json.dumps({
                "ids": ids, "listing_s": listing_s,
                "is_registry": isinstance(default_registry, UnityEnvRegistry),
                "identifier": entry.identifier, "expected": entry.expected_reward,
                "description": entry.description,
                "is_env": isinstance(env, UnityEnvironment),
                "behavior": name, "agents": len(decision) + len(terminal),
                "args": env.process.args[-2:] if hasattr(env.process, "args") else None,
                "max_reward": max(rewards),
                "contains": ["3DBall" in default_registry, "Stress" in default_registry],
                "len": len(default_registry),
            }))
            env.close()
            """,
        )
    )
    assert facts["ids"] == BUILTIN_IDS  # offline: the built-in examples, in this order
    assert facts["listing_s"] < 10
    assert facts["is_registry"] is True
    assert facts["identifier"] == "3DBall"
    assert facts["expected"] == 100.0
    assert "no download" in facts["description"]
    assert facts["is_env"] is True
    assert facts["behavior"] == "3DBall?team=0"
    assert facts["agents"] == 12  # the stock Unity example: 12 areas of one agent
    assert facts["max_reward"] == pytest.approx(0.1)
    assert facts["contains"] == [True, False]  # Stress is unity_gym's own, not an example
    assert facts["len"] == len(BUILTIN_IDS)


def test_unknown_id_without_network_is_a_fast_clear_key_error(tmp_path: Path) -> None:
    """A missing identifier raises KeyError (official); here it also says the manifest could
    not be read and which environments are built in, and fails fast."""
    facts = run_python_json(
        _offline(
            tmp_path,
            """
            import json, time
            import unity_gym.mlagents_compat
            from mlagents_envs.registry import default_registry
            started = time.monotonic()
            try:
                default_registry["Walker"]
            except KeyError as exc:
                message = exc.args[0]
            print(json.dumps({"message": message, "seconds": time.monotonic() - started}))
            """,
        )
    )
    message = facts["message"]
    assert message.startswith("The entry Walker is not present in the registry.")
    assert "manifest.yaml" in message and "could not be read" in message
    assert "Built in, with no download: " + ", ".join(BUILTIN_IDS) in message
    assert facts["seconds"] < 10


def _zip_of_builtin(tmp_path: Path, name: str) -> Path:
    """A zip holding one folder with a Linux executable (the 3DBall launcher), as the official
    manifests' zips do."""
    launcher = run_python_json(
        _offline(
            tmp_path / "cache",
            """
            import json
            from unity_gym.registration import builtin_executable
            print(json.dumps(str(builtin_executable("Basic"))))
            """,
        )
    )
    archive = tmp_path / f"{name}.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.write(launcher, f"{name}/{name}.x86_64")
    return archive


def test_registry_from_yaml_downloads_unzips_and_launches(tmp_path: Path) -> None:
    """``register_from_yaml`` reads a manifest lazily; a RemoteRegistryEntry downloads its zip
    once into ``<tmp_dir>/ml-agents-binaries/binaries/<id>-<md5(url)>`` and launches it
    (official binary_utils layout); ``register``, ``clear`` and Mapping behaviour as officially;
    an unreachable url fails at once."""
    archive = _zip_of_builtin(tmp_path, "Local")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(
        "environments:\n"
        "  - Local:\n"
        "      expected_reward: 0.5\n"
        "      description: a local zip\n"
        f"      linux_url: {archive.as_uri()}\n"
        "      darwin_url: null\n"
        "      win_url: null\n"
        "  - Unreachable:\n"
        "      expected_reward: null\n"
        "      description: null\n"
        "      linux_url: http://example.invalid/Unreachable.zip\n"
        "      darwin_url: null\n"
        "      win_url: null\n"
        "      tmp_dir: " + str(tmp_path / "downloads") + "\n"
    )
    facts = run_python_json(
        _offline(
            tmp_path / "cache",
            f"""
            import json, os, time
            import unity_gym.mlagents_compat
            from mlagents_envs.registry import UnityEnvRegistry
            from mlagents_envs.registry.remote_registry_entry import RemoteRegistryEntry
            from mlagents_envs.registry.base_registry_entry import BaseRegistryEntry
            registry = UnityEnvRegistry()
            registry.register_from_yaml({str(manifest)!r})
            pending = registry._sync
            entry = registry["Local"]
            entry = RemoteRegistryEntry(
                "Local", 0.5, "a local zip", {archive.as_uri()!r}, None, None,
                additional_args=["--seed", "1"], tmp_dir={str(tmp_path / "downloads")!r},
            )
            registry.register(entry)
            env = registry["Local"].make(no_graphics=True, timeout_wait=60)
            env.reset()
            behaviors = list(env.behavior_specs)
            env.close()
            folder = os.path.join({str(tmp_path / "downloads")!r}, "ml-agents-binaries", "binaries")
            started = time.monotonic()
            try:
                registry["Unreachable"].make()
                failure = None
            except OSError as exc:
                failure = [type(exc).__name__, str(exc)]
            seconds = time.monotonic() - started
            try:
                BaseRegistryEntry("x", None, None).make()
            except NotImplementedError:
                base = "NotImplementedError"
            keys = sorted(registry)
            length = len(registry)
            registry.clear()
            print(json.dumps({{
                "pending": pending, "keys": keys, "len": length, "behaviors": behaviors,
                "unpacked": sorted(os.listdir(folder)), "failure": failure,
                "seconds": seconds, "base": base, "after_clear": len(registry),
                "missing": "Local" in registry,
            }}))
            """,
        )
    )
    assert facts["pending"] is False  # register_from_yaml reads nothing until an access
    assert facts["keys"] == ["Local", "Unreachable"]
    assert facts["len"] == 2
    assert facts["behaviors"] == ["Basic?team=0"]
    (unpacked,) = facts["unpacked"]
    assert unpacked.startswith("Local-") and len(unpacked) == len("Local-") + 32
    name, text = facts["failure"]
    assert name == "RegistryNetworkError"
    assert "example.invalid" in text and "network may be unavailable" in text
    assert facts["seconds"] < 10
    assert facts["base"] == "NotImplementedError"
    assert facts["after_clear"] == 0
    assert facts["missing"] is False


def test_env_utils_logging_util_and_helpers(tmp_path: Path) -> None:
    """env_utils (official: None for no build, UnityEnvironmentException on launch),
    logging_util driving unity_gym's loggers, the official keyword names of the message
    writers and GaugeNode.update, merge_gauges (the later value wins), UnityPolicyException."""
    facts = run_python_json(
        _offline(
            tmp_path,
            """
            import json, logging, sys, time
            import unity_gym.mlagents_compat
            from unity_gym.registration import builtin_executable
            from mlagents_envs import env_utils, logging_util, timers
            from mlagents_envs.exception import UnityEnvironmentException, UnityPolicyException
            from mlagents_envs.side_channel import IncomingMessage, OutgoingMessage
            build = builtin_executable("Basic")
            stem = str(build)[: -len(".x86_64")]
            try:
                env_utils.launch_executable(stem + "-missing", [])
            except UnityEnvironmentException as exc:
                launch_error = str(exc)
            process = env_utils.launch_executable(stem, ["--list-scenes"])
            code = process.wait(60)
            logging_util.set_log_level(logging_util.DEBUG)
            ours = logging.getLogger("unity_gym.environment")
            named = logging_util.get_logger("some.module")
            message = OutgoingMessage()
            message.write_bool(b=True)
            message.write_int32(i=-7)
            message.write_float32(f=1.5)
            message.write_float32_list(float_list=[1.0, 2.0])
            message.write_string(s="hi")
            incoming = IncomingMessage(message.buffer)
            read = [incoming.read_bool(), incoming.read_int32(), incoming.read_float32(),
                    incoming.read_float32_list(), incoming.read_string()]
            raw = OutgoingMessage()
            raw.set_raw_bytes(buffer=bytearray(b"ab"))
            older, newer = timers.GaugeNode(1.0), timers.GaugeNode(5.0)
            older.update(new_value=0.5)
            time.sleep(0.01)
            newer.update(new_value=3.0)
            stack = timers.TimerStack()
            stack.gauges["g"] = older
            timers.merge_gauges({"g": newer, "h": timers.GaugeNode(2.0)}, timer_stack=stack)
            print(json.dumps({
                "platform": env_utils.get_platform() == sys.platform,
                "validate": [env_utils.validate_environment_path(str(build)) == str(build),
                             env_utils.validate_environment_path(stem) == str(build),
                             env_utils.validate_environment_path(stem + "-missing")],
                "launch_error": launch_error, "code": code,
                "levels": [logging.getLogger("unity_gym").level, ours.getEffectiveLevel(),
                           logging.getLogger("trainers").level, named.level],
                "handler": type(named.handlers[-1]).__name__,
                "read": read, "raw": raw.buffer.decode(),
                "gauge": stack.gauges["g"].as_dict(), "h": stack.gauges["h"].value,
                "policy": issubclass(UnityPolicyException, Exception)
                and UnityPolicyException.__module__,
            }))
            """,
        )
    )
    assert facts["platform"] is True
    assert facts["validate"] == [True, True, None]
    assert "Provided filename does not match any environments" in facts["launch_error"]
    assert facts["code"] == 0
    assert facts["levels"] == [logging_debug(), logging_debug(), logging_debug(), logging_debug()]
    assert facts["handler"] == "StreamHandler"
    assert facts["read"] == [True, -7, 1.5, [1.0, 2.0], "hi"]
    assert facts["raw"] == "ab"
    assert facts["gauge"] == {"value": 3.0, "min": 0.5, "max": 5.0, "count": 4}
    assert facts["h"] == 2.0
    assert facts["policy"] == "unity_gym.exceptions"


def logging_debug() -> int:
    """``logging.DEBUG`` (the snippet's levels are compared to it)."""
    import logging

    return logging.DEBUG


def test_rpc_utils_and_communicator_objects_are_unity_gyms(tmp_path: Path) -> None:
    """rpc_utils decodes with the official signatures; the communicator_objects classes are
    unity_gym's generated ones."""
    facts = run_python_json(
        _offline(
            tmp_path,
            """
            import io, json
            import numpy as np
            from PIL import Image
            import unity_gym.mlagents_compat
            from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
            from mlagents_envs.communicator_objects.brain_parameters_pb2 import (
                BrainParametersProto,
            )
            from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto, NONE
            from mlagents_envs.rpc_utils import (
                behavior_spec_from_proto, process_pixels, steps_from_proto,
            )
            import unity_gym.protocol.communicator_objects.agent_info_pb2 as ours
            pixels = np.zeros((4, 6, 3), dtype=np.uint8)
            pixels[..., 0] = 255
            png = io.BytesIO()
            Image.fromarray(pixels, "RGB").save(png, format="PNG")
            image = process_pixels(image_bytes=png.getvalue() * 2, expected_channels=4)
            gray = process_pixels(png.getvalue(), 1)
            mapped = process_pixels(png.getvalue(), 3, mappings=[0, 0, -1])
            brain = BrainParametersProto()
            brain.action_spec.num_continuous_actions = 2
            agents = []
            for i in range(4):
                info = AgentInfoProto(id=i, reward=float(i), done=i % 2 == 1)
                obs = ObservationProto(shape=[3], compression_type=NONE)
                obs.float_data.data.extend([0.5] * 3)
                info.observations.append(obs)
                agents.append(info)
            spec = behavior_spec_from_proto(brain_param_proto=brain, agent_info=agents[0])
            decision, terminal = steps_from_proto(agent_info_list=agents, behavior_spec=spec)
            print(json.dumps({
                "same": AgentInfoProto is ours.AgentInfoProto,
                "image": list(image.shape), "red": float(image[0].mean()),
                "gray": [list(gray.shape), round(float(gray.mean()), 3)],
                "mapped": [list(mapped.shape), round(float(mapped.mean()), 3)],
                "spec": [spec.action_spec.continuous_size, list(spec.observation_specs[0].shape)],
                "decision": decision.agent_id.tolist(), "terminal": terminal.agent_id.tolist(),
            }))
            """,
        )
    )
    assert facts["same"] is True
    assert facts["image"] == [4, 4, 6]  # two RGB PNGs concatenated, first 4 channels kept
    assert facts["red"] == 1.0
    assert facts["gray"] == [[1, 4, 6], pytest.approx(1 / 3, abs=1e-3)]
    assert facts["mapped"] == [[1, 4, 6], 0.5]  # mean of red (1) and green (0)
    assert facts["spec"] == [2, [3]]
    assert facts["decision"] == [0, 2]
    assert facts["terminal"] == [1, 3]


SERVED_MIRRORS = [
    "mlagents_envs.registry",
    "mlagents_envs.registry.unity_env_registry",
    "mlagents_envs.registry.base_registry_entry",
    "mlagents_envs.registry.remote_registry_entry",
    "mlagents_envs.registry.binary_utils",
    "mlagents_envs.env_utils",
    "mlagents_envs.logging_util",
    "mlagents_envs.rpc_utils",
]


@pytest.mark.peer
def test_mirrors_export_every_official_public_name(peer_python: Path) -> None:
    """Each served mirror exports every public name its official module defines or imports
    from the official package (its logger object aside), and each communicator_objects module
    every public name of the official generated module."""
    listing = subprocess.run(
        [
            str(peer_python),
            "-c",
            "import importlib, json, types, mlagents_envs\n"
            "names = {}\n"
            f"for m in {json.dumps(_PB2)}:\n"
            "    mod = importlib.import_module('mlagents_envs.communicator_objects.' + m)\n"
            "    names[m] = sorted(n for n, v in vars(mod).items() if not n.startswith('_')"
            " and not isinstance(v, types.ModuleType))\n"
            "print(json.dumps([mlagents_envs.__path__[0], names]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    package, pb2_names = json.loads(listing.stdout)
    root = Path(package).parent
    official: dict[str, list[str]] = {}
    for name in SERVED_MIRRORS:
        path = root / name.replace(".", "/")
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        official[name] = _official_public_names(source, internal=())
    modules = SERVED_MIRRORS + ["mlagents_envs.communicator_objects." + m for m in _PB2]
    exported = run_python_json(
        "import importlib, json\nimport unity_gym.mlagents_compat\n"
        f"modules = {modules!r}\n"
        "print(json.dumps({n: sorted(importlib.import_module(n).__all__) for n in modules}))"
    )
    for name, names in official.items():
        missing = set(names) - {"logger"} - set(exported[name])
        assert not missing, (name, missing)
    for module, names in pb2_names.items():
        served = set(exported["mlagents_envs.communicator_objects." + module])
        missing = {n for n in names if not n.isupper() or n == "DESCRIPTOR"} - served
        # enum values (NONE, PNG, STEP, ...) are upper case and compared below
        assert not missing, (module, missing)
        assert {n for n in names if n.isupper()} <= served, module


_PB2 = [
    "agent_action_pb2",
    "agent_info_action_pair_pb2",
    "agent_info_pb2",
    "brain_parameters_pb2",
    "capabilities_pb2",
    "command_pb2",
    "custom_reset_parameters_pb2",
    "demonstration_meta_pb2",
    "engine_configuration_pb2",
    "header_pb2",
    "observation_pb2",
    "space_type_pb2",
    "training_analytics_pb2",
    "unity_input_pb2",
    "unity_message_pb2",
    "unity_output_pb2",
    "unity_rl_initialization_input_pb2",
    "unity_rl_initialization_output_pb2",
    "unity_rl_input_pb2",
    "unity_rl_output_pb2",
    "unity_to_external_pb2",
]


def test_pettingzoo_factories_of_the_registry(tmp_path: Path) -> None:
    """``from mlagents_envs.envs import Tennis; Tennis.env()`` (official ``envs/__init__``:
    one ``PettingZooEnvFactory`` per registry id, ``3`` spelled ``Three``) plays the built-in
    Tennis through ``UnityAECEnv``; an id that is not built in says why it is missing."""
    facts = run_python_json(
        _offline(
            tmp_path,
            """
            import json
            import unity_gym.mlagents_compat
            import mlagents_envs.envs as envs
            from mlagents_envs.envs import Tennis, ThreeDBall
            from mlagents_envs.envs.pettingzoo_env_factory import PettingZooEnvFactory
            from mlagents_envs.envs.unity_aec_env import UnityAECEnv
            from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

            env = Tennis.env(seed=3)
            env.reset(seed=3)
            agents = list(env.agents)
            steps = 0
            for agent in env.agent_iter(60):
                observation, reward, terminated, truncated, info = env.last()
                action = None if terminated or truncated else env.action_space(agent).sample()
                env.step(action)
                steps += 1
            channels = [type(c).__name__ for c in env.side_channel.values()]
            env.close()
            try:
                from mlagents_envs.envs import StrikersVsGoalie
                missing = None
            except ImportError as exc:
                missing = str(exc)
            print(json.dumps({
                "all": envs.__all__,
                "ids": [Tennis.env_id, ThreeDBall.env_id],
                "factory": isinstance(Tennis, PettingZooEnvFactory),
                "aec": isinstance(env, UnityAECEnv),
                "agents": agents,
                "steps": steps,
                "stats": "StatsSideChannel" in channels,
                "missing": missing,
            }))
            """,
        )
    )
    expected = sorted(("Three" + i[1:]) if i[0] == "3" else i for i in BUILTIN_IDS)
    assert facts["all"] == expected
    assert facts["ids"] == ["Tennis", "3DBall"]
    assert facts["factory"] and facts["aec"] and facts["stats"]
    assert facts["steps"] == 60
    assert facts["agents"] and all(a.startswith("Tennis?team=") for a in facts["agents"])
    assert "StrikersVsGoalie is not present in the registry" in facts["missing"]
    assert "could not be read" in facts["missing"]
