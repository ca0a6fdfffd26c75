"""Fixtures of the vector env tests: backends (threads, subprocesses, Ray) and a leak check."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from unity_gym.vector import UnityVectorEnv

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from vector_helpers import eventually, pid_alive  # noqa: E402

BACKENDS = ("inprocess", "subprocess", "ray")


def _uses_ray(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("backend") == "ray"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the Ray-backend tests last, once the rest of the session is done.

    The local Ray instance lives until the session ends, and a process that hosts a Ray driver
    cannot safely fork: a game launched afterwards from this process (in-process backend,
    single-agent fronts) may die between fork and exec.
    """
    items[:] = [item for item in items if not _uses_ray(item)] + [
        item for item in items if _uses_ray(item)
    ]


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[Any]:
    """A local Ray instance shared by the Ray-backend tests (skipped without Ray)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install unity-gym[ray])")
    started = not ray.is_initialized()
    if started:
        # address="local": a new instance even when a `ray start` cluster runs on this machine
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each worker backend in turn (Ray only when installed)."""
    if request.param == "ray":
        request.getfixturevalue("ray_instance")
    return str(request.param)


@pytest.fixture
def make_vector_env() -> Iterator[Callable[..., UnityVectorEnv]]:
    """``make_vector_env(**kwargs)``: a UnityVectorEnv closed after the test, games checked gone."""
    made: list[UnityVectorEnv] = []

    def make(**kwargs: Any) -> UnityVectorEnv:
        kwargs.setdefault("scene", "Stress")
        kwargs.setdefault("timeout_wait", 30)
        env = UnityVectorEnv(**kwargs)
        made.append(env)
        return env

    yield make
    pids = [pid for env in made for pid in env.game_pids if pid is not None]
    for env in made:
        env.close()
    assert eventually(lambda: not any(pid_alive(p) for p in pids)), (
        f"games {pids} outlived their vector envs"
    )
    workers = [p.name for p in multiprocessing.active_children() if "vector-worker" in p.name]
    assert not workers, f"worker processes {workers} outlived their vector envs"
