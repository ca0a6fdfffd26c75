"""The version of unity-gym, in a module of its own so that any module can read it without
importing the package root (``unity_gym.__version__`` re-exports it)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
"""unity-gym's release (PEP 440); the training-analytics channel reports it to the game."""
