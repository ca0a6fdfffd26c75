"""Errors of the headless player."""

from __future__ import annotations

__all__ = ["PlayerError", "SceneError"]


class PlayerError(Exception):
    """The player cannot run as asked; the message says what is wrong and how to fix it."""


class SceneError(PlayerError):
    """A scene broke its contract (e.g. returned observations of the wrong shape)."""
