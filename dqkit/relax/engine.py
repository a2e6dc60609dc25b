"""The Daisy engine: registered tables and rules, queries cleaned on demand (Daisy §4–§6).

``Daisy`` holds, per registered table, its probabilistic version (``dqkit.relax.model``), its rules
(from ``dqkit.rules``, unchanged), the FD statistics, the DC violation pairs found so far and the cost
model. ``query(sql)`` runs the plan of ``plan_query``:

1. per table of the query, in FROM order, the **pushed-down selection**: the WHERE conjuncts that
   read only that table, evaluated over candidates (R12); for a table joined to earlier ones, also the
   join keys those parts may take (clean_⋈, R30: only the qualifying part of each side is cleaned);
2. ``clean_σ`` for every rule of that table the query touches (R4): FD relaxation (Algorithm 1),
   DC partial theta-join, then cleaning of the relaxed tuples not yet checked (R17, R19) under all the
   table's rules, merged (R27), and the in-place update of the probabilistic table (R11);
3. the probabilistic equi-join of the cleaned parts (R13: candidate sets intersect; both tuple ids
   kept), the conditions spanning tables, the projection, and GROUP BY after cleaning (R14).

The engine is split by responsibility: ``dqkit.relax.table`` (a registered table and its delta),
``dqkit.relax.plan`` (the plan and its explanation), ``dqkit.relax.cleaning`` (the cleaning operators,
a part of ``Daisy``), ``dqkit.relax.cells`` (long format and DaisyP) and ``dqkit.relax._result`` (the
answer). Each imports only modules below it; this module sits on top.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitError, ParameterError, RuleError, SourceError, UnknownColumnError, UnknownTableError
from dqkit.primitives.fingerprint import group_fingerprint, row_fingerprint
from dqkit.primitives.keys import check_key, check_reserved
from dqkit.relax import dc as dcmod
from dqkit.relax import fd as fdmod
from dqkit.relax._result import QueryResult
from dqkit.relax.cells import daisy_p, long_cells, tuple_worlds
from dqkit.relax.checks import STRATEGIES, check_daisy_params  # noqa: F401 - STRATEGIES re-exported
from dqkit.relax.cleaning import CleaningOperators
from dqkit.relax.cost import CostModel
from dqkit.relax.model import CAND_TYPE, CHECKED, TID, cand_col, possible_values
from dqkit.relax.plan import cond_column, explain_text, plan_query, project
from dqkit.relax.sql import Query
from dqkit.relax.state import check_state_folder, state_guard
from dqkit.relax.table import DaisyTable, unchecked_ids
from dqkit.contract.render import atomic_folder
from dqkit.runtime.atomic import fault_point
from dqkit.rules import FunctionalDependency, as_rules, validate_rules
from dqkit.runtime.session import get_spark
from dqkit.io.sources import read_table
from dqkit.runtime.sparkutil import cancellable, checkpoint, col, local_frame
from dqkit.primitives.violations import tuple_ids

ProgressFn = Callable[[str, str, int, int], None]


class StateMismatchError(DqkitError):
    """A ``--state`` folder written for another version of a table (its fingerprint differs)."""


class Daisy(CleaningOperators):
    """Query-driven cleaning over registered dirty tables (see the module docstring).

    ``strategy``: ``auto`` (the cost model decides per query, R35), ``incremental`` (never switch) or
    ``full`` (clean everything at the first query: offline cleaning with the same kernel).
    ``cost_units``: ``seconds`` (the cost model's rule with costs measured on this engine) or
    ``tuples`` (R34/R35 verbatim); see ``dqkit.relax.cost``.
    ``threshold``: Algorithm 2's th; a DC query whose estimated accuracy is below it is cleaned against
    the whole table (R38). ``strict``: DC range boundaries as the paper prints them (``<2000``).
    """

    def __init__(self, spark: SparkSession | None = None, *, strategy: str = "auto", threshold: float = 0.5,
                 strict: bool = True, nb_parts: int | None = None, partitions: int = 4,
                 cost_units: str = "seconds") -> None:
        check_daisy_params(strategy, threshold, partitions, nb_parts, cost_units)  # before Spark
        self.spark = spark or get_spark()
        self.strategy = strategy
        self.cost_units = cost_units
        self.threshold = float(threshold)
        self.strict = strict
        self.nb_parts = nb_parts
        self.partitions = int(partitions)
        self.tables: dict[str, DaisyTable] = {}
        self.history: list[dict[str, Any]] = []
        #: the generation of each --state folder as loaded (None: it held no state), by absolute path
        self._loaded_states: dict[str, str | None] = {}

    # ------------------------------------------------------------------------------ registration
    def register(self, name: str, source: Any, key: str | None = None) -> Daisy:
        """Register a table (a path, ``catalog:db.t`` or a DataFrame, read by ``dqkit.io.sources``).

        ``key`` names the rows' ids (unique and non-NULL: checked here, ``dqkit.primitives.keys.check_key``);
        without it rows are named by a content id (``dqkit.primitives.violations.tuple_ids``)."""
        if not isinstance(name, str) or not name.strip() or not name.replace("_", "a").isalnum():
            raise ParameterError(f"table name {name!r} must be a plain identifier", hint="letters, digits and _")
        if isinstance(source, str) and not source.strip():
            raise SourceError(f"table {name!r}: no source given", hint="a Parquet/CSV/JSON path, catalog:db.t or a DataFrame")
        df = read_table(source, self.spark)
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        label = f"table {name!r}" + (f" ({os.fspath(source)})" if isinstance(source, (str, os.PathLike)) else "")
        check_reserved(types, table=label, command="query")
        if key is not None and key not in types:
            raise UnknownColumnError(f"table {name!r}: unknown key column {key!r}", hint=f"columns: {', '.join(types)}")
        if key is not None:
            check_key(df, key, table=label, command="query",
                      without=f"leave --key {name}=... out so dqkit names rows by a content id")
        cols = list(df.columns)
        base = df.select(tuple_ids(df, key).cast("string").alias(TID), *[col(c) for c in cols]).transform(checkpoint)
        delta = local_frame(self.spark, [], T.StructType([T.StructField(TID, T.StringType()),
                                                          T.StructField(CHECKED, T.ArrayType(T.StringType()))]))
        self.tables[name] = DaisyTable(name, source, key, base, types, cols, delta)
        return self

    def add_rules(self, table: str, rules: Any) -> Daisy:
        """Add rules (objects, text, a file) to a registered table; FD-shaped DCs become FDs (R3).

        A rule added after queries re-cleans, when reached, the tuples checked without it, from the
        original values (R29)."""
        if table not in self.tables:
            raise UnknownTableError(f"rules given for {table!r}, which is not registered",
                                    hint=f"registered tables: {', '.join(self.tables) or 'none'}; "
                                         f"register it first (--table {table}=SOURCE)")
        t = self.tables[table]
        parsed = as_rules(rules)
        validate_rules(parsed, t.types)
        names = set(t.rule_names)
        for r in parsed:
            if getattr(r, "kind", "") == "udf":
                raise RuleError(f"rule {r.name!r}: UDF rules are not supported by query-time cleaning",
                                hint="give FDs or two-tuple denial constraints")
            if r.name in names:
                raise RuleError(f"rule name {r.name!r} is already used on table {table!r}")
            if isinstance(r, FunctionalDependency):
                t.fds.extend(fdmod.single_rhs([r]))
            else:
                fd = dcmod.as_fd(r)
                if fd is not None:
                    t.fds.append(fd)
                elif r.arity != 2:
                    raise RuleError(f"rule {r.name!r}: one-tuple rules are not supported by query-time cleaning",
                                    hint="Daisy cleans FDs and two-tuple denial constraints")
                else:
                    t.dcs.append(r)
            names.add(r.name)
        for c in t.rule_columns:
            if cand_col(c) not in t.delta.columns:
                t.delta = t.delta.withColumn(cand_col(c), F.lit(None).cast(CAND_TYPE))
        t.fully_checked = False
        t.cost = None
        return self

    def table(self, name: str) -> DataFrame:
        """The probabilistic version of a registered table (originals, candidates, checked rules)."""
        return self._get(name).prob

    def _get(self, name: str) -> DaisyTable:
        if name not in self.tables:
            raise UnknownTableError(f"unknown table {name!r}", hint=f"registered: {', '.join(self.tables) or 'none'}")
        return self.tables[name]

    # ------------------------------------------------------------------------------------- plan
    def plan_query(self, sql: str) -> dict[str, Any]:
        """Parse and plan without running (``dqkit.relax.plan.plan_query``)."""
        return plan_query(self.tables, sql)

    def explain(self, sql: str) -> str:
        """Where each cleaning operator goes and why (R33), without running anything."""
        return explain_text(self.plan_query(sql))

    # ----------------------------------------------------------------------------------- query
    def query(self, sql: str, progress: ProgressFn | None = None) -> Any:
        """Run ``sql`` over the registered tables, cleaning what it touches; returns a ``QueryResult``."""
        plan = self.plan_query(sql)
        q: Query = plan["query"]
        started = time.perf_counter()
        trace: list[dict[str, Any]] = []
        decisions: list[dict[str, Any]] = []
        types = {a: self.tables[n].types for a, n in q.tables}
        with cancellable("the query"):
            dirty = self._answer(q, plan, types, dirty=True)
            parts: dict[str, DataFrame] = {}
            total = len(plan["steps"])
            for done, step in enumerate(plan["steps"], 1):
                t = self.tables[step["table"]]
                sel = self._selection(t, step, parts, q)
                injected = [r for r in step["rules"] if r["injected"]]
                if injected:
                    self._stats(t)
                    self._clean_sigma(t, sel, step, injected, trace, decisions)
                    sel = self._selection(t, step, parts, q)
                parts[step["alias"]] = sel
                if progress is not None:
                    progress("clean", step["table"], done, total)
            answer = self._join(q, plan, parts, types)
        seconds = time.perf_counter() - started
        self.history.append({"query": sql, "seconds": seconds, "decisions": decisions})
        return QueryResult(self, q, plan, answer, dirty, trace, decisions, seconds)

    def clean_all(self, name: str) -> None:
        """Offline full cleaning of a table with the same kernel: every unchecked tuple, every rule."""
        t = self._get(name)
        self._stats(t)
        with cancellable("the cleaning"):
            if t.fds:
                self._clean_tuples(t, unchecked_ids(t, [f.name for f in t.fds]))
                t.fully_checked = not t.dcs
            for rule in t.dcs:
                saved = self.threshold
                self.threshold = 1.01
                try:
                    self._clean_dc(t, rule, t.base.select(TID), [], [])
                finally:
                    self.threshold = saved

    # ------------------------------------------------------------------------------------ answers
    def _answer(self, q: Query, plan: dict[str, Any], types: dict[str, dict[str, str]], dirty: bool) -> DataFrame:
        """The dirty answer: the query over the original values (no cleaning)."""
        frames = {}
        for alias, name in q.tables:
            t = self.tables[name]
            frames[alias] = t.base.select(*[F.col(TID).alias(f"{alias}.{TID}")] + [col(c).alias(f"{alias}.{c}") for c in t.columns])
        out = frames[q.aliases[0]]
        for alias in q.aliases[1:]:
            conds = [col(f"{j.left.alias}.{j.left.column}") == col(f"{j.right.alias}.{j.right.column}")
                     for j in q.joins if alias in (j.left.alias, j.right.alias)
                     and ({j.left.alias, j.right.alias} - {alias}) <= set(q.aliases[:q.aliases.index(alias)])]
            cond = conds[0]
            for c in conds[1:]:
                cond = cond & c
            out = out.join(frames[alias], cond)
        out = out.where(cond_column(q.where, types, lambda a: f"{a}.", dirty=True))
        return project(q, out, dirty=True)

    def _join(self, q: Query, plan: dict[str, Any], parts: dict[str, DataFrame], types: dict[str, dict[str, str]]) -> DataFrame:
        """The probabilistic join of the cleaned parts (R13), the spanning conditions, the projection."""
        frames = {}
        for alias, name in q.tables:
            t = self.tables[name]
            p = parts[alias]
            cands = [c for c in p.columns if c.startswith("_dq_cand_")]
            frames[alias] = p.select(F.col(TID).alias(f"{alias}.{TID}"),
                                     tuple_worlds(p, t.rule_columns).alias(f"{alias}._dq_worlds"),
                                     *[col(c).alias(f"{alias}.{c}") for c in t.columns],
                                     *[col(c).alias(f"{alias}.{c}") for c in cands])
        out = frames[q.aliases[0]]
        for alias in q.aliases[1:]:
            keys = [j for j in q.joins if alias in (j.left.alias, j.right.alias)
                    and ({j.left.alias, j.right.alias} - {alias}) <= set(q.aliases[:q.aliases.index(alias)])]
            right = frames[alias]
            # candidate sets intersect on every key: explode both sides' possible values, equi-join, dedupe
            lk, rk = [], []
            for i, j in enumerate(keys):
                mine, other = (j.left, j.right) if j.left.alias == alias else (j.right, j.left)
                lk.append(possible_values(other.column, f"{other.alias}.").alias(f"_dq_lk{i}"))
                rk.append(possible_values(mine.column, f"{mine.alias}.").alias(f"_dq_rk{i}"))
            le = out.select("*", *lk)
            re_ = right.select("*", *rk)
            for i in range(len(keys)):
                le = le.withColumn(f"_dq_lk{i}", F.explode(f"_dq_lk{i}"))
                re_ = re_.withColumn(f"_dq_rk{i}", F.explode(f"_dq_rk{i}"))
            cond = None
            for i in range(len(keys)):
                c = F.col(f"_dq_lk{i}") == F.col(f"_dq_rk{i}")
                cond = c if cond is None else cond & c
            joined = le.join(re_, cond)
            idcols = [f"{a}.{TID}" for a in q.aliases[:q.aliases.index(alias) + 1]]
            keep = [c for c in joined.columns if not c.startswith(("_dq_lk", "_dq_rk"))]
            out = joined.select(*[col(c) for c in keep]).dropDuplicates(idcols)
        out = out.where(cond_column(q.where, types, lambda a: f"{a}."))
        return project(q, out, dirty=False)

    # ------------------------------------------------------------------------------------ exports
    def long_format(self, name: str, only_cleaned: bool = True) -> DataFrame:
        """The probabilistic table in long format ``(tid, attr, world_id, candidate, prob, is_original)``:
        the candidate domain of every cleaned cell (R43, the DaisyH / HoloClean ``cell_domain`` use)."""
        t = self._get(name)
        return long_cells(t.prob, t.rule_columns, only_cleaned)

    def most_probable(self, name: str) -> DataFrame:
        """DaisyP (R43): the table with each cell at its most probable value (``model.most_probable``)."""
        t = self._get(name)
        return daisy_p(t.prob, t.columns, t.rule_columns, t.types, t.key)

    def supporting_tuples(self, name: str, tid: str, attr: str, value: str) -> DataFrame:
        """The tuples supporting an FD rhs candidate of a cell (world A): same lhs of an FD with rhs
        ``attr`` and rhs ``value``, over the original values (R5's supporting tuple ids)."""
        t = self._get(name)
        fds = [f for f in t.fds if f.rhs[0] == attr]
        if not fds:
            raise ParameterError(f"no FD of {name!r} has the rhs {attr!r}")
        me = t.base.where(F.col(TID) == F.lit(str(tid)))
        parts = []
        for f in fds:
            k = me.select(*[col(c).alias("_dq_k_" + c) for c in f.lhs])
            parts.append(t.base.join(k, _and([col(c) == col("_dq_k_" + c) for c in f.lhs])).select(TID, col(attr)))
        u = parts[0]
        for p in parts[1:]:
            u = u.unionByName(p)
        return u.distinct().where(col(attr).cast("string") == F.lit(str(value))).select(TID)

    # ------------------------------------------------------------------------------------ state
    def fingerprints(self) -> dict[str, str]:
        """Table-version fingerprints (``dqkit.primitives.fingerprint``: the commutative hash of the row hashes)."""
        out = {}
        for name, t in self.tables.items():
            if t.fingerprint is None:
                df = t.base.drop(TID)
                hi, lo = row_fingerprint(df)
                r = df.select(hi.alias("h"), lo.alias("l")).agg(group_fingerprint(F.col("h"), F.col("l")).alias("g"),
                                                                F.count(F.lit(1)).alias("n")).collect()[0]
                t.fingerprint = f"{r['g']}:{r['n']}"
            out[name] = t.fingerprint
        return out

    def save_state(self, folder: str | os.PathLike) -> str:
        """Write the probabilistic tables, DC pairs and cost models atomically (stage, then rename)."""
        fps = self.fingerprints()
        key = os.path.abspath(os.fspath(folder))
        generation = uuid.uuid4().hex

        def write(tmp: Path) -> None:
            meta: dict[str, Any] = {"version": 1, "generation": generation, "tables": {}}
            for name, t in self.tables.items():
                t.prob.write.parquet((tmp / "tables" / name).as_posix())
                for rn, p in t.pairs.items():
                    p.write.parquet((tmp / "pairs" / name / rn).as_posix())
                meta["tables"][name] = {"fingerprint": fps[name], "key": t.key, "rules": sorted(t.rule_names),
                                        "cost": t.cost.to_dict() if t.cost else None,
                                        "fully_checked": t.fully_checked,
                                        "dc_checked_ranges": {k: sorted(v) for k, v in t.dc_checked_ranges.items()},
                                        "pairs": sorted(t.pairs)}
                fault_point("mid-write")
            (tmp / "state.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")

        # a state this Daisy loaded is replaced only if no other query replaced it meanwhile
        guard = state_guard(folder, self._loaded_states[key]) if key in self._loaded_states else None
        where = str(atomic_folder(folder, write, guard=guard))
        self._loaded_states[key] = generation  # the next save (a workload) replaces this one
        return where

    def load_state(self, folder: str | os.PathLike) -> bool:
        """Restore a saved state for the registered tables; refuse one written for another version of a
        table (fingerprint) or other rules. Returns False when ``folder`` holds no state yet."""
        p = Path(folder)
        meta = check_state_folder(p)  # damaged files are refused here, before any Parquet is read
        self._loaded_states[os.path.abspath(os.fspath(folder))] = (
            None if meta is None else str(meta.get("generation", "")))
        if meta is None:
            return False
        fps = self.fingerprints()
        for name, m in meta.get("tables", {}).items():
            if name not in self.tables:
                continue
            t = self.tables[name]
            if m["fingerprint"] != fps[name]:
                raise StateMismatchError(
                    f"the state in {p} was written for another version of table {name!r} "
                    f"(fingerprint {m['fingerprint']} != {fps[name]})",
                    hint="the table changed since: start a new state folder, or delete this one to clean from scratch")
            if m["key"] != t.key:
                raise StateMismatchError(f"the state in {p} identifies {name!r} by {m['key']!r}, not {t.key!r}",
                                         hint="give the same --key as before, or a new state folder")
            prob = self.spark.read.parquet((p / "tables" / name).as_posix())
            for c in t.delta.columns:
                if c not in prob.columns:
                    prob = prob.withColumn(c, F.lit(None).cast(t.delta.schema[c].dataType))
            t.set_delta(prob.select(*t.delta.columns))
            for rn in m.get("pairs", []):
                t.pairs[rn] = self.spark.read.parquet((p / "pairs" / name / rn).as_posix()).transform(checkpoint)
            if m.get("cost") and sorted(m["rules"]) == sorted(t.rule_names):
                t.cost = CostModel.from_dict(m["cost"])
                t.fully_checked = bool(m.get("fully_checked"))
            t.dc_checked_ranges = {k: set(v) for k, v in m.get("dc_checked_ranges", {}).items()}
        return True


def _and(cs: list[Column]) -> Column:
    out = cs[0]
    for c in cs[1:]:
        out = out & c
    return out
