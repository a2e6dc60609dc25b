"""``make demo``: the main job on the bundled sample data.

1. The Diftong paper's running example (the bundled Users database, two versions): statistics
   printed, JSON summary, charts and delta tables written to ``reports/delta_users``.
2. The paper's TPC-H test case 2 at a small, seeded scale (generated on first use into
   ``reports/tpch_sample``): the same outputs in ``reports/delta_tpch``.
3. The papermill delta report of the Users database: ``reports/delta_report/delta_report.html``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from dqkit.delta import delta
from dqkit.runtime.session import get_spark

TPCH_KEYS = {"lineitem": ["l_orderkey", "l_linenumber"], "orders": ["o_orderkey"]}


def main(out: str = "reports") -> int:
    """Run the demo deltas and write their outputs; returns 0."""
    from dqkit.data import bundled
    from dqkit.data.tpch import generate_tpch
    from dqkit.report import demo_report

    spark = get_spark()
    out_dir = Path(out)
    users = bundled("users")
    result = delta(users / "old", users / "new", keys={"users": ["id"]}, spark=spark)
    print("== The Diftong paper's running example (Users) ==")
    print(result.to_text())
    where = result.save(out_dir / "delta_users")
    print(f"\nJSON, charts and delta tables written to {where}\n")

    sample = out_dir / "tpch_sample"
    if not (sample / "old").exists():
        generate_tpch(sample, scale=0.001, seed=42, spark=spark, engine="spark", overwrite=True)
    tpch = delta(sample / "old", sample / "new", keys=TPCH_KEYS, spark=spark)
    print("== TPC-H test case 2 (small seeded scale) ==")
    print(tpch.to_text())
    where = tpch.save(out_dir / "delta_tpch")
    print(f"\nJSON, charts and delta tables written to {where}")
    html = demo_report(out_dir / "delta_report")
    print(f"\ndelta report of the bundled Users database: {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
