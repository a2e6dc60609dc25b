"""A registered Daisy table: its originals, the delta cleaning wrote, its rules, statistics and cost model.

The probabilistic table (``prob``) is the base joined with the delta (R11); ``with_checks`` and
``unchecked_ids`` keep the record of which rules checked which tuples (R19).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.relax import fd as fdmod
from dqkit.relax.cost import CostModel
from dqkit.relax.model import CAND_PREFIX, CHECKED, TID
from dqkit.rules import DenialConstraint, FunctionalDependency
from dqkit.runtime.sparkutil import checkpoint, col

# a delta row can hold long candidate arrays (a popular rhs value's lhs world): hint a broadcast only for small
# deltas and leave larger ones to Spark's own choice (a 37K-row delta exhausted a 1 GiB driver when hinted)
BROADCAST_DELTA_ROWS = 20_000


@dataclass
class DaisyTable:
    name: str
    source: Any
    key: str | None
    base: DataFrame  # TID + original columns (persisted)
    types: dict[str, str]
    columns: list[str]
    delta: DataFrame  # TID, CHECKED, candidate columns: only the tuples cleaning touched (persisted)
    delta_rows: int = 0
    fds: list[FunctionalDependency] = field(default_factory=list)
    dcs: list[DenialConstraint] = field(default_factory=list)
    stats: dict[str, fdmod.FDStats] = field(default_factory=dict)
    pairs: dict[str, DataFrame] = field(default_factory=dict)
    cost: CostModel | None = None
    fully_checked: bool = False
    fingerprint: str | None = None
    dc_checked_ranges: dict[str, set[int]] = field(default_factory=dict)
    dc_estimates: dict[str, Any] = field(default_factory=dict)

    @property
    def prob(self) -> DataFrame:
        """The probabilistic table: every base tuple, with the candidates and checks the delta holds.

        Cleaning writes only the delta (the cells it changed and the checks it made), so an update costs
        the size of the delta, not of the table (the paper's outer join of dataset and fixes, R11, is this
        view); a delta of at most ``BROADCAST_DELTA_ROWS`` rows is broadcast, so reading the view is a scan;
        a larger one is joined as Spark plans it."""
        d = F.broadcast(self.delta) if self.delta_rows <= BROADCAST_DELTA_ROWS else self.delta
        cands = [c for c in self.delta.columns if c.startswith(CAND_PREFIX)]
        return self.base.join(d, TID, "left").select(
            TID, *[col(c) for c in self.columns],
            F.coalesce(col(CHECKED), F.array().cast("array<string>")).alias(CHECKED), *[col(c) for c in cands])

    def set_delta(self, delta: DataFrame) -> None:
        """Keep only the tuples with a candidate or a check, persisted (the next query starts from it)."""
        cands = [c for c in delta.columns if c.startswith(CAND_PREFIX)]
        keep = F.size(F.coalesce(col(CHECKED), F.array().cast("array<string>"))) > 0
        for c in cands:
            keep = keep | col(c).isNotNull()
        self.delta = delta.where(keep).transform(checkpoint)
        self.delta_rows = self.delta.count()

    @property
    def rule_names(self) -> list[str]:
        return sorted([r.name for r in self.fds] + [r.name for r in self.dcs])

    @property
    def rule_columns(self) -> list[str]:
        return list(dict.fromkeys(c for r in [*self.fds, *self.dcs] for c in r.columns))


def with_checks(hit: Column, rules: Sequence[str]) -> Column:
    """The ``CHECKED`` column of a delta row after marking ``rules`` where ``hit``."""
    have = F.coalesce(col(CHECKED), F.array().cast("array<string>"))
    if not rules:
        return have.alias(CHECKED)
    return F.when(hit, F.array_sort(F.array_union(have, F.array(*[F.lit(r) for r in rules])))).otherwise(have).alias(CHECKED)


def dirty_ids(t: DaisyTable) -> DataFrame:
    """TIDs of the tuples in a dirty group of some FD of the table (R20: only they can need cleaning)."""
    return fdmod._union_ids([t.stats[f.name].dirty.select(TID) for f in t.fds])


def unchecked_ids(t: DaisyTable, names: Sequence[str]) -> DataFrame:
    """TIDs of the tuples of dirty FD groups that some of the FDs ``names`` have not checked yet (R19).

    A tuple of a group that is clean under every FD never needs an FD check (the statistics of R20
    prove it), so FD checks are recorded on the tuples of dirty groups only and the delta stays small."""
    if not names:
        return t.base.where(F.lit(False)).select(TID)
    done = t.delta.where(F.forall(F.array(*[F.lit(n) for n in names]),
                                  lambda x: F.array_contains(col(CHECKED), x))).select(TID)
    return dirty_ids(t).join(done, TID, "left_anti")
