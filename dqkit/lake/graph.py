"""The containment graph of a lake: SGB -> MMP -> CLP (-> exact verification), kept up to date (§7.1).

``ContainmentGraph`` holds the lake's tables, SGB's clusters and every candidate edge with the stage
that last kept it (or removed it). ``run()`` computes everything; ``add_dataset``,
``update_dataset`` and ``remove_dataset`` change one table and re-check only the edges touching it,
so the result equals a full recompute (tested). Every CLP sample is seeded by (run seed, child), so it
does not depend on the order edges are visited in (req. 36).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import SparkSession

from dqkit.errors import ParameterError, UnknownTableError
from dqkit.lake import stages
from dqkit.lake._lake import Lake, LakeTable, _read_one, load_lake, profile_table
from dqkit.lake.sgb import Edge, SGBResult, sgb
from dqkit.runtime.session import get_spark
from dqkit.runtime.sparkutil import scoped_conf

#: below this many bytes in the lake, Spark evaluates the many small probe queries interpreted: compiling
#: generated code for each costs more than it saves (measured: about twice as fast on the CI lake)
SMALL_LAKE_BYTES = 64 * 1024 * 1024


def small_lake_conf(tables: Iterable[LakeTable]) -> dict[str, str]:
    """Planner settings for the content stages: no code generation for a small lake."""
    if sum(t.bytes for t in tables) < SMALL_LAKE_BYTES:
        return {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    return {}

STAGES = ("SGB", "MMP", "CLP", "verify")
Progress = Callable[[str, str, int, int], None]
CHANGES = ("rows_added", "rows_removed", "cols_added", "cols_removed")


@dataclass(frozen=True)
class EdgeState:
    """One candidate edge parent -> child: the last stage that kept it, the stage that removed it (None
    when it survived every stage run), and, after verification, CM(child, parent) and its row count."""

    parent: str
    child: str
    kept_by: str = "SGB"
    removed_by: str | None = None
    cm: float | None = None
    rows: int | None = None
    reason: str = ""


class ContainmentGraph:
    """The candidate edges of a lake through the stages, with incremental updates (§7.1)."""

    def __init__(self, lake: Lake, *, s: int = 4, t: int = 10, seed: int = 0, mode: str = "strict",
                 verify: bool = False, bag: bool = False,
                 spark: SparkSession | None = None, progress: Progress | None = None,
                 with_types: bool = False, synonyms: Mapping[str, str] | None = None) -> None:
        if mode not in stages.MODES:
            raise ParameterError(f"unknown CLP mode {mode!r}", hint="paper or strict")
        for k, v in (("s", s), ("t", t)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ParameterError(f"{k} must be a whole number >= 1, not {v!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ParameterError(f"seed must be a whole number, not {seed!r}")
        self.lake = lake
        self.tables: dict[str, LakeTable] = dict(lake.tables)
        self.s, self.t, self.seed, self.mode = s, t, seed, mode
        self.verify, self.bag = verify, bag
        self.with_types, self.synonyms = with_types, synonyms
        self.spark = spark or get_spark()
        self.progress = progress
        self.edges: dict[Edge, EdgeState] = {}
        self.centers: list[str] = []
        self.members: dict[str, list[str]] = {}
        self.sgb_result: SGBResult | None = None
        self.timings: dict[str, float] = {k: 0.0 for k in STAGES}
        self.plan_stale = True
        self._samples: dict[str, stages.CLPSample] = {}
        self.clp_operations = 0  # Σ over checked edges of t (Table 3: Σ M_i·t is the paper's row work)

    # ------------------------------------------------------------------------------ full run
    @property
    def schemas(self) -> dict[str, frozenset[str]]:
        return {n: t.tokens for n, t in self.tables.items()}

    def run(self) -> ContainmentGraph:
        """SGB over every table, then the content stages over every candidate edge."""
        t0 = time.perf_counter()
        self.sgb_result = sgb(self.schemas)
        self.centers = [c for c, _ in self.sgb_result.clusters]
        self.members = {c: list(m) for c, m in self.sgb_result.clusters}
        self.edges = {e: EdgeState(*e) for e in sorted(self.sgb_result.edges)}
        self.timings["SGB"] += time.perf_counter() - t0
        self._check(sorted(self.edges))
        return self

    def _report(self, stage: str, item: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, item, done, total)

    def _sample(self, child: LakeTable) -> stages.CLPSample:
        got = self._samples.get(child.name)
        if got is None:
            got = self._samples[child.name] = stages.clp_sample(child, self.s, self.t, self.seed)
        return got

    def _check(self, edges: Iterable[Edge]) -> None:
        """MMP, CLP and (optionally) verification on ``edges``, each stage on the previous survivors."""
        with scoped_conf(self.spark, small_lake_conf(self.tables.values())):
            self._check_stages(list(edges))

    def _check_stages(self, todo: list[Edge]) -> None:
        t0 = time.perf_counter()
        alive = []
        for i, (p, c) in enumerate(todo):
            kept, column = stages.mmp_keeps(self.tables[p], self.tables[c])
            if kept:
                self.edges[(p, c)] = EdgeState(p, c, "MMP")
                alive.append((p, c))
            else:
                self.edges[(p, c)] = EdgeState(p, c, "SGB", "MMP", reason=f"range of {column!r}")
        self._report("MMP", "", len(todo), len(todo))
        self.timings["MMP"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        missing = sorted({c for _, c in alive if c not in self._samples})
        self._samples.update(stages.clp_samples([self.tables[c] for c in missing], self.s, self.t, self.seed))
        tasks = []
        for i, (p, c) in enumerate(alive):
            sample = self._sample(self.tables[c])
            self.clp_operations += len(sample.rows)
            tasks.append((sample, self.tables[p], self.tables[c]))
            self._report("CLP", f"sample of {c}", i + 1, len(alive))
        survivors = []
        for (p, c), kept in zip(alive, stages.clp_keeps_many(tasks, self.mode)):
            if kept:
                self.edges[(p, c)] = EdgeState(p, c, "CLP")
                survivors.append((p, c))
            else:
                self.edges[(p, c)] = EdgeState(p, c, "MMP", "CLP", reason="a sampled row is missing")
        self.timings["CLP"] += time.perf_counter() - t0
        if self.verify:
            t0 = time.perf_counter()
            cms = stages.containment_fractions([(self.tables[p], self.tables[c]) for p, c in survivors], self.bag)
            for (p, c), (cm, rows) in zip(survivors, cms):
                if cm == 1.0:
                    self.edges[(p, c)] = EdgeState(p, c, "verify", None, cm, rows)
                else:
                    self.edges[(p, c)] = EdgeState(p, c, "CLP", "verify", cm, rows, f"CM {cm:.4f}")
            self._report("verify", "", len(survivors), len(survivors))
            self.timings["verify"] += time.perf_counter() - t0
        self.plan_stale = True

    # ------------------------------------------------------------------------------ views
    def stage_edges(self, stage: str) -> frozenset[Edge]:
        """The edges left after ``stage``."""
        k = STAGES.index(stage)
        return frozenset(e for e, s in self.edges.items()
                         if s.removed_by is None or STAGES.index(s.removed_by) > k)

    @property
    def contained(self) -> frozenset[Edge]:
        """The edges that survived every stage run: child contained in parent (with high probability
        after CLP; exactly after verification)."""
        return frozenset(e for e, s in self.edges.items() if s.removed_by is None)

    # ------------------------------------------------------------------------------ dynamic updates
    def _insert(self, v: str) -> set[Edge]:
        """Center testing for a new or changed node (§7.1); the schema-candidate edges touching it."""
        tok = self.schemas
        joined = [c for c in self.centers if tok[v] <= tok[c]]
        for c in joined:
            self.members[c].append(v)
        if not joined:
            self.centers.append(v)
            self.members[v] = [v] + [w for w in sorted(self.tables) if w != v and tok[w] <= tok[v]]
            joined = [v]
        pairs: set[Edge] = set()
        for c in joined:
            for m in self.members[c]:
                if m == v:
                    continue
                if tok[m] <= tok[v]:
                    pairs.add((v, m))
                if tok[v] <= tok[m]:
                    pairs.add((m, v))
        return pairs

    def _detach(self, v: str) -> None:
        """Remove ``v`` from SGB's clusters; members orphaned by a removed center get new centers."""
        tok = self.schemas
        for c in self.centers:
            if c != v and v in self.members[c]:
                self.members[c].remove(v)
        if v in self.members:
            orphans = [m for m in self.members.pop(v) if m != v]
            self.centers.remove(v)
            orphans = [m for m in orphans if not any(m in self.members[c] for c in self.centers)]
            for m in sorted(orphans, key=lambda n: (-len(tok[n]), n)):
                joined = [c for c in self.centers if tok[m] <= tok[c]]
                for c in joined:
                    if m not in self.members[c]:
                        self.members[c].append(m)
                if not joined:
                    self.centers.append(m)
                    self.members[m] = [m] + [w for w in sorted(self.tables) if w not in (v, m) and tok[w] <= tok[m]]

    def _load(self, name: str, source: Any) -> LakeTable:
        from pathlib import Path
        import os

        path = Path(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else None
        if path is not None and not os.fspath(source).startswith("catalog:"):
            table = _read_one(self.spark, name, path, path, self.with_types, self.synonyms)
        else:
            table = _read_one(self.spark, name, source, None, self.with_types, self.synonyms)
        return profile_table(table)

    def add_dataset(self, name: str, source: Any) -> set[Edge]:
        """Add a table: center testing, then MMP/CLP(/verify) only on the edges touching it."""
        if name in self.tables:
            raise ParameterError(f"the lake already has a table {name!r}", hint="use update_dataset")
        self.tables[name] = self._load(name, source)
        t0 = time.perf_counter()
        pairs = self._insert(name)
        self.timings["SGB"] += time.perf_counter() - t0
        for e in pairs:
            self.edges[e] = EdgeState(*e)
        self._check(sorted(pairs))
        return pairs

    def remove_dataset(self, name: str) -> None:
        """Drop a table with its edges."""
        if name not in self.tables:
            raise UnknownTableError(f"the lake has no table {name!r}")
        self._detach(name)
        del self.tables[name]
        self._samples.pop(name, None)
        self.edges = {e: s for e, s in self.edges.items() if name not in e}
        self.plan_stale = True

    def update_dataset(self, name: str, source: Any, change: str | None = None) -> set[Edge]:
        """Replace a table's contents. Edges the paper says stay are kept without a check (rows or
        columns added: its kept outgoing edges; removed: its kept incoming edges); every other pair
        touching it, new candidates in both directions included, is re-checked (req. 34)."""
        if name not in self.tables:
            raise UnknownTableError(f"the lake has no table {name!r}")
        if change is not None and change not in CHANGES:
            raise ParameterError(f"unknown change {change!r}", hint=", ".join(CHANGES) + " or None (re-check all)")
        old = {e: s for e, s in self.edges.items() if name in e}
        self._detach(name)
        self.tables[name] = self._load(name, source)
        self._samples.pop(name, None)
        self.edges = {e: s for e, s in self.edges.items() if name not in e}
        pairs = self._insert(name)
        stay: set[Edge] = set()
        for e in pairs:
            s = old.get(e)
            outgoing, incoming = e[0] == name, e[1] == name
            if s is not None and s.removed_by is None and (
                    (change in ("rows_added", "cols_added") and outgoing)
                    or (change in ("rows_removed", "cols_removed") and incoming)):
                self.edges[e] = replace(s, rows=None if incoming else s.rows)
                stay.add(e)
            else:
                self.edges[e] = EdgeState(*e)
        self._check(sorted(pairs - stay))
        return pairs

    def schema_edges(self) -> frozenset[Edge]:
        return frozenset(self.edges)


def build_graph(lake: Any, **options: Any) -> ContainmentGraph:
    """``ContainmentGraph(load_lake(lake), **options).run()`` (a ``Lake`` is used as it is)."""
    load_opts = {k: options[k] for k in ("with_types", "synonyms", "spark") if k in options}
    lk = lake if isinstance(lake, Lake) else load_lake(lake, **load_opts)
    return ContainmentGraph(lk, **options).run()
