"""R2D2's lake, declared once: the tables of a lake contained in other tables, and which can be deleted
(``dqkit.lake.find_containment``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.lake.modes import MODES
from dqkit.systems.base import Params, System, param


def check_lake_options(*, verify: bool, bag: bool, plan: bool, costs: str | None) -> None:
    """``--bag`` needs ``--verify`` and ``--costs`` needs ``--plan``: an option that would change nothing
    is refused rather than silently ignored (no Spark, no file read)."""
    from dqkit.errors import ParameterError

    if costs and not plan:
        raise ParameterError("--costs shapes the deletion plan", hint="add --plan")
    if bag and not verify:
        raise ParameterError("--bag applies to the exact stage", hint="add --verify")


@dataclass(frozen=True)
class LakeParams(Params):
    """What ``dqkit lake``, ``dqkit report lake`` and the lake widget take."""

    lake: str = param(help="the lake: a folder of Parquet/CSV/JSON tables, or catalog:DB", positional=True,
                      input=True)
    s: int = param(4, help="CLP: columns to put predicates on", low=1, metavar="N")
    t: int = param(10, help="CLP: rows sampled per child table", low=1, metavar="N")
    seed: int = param(0, help="seed of every sampling choice", metavar="N")
    mode: str = param("strict", help="CLP comparison: on all the child's columns (strict) or on the search "
                                     "columns only (paper)", choices=MODES)
    verify: bool = param(False, help="verify every surviving edge exactly (CM per edge)")
    bag: bool = param(False, help="with --verify: bag semantics (row multiplicities count)")
    plan: bool = param(False, help="compute the deletion plan (Opt-Ret)")
    costs: str | None = param(None, help="with --plan: cost parameters, a YAML file of dqkit.lake.CostModel fields",
                              metavar="FILE.yaml", input=True)
    sample_rows: int = param(10, help="containment edges shown (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """The lake exists and lists tables; the option combination means something; the cost file
        parses (its line and column named), all before any Spark work."""
        from dqkit.checks import preflight

        check_lake_options(verify=self.verify, bag=self.bag, plan=self.plan, costs=self.costs)
        preflight.lake(self.lake, s=self.s, t=self.t, seed=self.seed, costs=self.costs)
        if self.costs:
            from dqkit.lake.optret import load_costs

            load_costs(self.costs)


def run(params: LakeParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The containment of ``params`` (``dqkit.lake.find_containment``)."""
    from dqkit.lake import find_containment
    from dqkit.lake.optret import load_costs

    return find_containment(params.lake, s=params.s, t=params.t, seed=params.seed, mode=params.mode,
                            verify=params.verify, bag=params.bag, plan=params.plan,
                            costs=load_costs(params.costs) if params.costs else None, spark=spark,
                            progress=progress)


LAKE = System(
    name="lake",
    summary="find tables contained in other tables of a lake (R2D2) and plan safe deletions",
    description="Find the tables of a lake (a folder of Parquet/CSV/JSON tables, or catalog:DB) whose rows all "
                "appear in another table: SGB (schemas) -> MMP (min/max) -> CLP (sampled rows) -> optional exact "
                "verification; with --plan, which tables to delete (Opt-Ret). A table that cannot be read is "
                "skipped and the verdict is INCOMPLETE, exit 2 (the skipped tables are counted and named).",
    params=LakeParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("Verdict", "Facts", "Notes")), ("Edges", ("Table",)), ("Charts", ("Chart",))),
    exit_codes={0: "no containment", 1: "containments found", 2: "error"},
    output="the edges, summary and report",
    example={"lake": "data/small_lake", "t": 5, "verify": True, "plan": True},
)
