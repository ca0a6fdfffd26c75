"""Which team learns, for every ghost trainer of a run, and the ELO exchange between them.

ML-Agents facts followed (``mlagents/trainers/ghost/controller.py``): the first team id that
subscribes learns first, the others wait in a queue in the order they subscribed; a team change
puts the learning team at the back of the queue and takes the next one from the front. After a
game of the learning team, the rating of the opponent it faced (the policy that the ghost trainer
of the other team deploys) moves by the opposite of the learner's change. One controller serves
all the ghost trainers of a run, so that in an asymmetric game (a behavior name per team) only
one team of all learns at a time.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Protocol

from trainers.ghost.elo import elo_change

__all__ = ["GhostController", "RatedOpponents"]

logger = logging.getLogger("trainers")


class RatedOpponents(Protocol):
    """What the controller needs from a ghost trainer: the rating of the snapshot it deploys."""

    behavior_name: str

    @property
    def opponent_elo(self) -> float:
        """The ELO of the snapshot the trainer's non-learning teams play with."""
        ...

    def change_opponent_elo(self, change: float) -> None:
        """Lower the deployed snapshot's ELO by ``change``."""
        ...


class GhostController:
    """The learning-team schedule of a run and the ELO bookkeeping across its ghost trainers."""

    def __init__(self) -> None:
        self._learning_team: int | None = None
        self._queue: deque[int] = deque()
        self._trainers: dict[int, RatedOpponents] = {}

    @property
    def learning_team(self) -> int:
        """The team id that learns now.

        Raises:
            RuntimeError: no team subscribed yet.
        """
        if self._learning_team is None:
            raise RuntimeError("no team has subscribed to the ghost controller yet.")
        return self._learning_team

    @property
    def teams(self) -> list[int]:
        """Every subscribed team id, in subscription order."""
        return list(self._trainers)

    def subscribe(self, team: int, trainer: RatedOpponents) -> None:
        """Register ``trainer`` as the one that plays ``team`` (again: nothing changes).

        Raises:
            ValueError: another trainer already plays ``team``.
        """
        known = self._trainers.get(team)
        if known is trainer:
            return
        if known is not None:
            raise ValueError(
                f"team {team} is played by both {known.behavior_name!r} and "
                f"{trainer.behavior_name!r}; in a self-play game every behavior name must play "
                "its own teams (behavior ids '<name>?team=<t>' with distinct <t>)."
            )
        self._trainers[team] = trainer
        if self._learning_team is None:
            self._learning_team = team
        else:
            self._queue.append(team)

    def change_learning_team(self, step: int) -> None:
        """The next team in the queue learns; the current one goes to the back of the queue."""
        if self._learning_team is None or not self._queue:
            return
        self._queue.append(self._learning_team)
        self._learning_team = self._queue.popleft()
        logger.debug("Self-play: team %d learns from step %d.", self._learning_team, step)

    def rate_game(self, rating: float, result: float) -> float:
        """The learner's ELO change after a game with ``result`` (1 win, 0.5 draw, 0 loss)
        against the snapshot that another team's trainer deploys; that snapshot's ELO is moved
        by the opposite amount. As in ML-Agents, the opponent is the last other team in
        subscription order (ELO is meaningful for two teams)."""
        opponent_rating = 0.0
        others = [t for team, t in self._trainers.items() if team != self._learning_team]
        for trainer in others:
            opponent_rating = trainer.opponent_elo
        change = elo_change(rating, opponent_rating, result)
        for trainer in others:
            trainer.change_opponent_elo(change)
        return change

    def state_dict(self) -> dict[str, Any]:
        """The schedule: ``{"learning_team": int, "queue": [int, ...]}``."""
        return {
            "learning_team": -1 if self._learning_team is None else int(self._learning_team),
            "queue": [int(team) for team in self._queue],
        }

    def load_state_dict(self, state: dict[str, Any]) -> bool:
        """Restore what :meth:`state_dict` saved, if it names exactly the subscribed teams.

        Returns:
            Whether it was restored (False: the saved teams differ; nothing changes).
        """
        learning = int(state.get("learning_team", -1))
        queue = [int(team) for team in state.get("queue", [])]
        if sorted([learning, *queue]) != sorted(self._trainers):
            return False
        self._learning_team = learning
        self._queue = deque(queue)
        return True
