"""Daisy's numbers and choices, checked without Spark (so the CLI and a parameter registry refuse them first)."""
from __future__ import annotations

import math
from typing import Any

from dqkit.errors import ParameterError

#: Daisy's cleaning strategies (``Daisy(strategy=...)``, ``dqkit query --strategy``).
STRATEGIES = ("auto", "incremental", "full")


def _whole(value: Any, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParameterError(f"{name} must be a whole number of at least {low}, got {value!r}",
                             hint=f"pass {name}={max(low, 1) if low else 4} or more" if low else None)


def check_daisy_params(strategy: str = "auto", threshold: Any = 0.5, partitions: Any = 4, nb_parts: Any = None,
                       cost_units: str = "seconds") -> None:
    """Refuse an unknown strategy or cost unit, a threshold outside [0, 1] (or not a number), and a
    partition count or ``nb_parts`` below 1, before a SparkSession is asked for."""
    from dqkit.relax.cost import UNITS
    if strategy not in STRATEGIES:
        raise ParameterError(f"unknown strategy {strategy!r}", hint=f"one of {', '.join(STRATEGIES)}")
    if cost_units not in UNITS:
        raise ParameterError(f"unknown cost units {cost_units!r}", hint=" or ".join(UNITS))
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        t = math.nan
    if isinstance(threshold, bool) or not 0.0 <= t <= 1.0:
        raise ParameterError(f"threshold must be within [0, 1], got {threshold!r}",
                             hint="a candidate's probability cut-off, e.g. 0.5")
    _whole(partitions, "partitions", 1)
    if nb_parts is not None:
        _whole(nb_parts, "nb_parts", 1)
