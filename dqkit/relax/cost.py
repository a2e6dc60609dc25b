"""Daisy's cost model (§5.2, R34–R39): incremental cleaning per query against full cleaning.

Symbols as in the paper: n rows; q_i the size of query i's result; e_i the correlated tuples its
relaxation adds; d_i the detection cost (FDs: q_i + e_i) and df the full detection cost (FDs: n);
ε_i the violating tuples query i cleans, ε all violating tuples; p the candidates per cleaned value.

The paper gives no predictor of the future workload (spec §5, "future workload unmodelled"). dqkit's
reading: after each query's relaxation the engine compares the cumulative incremental cost *including
this query* with the cost of cleaning the remaining dirty part now; as soon as incremental would be
dearer, it cleans the remaining dirty part instead (Fig. 7's switch). This is the rent-or-buy rule: it
never pays more than twice the cheaper of the two strategies chosen in hindsight. Both paths compute a
cell from the same dataset-wide counts, so the switch never changes a candidate set (R39).

Two units (``units``):

* ``tuples``: R34 and R35 verbatim, costs in tuples touched. With thousands of violating tuples the
  ε·n term of R35 dominates, so on a Spark engine whose full cleaning is a few group-bys it switches
  only after thousands of queries (measured: never, in 50- and 90-query workloads).
* ``seconds`` (the default): the same rule with costs measured on this engine. Each incremental query
  records the seconds of its relaxation and of its cleaning, and the rows its cleaning wrote (the ε_i
  new cells plus the probabilistic part already stored, R34's update terms). A non-negative least-squares
  line ``a + b·rows`` (``scipy.optimize.nnls``) over those cleanings predicts the cleaning of this query
  and of the remaining dirty part. The first query is always incremental: nothing is measured yet.
  The paper's tuple costs are still computed and kept beside the decision.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dqkit.errors import ParameterError

UNITS = ("seconds", "tuples")


def incremental_cost(n: int, prev_q: Sequence[int], d_i: float, eps_i: int, q_i: int, e_i: int,
                     prev_eps: Sequence[int], p: float) -> float:
    """R34: n − Σ_{j<i} q_j + d_i + ε_i(q_i + e_i) + n − Σ_{j<i} ε_j + p·Σ_{j<i} ε_j + ε_i·p."""
    sq, se = sum(prev_q), sum(prev_eps)
    return n - sq + d_i + eps_i * (q_i + e_i) + n - se + p * se + eps_i * p


def full_cost(q: int, n: int, df: float, eps: int, p: float) -> float:
    """R35: q·n + df + ε·n + n + ε·p (clean everything once, then answer q queries)."""
    return q * n + df + eps * n + n + eps * p


def fit_cleaning_seconds(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) ≥ 0 with seconds ≈ a + b·rows over measured cleanings ``(rows, seconds)``.

    Non-negative least squares, so a noisy point never makes a cost negative. With fewer than two
    distinct row counts the split between fixed and per-row cost is unknown; the line then goes through
    the origin (b = seconds / rows), which predicts a large cleaning as dear as possible: the switch
    waits for evidence rather than risk a full cleaning the measurements do not support."""
    from scipy.optimize import nnls

    pts = [(float(r), float(s)) for r, s in points]
    if not pts:
        return 0.0, 0.0
    if len({r for r, _ in pts}) < 2:
        rows = sum(r for r, _ in pts)
        secs = sum(s for _, s in pts)
        return (secs / len(pts), 0.0) if rows == 0 else (0.0, secs / rows)
    import numpy as np

    scale = max(r for r, _ in pts) or 1.0  # conditioning: rows in units of the largest cleaning
    a = np.array([[1.0, r / scale] for r, _ in pts])
    (c0, c1), _ = nnls(a, np.array([s for _, s in pts]))
    return float(c0), float(c1) / scale


