"""What one game process is, before any front drives it.

``settings`` holds :class:`GameSettings` (the keywords that describe one game process, shared by
every front, and how it is launched through the bridge); ``catalogue`` is the built-in scene
catalogue, the only module outside :mod:`unity_gym.player` that asks the headless player
anything (scene names, the behaviors a scene declares, agents per area, canonical names, the
cached launchers); ``env_params`` is the one declaration of environment parameters and their
samplers (ML-Agents' ``environment_parameters`` shape), used by the fronts and the trainers;
``faults`` holds the restart limits (:class:`RestartPolicy`, ``mlagents-learn``'s) and
``supervisor`` the one :class:`GameSupervisor` that launches, exchanges with and restarts a game
for every front (the Gymnasium env, the vector env's workers, the PettingZoo envs; a Ray actor
that is lost hosted one, and its front replaces it under the same limits).
Gymnasium ids live in :mod:`unity_gym.registration`, which re-exports these names.

The package root imports nothing, so importing one module does not pull in the others.
"""

from __future__ import annotations

__all__: list[str] = []
