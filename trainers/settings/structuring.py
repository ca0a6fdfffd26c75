"""Generic structuring of YAML mappings into validated dataclasses (unknown keys, types,
ranges), with error messages that name the dotted path of the offending key.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from trainers.settings.errors import ConfigError

__all__ = []


def _structure(cls: type, data: Any, path: str) -> Any:
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys and wrong types."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of settings, got {data!r}.")
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if not f.name.endswith("_raw")]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            raise ConfigError(_unknown_key_message(path, str(key), names))
        kwargs[key] = _convert(hints[key], value, _join(path, key))
    instance = cls(**kwargs)
    _validate(instance, path)
    return instance


def _validate(instance: Any, path: str) -> None:
    validate = getattr(instance, "_validate", None)
    if validate is not None:
        validate(path)


def _convert(annotation: Any, value: Any, path: str) -> Any:
    """Convert a YAML value to ``annotation``; raise a ConfigError naming ``path`` otherwise."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if value is None:
            if len(options) < len(get_args(annotation)):
                return None
            raise ConfigError(f"{path}: a value is required.")
        if len(options) == 1:
            return _convert(options[0], value, path)
        raise ConfigError(f"{path}: cannot be set directly here.")
    if origin is Literal:
        choices = get_args(annotation)
        if value not in choices:
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"{path}: {value!r} is not valid; use one of {', '.join(map(str, choices))}{hint}."
            )
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {value!r}.")
        (item_type,) = get_args(annotation)
        return [_convert(item_type, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}.")
        return dict(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{path}: expected true or false, got {value!r}.")
    if annotation is int:
        number = _as_number(value, path, "an integer")
        if not float(number).is_integer():
            raise ConfigError(f"{path}: expected an integer, got {value!r}.")
        return int(number)
    if annotation is float:
        return float(_as_number(value, path, "a number"))
    if annotation is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{path}: expected a string, got {value!r}.")
    if dataclasses.is_dataclass(annotation):
        return _structure(annotation, value, path)  # type: ignore[arg-type]
    return value


def _as_number(value: Any, path: str, what: str) -> float | int:
    if isinstance(value, bool):
        raise ConfigError(f"{path}: expected {what}, got {value!r}.")
    if isinstance(value, (int, float)):
        number: float | int = value
    elif isinstance(value, str):
        try:
            number = float(value)  # PyYAML reads '3e-4' (no dot) as a string
        except ValueError:
            raise ConfigError(f"{path}: expected {what}, got {value!r}.") from None
    else:
        raise ConfigError(f"{path}: expected {what}, got {value!r}.")
    if isinstance(number, float) and not math.isfinite(number):
        raise ConfigError(f"{path}: expected a finite number, got {value!r}.")
    return number


def _check_positive(path: str, key: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{path}.{key}: must be greater than 0, got {value}.")


def _check_range(path: str, key: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        upper = "" if math.isinf(high) else f" and {high}"
        bound = f"at least {low}" if math.isinf(high) else f"between {low}{upper}"
        raise ConfigError(f"{path}.{key}: must be {bound}, got {value}.")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _unknown_key_message(path: str, key: str, valid: Any) -> str:
    valid_names = [str(name) for name in valid]
    close = difflib.get_close_matches(key, valid_names, n=1, cutoff=0.6)
    if not close:
        normalized = {name.replace("_", ""): name for name in valid_names}
        if key.replace("_", "").lower() in normalized:
            close = [normalized[key.replace("_", "").lower()]]
    hint = f"did you mean {close[0]}?" if close else f"valid keys: {', '.join(valid_names)}."
    return f"{_join(path, key)}: unknown key; {hint}"


def _deep_update(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
