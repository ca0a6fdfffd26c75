"""``python -m unity_gym.player``: run the headless player."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
