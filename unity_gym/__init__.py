"""unity-gym: a modern Python side for Unity ML-Agents games."""

__version__ = "0.1.0"
