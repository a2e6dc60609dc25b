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
                              metavar="FILE.yaml", input=True, accepts="object")
    sample_rows: int = param(10, help="containment edges shown (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """The lake exists and lists tables; the option combination means something; the cost file
        parses (its line and column named), all before any Spark work."""
        from dqkit.checks import preflight

        check_lake_options(verify=self.verify, bag=self.bag, plan=self.plan, costs=self.costs)
        loaded = self.in_memory("costs")  # a CostModel given as it is (a notebook's)
        preflight.lake(self.lake, s=self.s, t=self.t, seed=self.seed, costs=None if loaded else self.costs)
        if self.costs and not loaded:
            from dqkit.lake.optret import load_costs

            load_costs(self.costs)


def run(params: LakeParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The containment of ``params`` (``dqkit.lake.find_containment``)."""
    from dqkit.lake import find_containment
    from dqkit.lake.optret import load_costs

    return find_containment(params.lake, s=params.s, t=params.t, seed=params.seed, mode=params.mode,
                            verify=params.verify, bag=params.bag, plan=params.plan,
                            costs=(params.costs if params.in_memory("costs") else
                                   load_costs(params.costs) if params.costs else None),
                            spark=spark, progress=progress)


def cost_model(**values: Any) -> Any:
    """A ``dqkit.lake.CostModel`` (its defaults, or ``values``): the cost parameters a front end offers."""
    from dqkit.lake import CostModel

    return CostModel(**values)


def lake_tables(lake: str, spark: Any = None) -> list[dict[str, Any]]:
    """The tables of ``lake`` as a front end lists them before a run (name, format, bytes, columns,
    partition columns; an unreadable table with its reason), from metadata: no table is profiled."""
    from dqkit.lake import load_lake

    lk = load_lake(lake, spark=spark, profile=False)
    rows = [{"name": n, "format": t.format or "", "bytes": t.bytes, "columns": len(t.columns),
             "partitioned by": ", ".join(t.partition_columns)} for n, t in lk.tables.items()]
    return rows + [{"name": n, "format": "unreadable", "bytes": 0, "columns": 0, "partitioned by": r[:80]}
                   for n, r in lk.skipped]


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
    tabs=(("Summary", ("summary", "stages", "notes")), ("Edges", ("edges",)), ("Charts", ("charts", "graph")),
          ("Plan", ("plan",))),
    progress_unit="edges",
    exit_codes={0: "no containment", 1: "containments found", 2: "error"},
    output="the edges, summary and report",
    example={"lake": "data/small_lake", "t": 5, "verify": True, "plan": True},
)
