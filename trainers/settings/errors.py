"""Configuration errors: :class:`ConfigError` and :class:`UnsupportedFeatureError`."""

from __future__ import annotations

__all__ = ["ConfigError", "UnsupportedFeatureError"]


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range; the message says which and why."""


class UnsupportedFeatureError(ConfigError):
    """A valid ML-Agents configuration feature that these trainers do not implement yet."""


def _unsupported(path: str, feature: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"{path}: {feature} is a valid ML-Agents feature but is not supported by unity-train yet; "
        "remove this setting (or use mlagents-learn for it)."
    )
