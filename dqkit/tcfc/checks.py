"""M4: optional data checks on a pair's levels, reported as warnings (never errors).

* X_i -> X_{i+1}: the two levels have as many distinct fragments, so level i+1 adds nothing (§3.1);
* a level other than the last is already unique (a key): the deeper levels are superfluous (§3.1, §3.4).

The checks read the source side only (one distinct count per level plus a row count), in its own engine.
"""
from __future__ import annotations

from typing import Any

from dqkit.tcfc.engines import EnginePool, bind_pair
from dqkit.tcfc.spec import TcfcSpec, load_spec


def check_levels(spec: TcfcSpec | Any, pair: str | None = None, *, spark: Any = None,
                 pool: EnginePool | None = None) -> list[str]:
    """Warnings for the M4 checks of every pair (or one), computed on the source side."""
    tspec = load_spec(spec)
    own = pool is None
    pool = pool or EnginePool(spark)
    warnings: list[str] = []
    try:
        for p in tspec.pairs:
            if pair is not None and p.name != pair:
                continue
            bp = bind_pair(p, pool)
            eng = bp.source.engine
            counts = [eng.distinct_count(bp.source, list(lv.X)) if lv.X else 1 for lv in p.levels]
            total = eng.distinct_count(bp.source, list(bp.source.types))
            for i in range(len(counts) - 1):
                if counts[i] == counts[i + 1] and counts[i] > 1:
                    warnings.append(f"{p.name}: level {i + 1} {list(p.levels[i].X)} and level {i + 2} "
                                    f"{list(p.levels[i + 1].X)} have the same {counts[i]} fragments "
                                    "(X_i -> X_i+1): one of them is superfluous")
                if p.levels[i].X and counts[i] == total and total > 1:
                    warnings.append(f"{p.name}: level {i + 1} {list(p.levels[i].X)} is already unique "
                                    f"({total} distinct rows): the levels below it are superfluous")
    finally:
        if own:
            pool.close()
    return warnings
