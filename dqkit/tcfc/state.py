"""Result reuse (§3.3, U1-U4): completed leaves and the pending queue persisted to a folder.

``save_state(folder, spec, state)`` writes ``tcfc_state.json`` atomically (a temporary file, then
``os.replace``): per pair, its fingerprint (everything that decides its fragments), the report rows, the
*leaves* (differing fragments with no deeper differing fragment below them, with their error counts),
the pending jobs and the deepest completed level. ``load_state`` reads it back for the pairs whose
fingerprint still matches (a changed pair is ignored, with a note):

* ``leaves`` feed pruning (U2): a later run re-checks the stored leaves with narrow queries right after
  the roots, and a root fragment is pruned when re-checked leaves under it account for its whole error
  count (the paper's "a branch can be pruned if there is a leaf job with matching prefix fragment
  values and error counts");
* ``resumable`` continues an interrupted run (U3): its report and its pending queue.

Reuse is off unless a folder is given (U4); the benchmarks never pass one.
"""
from __future__ import annotations

import base64
import datetime as dt
import json
import os
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from dqkit.runtime.atomic import atomic_file
from dqkit.errors import ParameterError
from dqkit.tcfc.engines import Unrepresentable
from dqkit.tcfc.model import Difference, Job
from dqkit.tcfc.spec import TcfcSpec

FILE = "tcfc_state.json"
VERSION = 1


