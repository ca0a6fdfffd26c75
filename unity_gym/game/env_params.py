"""Environment parameters (``env_params=``): the sampler schema, its checks, and how a value is
sent to a game on its ``EnvironmentParametersChannel``.

A value is a finite number, or a sampler dict in ML-Agents' YAML shape, flat
(``{"sampler_type": "uniform", "min_value": 1, "max_value": 2, "seed": 3}``) or with a nested
``"sampler_parameters"`` dict. :data:`SAMPLER_PARAMETERS` is the one declaration of the sampler
types and their parameters; ``trainers.settings`` parses YAML against the same table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["SAMPLER_PARAMETERS", "apply_env_param", "check_env_param", "sampler_parameters"]


SAMPLER_PARAMETERS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "uniform": ("min_value", "max_value"),
        "gaussian": ("mean", "st_dev"),
        "multirangeuniform": ("intervals",),
        "constant": ("value",),
    }
)
"""Each sampler type and the parameters it takes (besides the optional ``seed``).

Facts followed: ML-Agents' ``ParameterRandomizationType`` (``uniform``, ``gaussian``,
``multirangeuniform``, ``constant``) and the fields of its ``UniformSettings``,
``GaussianSettings``, ``MultiRangeUniformSettings`` and ``ConstantSettings``. A ``constant``
sampler is sent as a plain float parameter, as ML-Agents does.
"""


def sampler_parameters(key: str, value: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(sampler type, parameters)`` of a sampler dict, flat or with ``sampler_parameters``.

    Raises:
        ValueError: an unknown sampler type, or missing or unknown parameters.
    """
    sampler = str(value.get("sampler_type", "")).lower()
    if sampler not in SAMPLER_PARAMETERS:
        raise ValueError(
            f"env_params[{key!r}]: sampler_type must be one of {sorted(SAMPLER_PARAMETERS)}, got "
            f"{value.get('sampler_type')!r}."
        )
    nested = value.get("sampler_parameters")
    parameters = dict(nested) if isinstance(nested, Mapping) else {}
    parameters.update(
        {k: v for k, v in value.items() if k not in ("sampler_type", "sampler_parameters")}
    )
    expected = set(SAMPLER_PARAMETERS[sampler])
    missing = expected - set(parameters)
    unknown = set(parameters) - expected - {"seed"}
    if missing or unknown:
        raise ValueError(
            f"env_params[{key!r}]: a {sampler} sampler needs {sorted(expected)} (and optionally "
            f"seed); missing {sorted(missing)}, unknown {sorted(unknown)}."
        )
    return sampler, parameters


def check_env_param(key: str, value: Any) -> None:
    """Check one ``env_params`` entry: a finite number or a sampler dict.

    Raises:
        ValueError: what is wrong with it and what a valid value looks like.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"env_params keys must be non-empty strings, got {key!r}.")
    if isinstance(value, Mapping):
        sampler_parameters(key, value)
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(
            f"env_params[{key!r}] must be a finite number or a sampler dict such as "
            f"{{'sampler_type': 'uniform', 'min_value': 0, 'max_value': 1}}, got {value!r}."
        )


def apply_env_param(channel: Any, key: str, value: Any, default_seed: int) -> None:
    """Queue one environment parameter on an ``EnvironmentParametersChannel``.

    Args:
        channel: the channel (anything with its ``set_*_parameter(s)`` methods).
        key: the parameter name.
        value: a number or a sampler dict (see :func:`check_env_param`).
        default_seed: the sampler seed when the dict has none (the game's seed).
    """
    if not isinstance(value, Mapping):
        channel.set_float_parameter(key, float(value))
        return
    sampler, parameters = sampler_parameters(key, value)
    seed = int(parameters.pop("seed", default_seed))
    if sampler == "constant":
        channel.set_float_parameter(key, float(parameters["value"]))
    elif sampler == "uniform":
        channel.set_uniform_sampler_parameters(key, seed=seed, **parameters)
    elif sampler == "gaussian":
        channel.set_gaussian_sampler_parameters(key, seed=seed, **parameters)
    else:
        channel.set_multirangeuniform_sampler_parameters(key, seed=seed, **parameters)
