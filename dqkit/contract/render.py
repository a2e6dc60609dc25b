"""Rendering shared by every result object: escaped HTML tables, atomic folder writes, JSON values.

Every data value that reaches HTML goes through ``html.escape`` here, once.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from dqkit.runtime.atomic import ABANDONED, atomic_file, atomic_folder, remove_abandoned  # noqa: F401 - re-exported

HTML_STYLE = """<style>
.dqkit{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:14px;color:#1f2328;max-width:1100px}
.dqkit h2{font-size:20px;margin:8px 0}.dqkit h3{font-size:16px;margin:18px 0 6px}
.dqkit .scroll{overflow-x:auto;max-width:100%}
.dqkit table{border-collapse:collapse;margin:6px 0 14px}
.dqkit th,.dqkit td{border:1px solid #d0d7de;padding:3px 8px;text-align:right;white-space:nowrap}
.dqkit td{max-width:28em;overflow:hidden;text-overflow:ellipsis}
.dqkit table.facts td{white-space:normal;max-width:60em;overflow-wrap:anywhere}
.dqkit th{background:#f6f8fa}
.dqkit td.l,.dqkit th.l{text-align:left}
.dqkit .ok{color:#1a7f37}.dqkit .bad{color:#cf222e}
.dqkit .verdict{font-size:18px;margin:8px 0 12px;padding:8px 12px;border-radius:6px;border:1px solid}
.dqkit .verdict.ok{background:#dafbe1;border-color:#1a7f37}.dqkit .verdict.bad{background:#ffebe9;border-color:#cf222e}
.dqkit .verdict .label{font-weight:700;margin-right:12px}
.dqkit .verdict .summary{color:#1f2328;font-size:15px}
.dqkit .muted{color:#57606a;font-size:13px}
.dqkit img{max-width:100%;height:auto;display:block;margin:6px 0 12px}
</style>"""


def esc(value: Any) -> str:
    """HTML-escape any value (None shows as NULL)."""
    if value is None:
        return "<span class='muted'>NULL</span>"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return html.escape(str(value), quote=True)


def html_table(frame: pd.DataFrame, max_rows: int | None = None, index: bool = False) -> str:
    """An HTML table of ``frame`` with every header and value escaped; at most ``max_rows`` rows."""
    shown = frame if max_rows is None else frame.head(max_rows)
    cols = list(shown.columns)
    head = "".join(f"<th class='l'>{esc(c)}</th>" if not _numeric(shown[c]) else f"<th>{esc(c)}</th>" for c in cols)
    if index:
        head = f"<th class='l'>{esc(shown.index.name or '')}</th>" + head
    rows = []
    for idx, rec in zip(shown.index, shown.itertuples(index=False)):
        cells = "".join(
            f"<td>{esc(_fmt(v))}</td>" if _numeric(shown[c]) else f"<td class='l'>{esc(_fmt(v))}</td>"
            for c, v in zip(cols, rec))
        if index:
            cells = f"<td class='l'>{esc(idx)}</td>" + cells
        rows.append(f"<tr>{cells}</tr>")
    more = ""
    if max_rows is not None and len(frame) > max_rows:
        more = f"<p class='muted'>{len(frame) - max_rows} more rows not shown</p>"
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{more}"


def _numeric(series: pd.Series) -> bool:
    """Right-aligned: numeric columns, and object columns holding only numbers (or NULL)."""
    if pd.api.types.is_bool_dtype(series):
        return False
    if pd.api.types.is_numeric_dtype(series):
        return True
    if series.dtype == object:
        values = [v for v in series if v is not None and not (isinstance(v, float) and math.isnan(v))]
        return bool(values) and all(isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)
                                    for v in values)
    return False


def _fmt(value: Any) -> Any:
    """One display form for numbers in text and HTML: floats to 6 significant digits (100.0 -> 100)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def plain(value: Any) -> str:
    """A value as people read it, the same in text and HTML: NULL for missing, 6 significant digits."""
    shown = _fmt(value)
    if shown is None:
        return "NULL"
    if isinstance(shown, (list, tuple)):
        return ", ".join(plain(v) for v in shown)
    return str(shown)


def wrap(body: str) -> str:
    """HTML with dqkit's style, for notebook display."""
    return HTML_STYLE + "<div class='dqkit'>" + body + "</div>"


def to_jsonable(value: Any) -> Any:
    """Convert Spark/pandas/numpy values to plain JSON types (Decimal -> int or float, dates -> ISO)."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return to_jsonable(value.item())
        except (ValueError, AttributeError):
            pass
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, bytes):
        return value.hex()
    return value


def dumps(value: Any) -> str:
    """Stable, pretty JSON of ``value`` after ``to_jsonable``."""
    return json.dumps(to_jsonable(value), indent=2, sort_keys=False)


def page(title: str, body: str) -> str:
    """A self-contained HTML page (no external resources)."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>{HTML_STYLE}</head>"
            f"<body class='dqkit'>{body}</body></html>")


def bullet_list(items: Iterable[str]) -> str:
    """An escaped HTML bullet list."""
    items = list(items)
    return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>" if items else ""


def text_table(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A plain-text table for terminals."""
    shown = frame if columns is None else frame[list(columns)]
    # the same display form as HTML: every missing value as NULL, floats to 6 significant digits
    shown = shown.astype(object).map(plain) if len(shown) else shown
    return shown.to_string(index=False)
