"""Differential conformance: the official ``UnityEnvironment`` and ours, same game, same inputs.

For every scene registered in the headless player (plus extra ``Stress`` variants covering
visual, stacked, masked, multi-team and grouped agents), one seed and one action table drawn up
front drive a run through the official ``mlagents_envs`` 1.1.0 (in the peer venv) and a run
through ``unity_gym``. Both record every step's DecisionSteps, TerminalSteps, behavior specs and
statistics read back from the stats side channel (``peer_recording``); the recordings must be
identical, exactly, step by step. The recording must also show a sound game
(:func:`assert_sound_game`: shapes as specified, finite values, unique agent ids, no branch fully
masked, statistics), and both players must end by themselves without leaving processes behind;
this is the one test where the official ``mlagents_envs`` drives every scene with random actions.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from peer_recording import Api, record_run, save_arrays
from process_utils import QUIT_ON_OFFICIAL_CLOSE, group_members

from benchmarks.peer_runner import free_port, run_in_peer
from unity_gym.base_env import ActionTuple
from unity_gym.environment import UnityEnvironment
from unity_gym.player.scenes import get_scene_class, scene_names
from unity_gym.side_channels.engine_configuration_channel import EngineConfigurationChannel
from unity_gym.side_channels.environment_parameters_channel import EnvironmentParametersChannel
from unity_gym.side_channels.stats_side_channel import StatsSideChannel

pytestmark = [pytest.mark.peer, pytest.mark.timeout(300)]

HERE = Path(__file__).resolve().parent
OURS = Api(
    UnityEnvironment=UnityEnvironment,
    ActionTuple=ActionTuple,
    EngineConfigurationChannel=EngineConfigurationChannel,
    EnvironmentParametersChannel=EnvironmentParametersChannel,
    StatsSideChannel=StatsSideChannel,
)
SEED = 1234

OFFICIAL_RECORDER = """
sys.path.insert(0, ARGS["recording_dir"])
from peer_recording import Api, record_run, save_arrays

