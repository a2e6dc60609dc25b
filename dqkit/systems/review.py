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
    tabs=(("Summary", ("Verdict", "Facts")), ("Changes", ("Table",))),
    exit_codes={0: "every change applied", 1: "some changes rejected (not applied)", 2: "error"},
    output="the reviewed table: NAME.csv or NAME.parquet, or a folder (reviewed/, applied/, summary, report)",
    example={"changes": "data/bigdansing_table1.changes.csv", "to": "data/bigdansing_table1.csv", "key": "tid",
             "accept": ["phiF"]},
)
