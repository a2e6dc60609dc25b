"""A saved change list, looked at without Spark: what ``dqkit review`` checks before a JVM starts.

A change list (``dqkit.repair.changelist``) is saved by ``dqkit repair --out`` (or ``--dry-run``):
in a folder as ``changes/`` beside ``summary.json`` (its manifest: the key, the rules and the counts
per rule), or beside a repaired table file as ``NAME.changes.csv`` / ``NAME.changes.parquet``. This
module reads what the review step needs to refuse a bad request up front: the format, the key the
repair used, the rule names it holds changes of, and which rules ``--accept``/``--reject`` keep.
Nothing here imports pyspark.
"""
from __future__ import annotations

import csv
import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from dqkit.errors import ParameterError, SourceError

__all__ = ["CHANGE_LIST_COLUMNS", "FOLDER_FRAME", "ChangeListInfo", "inspect_change_list", "accepted_rules",
           "check_review_key"]

CHANGE_LIST_COLUMNS = ("tid", "attr", "old", "new", "rules", "violation_id", "iteration", "method")
#: where a repair ``--out FOLDER`` keeps its change list
FOLDER_FRAME = "changes"


@dataclass(frozen=True)
class ChangeListInfo:
    """What a saved change list says about itself, read without Spark: where its rows are (``rows``,
    ``format`` ``parquet`` or ``csv``), the key it was computed with (None when unknown or a content
    id), whether it was a dry run, and the names of the rules it holds changes of."""

    path: str
    rows: str
    format: str
    key: str | None
    rules: tuple[str, ...]
    dry_run: bool = False


def inspect_change_list(path: str | os.PathLike) -> ChangeListInfo:
    """Look at a saved change list without Spark: a ``repair --out FOLDER`` (its ``changes/`` and
    ``summary.json``) or a ``NAME.changes.csv`` / ``NAME.changes.parquet`` file written beside a
    repaired table file. Refuses (``SourceError``) what is none of these."""
    p = Path(os.fspath(path))
    hint = "give the folder that `dqkit repair --out FOLDER` (or --dry-run) wrote, or its NAME.changes.csv file"
    if not p.exists():
        raise SourceError(f"no change list at {p}", hint=hint)
    if p.is_dir():
        summary = p / "summary.json"
        if not summary.is_file() or not (p / FOLDER_FRAME).is_dir():
            raise SourceError(f"{p} is not a repair's output folder (no summary.json and {FOLDER_FRAME}/)", hint=hint)
        try:
            data = json.loads(summary.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot read {summary}: {exc}", hint=hint) from None
        if "change_list" not in data or "rule_methods" not in data:
            raise SourceError(f"{summary} is not the summary of a repair with a change list",
                              hint="rerun `dqkit repair ... --out FOLDER` (or --dry-run) with this dqkit")
        if data.get("key") is None:
            raise ParameterError(f"the change list in {p} was computed without --key: its rows are named by "
                                 "content ids, which no review can match to the table's rows",
                                 hint="rerun `dqkit repair ... --key COLUMN --dry-run --out FOLDER`")
        rules = tuple(sorted(set(data["rule_methods"]) | set(data["change_list"].get("per_rule", {}))))
        return ChangeListInfo(str(p), str(p / FOLDER_FRAME), "parquet", data.get("key"), rules,
                              bool(data.get("dry_run", False)))
    suffix = p.suffix.lower()
    if suffix == ".csv":
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in CHANGE_LIST_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SourceError(f"{p} is not a change list: no column(s) {', '.join(missing)}", hint=hint)
            names = {r for row in reader for r in (row["rules"] or "").split(";") if r}
        return ChangeListInfo(str(p), str(p), "csv", None, tuple(sorted(names)))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(p, columns=["rules"])
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the same refusal
            raise SourceError(f"{p} is not a change list ({exc})", hint=hint) from None
        names = {r for rules in table.column("rules").to_pylist() for r in (rules or [])}
        return ChangeListInfo(str(p), str(p), "parquet", None, tuple(sorted(names)))
    raise SourceError(f"{p} is not a change list (a folder, .csv or .parquet)", hint=hint)


def accepted_rules(rules: Collection[str], accept: Collection[str] = (), reject: Collection[str] = ()
                   ) -> frozenset[str]:
    """The rules whose changes are applied: ``accept`` (all of ``rules`` when empty) minus ``reject``.
    A name not among ``rules`` is refused (``ParameterError`` listing the known ones), no Spark."""
    known = set(rules)
    for flag, names in (("--accept", accept), ("--reject", reject)):
        unknown = sorted(set(names) - known)
        if unknown:
            raise ParameterError(f"{flag} names rule(s) the change list does not hold: {', '.join(unknown)}",
                                 hint=f"rules in the change list: {', '.join(sorted(known)) or 'none'}")
    if accept and reject:
        raise ParameterError("give --accept or --reject, not both",
                             hint="--accept RULE applies only those rules' changes; --reject RULE all but those")
    return frozenset(set(accept) if accept else known) - set(reject)


def check_review_key(recorded: str | None, key: str) -> None:
    """Refuse a ``--key`` other than the one the change list was computed with (when it says)."""
    if recorded is not None and recorded != key:
        raise ParameterError(f"the change list was computed with key {recorded!r}, not {key!r}",
                             hint=f"pass --key {recorded}")
