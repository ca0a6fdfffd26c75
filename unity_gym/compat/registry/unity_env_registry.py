"""``mlagents_envs.registry.unity_env_registry``: a Mapping of environments that ``make`` opens.

Official facts followed (ml-agents 1.1.0 ``UnityEnvRegistry``): the registry is a read-only
:class:`~collections.abc.Mapping` from identifier to entry; :meth:`UnityEnvRegistry.register`
adds an entry (the latest under an identifier wins); :meth:`UnityEnvRegistry.register_from_yaml`
records a manifest (a local path, or a url when it starts with ``http``) that is read lazily, on
the next lookup, ``len`` or iteration, each of its ``environments`` items becoming a
:class:`RemoteRegistryEntry`; :meth:`UnityEnvRegistry.clear` drops every entry and pending
manifest; a missing identifier raises :class:`KeyError`. :data:`default_registry` reads the
official 1.1.0 manifest (:data:`DEFAULT_MANIFEST_URL`) this way.

unity_gym's additions to :data:`default_registry`: it also holds a
:class:`~unity_gym.compat.registry.builtin_registry_entry.BuiltinRegistryEntry` for every
ML-Agents example the headless player ships (``"3DBall"``, ``"Basic"``, ``"GridWorld"``, ...),
which opens the built-in scene with no download and which the manifest's entry of the same name
does not replace. When the manifest cannot be fetched (no network), the default registry keeps
its built-in entries, logs one warning, and tries the manifest again only when an identifier it
does not hold is looked up; that lookup then raises a :class:`KeyError` saying the manifest
could not be read and which environments are built in. Registries you create yourself behave as
the official ones (a manifest that cannot be read raises).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from unity_gym.compat.logging_util import get_logger
from unity_gym.compat.registry.base_registry_entry import BaseRegistryEntry
from unity_gym.compat.registry.binary_utils import load_local_manifest, load_remote_manifest
from unity_gym.compat.registry.builtin_registry_entry import BuiltinRegistryEntry, builtin_entries
from unity_gym.compat.registry.remote_registry_entry import RemoteRegistryEntry

__all__ = [
    "DEFAULT_MANIFEST_URL",
    "BaseRegistryEntry",
    "RemoteRegistryEntry",
    "UnityEnvRegistry",
    "default_registry",
    "load_local_manifest",
    "load_remote_manifest",
]

logger = get_logger(__name__)

DEFAULT_MANIFEST_URL: Final = (
    "https://storage.googleapis.com/mlagents-test-environments/1.1.0/manifest.yaml"
)
"""The manifest the official :data:`default_registry` reads (ml-agents 1.1.0)."""


class UnityEnvRegistry(Mapping[str, BaseRegistryEntry]):
    """A library of Unity environments: ``registry[identifier].make(**kwargs)`` opens one.

    ``registry[identifier]`` is the entry (``identifier``, ``expected_reward``,
    ``description``, ``make``); ``list(registry)`` the identifiers. Manifests registered with
    :meth:`register_from_yaml` are read on the first lookup, ``len`` or iteration after it.
    """

    def __init__(self) -> None:
        self._REGISTERED_ENVS: dict[str, BaseRegistryEntry] = {}
        self._manifests: list[str] = []
        self._sync = True

    def register(self, new_entry: BaseRegistryEntry) -> None:
        """Add ``new_entry`` under its ``identifier``, replacing an entry of that name."""
        self._REGISTERED_ENVS[new_entry.identifier] = new_entry

    def register_from_yaml(self, path_to_yaml: str) -> None:
        """Record a manifest to read on the next access (lazily, as officially).

        The YAML holds ``environments:``, a list of one-key mappings ``<identifier>:`` to the
        keywords of :class:`RemoteRegistryEntry` (``expected_reward``, ``description``,
        ``linux_url``, ``darwin_url``, ``win_url``, optionally ``additional_args``).

        Args:
            path_to_yaml: a local file, or a url (starting with ``http``).
        """
        self._manifests.append(path_to_yaml)
        self._sync = False

    def _read_manifest(self, path_to_yaml: str) -> list[RemoteRegistryEntry]:
        if path_to_yaml[:4] == "http":
            manifest = load_remote_manifest(path_to_yaml)
        else:
            manifest = load_local_manifest(path_to_yaml)
        entries = []
        for item in manifest["environments"]:
            identifier = next(iter(item))
            arguments = dict(item[identifier])
            arguments["identifier"] = identifier
            entries.append(RemoteRegistryEntry(**arguments))
        return entries

    def _register_from_manifest(self, entry: RemoteRegistryEntry) -> None:
        self.register(entry)

    def _load_all_manifests(self) -> None:
        if self._sync:
            return
        for path_to_yaml in self._manifests:
            for entry in self._read_manifest(path_to_yaml):
                self._register_from_manifest(entry)
        self._manifests = []
        self._sync = True

    def clear(self) -> None:
        """Drop every entry and every manifest not read yet."""
        self._REGISTERED_ENVS.clear()
        self._manifests = []
        self._sync = True

    def __getitem__(self, identifier: str) -> BaseRegistryEntry:
        """The entry registered under ``identifier``.

        Raises:
            KeyError: if there is none.
        """
        self._load_all_manifests()
        if identifier not in self._REGISTERED_ENVS:
            raise KeyError(f"The entry {identifier} is not present in the registry.")
        return self._REGISTERED_ENVS[identifier]

    def __len__(self) -> int:
        self._load_all_manifests()
        return len(self._REGISTERED_ENVS)

    def __iter__(self) -> Iterator[str]:
        self._load_all_manifests()
        yield from list(self._REGISTERED_ENVS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({sorted(self._REGISTERED_ENVS)!r})"


class _DefaultRegistry(UnityEnvRegistry):
    """:data:`default_registry`'s class: built-in examples first, the remote manifest tolerated."""

    def __init__(self) -> None:
        super().__init__()
        self._manifest_errors: dict[str, str] = {}

    def _builtin_ids(self) -> list[str]:
        return [
            key
            for key, entry in self._REGISTERED_ENVS.items()
            if isinstance(entry, BuiltinRegistryEntry)
        ]

    def _register_from_manifest(self, entry: RemoteRegistryEntry) -> None:
        existing = self._REGISTERED_ENVS.get(entry.identifier)
        if not isinstance(existing, BuiltinRegistryEntry):
            self.register(entry)

    def _load_all_manifests(self) -> None:
        if self._sync:
            return
        failed: list[str] = []
        for path_to_yaml in self._manifests:
            try:
                entries = self._read_manifest(path_to_yaml)
            except Exception as error:  # any failure leaves the built-in entries usable
                if path_to_yaml not in self._manifest_errors:
                    logger.warning(
                        f"The registry manifest {path_to_yaml} could not be read ({error}); "
                        f"only the built-in environments are available: "
                        f"{', '.join(self._builtin_ids())}."
                    )
                self._manifest_errors[path_to_yaml] = str(error)
                failed.append(path_to_yaml)
                continue
            self._manifest_errors.pop(path_to_yaml, None)
            for entry in entries:
                self._register_from_manifest(entry)
        # Failed manifests wait for a lookup of a missing identifier (no retry on every access).
        self._manifests = failed
        self._sync = True

    def clear(self) -> None:
        """Drop every entry (built-in ones too) and every manifest not read yet."""
        super().clear()
        self._manifest_errors.clear()

    def __getitem__(self, identifier: str) -> BaseRegistryEntry:
        """The entry under ``identifier``; a missing one retries a manifest that failed.

        Raises:
            KeyError: if there is none; the message says when the manifest could not be read
                and lists the built-in environments.
        """
        self._load_all_manifests()
        if identifier not in self._REGISTERED_ENVS and self._manifests:
            self._sync = False
            self._load_all_manifests()
        if identifier in self._REGISTERED_ENVS:
            return self._REGISTERED_ENVS[identifier]
        message = f"The entry {identifier} is not present in the registry."
        if self._manifest_errors:
            reasons = "; ".join(f"{url}: {why}" for url, why in self._manifest_errors.items())
            message += (
                f" The remote manifest of downloadable environments could not be read "
                f"({reasons}), so it may be one of those: connect to the network to download it, "
                f"or pass a build of your own to UnityEnvironment(file_name=...)."
            )
        builtin = self._builtin_ids()
        if builtin:
            message += f" Built in, with no download: {', '.join(builtin)}."
        raise KeyError(message)


def _make_default_registry() -> UnityEnvRegistry:
    registry = _DefaultRegistry()
    for entry in builtin_entries():
        registry.register(entry)
    registry.register_from_yaml(DEFAULT_MANIFEST_URL)
    return registry


default_registry: Final[UnityEnvRegistry] = _make_default_registry()
"""The official examples: built-in scenes (no download) plus the official remote manifest."""
