"""A Spark-free system for the history tests: its metric is the number its input file holds."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.systems import Params, System, param


@dataclass(frozen=True)
class GaugeParams(Params):
    table: str = param(help="a text file holding tonight's number", positional=True, input=True)
    label: str = param("a", help="a parameter that shapes the metrics")


def run(params: GaugeParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    from dqkit.contract.result import Facts, Result, Verdict

    @dataclass(frozen=True, repr=False)
    class Gauge(Result):
        value: float
        system = "gauge"

        def to_dict(self) -> dict[str, Any]:
            return {"verdict": "MEASURED", "value": self.value}

        def sections(self, sample_rows: int = 10) -> list[Any]:
            return [Verdict(True, "MEASURED", f"value {self.value:g}"), Facts("Value", {"value": self.value})]

        def frames(self, **options: Any) -> dict[str, Any]:
            return {}

        def metrics(self) -> dict[str, float]:
            return {"value": self.value, "constant": 5.0}

    with open(params.table, encoding="utf-8") as f:
        return Gauge(float(f.read().split()[-1]))


GAUGE = System(name="gauge", summary="report a number (history tests)", params=GaugeParams, run=run,
               tabs=(("Verdict", ("Verdict",)),), exit_codes={0: "measured", 1: "anomalous", 2: "error"})
