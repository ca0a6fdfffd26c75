"""The committed protobuf modules must be exactly what the committed ``.proto`` files generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from unity_gym.protocol import regenerate

pytest.importorskip("grpc_tools", reason="grpcio-tools (dev extra) is needed to regenerate")


def test_committed_generated_code_is_up_to_date(tmp_path: Path) -> None:
    generated = regenerate.generate(tmp_path)
    assert generated, "protoc produced no files"
    committed_dir = regenerate.PROTO_DIR
    fresh_dir = tmp_path / regenerate.PROTO_DIR.relative_to(regenerate.REPO_ROOT)
    fresh = {p.name: p.read_bytes() for p in fresh_dir.glob("*_pb2.py*")}
    committed = {p.name: p.read_bytes() for p in committed_dir.glob("*_pb2.py*")}
    assert sorted(fresh) == sorted(committed), "generated file set differs"
    stale = sorted(name for name in fresh if fresh[name] != committed[name])
    assert not stale, (
        f"stale generated code: {stale}; run `python -m unity_gym.protocol.regenerate`"
    )


def test_every_proto_has_generated_module() -> None:
    protos = {p.stem for p in regenerate.PROTO_DIR.glob("*.proto")}
    modules = {p.name.removesuffix("_pb2.py") for p in regenerate.PROTO_DIR.glob("*_pb2.py")}
    assert protos == modules
