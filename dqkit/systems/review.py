"""Review before repair, declared once: apply the accepted changes of a repair's change list to the
dirty table (``dqkit.repair.review``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.systems.base import Params, System, param


@dataclass(frozen=True)
class ReviewParams(Params):
    """What ``dqkit review``, ``dqkit report review`` and the review widget take."""

    changes: str = param(help="the change list: the folder `dqkit repair --dry-run --out FOLDER` wrote, or a "
                              "NAME.changes.csv/.parquet file", positional=True, input=True)
    to: str = param(help="the dirty table the changes were computed on: a Parquet, CSV or JSON path, or "
                         "catalog:db.table", metavar="TABLE", input=True)
    key: str = param(help="the key column the repair used (--key)", metavar="KEY")
    accept: tuple[str, ...] = param((), help="apply only the changes of these rules (default: every rule)",
                                    repeat=True, metavar="RULE[,RULE]")
    reject: tuple[str, ...] = param((), help="apply every change but those of these rules", repeat=True,
                                    metavar="RULE[,RULE]")
    sample_rows: int = param(10, help="applied changes shown (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """The change list is a repair's (its manifest read, no Spark), its key is ``--key``, the rules
        named exist in it, ``--accept`` and ``--reject`` are not both given; the table exists."""
        from dqkit.checks import preflight
        from dqkit.errors import UnknownColumnError
        from dqkit.repair.review_manifest import accepted_rules, check_review_key, inspect_change_list

        info = inspect_change_list(self.changes)
        check_review_key(info.key, self.key)
        accepted_rules(info.rules, self.accept, self.reject)
        columns = preflight.table_columns(preflight.check_table(self.to, "--to"))
        if columns is not None and self.key not in columns:
            raise UnknownColumnError(f"--key {self.key!r} is not a column of {self.to}",
                                     hint=f"columns: {', '.join(columns)}")


def run(params: ReviewParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The review of ``params`` (``dqkit.repair.review.review``)."""
    from dqkit.repair.review import review

    return review(params.changes, params.to, key=params.key, accept=params.accept, reject=params.reject, spark=spark)


REVIEW = System(
    name="review",
    summary="apply the accepted changes of a repair's change list (repair --dry-run) to the table",
    description="Review before repair: apply the changes of the rules you accept (--accept) or of all but "
                "those you reject (--reject) to the dirty table. Every change's old value must still be the "
                "table's value at (key, column), else nothing is written and the stale changes are listed.",
    params=ReviewParams,
    run=run,
    tabs=(("Summary", ("summary",)), ("Changes", ("changes",))),
    exit_codes={0: "every change applied", 1: "some changes rejected (not applied)", 2: "error"},
    output="the reviewed table: NAME.csv or NAME.parquet, or a folder (reviewed/, applied/, summary, report)",
    example={"changes": "data/bigdansing_table1.changes.csv", "to": "data/bigdansing_table1.csv", "key": "tid",
             "accept": ["phiF"]},
)


# -- what a per-cell front end (a review widget) needs: the change list's columns and a review of chosen cells
def change_list_columns() -> tuple[str, ...]:
    """The columns of a change list (``repair --dry-run``)."""
    from dqkit.repair.review_manifest import CHANGE_LIST_COLUMNS

    return tuple(CHANGE_LIST_COLUMNS)


def review_cells(spark: Any, table: Any, changes: Any, key: str, cells: list[Any], chosen: set[tuple[str, str]]) -> Any:
    """The review of the ``chosen`` cells (``(tid, attr)`` pairs) of a change list applied to ``table``
    (``dqkit.repair.review.apply_changes``; a stale change list is refused and nothing is applied), as a
    ``ReviewResult`` counted from ``cells``, the change list's rows (small, collected)."""
    from dqkit.repair.review import ReviewResult, apply_changes

    out, applied = apply_changes(spark, table, changes, key, accept=lambda ch: (str(ch["tid"]), ch["attr"]) in chosen)
    per: dict[str, dict[str, int]] = {}
    taken: set[str] = set()
    held: set[str] = set()
    for c in cells:
        on = (str(c["tid"]), c["attr"]) in chosen
        for r in c["rules"] or []:
            d = per.setdefault(r, {"changes": 0, "applied": 0})
            d["changes"] += 1
            d["applied"] += int(on)
            (taken if on else held).add(r)
    return ReviewResult(source="the table", key=key, table=out, applied=applied, total=len(cells),
                        applied_count=applied.count(), accepted=tuple(sorted(taken)), rejected=tuple(sorted(held)),
                        per_rule=per)
