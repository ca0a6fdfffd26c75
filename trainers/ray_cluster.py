"""The Ray cluster of a run with ``env_settings.backend: ray`` (``unity-train --backend ray``).

The trainer stays in the driver process; each game and its worker run as one Ray actor (see
:mod:`unity_gym.vector.backends.ray_pool`), placed by Ray on any node with room for the
per-game resources (``ray_game_cpus`` CPUs plus ``ray_game_resources``), spread over the nodes.

Which cluster: ``ray_address`` (``host:port``, ``auto`` or ``ray://...``) is joined; without it
a Ray instance already running on this machine is joined, else a local one is started with
enough logical CPUs for every game (at least the machine's cores); ``local`` always starts one.
Every node needs ``unity-gym`` (and the game build, at the same path) installed.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from trainers.settings import ConfigError, EnvironmentSettings

__all__ = ["RayCluster", "RaySetupError", "connect_ray"]

logger = logging.getLogger(__name__)


class RaySetupError(ConfigError):
    """Ray is missing, or its cluster cannot be reached."""


@dataclass
class RayCluster:
    """A connection to the Ray cluster of a run.

    Attributes:
        address: the cluster's address (``"local"`` for an instance started by this run).
        actor_options: the options of every game actor (resources, spreading).
        started_here: whether this run started the Ray instance (it stops it on close).
        connected_here: whether this run connected to Ray (False when the calling program had
            already initialized Ray: its connection is left alone on close).
    """

    address: str
    actor_options: dict[str, Any] = field(default_factory=dict)
    started_here: bool = False
    connected_here: bool = True

    def describe(self) -> str:
        """One line: where the cluster is, its nodes and CPUs."""
        import ray

        nodes = [node for node in ray.nodes() if node.get("Alive")]
        cpus = ray.cluster_resources().get("CPU", 0.0)
        return f"Ray cluster at {self.address}: {len(nodes)} node(s), {cpus:g} CPU(s)"

    def close(self) -> None:
        """Disconnect from the cluster if this run connected (stopping an instance it started)."""
        import ray

        if self.connected_here and ray.is_initialized():
            ray.shutdown()


def connect_ray(settings: EnvironmentSettings, num_games: int) -> RayCluster:
    """Join or start the run's Ray cluster (module documentation).

    Args:
        settings: the run's ``env_settings`` (``ray_address``, ``ray_game_cpus``,
            ``ray_game_resources``).
        num_games: the run's game processes (sizes a local instance started here).

    Raises:
        RaySetupError: Ray is not installed, or the cluster at ``ray_address`` cannot be
            reached.
    """
    try:
        import ray
    except ImportError:
        raise RaySetupError(
            "env_settings.backend: 'ray' needs Ray, which is not installed. Install it with "
            '`pip install "unity-gym[ray]"`, or train with --backend subprocess.'
        ) from None
    options: dict[str, Any] = {
        "num_cpus": settings.ray_game_cpus,
        "scheduling_strategy": "SPREAD",
    }
    if settings.ray_game_resources:
        options["resources"] = {k: float(v) for k, v in settings.ray_game_resources.items()}
    quiet: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
    if ray.is_initialized():
        return RayCluster("the running Ray instance", options, connected_here=False)
    address = settings.ray_address
    if address is not None and address != "local":
        try:
            ray.init(address=address, logging_level=logging.WARNING)
        except (ConnectionError, ValueError, RuntimeError) as error:
            raise RaySetupError(
                f"env_settings.ray_address: cannot join the Ray cluster at {address!r}: {error}. "
                "Check the address (host:port of the head node, as `ray start --head` prints "
                "it) or leave --ray-address out to start a local Ray instance."
            ) from error
        return RayCluster(address, options)
    if address is None and _local_instance_running():
        try:
            ray.init(address="auto", logging_level=logging.WARNING)
            return RayCluster("the local Ray instance", options)
        except ConnectionError:
            pass  # it went away: start one
    cpus = max(os.cpu_count() or 1, int(num_games * settings.ray_game_cpus + 0.999))
    ray.init(address="local", num_cpus=cpus, **quiet)
    return RayCluster("local", options, started_here=True)


def _local_instance_running() -> bool:
    """Whether ``RAY_ADDRESS`` names a cluster or a Ray instance runs on this machine.

    Looks for live GCS processes rather than trusting Ray's address file, which a crashed
    instance leaves behind (joining it would wait for a dead head).
    """
    if os.environ.get("RAY_ADDRESS"):
        return True
    try:
        from ray._private.services import find_gcs_addresses

        return bool(find_gcs_addresses())
    except Exception:  # a private helper: if it moved, start an instance of our own
        return False
