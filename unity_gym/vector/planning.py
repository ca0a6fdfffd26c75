"""How many game processes a vector env runs, and how many agents each one holds.

The slots of a vector env are every agent of the chosen behavior in every game process, so::

    num_envs == num_processes * agents_per_process

``agents_per_process`` is what one game's first reset shows: for a built-in scene, the agents of
the behavior in one training area times the scene's areas (its stock count, or ``num_agents``
divided among the areas) times the handshake's ``num_areas``; for a Unity build, whatever the
build contains (times ``num_areas`` for scenes with a ``TrainingAreaReplicator``).

* Give ``num_envs`` only: the number of processes is ``num_envs / agents_per_process``.
* Give ``num_processes`` too: for a built-in scene without ``num_agents``, each game is sized to
  ``num_envs / num_processes`` agents; otherwise the product must match.

A mismatch is an error that lists the counts that would work.
"""

from __future__ import annotations

from dataclasses import dataclass

from unity_gym.behavior_names import select_behavior
from unity_gym.game.catalogue import scene_layout
from unity_gym.game.settings import GameSettings

__all__ = ["ProcessPlan", "check_slot_count", "plan_processes"]


@dataclass(frozen=True)
class ProcessPlan:
    """The outcome of :func:`plan_processes`.

    Attributes:
        settings: the game settings (``num_agents`` filled in when the plan sized the games).
        num_processes: game processes to run; None when only the first game can tell.
        agents_per_process: slots per game when known before launching, else None.
    """

    settings: GameSettings
    num_processes: int | None
    agents_per_process: int | None


def _positive(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def check_slot_count(
    num_envs: int | None, num_processes: int | None, agents_per_process: int, behavior: str
) -> tuple[int, int]:
    """``(num_envs, num_processes)`` once the agents per process are known.

    Raises:
        ValueError: if the three numbers cannot agree; the message says what would work.
    """
    if num_envs is None:
        processes = num_processes or 1
        return processes * agents_per_process, processes
    if num_processes is None:
        if num_envs % agents_per_process == 0:
            return num_envs, num_envs // agents_per_process
        lower = max(agents_per_process, num_envs - num_envs % agents_per_process)
        upper = lower + agents_per_process

        def games(count: int) -> str:
            n = count // agents_per_process
            return f"{n} process" if n == 1 else f"{n} processes"

        raise ValueError(
            f"num_envs={num_envs} is not a multiple of the {agents_per_process} agents of "
            f"{behavior!r} in one game process (num_envs = processes x agents per process). Use "
            f"num_envs={lower} ({games(lower)}) or num_envs={upper} ({games(upper)}); "
            "or change the agents per game: for a built-in scene pass num_processes=k (each "
            "game then holds num_envs/k agents) or num_agents, for a build with a "
            "TrainingAreaReplicator num_areas."
        )
    if num_envs != num_processes * agents_per_process:
        raise ValueError(
            f"num_envs={num_envs} does not equal num_processes={num_processes} x "
            f"{agents_per_process} agents of {behavior!r} per game process. Use num_envs="
            f"{num_processes * agents_per_process}, or omit num_processes to get "
            f"num_envs/{agents_per_process} processes."
        )
    return num_envs, num_processes


def _builtin_counts(settings: GameSettings, behavior_name: str | None) -> tuple[str, int, int, int]:
    """``(behavior, its agents per area, all agents per area, base areas)`` of a built-in scene."""
    assert settings.scene is not None
    layout = scene_layout(settings.scene, settings.scene_options, settings.num_agents)
    chosen = select_behavior(
        layout.agents_per_area,
        behavior_name,
        choose="pass behavior_name=... to choose whose agents become the vector env's slots.",
    )
    total = sum(layout.agents_per_area.values())
    return chosen, layout.agents_per_area[chosen], total, layout.base_areas


def plan_processes(
    settings: GameSettings,
    num_envs: int | None,
    num_processes: int | None,
    behavior_name: str | None,
) -> ProcessPlan:
    """Decide processes and agents per process before launching anything (see module docs).

    Raises:
        ValueError: on counts that cannot work, with the ones that would.
    """
    _positive("num_envs", num_envs)
    _positive("num_processes", num_processes)
    if not settings.is_builtin:
        return ProcessPlan(settings, num_processes, None)
    behavior, per_area, total_per_area, base_areas = _builtin_counts(settings, behavior_name)
    if per_area == 0:
        raise ValueError(f"Behavior {behavior!r} has no agent in scene {settings.scene!r}.")
    slots_per_area = per_area * settings.num_areas
    if num_processes is not None and num_envs is not None and settings.num_agents is None:
        if num_envs % num_processes:
            raise ValueError(
                f"num_envs={num_envs} cannot be split evenly over num_processes={num_processes} "
                f"game processes; use a multiple of {num_processes}."
            )
        wanted = num_envs // num_processes
        if wanted % slots_per_area:
            raise ValueError(
                f"Each of the {num_processes} game processes would hold {wanted} agents of "
                f"{behavior!r}, but scene {settings.scene!r} adds them {slots_per_area} at a "
                f"time (one training area); use num_envs = num_processes x a multiple of "
                f"{slots_per_area}."
            )
        areas = wanted // slots_per_area
        sized = settings.replace(num_agents=areas * total_per_area)
        return ProcessPlan(sized, num_processes, wanted)
    agents = slots_per_area * base_areas
    num_envs, processes = check_slot_count(num_envs, num_processes, agents, behavior)
    return ProcessPlan(settings, processes, agents)
