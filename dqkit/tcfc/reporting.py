"""The TCFC report's parameter adapter (``dqkit report tcfc -p spec FILE [-p budget S] [-p reuse DIR]``)."""
from __future__ import annotations

from typing import Any

from dqkit.errors import ParameterError


def report_arguments(*, spec: str, budget: Any = 0.0, reuse: str = "", order: str = "default", sample_rows: Any = 20,
                     output: str = "", **_: Any) -> dict[str, Any]:
    """Check the report's parameters (strings from ``dqkit report``) and turn them into ``tcfc`` arguments.

    A missing or malformed spec, a budget that is not a positive number (0 or empty means none) or an
    existing output folder fails here, before any engine is reached."""
    from dqkit.result import check_output_target
    from dqkit.tcfc.algorithm import ORDERS
    from dqkit.tcfc.spec import check_budget, load_spec

    if not str(spec).strip():
        raise ParameterError("the report needs a spec", hint="give it with -p spec FILE.yaml")
    loaded = load_spec(str(spec).strip())
    if budget in ("", None, 0, 0.0, "0"):
        value = None
    else:
        value = check_budget(budget)
    if order not in ORDERS:
        raise ParameterError(f"unknown job order {order!r}", hint=f"use one of {', '.join(ORDERS)}")
    if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 0:
        raise ParameterError(f"sample_rows must be a whole number of rows (0 or more), got {sample_rows!r}")
    if output:
        check_output_target(output, [spec])
    return {"spec": loaded, "budget": value, "reuse": str(reuse).strip() or None, "order": order}
