"""How a SoccerTwos team's games against a random team end: who scored and how, time-outs, and
what the team does while the ball is out of its sight. A diagnostic beside
:mod:`benchmarks.policy_eval`.

:func:`benchmarks.policy_eval.play_against_random` gives the benchmark's win rate, through the
PettingZoo front over gRPC, one game at a time. This module plays the same match in this
process: it steps the built-in scene's Academy directly (as the player does without a trainer)
on all eight fields at once, which is several times faster and sees what the front does not: the
last player to touch the ball before each goal. A goal is then the trained team's shot, the
random team's own goal, the trained team's own goal or the random team's shot; a game with no
goal in 5000 steps is a time-out (a draw). It also counts the trained team's actions at
decisions when one of its stacked rays' newest report sees the ball, and when none does.

The trained team is ``model``, an ONNX policy exported by ``unity-train`` (its ``obs_*`` inputs
take the sensors in wire order, forward rays then backward rays; deterministic actions unless
``sampled``), or the scene's own heuristic (one striker, one keeper) without a model. On each
field it alternates between blue and purple from one game to the next. The random team draws
each branch uniformly at each decision. Seeded: the same seed plays the same games.

Usage::

    python -m benchmarks.soccer_outcomes [MODEL.onnx] [--games 200] [--sampled] [--seed 1]
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.policy_eval import OnnxPolicy, outcomes_main, step_in_process  # noqa: E402
from unity_gym.player.academy import AgentBatch, SceneContext  # noqa: E402
from unity_gym.player.scenes import soccer_twos  # noqa: E402

__all__ = ["OUTCOMES", "Outcomes", "main", "play_outcomes"]

#: The ways a game ends, for the trained team.
OUTCOMES = ("won: our shot", "won: their own goal", "lost: our own goal", "lost: their shot",
            "drawn: time-out")  # fmt: skip
#: The scene's ray sensors in wire order (forward, backward).
_SENSORS = (soccer_twos.FORWARD_RAYS, soccer_twos.BACKWARD_RAYS)


@dataclass
class Outcomes:
    """What happened in the games played.

    Attributes:
        counts: games per entry of :data:`OUTCOMES`.
        steps: per outcome, the steps each game of it lasted.
        actions: per ``True`` (the ball in sight) / ``False``, counts of the trained team's
            ``(forward, sideways, turn)`` branch values at its decisions.
    """

    counts: Counter[str] = field(default_factory=Counter)
    steps: dict[str, list[int]] = field(default_factory=dict)
    actions: dict[bool, Counter[tuple[int, int, int]]] = field(
        default_factory=lambda: {True: Counter(), False: Counter()}
    )

    @property
    def games(self) -> int:
        """Games played."""
        return sum(self.counts.values())

    def share(self, prefix: str) -> float:
        """The share of games whose outcome starts with ``prefix`` (``won``, ``lost``, ...)."""
        return sum(n for key, n in self.counts.items() if key.startswith(prefix)) / self.games

    def branch_shares(self, in_sight: bool, branch: int) -> list[float]:
        """How often each value (0, 1, 2) of ``branch`` was chosen, the ball in sight or not."""
        chosen = self.actions[in_sight]
        total = sum(chosen.values())
        per_value = [sum(n for key, n in chosen.items() if key[branch] == v) for v in range(3)]
        return [n / total if total else float("nan") for n in per_value]

    def report(self) -> str:
        """A few lines for the console."""
        lines = [
            f"{self.games} games: won {self.share('won'):.0%}, lost {self.share('lost'):.0%}, "
            f"drawn {self.share('drawn'):.0%}"
        ]
        for outcome in OUTCOMES:
            steps = self.steps.get(outcome, [])
            median = f", median {np.median(steps):.0f} steps" if steps else ""
            lines.append(f"  {outcome:<20} {self.counts[outcome]:4d}{median}")
        names = ("forward (none/fwd/back)", "sideways (none/right/left)", "turn (none/left/right)")
        for in_sight in (True, False):
            decisions = sum(self.actions[in_sight].values())
            lines.append(f"  ball {'in' if in_sight else 'out of'} sight, {decisions} decisions:")
            for branch, name in enumerate(names):
                shares = " / ".join(f"{s:.2f}" for s in self.branch_shares(in_sight, branch))
                lines.append(f"    {name:<27} {shares}")
        return "\n".join(lines)


def _ball_in_sight(observations: Sequence[np.ndarray]) -> np.ndarray:
    """Per agent: whether a ray of the newest stacked report of either sensor hits the ball
    (Unity's per-ray layout: one-hot tag, no-hit flag, hit fraction)."""
    seen = np.zeros(len(observations[0]), dtype=bool)
    for stacked, spec in zip(observations, _SENSORS, strict=True):
        newest = stacked[:, -spec.observation_size :].reshape(len(stacked), -1, spec.num_tags + 2)
        seen |= (newest[:, :, soccer_twos.BALL_TAG] > 0).any(axis=1)
    return seen


class _RefereedScene(soccer_twos.SoccerTwosScene):
    """SoccerTwos noting the last touch and the end of each game (see :func:`play_outcomes`)."""

    team: OnnxPolicy | None
    rng: np.random.Generator
    outcomes: Outcomes
    wanted: int

    def setup(self, context: SceneContext) -> None:
        super().setup(context)
        fields = context.area_count
        self.trained = np.arange(fields) % 2  # the trained team of each field's game
        self.last_touch = np.full(fields, -1)

    def _collide_ball(self, live: np.ndarray) -> np.ndarray:
        touched = super()._collide_ball(live)
        for field_index, player in zip(*np.nonzero(touched), strict=True):
            self.last_touch[field_index] = player
        return touched

    def _goal(self, fields: np.ndarray, scorers: np.ndarray) -> None:
        for field_index, scorer in zip(fields, scorers, strict=True):
            ours = scorer == self.trained[field_index]
            toucher = self.last_touch[field_index]
            by_scorer = toucher < 0 or toucher // 2 == scorer
            if ours:
                outcome = OUTCOMES[0] if by_scorer else OUTCOMES[1]
            else:
                outcome = OUTCOMES[3] if by_scorer else OUTCOMES[2]
            self._end(int(field_index), outcome, int(self.timer[field_index]))
        super()._goal(fields, scorers)

    def after_academy_step(self) -> None:
        limit = self.max_environment_steps
        if limit > 0:
            for field_index in np.flatnonzero(self.timer + 1 >= limit):
                self._end(int(field_index), OUTCOMES[4], limit)
        super().after_academy_step()

    def _end(self, field_index: int, outcome: str, steps: int) -> None:
        if self.outcomes.games < self.wanted:  # games ending on the same step as the last one
            self.outcomes.counts[outcome] += 1
            self.outcomes.steps.setdefault(outcome, []).append(steps)
        self.trained[field_index] = 1 - self.trained[field_index]
        self.last_touch[field_index] = -1

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        mine = self.trained[slots // 2] == batch.spec.team_id
        actions = self.rng.integers(0, 3, size=(slots.size, 3)).astype(np.int32)
        if mine.any():
            if self.team is None:
                chosen = super().heuristic(batch, slots, observations)[1][mine]
            else:
                found = self.team.run([obs[mine] for obs in observations])
                chosen = np.asarray(found["discrete_actions"], np.int32)
            actions[mine] = chosen
            in_sight = _ball_in_sight([obs[mine] for obs in observations])
            for sees, row in zip(in_sight, chosen, strict=True):
                self.outcomes.actions[bool(sees)][(int(row[0]), int(row[1]), int(row[2]))] += 1
        return np.zeros((slots.size, 0), np.float32), actions


def play_outcomes(model: Path | None, games: int, seed: int = 1, sampled: bool = False) -> Outcomes:
    """Play ``games`` games of SoccerTwos, ``model``'s team (None: the scene's heuristic team)
    against a random team, on the scene's eight fields at once.

    Args:
        model: an exported SoccerTwos policy (``.onnx``), or None.
        games: games to count (the first ``games`` to end).
        seed: seeds the scene and the random team.
        sampled: the model plays its sampled actions rather than its deterministic ones.

    Raises:
        FileNotFoundError: ``model`` does not exist.
        ValueError: ``games`` is not positive, or the model is recurrent or takes other
            observations than SoccerTwos' two ray sensors.
    """
    if games <= 0:
        raise ValueError(f"games must be positive, got {games}")
    scene = _RefereedScene({})
    scene.team = None if model is None else OnnxPolicy(model, sampled)
    scene.rng = np.random.default_rng(seed)
    scene.outcomes = Outcomes()
    scene.wanted = games
    step_in_process(scene, seed, lambda: scene.outcomes.games >= games)
    return scene.outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Play and print the outcomes (:func:`benchmarks.policy_eval.outcomes_main`)."""
    description = __doc__.split("\n", 1)[0]
    return outcomes_main(argv, description, play_outcomes, "games", 200, "a random team")


if __name__ == "__main__":
    sys.exit(main())