api = Api(
    UnityEnvironment=UnityEnvironment,
    ActionTuple=ActionTuple,
    EngineConfigurationChannel=EngineConfigurationChannel,
    EnvironmentParametersChannel=EnvironmentParametersChannel,
    StatsSideChannel=StatsSideChannel,
)
emit(record_run(api, ARGS["plan"]))
"""


@dataclass(frozen=True)
class Scenario:
    """One differential run: a scene, its options and the side-channel traffic.

    Attributes:
        scene: registered scene name.
        options: ``--option name=value`` pairs given to the player.
        num_agents: ``--num-agents`` (None = the scene's default).
        steps: ``step()`` calls after the reset.
        float_parameters: environment parameters sent with the reset.
        sampler_parameters: uniform samplers ``(key, min, max, seed)`` sent with the reset.
        late_float_parameters: environment parameters sent half-way through.
        episode_ends: whether the run must contain at least one terminal step.
        exercises: features the recording must show: ``"groups"`` (non-zero group ids and
            group rewards), ``"masks"`` (some action masked) and ``"removals"`` (agents
            disabled mid-episode and enabled again: a decision from a new agent id).
    """

    scene: str
    options: Mapping[str, str] = field(default_factory=dict)
    num_agents: int | None = None
    steps: int = 150
    float_parameters: tuple[tuple[str, float], ...] = (("not_read_by_the_scene", 1.0),)
    sampler_parameters: tuple[tuple[str, float, float, int], ...] = ()
    late_float_parameters: tuple[tuple[str, float], ...] = (("not_read_by_the_scene", 2.0),)
    episode_ends: bool = True
    exercises: frozenset[str] = frozenset()

    def player_arguments(self) -> list[str]:
        """Extra command-line arguments of the player."""
        args: list[str] = []
        for key, value in self.options.items():
            args += ["--option", f"{key}={value}"]
        if self.num_agents is not None:
            args += ["--num-agents", str(self.num_agents)]
        return args

    def action_table(self, seed: int) -> dict[str, np.ndarray]:
        """Random actions for every step, sized from the scene's behavior specs.

        Per behavior: ``continuous`` uniform in [-1, 1) shaped ``(steps, agents, size)`` and
        ``discrete`` uniform in [0, 1) shaped ``(steps, agents, branches)``, mapped to allowed
        actions at run time (``peer_recording.choose_discrete``).
        """
        scene = get_scene_class(self.scene)(dict(self.options), num_agents=self.num_agents)
        rng = np.random.default_rng(seed)
        table: dict[str, np.ndarray] = {}
        for behavior in scene.behaviors():
            agents = behavior.agents_per_area * scene.base_area_count
            shape = (self.steps, agents)
            table[f"{behavior.full_name}/continuous"] = rng.uniform(
                -1.0, 1.0, (*shape, behavior.action_spec.continuous_size)
            ).astype(np.float32)
            table[f"{behavior.full_name}/discrete"] = rng.random(
                (*shape, behavior.action_spec.discrete_size)
            )
        return table


EXPLICIT_SCENARIOS: dict[str, Scenario] = {
    "3DBall": Scenario(
        "3DBall",
        steps=200,
        float_parameters=(("scale", 1.25),),
        late_float_parameters=(("gravity", 12.0),),
    ),
    "3DBallHard": Scenario(  # two stacked reflection sensors (9 decisions each)
        "3DBallHard",
        steps=200,
        float_parameters=(("mass", 2.0),),
        late_float_parameters=(("scale", 0.8),),
    ),
    "Visual3DBall": Scenario(  # 4 stacked camera pictures, sent as concatenated PNGs
        "Visual3DBall",
        num_agents=4,
        steps=200,
        float_parameters=(("scale", 1.5),),
        late_float_parameters=(("gravity", 12.0),),
    ),
    "Basic": Scenario(
        "Basic",
        float_parameters=(("start_position", 12.0),),
        late_float_parameters=(("start_position", 8.0),),
    ),
    "GridWorld": Scenario(
        "GridWorld",
        exercises=frozenset({"masks"}),
        float_parameters=(("gridSize", 4.0),),
        late_float_parameters=(("gridSize", 6.0),),
    ),
    "PushBlock": Scenario(
        "PushBlock",
        float_parameters=(("block_scale", 6.0),),  # big enough to touch the goal early
        late_float_parameters=(("block_drag", 1.0),),
    ),
    # episodes end within the run; a few areas keep the run short
    "Pyramids": Scenario("Pyramids", options={"max_step": "60"}, num_agents=4),
    "Hallway": Scenario("Hallway", options={"max_step": "60"}, num_agents=4),
    "PushBlockCollab": Scenario(  # group episodes end (interrupted) within the run
        "PushBlockCollab",
        options={"max_environment_steps": "40"},
        num_agents=6,
        exercises=frozenset({"groups"}),
    ),
    "DungeonEscape": Scenario(  # agents removed mid-episode (disabled), groups end and reset
        "DungeonEscape",
        options={"max_environment_steps": "200"},
        num_agents=24,
        exercises=frozenset({"removals"}),
    ),
    "Match3": Scenario(  # 4 behaviors, PNG boards, masks; agents decide themselves, interrupted
        "Match3",
        options={"max_moves": "40"},
        exercises=frozenset({"masks"}),
    ),
    "Sorter": Scenario(  # a BufferSensor of tiles; episodes end (interrupted) within the run
        "Sorter",
        options={"max_step": "40"},
        num_agents=4,
        float_parameters=(("num_tiles", 6.0),),
        late_float_parameters=(("num_tiles", 3.0),),
    ),
    "Worm": Scenario(  # MuJoCo physics, continuous 9, no actions between decisions; interrupted
        "Worm",
        options={"max_step": "60"},
        num_agents=3,
    ),
    "Crawler": Scenario(  # MuJoCo, two vector sensors, continuous 20; falls end episodes at -1
        "Crawler",
        options={"max_step": "60"},
        num_agents=3,
    ),
    "Walker": Scenario(  # MuJoCo ragdolls, continuous 39; falls end episodes, others interrupted
        "Walker",
        options={"max_step": "60"},
        num_agents=3,
        float_parameters=(("hip_mass", 10.0),),
        late_float_parameters=(("chest_mass", 6.0),),
    ),
    "FoodCollector": Scenario(  # hybrid actions; lasers freeze agents; episodes end in the run
        "FoodCollector",
        options={"max_step": "60"},
        float_parameters=(("agent_scale", 1.5),),
        late_float_parameters=(("laser_length", 2.0),),
    ),
    "GridFoodCollector": Scenario(  # a 5-channel grid sent as two PNGs (3 + 2 channels)
        "GridFoodCollector",
        options={"max_step": "60"},
        num_agents=10,
        float_parameters=(("agent_scale", 1.2),),
        late_float_parameters=(("laser_length", 2.0),),
    ),
    "VisualFoodCollector": Scenario(  # a camera picture (PNG) and a vector per agent
        "VisualFoodCollector",
        options={"max_step": "60"},
        num_agents=5,
        float_parameters=(("agent_scale", 1.2),),
        late_float_parameters=(("laser_length", 2.0),),
    ),
    "WallJump": Scenario(
        "WallJump",
        num_agents=8,
        float_parameters=(("small_wall_height", 3.0),),
        late_float_parameters=(("big_wall_height", 7.0),),
    ),
    "SoccerTwos": Scenario(
        "SoccerTwos",
        options={"kickoff": "shot_blue"},  # a goal within the run: group rewards and ends
        num_agents=8,  # two of the 8 fields: the official peer decodes a quarter as much
        exercises=frozenset({"groups"}),
        float_parameters=(("ball_touch", 1.0),),
        late_float_parameters=(("ball_touch", 0.5),),
    ),
    "StrikersVsGoalie": Scenario(  # asymmetric teams (2 strikers, 1 goalie), a goal in the run
        "StrikersVsGoalie",
        options={"kickoff": "shot_blue"},
        num_agents=6,  # two of the 8 fields
        exercises=frozenset({"groups"}),
        float_parameters=(("ball_touch", 1.0),),
        late_float_parameters=(("ball_touch", 0.5),),
    ),
    "Tennis": Scenario(
        "Tennis",
        float_parameters=(("angle", 50.0),),
        late_float_parameters=(("scale", 0.6),),
    ),
    "Stress-masks-teams-groups": Scenario(
        "Stress",
        options={
            "discrete": "3,2",
            "continuous": "1",
            "action_mask": "true",
            "teams": "2",
            "group_size": "2",
            "decision_period": "2",
            "episode_length": "21",
        },
        exercises=frozenset({"groups", "masks"}),
        sampler_parameters=(("stress_value", 1.0, 2.0, 3),),
        late_float_parameters=(("stress_value", 5.0),),
    ),
    "Stress-png-stacked-interrupted": Scenario(
        "Stress",
        options={"visual": "png", "visual_shape": "3x8x10", "stack": "2", "max_step": "12"},
        num_agents=2,
        steps=100,
    ),
    "Stress-variable-length": Scenario(  # a BufferSensor ([VARIABLE_SIZE, NONE]), 0 to 5 rows
        "Stress",
        options={"entities": "5x3", "discrete": "3", "continuous": "0", "episode_length": "17"},
        num_agents=3,
        steps=60,
    ),
    "Stress-float-visual-period3": Scenario(
        "Stress",
        options={
            "visual": "float",
            "visual_shape": "2x5x4",
            "obs_size": "12",
            "decision_period": "3",
            "actions_between": "false",
            "max_step": "9",
        },
        steps=100,
    ),
}


def _scenarios() -> dict[str, Scenario]:
    """The explicit scenarios plus a default one for every other registered scene."""
    covered = {s.scene for s in EXPLICIT_SCENARIOS.values()}
    defaults = {name: Scenario(name) for name in scene_names() if name not in covered}
    return {**EXPLICIT_SCENARIOS, **defaults}


SCENARIOS = _scenarios()


def _first_step_of_row(counts: np.ndarray, row: int) -> int:
    """The recorded step holding concatenated ``row``."""
    return int(np.searchsorted(np.cumsum(counts), row, side="right"))


def _describe_difference(key: str, official: Any, ours: Any) -> str:
    a, b = official[key], ours[key]
    if a.dtype != b.dtype or a.shape[1:] != b.shape[1:] or a.shape[0] != b.shape[0]:
        return f"{key}: official {a.dtype}{a.shape} vs ours {b.dtype}{b.shape}"
    if a.ndim == 0:
        return f"{key}: official {a!s} vs ours {b!s}"
    rows = np.flatnonzero(
        [not np.array_equal(x, y, equal_nan=a.dtype.kind == "f") for x, y in zip(a, b, strict=True)]
    )
    row = int(rows[0])
    where = f"row {row}"
    if key.endswith("/digest"):  # a large observation: say how far apart the rows' sums are
        key = key.removesuffix("/digest")
        a, b = official[f"{key}/sum"], ours[f"{key}/sum"]
        where += " (sums of the row's values shown)"
    count_key = key.rsplit("/", 1)[0] + "/count"
    if key.endswith(("/count", "/mask_present")):
        where = f"recorded step {row}"
    elif count_key in official.files:
        where += f" (recorded step {_first_step_of_row(official[count_key], row)})"
    elif key.startswith("stats/"):
        where += f" (step {official['stats/step'][row]})"
    return f"{key} differs first at {where}: official {a[row]!r} vs ours {b[row]!r}"


def assert_recordings_identical(official_path: Path, ours_path: Path) -> None:
    """Same keys, dtypes, shapes and values (exact, float32 bit-for-bit up to NaN)."""
    with (
        np.load(official_path, allow_pickle=False) as official,
        np.load(ours_path, allow_pickle=False) as ours,
    ):
        missing = sorted(set(official.files) - set(ours.files))
        extra = sorted(set(ours.files) - set(official.files))
        assert not missing and not extra, f"only official: {missing}; only ours: {extra}"
        differences = []
        for key in sorted(official.files):
            a, b = official[key], ours[key]
            same = (
                a.dtype == b.dtype
                and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
            )
            if not same:
                differences.append(_describe_difference(key, official, ours))
        assert not differences, "recordings differ:\n" + "\n".join(differences[:20])


def assert_sound_game(recording: Any) -> None:
    """What every scene must show a trainer, read from a recording: each behavior decides,
    observations have the spec's shapes and are finite, rewards are finite, no agent id twice
    in one step, no discrete branch with every action masked, and a behavior whose episodes
    end reports its cumulative reward on the stats channel."""
    behaviors = sorted({key.split("/")[0] for key in recording.files if "?team=" in key})
    assert behaviors, "no behavior recorded"
    stat_keys = set(recording["stats/key"].tolist())
    for name in behaviors:
        assert name.split("?team=")[0], f"{name!r}: a behavior without a name"
        spec = json.loads(str(recording[f"{name}/spec"]))
        shapes = [tuple(o["shape"]) for o in spec["observations"]]
        for kind in ("decision", "terminal"):
            prefix = f"{name}/{kind}"
            counts = recording[f"{prefix}/count"]
            rows = int(counts.sum())
            for i, shape in enumerate(shapes):
                key = f"{prefix}/obs_{i}"
                if key in recording.files:
                    observation = recording[key]
                    assert observation.shape == (rows, *shape), f"{key}: {observation.shape}"
                    assert np.isfinite(observation).all(), f"{key}: NaN or infinite values"
                else:  # recorded as digests
                    row_shapes = recording[f"{key}/shape"]
                    assert len(row_shapes) == rows and (row_shapes == shape).all(), key
                    assert not recording[f"{key}/non_finite"].any(), f"{key}: NaN or infinite"
            for field_name in ("reward", "group_reward"):
                assert np.isfinite(recording[f"{prefix}/{field_name}"]).all(), field_name
            ids = np.split(recording[f"{prefix}/agent_id"], np.cumsum(counts)[:-1])
            assert all(len(set(step.tolist())) == len(step) for step in ids), (
                f"{prefix}: an agent id twice in one step"
            )
        assert recording[f"{name}/decision/count"].sum() > 0, f"{name}: no decision requested"
        for key in recording.files:
            if key.startswith(f"{name}/decision/mask_") and not key.endswith("present"):
                assert not recording[key].all(axis=1).any(), f"{key}: every action masked"
        if recording[f"{name}/terminal/count"].sum():
            assert f"Player/Cumulative Reward/{name}" in stat_keys, f"{name}: stats silent"


def _plan(scenario: Scenario, build: Path, table: Path, out: Path, logs: Path) -> dict[str, Any]:
    return {
        "file_name": str(build),
        "port": free_port(),
        "seed": SEED,
        "additional_args": scenario.player_arguments(),
        "log_folder": str(logs),
        "timeout_wait": 60,
        "steps": scenario.steps,
        "time_scale": 20.0,
        "float_parameters": [list(p) for p in scenario.float_parameters],
        "sampler_parameters": [list(p) for p in scenario.sampler_parameters],
        "late_float_parameters": [list(p) for p in scenario.late_float_parameters],
        "action_table": str(table),
        "output": str(out),
    }


@pytest.mark.parametrize("scenario_id", sorted(SCENARIOS))
def test_official_and_ours_see_the_same_game(
    scenario_id: str, peer_python: Path, scene_builds: dict[str, Path], tmp_path: Path
) -> None:
    scenario = SCENARIOS[scenario_id]
    table_path = tmp_path / "actions.npz"
    save_arrays(table_path, scenario.action_table(zlib.crc32(scenario_id.encode())))
    build = scene_builds[scenario.scene]

    official_plan = _plan(
        scenario, build, table_path, tmp_path / "official.npz", tmp_path / "official_logs"
    )
    official = run_in_peer(
        peer_python,
        OFFICIAL_RECORDER,
        builds=scene_builds,
        cwd=tmp_path,
        timeout=240,
        extra={"plan": official_plan, "recording_dir": str(HERE)},
    )
    ours_plan = _plan(scenario, build, table_path, tmp_path / "ours.npz", tmp_path / "ours_logs")
    ours = record_run(OURS, ours_plan)

    assert official["returncode"] == ours["returncode"] == 0
    assert_recordings_identical(tmp_path / "official.npz", tmp_path / "ours.npz")

    # The recordings are equal; check the game is sound and shows what the scenario exercises.
    with np.load(tmp_path / "ours.npz", allow_pickle=False) as recording:
        assert_sound_game(recording)
        behaviors = sorted({key.split("/")[0] for key in recording.files if "?team=" in key})
        decisions = terminals = 0
        for name in behaviors:
            assert len(recording[f"{name}/decision/count"]) == scenario.steps + 1
            decisions += int(recording[f"{name}/decision/count"].sum())
            terminals += int(recording[f"{name}/terminal/count"].sum())
        assert decisions > scenario.steps
        if scenario.episode_ends:
            assert terminals > 0, f"{scenario_id}: no episode ended in {scenario.steps} steps"
            assert len(recording["stats/key"]) > 0, "no statistics came back"
        if "groups" in scenario.exercises:
            assert any(recording[f"{n}/decision/group_id"].any() for n in behaviors)
            assert any(recording[f"{n}/terminal/group_reward"].any() for n in behaviors)
        if "removals" in scenario.exercises:
            # Ids 0 .. n-1 belong to the first agents; only re-enabled agents get new ones.
            first = {n: int(recording[f"{n}/decision/count"][0]) for n in behaviors}
            assert any(recording[f"{n}/decision/agent_id"].max() >= first[n] for n in behaviors)
            assert any(recording[f"{n}/decision/group_id"].any() for n in behaviors)
        if "masks" in scenario.exercises:
            masks = [k for k in recording.files if "/decision/mask_" in k and "present" not in k]
            assert any(recording[k].any() for k in masks), "no action was ever masked"
    for logs in ("official_logs", "ours_logs"):
        log = (tmp_path / logs / "Player-0.log").read_text()
        assert "engine configuration: time_scale=20" in log
    official_log = (tmp_path / "official_logs" / "Player-0.log").read_text()
    assert QUIT_ON_OFFICIAL_CLOSE.search(official_log), official_log[-2000:]
    if Path("/proc").is_dir():  # the player is its process group's leader
        assert group_members(official["pid"]) == [], "the player left processes behind"
        assert group_members(ours["pid"]) == [], "the player left processes behind"
