"""Daisy's cost model (§5.2, R34–R39): incremental cleaning per query against full cleaning.

Symbols as in the paper: n rows; q_i the size of query i's result; e_i the correlated tuples its
relaxation adds; d_i the detection cost (FDs: q_i + e_i) and df the full detection cost (FDs: n);
ε_i the violating tuples query i cleans, ε all violating tuples; p the candidates per cleaned value.

The paper gives no predictor of the future workload (spec §5, "future workload unmodelled"). dqkit's
reading: after each query the engine compares the cumulative incremental cost *including this query*
with the cost of having cleaned everything up front and answered the same number of queries on clean
data; as soon as incremental would be dearer, it cleans the remaining dirty part instead (Fig. 7's
switch). Both paths compute a cell from the same dataset-wide counts, so the switch never changes a
candidate set (R39).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


def incremental_cost(n: int, prev_q: Sequence[int], d_i: float, eps_i: int, q_i: int, e_i: int,
                     prev_eps: Sequence[int], p: float) -> float:
    """R34: n − Σ_{j<i} q_j + d_i + ε_i(q_i + e_i) + n − Σ_{j<i} ε_j + p·Σ_{j<i} ε_j + ε_i·p."""
    sq, se = sum(prev_q), sum(prev_eps)
    return n - sq + d_i + eps_i * (q_i + e_i) + n - se + p * se + eps_i * p


def full_cost(q: int, n: int, df: float, eps: int, p: float) -> float:
    """R35: q·n + df + ε·n + n + ε·p (clean everything once, then answer q queries)."""
    return q * n + df + eps * n + n + eps * p


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

    def decide(self, q_i: int, e_i: int, eps_i: int) -> dict[str, Any]:
        """The decision for the next query given its size, relaxation and violations: ``incremental``
        or ``full`` (clean the remaining dirty part), with both costs."""
        i = self.queries + 1
        inc = incremental_cost(self.n, self.prev_q, q_i + e_i, eps_i, q_i, e_i, self.prev_eps, self.p)
        full = full_cost(i, self.n, self.n, self.eps, self.p)
        if self.switched_at is not None:
            choice = "clean (after the switch)"
        elif self.strategy == "full":
            choice = "full"
        elif self.strategy == "incremental":
            choice = "incremental"
        else:
            choice = "full" if self.cumulative_incremental + inc > full else "incremental"
        return {"query": i, "q_i": q_i, "e_i": e_i, "eps_i": eps_i, "incremental_cost": inc,
                "cumulative_incremental": self.cumulative_incremental + inc, "full_cost": full, "decision": choice}

    def record(self, decision: dict[str, Any], q_i: int, eps_i: int) -> None:
        self.queries += 1
        self.prev_q.append(q_i)
        self.prev_eps.append(eps_i)
        if decision["decision"] == "incremental":
            self.cumulative_incremental = decision["cumulative_incremental"]
        if decision["decision"] == "full" and self.switched_at is None:
            self.switched_at = self.queries
        self.history.append(dict(decision))

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "eps": self.eps, "p": self.p, "strategy": self.strategy, "queries": self.queries,
                "prev_q": self.prev_q, "prev_eps": self.prev_eps, "cumulative_incremental": self.cumulative_incremental,
                "switched_at": self.switched_at, "history": self.history}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CostModel:
        return cls(**{k: d[k] for k in ("n", "eps", "p", "strategy", "queries", "prev_q", "prev_eps",
                                         "cumulative_incremental", "switched_at", "history")})
