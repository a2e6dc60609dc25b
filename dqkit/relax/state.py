"""The ``query --state`` folder read back, checked without Spark.

``Daisy.save_state`` writes ``state.json`` (version, per table: fingerprint, key, rules, cost model,
checked ranges, DC pair names) and the Parquet parts ``tables/NAME`` and ``pairs/NAME/RULE``.
``check_state_folder`` reads all of it back with every check that needs no JVM: the JSON (empty,
binary, not UTF-8, truncated, malformed, of another version, of the wrong shape), the cost model, and
that every Parquet part it names exists and has readable footers (pyarrow). A damaged folder is refused
(``StateFileError``, exit 2) naming the file and what to do, before a SparkSession starts.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dqkit.errors import DqkitError

FILE = "state.json"
VERSION = 1


class StateFileError(DqkitError):
    """A ``--state`` folder whose files are damaged (not one written by dqkit, or cut short)."""


def _hint(folder: Path) -> str:
    return (f"delete {folder} to clean from scratch (the next query saves a new state there), "
            "or pass another --state folder")


def check_state_folder(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The checked ``state.json`` document of ``folder``; None when ``folder`` is absent or empty.

    Refused (``StateFileError``): a folder that is a file, a non-empty folder without ``state.json``, a
    ``state.json`` that does not read back (see ``dqkit.io.filecheck.load_json``) or has the wrong shape,
    a cost model that does not load, and a Parquet part that is missing or has an unreadable footer."""
    from dqkit.io.filecheck import load_json, require
    from dqkit.relax.cost import CostModel

    p = Path(folder)
    if p.exists() and not p.is_dir():
        raise StateFileError(f"the --state {p} is a file, not a folder",
                             hint="give a new folder, or one an earlier query saved its state in")
    f = p / FILE
    if not f.exists():
        if p.exists() and any(p.iterdir()):
            raise StateFileError(f"{p} is not a dqkit query state folder (no {FILE})",
                                 hint="give an empty or new folder to --state")
        return None
    what = "the query state"
    hint = _hint(p)
    meta = load_json(f, what, error=StateFileError, hint=hint, version=VERSION)

    def need(cond: bool, problem: str) -> None:
        require(cond, StateFileError, f, what, problem, hint)

    tables = meta.get("tables")
    need(isinstance(tables, dict), "'tables' is not an object")
    for name, m in tables.items():
        need(isinstance(m, dict), f"table {name!r} is not an object")
        need(isinstance(m.get("fingerprint"), str), f"table {name!r} has no fingerprint")
        need(m.get("key") is None or isinstance(m.get("key"), str), f"table {name!r}: 'key' is not a column name")
        for part in ("rules", "pairs"):
            need(isinstance(m.get(part, []), list) and all(isinstance(x, str) for x in m.get(part, [])),
                 f"table {name!r}: {part!r} is not a list of names")
        ranges = m.get("dc_checked_ranges", {})
        need(isinstance(ranges, dict) and all(isinstance(v, list) and all(isinstance(i, int) for i in v)
                                              for v in ranges.values()),
             f"table {name!r}: 'dc_checked_ranges' is not an object of integer lists")
        if m.get("cost") is not None:
            try:
                CostModel.from_dict(m["cost"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                need(False, f"table {name!r}: its cost model does not load ({type(exc).__name__}: {exc})")
        _check_parquet(p / "tables" / name, f, hint)
        for rule in m.get("pairs", []):
            _check_parquet(p / "pairs" / name / rule, f, hint)
    return meta


def _check_parquet(part: Path, meta_file: Path, hint: str) -> None:
    """``part`` is a Parquet folder (or file) whose every data file has a readable footer."""
    if not part.exists():
        raise StateFileError(f"the query state {meta_file} names {part}, which is missing", hint=hint)
    files = [part] if part.is_file() else sorted(x for x in part.rglob("*") if x.is_file() and x.suffix == ".parquet")
    if not files:
        raise StateFileError(f"the query state part {part} holds no Parquet file", hint=hint)
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow ships with the dev environment; Spark checks later
        return
    for x in files:
        try:
            pq.read_metadata(x)
        except Exception as exc:  # noqa: BLE001 - any footer failure means a damaged part
            raise StateFileError(f"the query state part {x} is not a readable Parquet file "
                                 f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                                 hint=hint) from None


def state_generation(folder: str | os.PathLike) -> str | None:
    """The ``generation`` a saved state carries (a fresh id per save; "" for a state saved without
    one), or None when ``folder`` holds no state: a query saves its state only if it is still the one it
    loaded, so two queries sharing one ``--state`` never lose each other's work silently."""
    import json

    f = Path(folder) / FILE
    if not f.is_file():
        return None
    try:
        return str(json.loads(f.read_text(encoding="utf-8")).get("generation", ""))
    except (OSError, ValueError, AttributeError):
        return "?"


def state_guard(folder: str | os.PathLike, loaded: str | None):
    """The commit guard of a state save (``dqkit.runtime.atomic.atomic_folder``): refuses, with
    ``OutputTakenError``, a state another query replaced since this one loaded ``loaded``."""
    from dqkit.errors import OutputTakenError

    def guard(target: Path) -> None:
        if state_generation(target) != loaded:
            raise OutputTakenError(f"the --state {folder} was replaced by another query while this one ran; "
                                   "this query's state was not saved",
                                   hint="rerun the query: it starts from the other query's state")

    return guard

