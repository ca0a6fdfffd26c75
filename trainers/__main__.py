"""``python -m trainers`` runs ``unity-train``."""

from __future__ import annotations

import sys

from trainers.cli import main

if __name__ == "__main__":
    sys.exit(main())
