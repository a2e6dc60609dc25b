"""ViolationController: the state and the run of the violation explorer (detect, and repair when asked;
the violation hypergraph's largest components when the graph is first asked for; with ``since``, the violations new, resolved and
persisting since a previous version), and ``ViolationRun``, what one run produced. Plain Python (no
ipywidgets); ``ViolationExplorer`` is its view. The options that are parameters of ``detect`` and
``repair`` (``since``, ``max_change``, ``method``, ``max_iterations``) are checked as those systems
declare them (``dqkit.widgets.declared.convert``), never here.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from dqkit.contract import charts
from dqkit.detect import DetectionResult, detect
from dqkit.detect._result import FIX_SAMPLE_COLUMNS
from dqkit.errors import ParameterError
from dqkit.detect.since import SinceResult, detect_since
from dqkit.repair import RepairResult, ViolationHypergraph, repair, violation_hypergraph
from dqkit.io.sources import DatabaseSource
from dqkit.systems.detect import DetectParams, check_since
from dqkit.widgets.controllers import RunController, TableListing
from dqkit.widgets.declared import convert
from dqkit.widgets.local_graph import LocalHypergraph, local_capable
from dqkit.widgets.rules_controller import RulesController

__all__ = ["COMPONENT_COLUMNS", "FIX_SAMPLE_COLUMNS", "ViolationController", "ViolationRun", "fix_sample",
           "largest_components"]


def fix_sample(detection: DetectionResult, n: int) -> pd.DataFrame:
    """At most ``n`` candidate fixes per rule (``DetectionResult.first_fixes``, which the detection's
    "First candidate fixes" section shows)."""
    return detection.first_fixes(n)


COMPONENT_COLUMNS = ["component", "tid", "attr", "cells", "violations"]


def largest_components(graph: ViolationHypergraph | LocalHypergraph, n: int) -> pd.DataFrame:
    """The ``n`` largest components (cells, then id), named ``tid.attr`` by their smallest cell."""
    if isinstance(graph, LocalHypergraph):
        top = graph.component_sizes().head(n)
        return pd.DataFrame([{"component": f"{c[0]}.{c[1]}", "tid": c[0], "attr": c[1], "cells": int(k),
                              "violations": int(v)} for c, k, v in zip(top["component"], top["cells"],
                                                                       top["violations"])],
                            columns=COMPONENT_COLUMNS)
    rows = graph.component_sizes().limit(n).collect()
    return pd.DataFrame([{"component": f"{r['component']['tid']}.{r['component']['attr']}",
                          "tid": r["component"]["tid"], "attr": r["component"]["attr"],
                          "cells": int(r["cells"]), "violations": int(r["violations"])} for r in rows],
                        columns=COMPONENT_COLUMNS)


class _GraphCache:
    """The violation hypergraph and its largest components of one run, built once on first use."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.built = False
        self.hypergraph: ViolationHypergraph | LocalHypergraph | None = None
        self.components = pd.DataFrame(columns=COMPONENT_COLUMNS)


