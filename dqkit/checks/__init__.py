"""Checks that run before Spark: ``preflight`` (paths, schemas from footers and headers, ``--out``
safety), ``params`` (key syntax), ``reserved`` (column names dqkit keeps for itself)."""
