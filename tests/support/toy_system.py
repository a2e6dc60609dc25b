"""A toy eighth system, declared the way the seven are: it counts the NULLs of one column.

The registry test loads it through ``DQKIT_SYSTEMS=support.toy_system:TOY`` and shows that it gets a CLI
subcommand, a report and a widget with no other code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.systems import Params, System, param


@dataclass(frozen=True)
class ToyParams(Params):
    table: str = param(help="a Parquet or CSV table", positional=True, input=True)
    column: str = param(help="the column whose NULLs are counted")
    allowed: int = param(0, help="NULLs still counted as clean", low=0)

    def validate(self) -> None:
        from dqkit.checks import preflight

        preflight.check_columns([self.column], preflight.table_columns(preflight.check_table(self.table)), "--column")


def _result_class() -> type:
    from dqkit.contract.result import Facts, Result, Verdict

    @dataclass(frozen=True, repr=False)
    class NullCount(Result):
        table: str
        column: str
        rows: int
        nulls: int
        allowed: int
        system = "toy"

        def to_dict(self) -> dict[str, Any]:
            return {"verdict": self.verdict.label, "rows": self.rows, "nulls": self.nulls, "column": self.column}

        def sections(self, sample_rows: int = 10) -> list[Any]:
            ok = self.nulls <= self.allowed
            return [Verdict(ok, "CLEAN" if ok else "NULLS", f"{self.nulls} of {self.rows} rows have no {self.column}"),
                    Facts("Counts", {"rows": self.rows, "NULLs": self.nulls, "allowed": self.allowed})]

        def frames(self, **options: Any) -> dict[str, Any]:
            return {}

        def __repr__(self) -> str:
            return f"<toy {self.table}: {self.verdict.to_text()}>"

    return NullCount


def run(params: ToyParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    from pyspark.sql import functions as F

    from dqkit.io.sources import read_table

    df = read_table(params.table, spark)
    row = df.agg(F.count(F.lit(1)).alias("n"), F.count_if(F.col(f"`{params.column}`").isNull()).alias("z")).first()
    return _result_class()(params.table, params.column, int(row["n"]), int(row["z"]), params.allowed)


TOY = System(name="toy", summary="count the NULLs of one column (a toy system)", params=ToyParams, run=run,
             tabs=(("Verdict", ("Verdict",)), ("Counts", ("Facts",))),
             exit_codes={0: "no more NULLs than allowed", 1: "more NULLs than allowed", 2: "error"},
             example={"table": "data/users/old/users.csv", "column": "birthday"})