def encode(v: Any) -> Any:
    """A JSON form of a normalised value that ``decode`` turns back into the same value."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return {"i": str(v)}
    if isinstance(v, float):
        return {"f": repr(v)}
    if isinstance(v, Decimal):
        return {"d": str(v)}
    if isinstance(v, dt.datetime):
        return {"ts": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, Unrepresentable):
        return {"u": [v.engine, v.text]}
    if isinstance(v, tuple):
        return {"t": [encode(x) for x in v]}
    if isinstance(v, bytes):
        return {"b": base64.b64encode(v).decode()}
    return {"s": str(v)}


def decode(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    (k, x), = v.items()
    return {"i": lambda: int(x), "f": lambda: float(x), "d": lambda: Decimal(x),
            "ts": lambda: dt.datetime.fromisoformat(x), "date": lambda: dt.date.fromisoformat(x),
            "u": lambda: Unrepresentable(*x), "t": lambda: tuple(decode(y) for y in x),
            "b": lambda: base64.b64decode(x), "s": lambda: x}[k]()


def _tuple(values: Any) -> tuple:
    return tuple(decode(v) for v in values)


@dataclass
class StoredState:
    leaves: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    resumable: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def leaves_of(report: list[Any]) -> list[Any]:
    """Differing fragments with no differing fragment below them in the same pair (linear in the report)."""
    xs: dict[tuple[str, int], tuple[str, ...]] = {(d.pair, d.level): d.X for d in report}
    has_child: set[tuple[str, int, tuple]] = set()
    for e in report:
        pos = {c: i for i, c in enumerate(e.X)}
        for (pair, level), X in xs.items():
            if pair == e.pair and level < e.level and all(c in pos for c in X):
                has_child.add((pair, level, tuple(e.values[pos[c]] for c in X)))
    return [d for d in report if (d.pair, d.level, d.values) not in has_child]


def _diff_dict(d: Any) -> dict[str, Any]:
    return {"level": d.level, "X": list(d.X), "values": [encode(v) for v in d.values], "kind": d.kind,
            "source": None if d.source is None else [encode(v) for v in d.source],
            "target": None if d.target is None else [encode(v) for v in d.target],
            "job_id": d.job_id, "parent_job": d.parent_job, "error_count": d.error_count, "reused": d.reused}


def save_state(folder: str | os.PathLike, spec: TcfcSpec, state: Any) -> Path:
    """Persist leaves and pending jobs of every pair into ``folder/tcfc_state.json``, atomically (U1)."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    pairs: dict[str, Any] = {}
    for p in spec.pairs:
        rows = [d for d in state.report if d.pair == p.name]
        pairs[p.name] = {
            "fingerprint": p.fingerprint(),
            "examined": state.examined.get(p.name, 0),
            "report": [_diff_dict(d) for d in rows],
            "leaves": [{"level": d.level, "values": [encode(v) for v in d.values], "error_count": d.error_count,
                        "kind": d.kind} for d in leaves_of(rows)],
            "pending": [{"level": j.level, "kind": j.kind, "filter_cols": list(j.filter_cols),
                         "filter_values": [[encode(v) for v in t] for t in j.filter_values],
                         "parent_job": j.parent_job} for j in state.pending if j.pair == p.name],
        }
    doc = {"version": VERSION, "status": state.status, "pairs": pairs}
    return atomic_file(path / FILE, lambda tmp: tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8"))


def _hint(f: Path) -> str:
    return f"delete {f} (or the whole folder) to start afresh, or rerun without --reuse"


def check_state_folder(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The stored state document of ``folder`` after every check that needs no engine, or None when the
    folder holds none yet. A folder that is a file, or a state file that is empty, binary, not UTF-8,
    truncated or malformed JSON, of another version or of the wrong shape, is refused (ParameterError,
    exit 2) naming the file and saying what to do. Runs before any engine is bound (or Spark started)."""
    from dqkit.io.filecheck import load_json, require

    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise ParameterError(f"the reuse folder {path} is a file", hint="name a folder (new or one a run wrote)")
    f = path / FILE
    if not f.exists():
        return None
    what = "the stored TCFC state"
    doc = load_json(f, what, hint=_hint(f), version=VERSION)

    def need(cond: bool, problem: str) -> None:
        require(cond, ParameterError, f, what, problem, _hint(f))

    need(doc.get("status") in ("COMPLETED", "UNCOMPLETED"), "'status' is neither COMPLETED nor UNCOMPLETED")
    pairs = doc.get("pairs")
    need(isinstance(pairs, dict), "'pairs' is not an object")
    fields = {"report": ("level", "X", "values", "kind", "source", "target", "job_id", "parent_job", "error_count"),
              "leaves": ("level", "values", "error_count"),
              "pending": ("level", "kind", "filter_cols", "filter_values", "parent_job")}
    for name, saved in pairs.items():
        need(isinstance(saved, dict), f"pair {name!r} is not an object")
        need(isinstance(saved.get("fingerprint"), str), f"pair {name!r} has no fingerprint")
        need(isinstance(saved.get("examined", 0), int) and not isinstance(saved.get("examined", 0), bool),
             f"pair {name!r}: 'examined' is not a level number")
        for part, keys in fields.items():
            rows = saved.get(part, [])
            need(isinstance(rows, list), f"pair {name!r}: {part!r} is not a list")
            for i, row in enumerate(rows):
                need(isinstance(row, dict) and all(k in row for k in keys),
                     f"pair {name!r}: {part} entry {i + 1} lacks one of {', '.join(keys)}")
                need(isinstance(row["level"], int) and not isinstance(row["level"], bool) and row["level"] >= 1,
                     f"pair {name!r}: {part} entry {i + 1} has no valid level")
    return doc


def load_state(folder: str | os.PathLike, spec: TcfcSpec) -> StoredState:
    """What ``folder`` holds for the pairs of ``spec`` (an empty state when nothing is stored yet).

    The file is checked first (``check_state_folder``); a pair whose stored entries do not decode or
    name a level the pair does not have is refused the same way (the file is damaged)."""
    out = StoredState()
    doc = check_state_folder(folder)
    if doc is None:
        return out
    f = Path(folder) / FILE
    for p in spec.pairs:
        saved = doc["pairs"].get(p.name)
        if saved is None:
            continue
        if saved["fingerprint"] != p.fingerprint():
            out.notes.append(f"{p.name}: the stored results were made with another spec of this pair; not used")
            continue
        try:
            _load_pair(p, saved, out)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError) as exc:
            raise ParameterError(f"the stored TCFC state {f} is damaged: pair {p.name!r} does not decode "
                                 f"({type(exc).__name__}: {exc})", hint=_hint(f)) from None
    return out


def _load_pair(p: Any, saved: dict[str, Any], out: StoredState) -> None:

    depth = len(p.levels)
    for part in ("leaves", "report", "pending"):
        for row in saved.get(part, []):
            if not 1 <= row["level"] <= depth:
                raise ValueError(f"{part} names level {row['level']}, the pair has {depth}")
    kinds = {"report": ("MISSING", "EXCESS", "DIFF"), "pending": ("ROOT", "REUSE", "ERROR", "HEALTHY")}
    for part, allowed in kinds.items():
        for row in saved.get(part, []):
            if row["kind"] not in allowed:
                raise ValueError(f"{part} holds the unknown kind {row['kind']!r}")
    out.leaves[p.name] = [{"level": lf["level"], "values": _tuple(lf["values"]),
                           "error_count": lf["error_count"]} for lf in saved.get("leaves", [])]
    report = [Difference(p.name, r["level"], tuple(r["X"]), _tuple(r["values"]), r["kind"],
                         None if r["source"] is None else _tuple(r["source"]),
                         None if r["target"] is None else _tuple(r["target"]), r["job_id"], r["parent_job"],
                         r["error_count"], True) for r in saved.get("report", [])]
    pending = [Job(0, p.name, j["level"], j["kind"], tuple(j["filter_cols"]),
                   tuple(_tuple(t) for t in j["filter_values"]), j["parent_job"], p.priority)
               for j in saved.get("pending", [])]
    if saved.get("examined"):
        out.resumable[p.name] = {"report": report, "pending": pending, "examined": saved["examined"]}
