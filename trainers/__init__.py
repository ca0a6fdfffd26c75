"""PPO and SAC trainers behind ``unity-train``, configured like ``mlagents-learn``.

Environments are used only through public Gymnasium vector interfaces (see
:mod:`trainers.envs`), so Unity games and plain Gymnasium environments train alike.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