@dataclass(frozen=True)
class ViolationRun:
    """What one ``ViolationExplorer`` run produced.

    ``detection`` (a ``DetectionResult``), ``fixes`` (a bounded sample of its candidate fixes, at most
    ``sample_rows`` per rule), ``repair`` (a ``RepairResult`` when repair was asked for) and ``seconds``
    per stage. ``hypergraph`` and ``components`` (the ``max_components`` largest components of the
    violation hypergraph: ``component, tid, attr, cells, violations``; None/empty without violations)
    are built when first read, not by the run: only the "Violation graph" tab reads them, and building
    them (a checkpoint and connected components) was most of a warm re-run. They are built once per
    run (``graph_built``; ``seconds["graph"]`` then says how long it took); a new run is a new
    ``ViolationRun`` with nothing built.
    ``sections()`` is the detection's sections (the fix sample among them), so the widget says what
    ``detection.to_html()`` says. A run with ``since`` has a ``SinceResult`` as ``detection`` (``mode``
    "since": every view shows it in New / Resolved / Persisting tabs), no fixes and no graph.
    """

    detection: DetectionResult | SinceResult
    fixes: pd.DataFrame
    repair: RepairResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    max_components: int = 50
    _graph: _GraphCache = field(default_factory=_GraphCache, repr=False, compare=False)

    @property
    def mode(self) -> str:
        """The detection's mode: "since" for a run against a previous version (``tabs_for`` reads it)."""
        return str(getattr(self.detection, "mode", "violations"))

    @property
    def has_graph(self) -> bool:
        """Whether there is a graph to build: a plain detection with violations (known without Spark)."""
        return (self.mode not in ("since", "count")
                and bool(getattr(self.detection, "total_violations", 0)))

    @property
    def graph_built(self) -> bool:
        """Whether ``hypergraph`` and ``components`` have been built (or there was nothing to build)."""
        return self._graph.built or not self.has_graph

    @property
    def hypergraph(self) -> ViolationHypergraph | LocalHypergraph | None:
        """The violation hypergraph (built on first read; None without violations or with ``since``):
        on the driver (``LocalHypergraph``, one fetch) for up to ``LOCAL_VIOLATIONS`` violations of
        declarative rules, else in Spark."""
        self.build_graph()
        return self._graph.hypergraph

    @property
    def components(self) -> pd.DataFrame:
        """The largest components of the hypergraph (built on first read; empty without a graph)."""
        self.build_graph()
        return self._graph.components

    def build_graph(self) -> None:
        """Build the hypergraph and its largest components once (the Spark jobs of the graph tab)."""
        cache = self._graph
        if cache.built or not self.has_graph:
            return
        with cache.lock:  # the tab and a caller may ask at once: one build
            if cache.built:
                return
            t0 = time.perf_counter()
            graph = (LocalHypergraph.fetch(self.detection) if local_capable(self.detection)
                     else violation_hypergraph(self.detection))
            cache.components = largest_components(graph, self.max_components)
            cache.hypergraph = graph
            cache.built = True
            self.seconds["graph"] = time.perf_counter() - t0

    def sections(self, sample_rows: int = 10) -> list[Any]:
        """The detection's sections (its first candidate fixes included: ``fixes`` is their sample)."""
        return list(self.detection.sections(sample_rows=sample_rows))


