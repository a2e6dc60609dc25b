"""BigDansing's repair (§5), declared once: detect -> repair rounds until no violation with a fix
remains (``dqkit.repair``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.repair.methods import METHODS
from dqkit.systems._rules import RulesParams
from dqkit.systems.base import System, param


@dataclass(frozen=True)
class RepairParams(RulesParams):
    """What ``dqkit repair``, ``dqkit report repair`` and the repair widget take."""

    method: str = param("auto", choices=METHODS, metavar="METHOD",
                        help="repair algorithm: auto repairs FDs and equality DCs by equivalence classes and "
                             "DCs with <, <=, >, >= holistically (minimum vertex cover, smallest change)")
    max_iterations: int = param(10, help="at most N repair rounds", low=1, metavar="N")
    freeze_after: int = param(3, help="a cell changed K times is never changed again", low=1, metavar="K")
    sample_rows: int = param(10, help="changes and remaining violations shown (text, html, report)", low=0,
                             metavar="N")
    dry_run: bool = param(False, help="compute the repair but write only the change list (one row per changed "
                                      "cell), to review and apply with `dqkit review`")

    def validate(self) -> None:
        """The table, rule files, rules and key are checked without Spark."""
        self.check_rules("repair")


def run(params: RepairParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The repair of ``params`` (``dqkit.repair.repair``)."""
    from dqkit.repair import repair

    return repair(params.table, params.load_rules(), key=params.key, method=params.method,
                  max_iterations=params.max_iterations, freeze_after=params.freeze_after,
                  name=str(params.table), spark=spark, progress=progress, dry_run=params.dry_run)


REPAIR = System(
    name="repair",
    summary="repair violations of FDs and denial constraints (BigDansing)",
    description="Detect and repair violations of rules until none with a fix remains: the rounds, the cells "
                "changed (old -> new) and the violations left without a fix.",
    params=RepairParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("Verdict", "Facts", "Notes")), ("Changes", ("Table",)), ("Charts", ("Chart",))),
    exit_codes={0: "no violation remains", 1: "violations without a fix remain", 2: "error"},
    output="the repaired table: NAME.csv or NAME.parquet (the change list beside it as NAME.changes.csv/.parquet), "
           "or a folder (repaired/, changes/ the change list, summary, report); --dry-run writes no repaired table",
    example={"table": "data/bigdansing_table1.csv", "rules": ["data/bigdansing_table1_rules.yaml"], "key": "tid"},
    progress_unit="iterations",
)