@dataclass
class CostModel:
    """Running totals of one table and the switching decision (R35–R36)."""

    n: int
    eps: int  # violating tuples (precomputed lhs group-bys, R36)
    p: float  # mean candidates per violating group (precomputed rhs counts per lhs, R36)
    strategy: str = "auto"  # auto | incremental | full
    queries: int = 0
    prev_q: list[int] = field(default_factory=list)
    prev_eps: list[int] = field(default_factory=list)
    cumulative_incremental: float = 0.0
    switched_at: int | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    units: str = "seconds"
    #: measured incremental cleanings: (rows written, relaxation seconds, cleaning seconds)
    measured: list[tuple[int, float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.units not in UNITS:
            raise ParameterError(f"unknown cost units {self.units!r}", hint=" or ".join(UNITS))

    @property
    def remaining(self) -> int:
        """Violating tuples not cleaned yet (ε − Σ ε_j)."""
        return max(0, self.eps - sum(self.prev_eps))

    def decide(self, q_i: int, e_i: int, eps_i: int, relax_seconds: float = 0.0, stored: int = 0) -> dict[str, Any]:
        """The decision for the next query given its size, relaxation and violations: ``incremental``
        or ``full`` (clean the remaining dirty part), with both costs in the model's units.
        ``relax_seconds``: this query's relaxation, measured; ``stored``: rows of the probabilistic part
        already stored (the update rewrites them)."""
        i = self.queries + 1
        inc_t = incremental_cost(self.n, self.prev_q, q_i + e_i, eps_i, q_i, e_i, self.prev_eps, self.p)
        full_t = full_cost(i, self.n, self.n, self.eps, self.p)
        d: dict[str, Any] = {"query": i, "q_i": q_i, "e_i": e_i, "eps_i": eps_i, "units": self.units,
                             "tuple_incremental_cost": inc_t, "tuple_full_cost": full_t}
        if self.units == "tuples":
            inc, full, known = inc_t, full_t, True
        else:
            a, b = fit_cleaning_seconds([(r, c) for r, _, c in self.measured])
            known = bool(self.measured)
            inc = relax_seconds + (a + b * (eps_i + stored) if eps_i else 0.0)
            full = a + b * (max(self.remaining, eps_i) + stored)
            d.update({"fixed_seconds": a, "seconds_per_row": b})
        cumulative = self.cumulative_incremental + inc
        if self.switched_at is not None:
            choice = "clean (after the switch)"
        elif self.strategy == "full":
            choice = "full"
        elif self.strategy == "incremental" or not known:
            choice = "incremental"
        else:
            choice = "full" if cumulative > full else "incremental"
        d.update({"incremental_cost": inc, "cumulative_incremental": cumulative, "full_cost": full, "decision": choice})
        return d

    def record(self, decision: dict[str, Any], q_i: int, eps_i: int, relax_seconds: float | None = None,
               clean_seconds: float | None = None, rows: int | None = None) -> None:
        """Account for the query just cleaned. With measurements, the cumulative cost in seconds is what
        was spent (relaxation + cleaning), and an incremental cleaning adds a point to the line."""
        self.queries += 1
        self.prev_q.append(q_i)
        self.prev_eps.append(eps_i)
        d = dict(decision)
        if relax_seconds is not None and clean_seconds is not None:
            d.update({"relax_seconds": relax_seconds, "clean_seconds": clean_seconds, "rows_written": rows})
        if d["decision"] == "incremental":
            if self.units == "seconds" and relax_seconds is not None and clean_seconds is not None:
                self.cumulative_incremental += relax_seconds + clean_seconds
                if eps_i and rows is not None:
                    self.measured.append((int(rows), float(relax_seconds), float(clean_seconds)))
            else:
                self.cumulative_incremental = d["cumulative_incremental"]
        if d["decision"] == "full" and self.switched_at is None:
            self.switched_at = self.queries
        self.history.append(d)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "eps": self.eps, "p": self.p, "strategy": self.strategy, "queries": self.queries,
                "prev_q": self.prev_q, "prev_eps": self.prev_eps, "cumulative_incremental": self.cumulative_incremental,
                "switched_at": self.switched_at, "history": self.history, "units": self.units,
                "measured": [list(m) for m in self.measured]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CostModel:
        """The inverse of ``to_dict``; a state saved before the seconds units keeps the tuple units."""
        m = cls(**{k: d[k] for k in ("n", "eps", "p", "strategy", "queries", "prev_q", "prev_eps",
                                      "cumulative_incremental", "switched_at", "history")},
                units=d.get("units", "tuples"))
        m.measured = [(int(r), float(x), float(c)) for r, x, c in d.get("measured", [])]
        return m
