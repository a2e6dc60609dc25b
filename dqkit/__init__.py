"""dqkit: a Jupyter-centred data-quality toolkit on Apache Spark.

The public API is re-exported here; internals live in the system modules (``dqkit.delta`` for
Diftong, ``dqkit.rules``/``dqkit.detect`` for BigDansing, ...).
"""
from __future__ import annotations

__version__ = "0.1.0"

from dqkit.errors import DqkitError  # noqa: E402
from dqkit.session import get_spark  # noqa: E402

__all__ = ["DqkitError", "get_spark", "__version__"]
