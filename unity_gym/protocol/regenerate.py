"""Regenerate the Python protobuf modules from the committed ``.proto`` files.

Run from anywhere (needs the ``dev`` extra, which provides ``grpcio-tools``)::

    python -m unity_gym.protocol.regenerate

The generated ``*_pb2.py`` / ``*_pb2.pyi`` files are committed next to their ``.proto`` sources;
``tests/protocol/test_generated_code.py`` fails when they are stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["PROTO_DIR", "REPO_ROOT", "generate", "main"]

PROTO_DIR = Path(__file__).resolve().parent / "communicator_objects"
REPO_ROOT = PROTO_DIR.parents[2]


def generate(out_dir: Path) -> list[Path]:
    """Compile every ``.proto`` in :data:`PROTO_DIR` into ``out_dir`` (mirroring package paths).

    Returns:
        The generated files, relative to ``out_dir``.

    Raises:
        RuntimeError: if ``grpcio-tools`` is missing or ``protoc`` reports an error.
    """
    try:
        from grpc_tools import protoc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "grpcio-tools is required to regenerate the protocol code: pip install -e '.[dev]'"
        ) from exc
    protos = sorted(p.relative_to(REPO_ROOT).as_posix() for p in PROTO_DIR.glob("*.proto"))
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{REPO_ROOT}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed for: {' '.join(protos)}")
    generated_dir = out_dir / PROTO_DIR.relative_to(REPO_ROOT)
    return sorted(p.relative_to(out_dir) for p in generated_dir.glob("*_pb2.py*"))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: regenerate in place (default) or into ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT, help="output root (default: repo)")
    ns = parser.parse_args(argv)
    for path in generate(ns.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