class ViolationController(RunController):
    """State and actions of the violation explorer: the table and rules (a ``RulesController``), the
    key, whether to repair and how; a run detects and, if asked, repairs, each step reported to the
    progress bar and cancellable. With a key and repair ticked, the detection shown is repair's first
    round's (one detection, not two). The violation hypergraph is not built by the run: the run's
    ``ViolationRun`` builds it when first read (``component_options``, ``draw``, the graph tab).

    ``draw(component)`` gives the violation graph of one component of the last run (bounded by
    ``max_nodes``: a larger component is refused with a ``ParameterError`` saying so).
    """

    unit = "steps"

    def __init__(self, source: DatabaseSource | TableListing | Any = None, *, table: str | None = None,
                 rules: Any = None, key: str | None = None, repair: bool = False, method: str = "auto",
                 max_iterations: int = 10, sample_rows: int = 10, max_components: int = 50,
                 max_nodes: int = 60, since: Any = None, max_change: float = 0.05,
                 spark: SparkSession | None = None, ruleset: RulesController | None = None) -> None:
        super().__init__(spark)
        if ruleset is None and source is None:
            raise ParameterError("the violation explorer needs a source (a table, a database or a TableListing)")
        self.ruleset = ruleset or RulesController(source, table=table, rules=rules, spark=self.spark)
        self.key: str | None = None
        self.repair = bool(repair)
        self.method = "auto"
        self.max_iterations = 10
        self.sample_rows = sample_rows
        self.max_components = max_components
        self.max_nodes = max_nodes
        self.since: Any = None
        self.max_change = 0.05
        self.set_key(key)
        self.set_method(method)
        self.set_max_iterations(max_iterations)
        self.set_since(since)
        self.set_max_change(max_change)
        self.ruleset.on_change(self._on_ruleset)

    # ----- selections
    def columns(self) -> list[tuple[str, str]]:
        return self.ruleset.columns()

    def set_key(self, key: str | None) -> None:
        """The tuple-id column (unique, non-NULL); None: content ids."""
        known = [c for c, _ in self.columns()]
        if key is not None and key not in known:
            raise ParameterError(f"no column {key} in table {self.ruleset.table}", hint=f"columns: {', '.join(known)}")
        self.key = key
        self._changed("selection")

    def set_repair(self, on: bool) -> None:
        self.repair = bool(on)
        self._changed("selection")

    def set_method(self, method: str) -> None:
        """The repair method, as ``repair`` declares ``method`` (its choices)."""
        self.method = convert("repair", "method", method)
        self._changed("selection")

    def set_max_iterations(self, n: int) -> None:
        """The repair rounds bound, as ``repair`` declares ``max_iterations`` (a whole number >= 1)."""
        self.max_iterations = convert("repair", "max_iterations", n)
        self._changed("selection")

    def set_since(self, since: Any) -> None:
        """The previous version to compare with (``detect``'s ``since``): the old table (a path,
        ``catalog:db.t`` or a DataFrame) or the folder ``detect --out`` wrote for it; None or blank: a
        plain detection. Checked with the rules and the key when a run starts (``since_params``)."""
        if since is None or (isinstance(since, (str, os.PathLike)) and not os.fspath(since).strip()):
            self.since = None
        elif isinstance(since, (str, os.PathLike)):
            self.since = convert("detect", "since", os.fspath(since).strip())
        else:
            self.since = since  # a DataFrame: the old table itself
        self._changed("selection")

    def set_max_change(self, share: Any) -> None:
        """With ``since``: the cost rule's share of changed rows (``detect``'s ``max_change``, 0..1)."""
        self.max_change = convert("detect", "max_change", share)
        self._changed("selection")

    def _on_ruleset(self, what: str) -> None:
        if what == "table" and self.key is not None and self.key not in dict(self.columns()):
            self.key = None
            self._changed("selection")

    # ----- running
    def arguments(self) -> dict[str, Any]:
        """The keyword arguments ``detect``/``repair`` get; a bad rule fails here, before any Spark job,
        and so does a ``since`` that ``detect`` would refuse (``since_params``)."""
        rules = self.ruleset.check()
        if self.since is not None:
            self.since_params(rules)
        return {"table": self.ruleset.frame(), "rules": rules, "key": self.key, "name": self.ruleset.table}

    def since_params(self, rules: list[Any]) -> DetectParams:
        """``detect``'s parameters for a run with ``since``, checked by its own ``check_since`` without
        Spark: a key is needed, a saved detection must match the rules and key, an old table must exist
        and hold the key and the rules' columns (read from its footer or header)."""
        params = DetectParams.parse({"table": str(self.ruleset.table), "rules": ("(the explorer's rules)",),
                                     "key": self.key, "max_change": self.max_change,
                                     "since": self.since if isinstance(self.since, str) else None})
        if not isinstance(self.since, str):
            params = dataclasses.replace(params, since=self.since)  # a DataFrame: checked by Spark
        check_since(params, rules)
        return params

    def expected_steps(self) -> int:
        rules = 1 if self.since is not None else len(self.ruleset.rules)
        return rules + 1 + (self.max_iterations if self.repair else 0)

    def work(self, progress: Callable[[str, str, int, int], None]) -> ViolationRun:
        args = self.arguments()
        if self.since is not None:
            return self._work_since(args, progress)
        n_rules = len(args["rules"])
        total = n_rules + 1 + (self.max_iterations if self.repair else 0)

        def step(stage: str, item: str, done: int, _total: int) -> None:
            progress(stage, item, done if stage == "detect" else n_rules + 1 + done, total)

        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        repaired = None
        if self.repair and args["key"] is not None:
            # repair's first round detects on the same rows with the same key: that detection is the
            # run's, not a second one (with content ids repair numbers rows its own way, so it is not)
            repaired = repair(args["table"], args["rules"], key=args["key"], method=self.method,
                              max_iterations=self.max_iterations, spark=self.spark, name=args["name"],
                              progress=lambda s, i, d, t: step("repair", i, d, t))
            seconds["repair"] = time.perf_counter() - t0
            det = repaired.first_detection
            t1 = time.perf_counter()
            fixes = fix_sample(det, self.sample_rows)
            seconds["fixes"] = time.perf_counter() - t1
            progress("fixes", "candidate fixes", total, total)
        else:
            det = detect(args["table"], args["rules"], key=args["key"], spark=self.spark, name=args["name"],
                         progress=step)
            fixes = fix_sample(det, self.sample_rows)
            seconds["detect"] = time.perf_counter() - t0
            progress("fixes", "candidate fixes", n_rules + 1, total)  # the graph is built when its tab opens
            if self.repair:
                t2 = time.perf_counter()
                repaired = repair(args["table"], args["rules"], key=args["key"], method=self.method,
                                  max_iterations=self.max_iterations, spark=self.spark, name=args["name"],
                                  progress=lambda s, i, d, t: step("repair", i, d, t))
                seconds["repair"] = time.perf_counter() - t2
        seconds["total"] = time.perf_counter() - t0
        return ViolationRun(det, fixes, repaired, seconds, self.max_components)

    def _work_since(self, args: dict[str, Any], progress: Callable[[str, str, int, int], None]) -> ViolationRun:
        """``detect --since`` on the table (then repair, when ticked): new, resolved and persisting."""
        total = 2 + (self.max_iterations if self.repair else 0)
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        since = detect_since(args["table"], self.since, args["rules"], key=str(args["key"]), spark=self.spark,
                             name=args["name"], max_change=self.max_change)
        seconds["detect"] = time.perf_counter() - t0
        progress("detect", "since", 2, total)
        repaired = None
        if self.repair:
            t1 = time.perf_counter()
            # detect --since checked the key on these rows (refusing a repeated or NULL one): trusted
            repaired = repair(args["table"], args["rules"], key=args["key"], method=self.method,
                              max_iterations=self.max_iterations, spark=self.spark, name=args["name"],
                              progress=lambda s, i, d, t: progress("repair", i, 2 + d, total), trust_key=True)
            seconds["repair"] = time.perf_counter() - t1
        seconds["total"] = time.perf_counter() - t0
        return ViolationRun(since, pd.DataFrame(columns=FIX_SAMPLE_COLUMNS), repaired, seconds,
                            self.max_components)

    # ----- the violation graph
    def component_options(self, run: ViolationRun | None = None) -> list[tuple[str, tuple[Any, str]]]:
        """(label, component id) of the largest components of the last run, largest first (builds the
        run's graph on first call: its Spark jobs). ``run``: another run than the last."""
        run = self.result if run is None else run
        if run is None or not len(run.components):
            return []
        return [(f"{r.component}: {r.cells} cells, {r.violations} violation{'s' if r.violations != 1 else ''}",
                 (r.tid, r.attr)) for r in run.components.itertuples(index=False)]

    def draw(self, component: Any, max_nodes: int | None = None, run: ViolationRun | None = None) -> Any:
        """The violation graph of ``component`` (a ``(tid, attr)`` id) of the last run (or ``run``) as
        a matplotlib Figure (builds the run's graph if not yet built)."""
        run = self.result if run is None else run
        if run is None or run.hypergraph is None:
            raise ParameterError("no violation graph yet", hint="run the detection first")
        limit = self.max_nodes if max_nodes is None else int(max_nodes)
        tid, attr = component
        known = run.components[(run.components["tid"] == tid) & (run.components["attr"] == attr)]
        if len(known):  # refuse a large component before any Spark job
            cells, viols = int(known["cells"].iloc[0]), int(known["violations"].iloc[0])
            if cells + viols > limit:
                raise ParameterError(f"component {tid}.{attr} has {cells} cells and {viols} violations, more "
                                     f"than the {limit} nodes a readable graph can show",
                                     hint="raise max nodes, or pick a smaller component")
        g = run.hypergraph.to_networkx((tid, attr), max_nodes=limit)
        return charts.violation_graph(g, title=f"Component {tid}.{attr}")
