"""The systems registry: each of dqkit's systems declared once (``dqkit.systems.base.System``).

The CLI subcommands, ``dqkit report NAME`` and the widget controllers are derived from these
declarations. The built-in declarations are loaded on first use (each imports its kernel only when
it runs), so listing the systems or checking parameters never starts Spark. Another system (a
plug-in, or the toy system of the contract tests) needs no other code: ``register(system)`` in the
running process, or ``DQKIT_SYSTEMS=module:ATTR[,module:ATTR]`` in the environment, which also
reaches the kernels that ``dqkit report`` starts. ``check_system(system)`` checks that a system keeps
the registry's contract (``dqkit.systems.check``): a plug-in's tests call it.
"""
from __future__ import annotations

import importlib
import os

from dqkit.errors import ParameterError
from dqkit.systems.base import ExitCodes, Params, ParamSpec, System, Tab, param
from dqkit.systems.check import SystemCheckError, check_system

__all__ = ["ExitCodes", "Params", "ParamSpec", "System", "SystemCheckError", "Tab", "all_systems", "check_system",
           "get", "param", "register", "unregister"]

#: The built-in declarations, in the order ``dqkit --help`` lists them (module, attribute).
BUILTIN = ("dqkit.systems.delta:DELTA", "dqkit.systems.detect:DETECT", "dqkit.systems.repair:REPAIR",
           "dqkit.systems.review:REVIEW", "dqkit.systems.dedup:DEDUP",
           "dqkit.systems.dedup_diff:DEDUP_DIFF", "dqkit.systems.tcfc:TCFC",
           "dqkit.systems.lake:LAKE", "dqkit.systems.query:QUERY", "dqkit.systems.discover:DISCOVER",
           "dqkit.systems.profile:PROFILE", "dqkit.systems.history:HISTORY")

_SYSTEMS: dict[str, System] = {}
_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    plugins = [e.strip() for e in os.environ.get("DQKIT_SYSTEMS", "").split(",") if e.strip()]
    for entry in (*BUILTIN, *plugins):
        module, _, attr = entry.partition(":")
        try:
            system = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ParameterError(f"DQKIT_SYSTEMS names {entry!r}, which cannot be loaded: {exc}",
                                 hint="write module:ATTRIBUTE, with the module importable here") from None
        _SYSTEMS.setdefault(system.name, system)


def register(system: System) -> System:
    """Add (or replace) ``system``; its CLI subcommand, report and widget controller follow from it."""
    _load_builtin()
    _SYSTEMS[system.name] = system
    return system


def unregister(name: str) -> None:
    """Remove a registered system (tests)."""
    _SYSTEMS.pop(name, None)


def all_systems() -> list[System]:
    """Every registered system, built-ins first."""
    _load_builtin()
    return list(_SYSTEMS.values())


def get(name: str) -> System:
    """The system called ``name``; an unknown name lists the known ones."""
    _load_builtin()
    if name not in _SYSTEMS:
        raise ParameterError(f"no system named {name!r}", hint=f"systems: {', '.join(_SYSTEMS)}")
    return _SYSTEMS[name]
