"""dqkit: a Jupyter-centred data-quality toolkit on Apache Spark.

Each system is a module named after its kernel: ``from dqkit.delta import delta`` (Diftong),
``from dqkit.detect import detect`` with rules from ``dqkit.rules`` (BigDansing). Result types and
rule helpers are also reachable from here, imported on first use so ``import dqkit`` stays light.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from dqkit.errors import DqkitError  # noqa: E402
from dqkit.session import get_spark  # noqa: E402

# public name -> (module, attribute)
_LAZY = {
    "DeltaResult": ("dqkit.delta", "DeltaResult"),
    "DetectionResult": ("dqkit.detect", "DetectionResult"),
    "parse_rule": ("dqkit.rules", "parse_rule"),
    "load_rules": ("dqkit.rules", "load_rules"),
}

__all__ = ["DqkitError", "get_spark", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'dqkit' has no attribute {name!r}")
