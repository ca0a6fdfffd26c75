"""How Tennis points against a random racket end: which of the scene's rules decided each point,
and against whom. A diagnostic beside :mod:`benchmarks.policy_eval`.

:func:`benchmarks.policy_eval.play_against_random` gives the Tennis claim's win rate, through the
PettingZoo front over gRPC. This module plays the same match in this process: it steps the
built-in scene's Academy directly (as the player does without a trainer) on all 18 courts at
once and sees what the front does not: the rule that ended each point (the rules of
:mod:`unity_gym.player.scenes.tennis`, Unity's ``HitWall``). A policy trained by self-play can
lose to random actions in ways its self-play opponents never punish; for example, long balls
that a returning opponent always intercepts fly out over a random opponent's back wall.

The trained side is ``model``, an ONNX policy exported by ``unity-train`` (deterministic actions
unless ``sampled``), or the scene's own heuristic without a model. On each court it alternates
between the two rackets from one point to the next. The random side draws each action uniformly
in [-1, 1] at each decision. Seeded: the same seed plays the same points.

Usage::

    python -m benchmarks.tennis_outcomes [MODEL.onnx] [--points 2000] [--sampled] [--seed 1]
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
from unity_gym.player.scenes import tennis  # noqa: E402

__all__ = ["RULES", "Outcomes", "main", "play_outcomes"]

#: The rules that end a point, each naming what the side that loses the point did.
RULES = (
    "did not return the serve",  # the served ball landed on its floor
    "let the ball bounce twice",  # a second bounce on its floor
    "hit the ball onto its own floor",
    "hit the ball twice in a row",
    "hit the ball into the net",
    "hit the ball out over the far wall",  # no bounce on the other side first
    "hit the ball into its own back wall",
    "did not return a ball that bounced",  # it reached its back wall after a valid bounce
)


@dataclass
class Outcomes:
    """The points played: per rule of :data:`RULES`, how many the trained side lost by it
    (``lost``) and how many the random side lost by it (``won``)."""

    lost: Counter[str] = field(default_factory=Counter)
    won: Counter[str] = field(default_factory=Counter)

    @property
    def points(self) -> int:
        """Points played."""
        return sum(self.lost.values()) + sum(self.won.values())

    @property
    def win_rate(self) -> float:
        """The trained side's share of the points."""
        return sum(self.won.values()) / self.points

    def report(self) -> str:
        """A table: each rule's points lost by the trained side and by the random side."""
        lines = [f"  {self.points} points, trained side won {self.win_rate:.1%}"]
        lines.append(f"  {'the side that lost the point ...':<42} {'trained':>8} {'random':>8}")
        for rule in RULES:
            lost, won = self.lost[rule], self.won[rule]
            if lost or won:
                lines.append(f"  {rule:<42} {lost:8d} {won:8d}")
        return "\n".join(lines)


class _RefereedScene(tennis.TennisScene):
    """Tennis noting the rule that ends each point (see :func:`play_outcomes`)."""

    policy: OnnxPolicy | None
    rng: np.random.Generator
    outcomes: Outcomes
    wanted: int

    def setup(self, context: SceneContext) -> None:
        super().setup(context)
        self.trained = np.arange(context.area_count) % 2  # the trained racket of each court

    def _racket_contacts(self, live: np.ndarray, winner: np.ndarray) -> None:
        before = winner.copy()
        super()._racket_contacts(live, winner)
        for area in np.flatnonzero(winner != before):
            self._note(int(area), 1 - int(winner[area]), "hit the ball twice in a row")

    def _floor_net_and_walls(self, live: np.ndarray, winner: np.ndarray) -> None:
        # The rules' conditions, read before the scene applies them (a bounce changes them).
        ball, velocity, radius = self.ball_position, self.ball_velocity, self.ball_radius
        side = np.where(ball[:, 0] < 0.0, 0, 1)
        own_floor = np.where(side == 0, tennis.FLOOR_A, tennis.FLOOR_B)
        landed = (ball[:, 1] - radius <= tennis.FLOOR_Y) & (velocity[:, 1] < 0.0)
        served = self.last_floor == tennis.SERVICE
        own_hit = self.last_hitter == side
        bounced_here = self.last_floor == own_floor
        before = winner.copy()
        super()._floor_net_and_walls(live, winner)
        for area in np.flatnonzero(winner != before):
            loser = 1 - int(winner[area])
            if landed[area] and (served[area] or own_hit[area] or bounced_here[area]):
                if served[area]:
                    rule = "did not return the serve"
                elif own_hit[area]:
                    rule = "hit the ball onto its own floor"
                else:
                    rule = "let the ball bounce twice"
            elif abs(ball[area, 0]) < radius[area] + 1e-9 and loser == self.last_hitter[area]:
                rule = "hit the ball into the net"
            else:  # a back wall: the loser's own, or the far one for the hitter
                wall = 0 if ball[area, 0] < 0.0 else 1
                if wall != loser:
                    rule = "hit the ball out over the far wall"
                elif self.last_hitter[area] == loser:
                    rule = "hit the ball into its own back wall"
                else:
                    rule = "did not return a ball that bounced"
            self._note(int(area), loser, rule)

    def _note(self, area: int, loser: int, rule: str) -> None:
        if self.outcomes.points < self.wanted:  # points ending on the same step as the last one
            ours = loser == self.trained[area]
            (self.outcomes.lost if ours else self.outcomes.won)[rule] += 1
        self.trained[area] = 1 - self.trained[area]

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        mine = self.trained[slots] == batch.spec.team_id
        actions = self.rng.uniform(-1.0, 1.0, size=(slots.size, 3)).astype(np.float32)
        if mine.any():
            if self.policy is None:
                chosen = super().heuristic(batch, slots, observations)[0][mine]
            else:
                found = self.policy.run([obs[mine] for obs in observations])
                chosen = np.asarray(found["continuous_actions"], np.float32)
            actions[mine] = chosen
        return actions, np.zeros((slots.size, 0), np.int32)


def play_outcomes(
    model: Path | None, points: int, seed: int = 1, sampled: bool = False
) -> Outcomes:
    """Play ``points`` points of Tennis, ``model`` (None: the scene's heuristic) against random
    actions, on the scene's 18 courts at once.

    Args:
        model: an exported Tennis policy (``.onnx``), or None.
        points: points to count (the first ``points`` to end).
        seed: seeds the scene and the random side.
        sampled: the model plays its sampled actions rather than its deterministic ones.

    Raises:
        FileNotFoundError: ``model`` does not exist.
        ValueError: ``points`` is not positive, or the model is recurrent.
    """
    if points <= 0:
        raise ValueError(f"points must be positive, got {points}")
    scene = _RefereedScene({})
    scene.policy = None if model is None else OnnxPolicy(model, sampled)
    scene.rng = np.random.default_rng(seed)
    scene.outcomes = Outcomes()
    scene.wanted = points
    step_in_process(scene, seed, lambda: scene.outcomes.points >= points)
    return scene.outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Play and print the outcomes (:func:`benchmarks.policy_eval.outcomes_main`)."""
    description = __doc__.split("\n", 1)[0]
    return outcomes_main(argv, description, play_outcomes, "points", 2000, "random actions")


if __name__ == "__main__":
    sys.exit(main())
