"""The dedup report's parameters (``dqkit report dedup -p table ... -p key ... -p config ...``).

``report_arguments`` is the adapter ``dqkit.report.REPORTS["dedup"]`` names: it checks the template's
parameters (strings from the command line) and turns them into ``dedup`` arguments, so that a missing
table, a config that does not parse (with its line and column), a bad threshold or an existing output
folder fails before Spark starts, and the report shows the cause at the top.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from dqkit.errors import ParameterError, SourceError

__all__ = ["report_arguments"]


def report_arguments(*, table: str, key: str, config: str, threshold: Any = "", sample_rows: Any = 10,
                     truth: str = "", output: str = "", **_: Any) -> dict[str, Any]:
    """``table``, ``key``, ``config`` (a parsed ``DedupConfig``), ``threshold`` (None: the config's),
    ``name``, ``truth`` (None, or a column of true cluster ids) and ``sample_rows`` for the template."""
    from dqkit.dedup.config import load_config
    from dqkit.result import check_output_target

    text = str(table).strip()
    if not text:
        raise ParameterError("the report needs a table", hint="give it with -p table PATH")
    if not text.startswith("catalog:") and not Path(text).exists():
        raise SourceError(f"the table does not exist: {text}", hint="give a CSV, Parquet or JSON path, or catalog:db.t")
    if not str(key).strip():
        raise ParameterError("the report needs the key column", hint="give it with -p key COLUMN")
    if not str(config).strip():
        raise ParameterError("the report needs a dedup config", hint="give a YAML file with -p config FILE.yaml; "
                                                                     "`dqkit dedup --example-config` prints one")
    cfg = load_config(str(config).strip())
    thr: float | None = None
    if str(threshold).strip() not in ("", "None"):
        try:
            thr = float(threshold)
        except (TypeError, ValueError):
            raise ParameterError(f"threshold must be a probability between 0 and 1, got {threshold!r}") from None
        if not 0 <= thr <= 1:
            raise ParameterError(f"threshold must be a probability between 0 and 1, got {threshold!r}")
    if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 0:
        raise ParameterError(f"sample_rows must be a whole number of rows (0 or more), got {sample_rows!r}")
    if str(output).strip():
        check_output_target(str(output), [text])
    return {"table": text, "key": str(key).strip(), "config": cfg, "threshold": thr, "name": text,
            "truth": str(truth).strip() or None, "sample_rows": sample_rows}
