"""DedupExplorer: entity deduplication (``dqkit.dedup``) in a notebook.

Pick the table, its key and the blocking rules and see each rule's block sizes and the cumulative
number of pairs before anything is compared; pick the comparisons (column and method); run in the
background with progress and Cancel; then move the threshold and watch the matching pairs, the
clusters and, when the true links are known, precision and recall follow; browse a bounded sample
of clusters with their records side by side; and explain any pair with its waterfall chart.

As everywhere in the widget layer, a plain-Python controller (``DedupController``) holds the state
and calls dqkit; the view binds ipywidgets to it, and tests drive both headlessly.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as W
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from dqkit import charts, render
from dqkit.dedup import DedupResult, blocking_stats, dedup, load_config, parse_config, plot_block_stats
from dqkit.dedup.config import DEFAULT_THRESHOLDS, METHODS
from dqkit.dedup.evaluate import PairAccuracy, pair_accuracy
from dqkit.errors import DqkitError, ParameterError
from dqkit.sources import DatabaseSource
from dqkit.widgets.controllers import RunController, TableListing, error_text
from dqkit.widgets.pickers import ColumnPicker, _Guard, keep_selection
from dqkit.widgets.result_view import ExplorerBase, ResultView, wrap

__all__ = ["DedupController", "DedupExplorer", "split_rule", "parse_rule_lines", "parse_comparison_lines"]

_NONE = "(none)"


# --------------------------------------------------------------------------------------- text forms
def split_rule(line: str) -> list[str]:
    """One blocking rule written on one line: its parts split at the commas outside parentheses,
    so ``postcode, substr(given_name,1,1)`` is two parts."""
    parts, depth, cur = [], 0, []
    for ch in line:
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def parse_rule_lines(text: str) -> list[list[str]]:
    """Blocking rules, one per line (``#`` comments and blank lines skipped)."""
    return [split_rule(s) for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#")]


def parse_comparison_lines(text: str) -> list[dict[str, Any]]:
    """Comparisons, one per line: ``column: method`` with optional thresholds after the method
    (``given_name: jaro_winkler 0.95 0.85``). A line that does not read raises ``ParameterError``."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        column, sep, rest = s.rpartition(":")
        words = rest.split()
        if not sep or not column.strip() or not words:
            raise ParameterError(f"comparison line {n} does not read: {s!r}",
                                 hint="write `column: method`, e.g. `surname: jaro_winkler`")
        item: dict[str, Any] = {"column": column.strip(), "method": words[0]}
        if len(words) > 1:
            try:
                item["thresholds"] = [float(w) for w in words[1:]]
            except ValueError:
                raise ParameterError(f"comparison line {n}: thresholds are numbers, not {' '.join(words[1:])!r}",
                                     hint="e.g. `surname: jaro_winkler 0.95 0.85`") from None
        out.append(item)
    return out


def _rule_line(parts: Sequence[str]) -> str:
    return ", ".join(parts)


def _comparison_line(c: Mapping[str, Any]) -> str:
    th = " ".join(f"{t:g}" for t in c.get("thresholds") or ())
    return f"{c['column']}: {c['method']}" + (f" {th}" if th else "")


# ---------------------------------------------------------------------------------------- controller
class DedupController(RunController):
    """State and actions of the dedup explorer.

    ``source`` is a table (path, ``catalog:db.t`` or DataFrame), a database (folder, ``catalog:DB``, a
    ``{name: table}`` mapping) or a ``TableListing``. State: ``table``, ``key``, ``blocking`` (rules,
    each a list of columns or expressions), ``comparisons`` (``{column, method[, thresholds]}``),
    ``settings`` (other config keys such as ``max_block_size``), ``threshold`` and ``truth`` (the true
    links, for precision and recall: a column of true cluster ids, or true key pairs).

    ``block_stats()`` gives the blocking statistics before any comparison; a run (``RunController``)
    deduplicates; ``set_threshold(p)`` then moves the clusters to ``p`` (``current``), re-scoring
    nothing: the matching pairs and precision/recall come from per-pattern counts on the driver, and
    the clusters are recomputed only when the set of matching pairs changes (cached per set).
    """

    unit = "stages"

    def __init__(self, source: DatabaseSource | TableListing | Any, *, table: str | None = None,
                 key: str | None = None, config: Any = None, threshold: float | None = None,
                 truth: Any = None, sample_clusters: int = 20, spark: SparkSession | None = None) -> None:
        super().__init__(spark)
        if isinstance(source, TableListing):
            self.listing = source
        else:
            single = not isinstance(source, (str, os.PathLike, Mapping))
            self.listing = TableListing({"table": source} if single else source, self.spark)
        self.table: str | None = None
        self.key: str | None = None
        self.blocking: list[list[str]] = []
        self.comparisons: list[dict[str, Any]] = []
        self.settings: dict[str, Any] = {}
        self.threshold = 0.9
        self.truth: Any = None
        self.sample_clusters = sample_clusters
        self.stats: pd.DataFrame | None = None
        self.stats_error: str | None = None
        self.accuracy: PairAccuracy | None = None
        self.current: DedupResult | None = None
        self._cuts: dict[int, DedupResult] = {}
        self._samples: dict[int, tuple[Any, pd.DataFrame]] = {}
        self._accuracy_of_run: PairAccuracy | None = None
        self.select_table(table if table is not None else (self.tables[0] if self.tables else None))
        if key is not None:
            self.set_key(key)
        if config is not None:
            self.set_config(config)
        if threshold is not None:
            self.threshold = float(threshold)
        if truth is not None:
            self.set_truth(truth)
        self.on_change(self._on_status)

    # ----- what can be chosen
    @property
    def tables(self) -> list[str]:
        return self.listing.tables

    def columns(self) -> list[tuple[str, str]]:
        """(column, type) pairs of the chosen table."""
        return self.listing.schema(self.table) if self.table in self.listing.frames else []

    def frame(self) -> Any:
        return self.listing.frame(self.table)

    # ----- selections
    def select_table(self, table: str | None) -> None:
        self.listing.check(table)
        self.table = table
        names = [c for c, _ in self.columns()]
        if self.key not in names:
            self.key = None
        if isinstance(self.truth, str) and self.truth not in names:
            self.truth = None
        self.stats = self.stats_error = None
        self._changed("table")

    def set_key(self, key: str | None) -> None:
        names = [c for c, _ in self.columns()]
        if key is not None and key not in names:
            raise ParameterError(f"no column {key!r} in table {self.table}", hint=f"columns: {', '.join(names)}")
        self.key = key
        self.stats = None
        self._changed("selection")

    def set_blocking(self, rules: Sequence[Sequence[str] | str]) -> None:
        """Blocking rules: each a list of columns or expressions, or one such line of text."""
        self.blocking = [split_rule(r) if isinstance(r, str) else [str(p) for p in r] for r in rules]
        self.blocking = [r for r in self.blocking if r]
        self.stats = None
        self._changed("selection")

    def add_blocking_rule(self, parts: Sequence[str]) -> None:
        if not parts:
            raise ParameterError("a blocking rule needs at least one column", hint="pick the columns to block on")
        self.set_blocking([*self.blocking, list(parts)])

    def set_comparisons(self, comparisons: Sequence[Mapping[str, Any]]) -> None:
        self.comparisons = [dict(c) for c in comparisons]
        self._changed("selection")

    def add_comparison(self, column: str, method: str) -> None:
        if method not in METHODS:
            raise ParameterError(f"unknown comparison method {method!r}", hint=f"methods: {', '.join(METHODS)}")
        self.set_comparisons([*[c for c in self.comparisons if c["column"] != column],
                              {"column": column, "method": method}])

    def set_config(self, config: Any) -> None:
        """Take blocking rules, comparisons and settings from a dedup config (YAML path or text, dict)."""
        is_path = isinstance(config, os.PathLike) or (isinstance(config, str) and "\n" not in config
                                                       and os.path.isfile(config))
        cfg = load_config(config) if is_path else parse_config(config)
        self.blocking = [list(r.on) for r in cfg.blocking]
        self.comparisons = []
        for c in cfg.comparisons:
            item: dict[str, Any] = {"column": c.column, "method": c.method}
            if c.thresholds != DEFAULT_THRESHOLDS[c.method]:
                item["thresholds"] = list(c.thresholds)
            if c.name:
                item["name"] = c.name
            if c.date_format:
                item["date_format"] = c.date_format
            self.comparisons.append(item)
        defaults = type(cfg)(blocking=cfg.blocking, comparisons=cfg.comparisons)
        self.settings = {k: getattr(cfg, k) for k in ("max_block_size", "on_oversized", "u_sample_records", "seed")
                         if getattr(cfg, k) != getattr(defaults, k)}
        if cfg.types:
            self.settings["types"] = dict(cfg.types)
        self.threshold = cfg.threshold
        self.stats = None
        self._changed("selection")

    def set_truth(self, truth: Any) -> None:
        """The true links: a column of true cluster ids, true key pairs, or None."""
        if isinstance(truth, str):
            names = [c for c, _ in self.columns()]
            if truth not in names:
                raise ParameterError(f"no column {truth!r} in table {self.table}", hint=f"columns: {', '.join(names)}")
        self.truth = truth
        self._changed("selection")

    # ----- the config
    def config_dict(self) -> dict[str, Any]:
        """The current selections as a dedup config (the dict form of the YAML)."""
        return {"blocking": [list(r) for r in self.blocking],
                "comparisons": [dict(c) for c in self.comparisons], "threshold": self.threshold, **self.settings}

    def config_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.config_dict(), sort_keys=False, default_flow_style=None, width=100)

    def problems(self) -> list[str]:
        """What stops a run, found without Spark: no key, no rule or comparison, a config that does not
        fit, a comparison of a column the table does not have."""
        out = []
        names = [c for c, _ in self.columns()]
        if self.table is None:
            out.append("no table is chosen")
        if not self.key:
            out.append("pick the key column (unique per record)")
        if not self.blocking:
            out.append("add at least one blocking rule")
        if not self.comparisons:
            out.append("add at least one comparison")
        if self.blocking and self.comparisons:
            try:
                parse_config(self.config_dict(), source="the config")
            except DqkitError as exc:
                out.append(error_text(exc))
        for c in self.comparisons:
            if names and c.get("column") not in names:
                out.append(f"comparison of unknown column {c.get('column')!r} (columns: {', '.join(names)})")
        return out

    # ----- before running
    def block_stats(self) -> pd.DataFrame | None:
        """Each blocking rule's block sizes and pairs, with the cumulative pairs (``blocking_stats``),
        before anything is compared; an error lands in ``stats_error``."""
        self.stats, self.stats_error = None, None
        try:
            if not self.key:
                raise ParameterError("pick the key column first")
            self.stats = blocking_stats(self.frame(), self.key, self.config_dict() if self.comparisons else
                                        {**self.config_dict(), "comparisons": [{"column": self.key,
                                                                                "method": "exact"}]},
                                        spark=self.spark)
        except DqkitError as exc:
            self.stats_error = error_text(exc)
        except Exception as exc:  # a Spark error: shown, not lost
            self.stats_error = error_text(exc)
        self._changed("stats")
        return self.stats

    # ----- running
    def expected_steps(self) -> int:
        return 4 + (1 if self.truth is not None else 0)

    def work(self, progress: Callable[[str, str, int, int], None]) -> DedupResult:
        if self.problems():
            raise ParameterError(self.problems()[0])
        frame, key, config, truth, total = self.frame(), self.key, self.config_dict(), self.truth, self.expected_steps()

        def step(stage: str, item: str, done: int, _total: int) -> None:
            progress(stage, item, done, total)

        result = dedup(frame, key, config, spark=self.spark, name=self.table, progress=step)
        self._accuracy_of_run = None
        if truth is not None:
            self._accuracy_of_run = pair_accuracy(result, truth)
            step("evaluate", "precision and recall", 5, total)
        return result

    def _on_status(self, what: str) -> None:
        if what == "status" and self.status == "running":  # a new run: the last one's clusters are gone
            self.current, self._cuts, self._samples, self.accuracy = None, {}, {}, None
        if what == "status" and self.status == "done" and self.result is not None:
            self.accuracy = self._accuracy_of_run
            self.threshold = self.result.threshold
            self.current = self.result
            self._cuts = {self.result.n_matching_pairs: self.result}
            self._samples = {}
            self._changed("threshold")

    # ----- after running
    def set_threshold(self, threshold: float) -> DedupResult | None:
        """Clusters at ``threshold`` (no re-scoring; the clusters are recomputed only when the set of
        matching pairs changes, and each set is computed once)."""
        if isinstance(threshold, bool) or not 0 <= float(threshold) <= 1:
            raise ParameterError(f"threshold must be a probability between 0 and 1, not {threshold!r}")
        self.threshold = float(threshold)
        if self.result is not None:
            n = self.result.matching_pairs_at(self.threshold)
            if n not in self._cuts:
                self._cuts[n] = self.result.at_threshold(self.threshold)
            self.current = self._cuts[n].at_threshold(self.threshold)  # the same pairs: no Spark job
        self._changed("threshold")
        return self.current

    def metrics(self) -> dict[str, Any]:
        """The counts at the current threshold (and precision, recall, F1 when the truth is known)."""
        r = self.current
        if r is None:
            return {}
        out: dict[str, Any] = {"threshold": self.threshold, "matching pairs": r.matching_pairs_at(self.threshold),
                               "clusters with duplicates": r.duplicate_clusters,
                               "records in them": r.records_in_duplicates, "largest cluster": r.largest_cluster,
                               "golden records": r.n_clusters}
        if self.accuracy is not None:
            a = self.accuracy.at(self.threshold)
            out.update({"precision": round(a["precision"], 4), "recall": round(a["recall"], 4),
                        "F1": round(a["f1"], 4), "true pairs found": f"{a['true_positives']:,} of {a['true_pairs']:,}"})
        return out

    def cluster_sample(self) -> pd.DataFrame:
        """The largest duplicate clusters at the current threshold (at most ``sample_clusters``)."""
        if self.current is None:
            return pd.DataFrame(columns=["cluster_id", "cluster_size", "keys"])
        cached = self._samples.get(id(self.current.clusters))  # the same clusters: the same sample
        if cached is None or cached[0] is not self.current.clusters:
            cached = (self.current.clusters, self.current.cluster_sample(self.sample_clusters))
            self._samples[id(self.current.clusters)] = cached
        return cached[1]

    def cluster_table(self, cluster_id: Any, limit: int = 12) -> pd.DataFrame:
        """One cluster's records side by side: one column per record (at most ``limit``), one row per
        attribute."""
        if self.current is None:
            raise ParameterError("run first")
        recs = self.current.cluster_records(cluster_id, limit=limit)
        side = recs.set_index(self.key).T
        side.columns = [str(c) for c in side.columns]
        side.index.name = "attribute"
        return side.reset_index()

    def cluster_pairs(self, cluster_id: Any, limit: int = 50) -> list[tuple[Any, Any]]:
        """The candidate pairs inside one cluster (highest match weight first, at most ``limit``)."""
        if self.current is None:
            return []
        r = self.current
        keys = r.clusters.where(F.col("cluster_id") == F.lit(cluster_id)).select(F.col(r.key).alias("_dq_a"))
        other = keys.select(F.col("_dq_a").alias("_dq_b"))
        rows = (r.pairs.join(keys, F.col("key_1") == F.col("_dq_a")).join(other, F.col("key_2") == F.col("_dq_b"))
                .orderBy(F.desc("match_weight"), "key_1", "key_2").select("key_1", "key_2").limit(limit).collect())
        return [(row["key_1"], row["key_2"]) for row in rows]

    def explain(self, key_1: Any, key_2: Any) -> pd.DataFrame:
        if self.result is None:
            raise ParameterError("run first")
        return self.result.explain(key_1, key_2)

    def as_parameters(self, config_path: str = "CONFIG.yaml") -> dict[str, str]:
        """The selections as ``dqkit report dedup`` parameters (the config saved at ``config_path``)."""
        table = self.table or ""
        source = self.listing.source
        if isinstance(source, Mapping) and table in source and isinstance(source[table], (str, os.PathLike)):
            table = os.fspath(source[table])
        elif isinstance(source, (str, os.PathLike)) and os.path.isfile(os.fspath(source)):
            table = os.fspath(source)
        elif isinstance(source, (str, os.PathLike)) and os.path.isdir(os.fspath(source)):
            found = sorted(p for p in Path(os.fspath(source)).iterdir() if p.name.split(".")[0] == table)
            table = str(found[0]) if found else os.path.join(os.fspath(source), table)
        return {"table": table, "key": self.key or "", "config": config_path, "threshold": str(self.threshold)}


# ----------------------------------------------------------------------------------------------- view
def side_by_side_html(side: pd.DataFrame) -> str:
    """A cluster's records as an escaped HTML table, one column per record; a value that differs from
    the most frequent non-NULL value of its row is marked (class ``bad``)."""
    head = "".join(f"<th class='l'>{render.esc(c)}</th>" for c in side.columns)
    rows = []
    for rec in side.itertuples(index=False):
        attr, *values = rec
        present = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
        common = pd.Series(present, dtype=object).astype(str).value_counts().index[0] if present else None
        cells = "".join(f"<td class='l{' bad' if v is not None and common is not None and str(v) != common else ''}'>"
                        f"{render.esc(v)}</td>" for v in values)
        rows.append(f"<tr><th class='l'>{render.esc(attr)}</th>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _is_chart(*names: str) -> Callable[[Any], bool]:
    return lambda block: getattr(block, "name", None) in names


def _is_title(*titles: str) -> Callable[[Any], bool]:
    return lambda block: getattr(block, "title", None) in titles


class DedupExplorer(ExplorerBase):
    """Deduplicate a table interactively (see the module docstring).

    Controls, top to bottom: table and key; blocking columns (``Add rule``) and the rules, one per line
    (columns or expressions such as ``substr(surname,1,3)``), with ``Block sizes``; the comparisons, one
    per line ``column: method`` (``Add`` from the two pickers); the truth column (optional); Run with
    progress and Cancel; the threshold slider with its counts; the result tabs; the cluster browser and
    the waterfall of a chosen pair. ``controller`` is the ``DedupController`` behind it.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any = None, *, table: str | None = None,
                 key: str | None = None, config: Any = None, threshold: float | None = None, truth: Any = None,
                 sample_rows: int = 10, spark: SparkSession | None = None,
                 controller: DedupController | None = None) -> None:
        if controller is None:
            if source is None:
                raise ParameterError("DedupExplorer needs a source (a table, a database or a TableListing)")
            controller = DedupController(source, table=table, key=key, config=config, threshold=threshold,
                                         truth=truth, spark=spark)
        c = controller
        self._guard = _Guard()
        self.header = W.HTML(wrap(f"<b>source</b>: {render.esc(c.listing.label)}"))
        self.table = W.Dropdown(options=[], description="Table")
        self.key = W.Dropdown(options=[], description="Key")
        self.truth = W.Dropdown(options=[], description="Truth", tooltip="a column of true cluster ids (optional)")
        self.schema = W.HTML()
        self.block_columns = ColumnPicker(description="Block on")
        self.add_rule_button = W.Button(description="Add rule", icon="plus",
                                        tooltip="append a blocking rule: records equal on all picked columns")
        self.rules = W.Textarea(rows=5, placeholder="surname\npostcode, substr(given_name,1,1)",
                                layout=W.Layout(width="420px"))
        self.stats_button = W.Button(description="Block sizes", icon="th",
                                     tooltip="count the blocks and pairs of each rule, before comparing anything")
        self.stats_view = W.HTML()
        self.compare_column = W.Dropdown(options=[], description="Compare")
        self.compare_method = W.Dropdown(options=list(METHODS), value="jaro_winkler", description="by")
        self.add_comparison_button = W.Button(description="Add", icon="plus", tooltip="append the comparison")
        self.comparisons = W.Textarea(rows=6, placeholder="given_name: jaro_winkler\npostcode: exact",
                                      layout=W.Layout(width="420px"))
        self.problems_view = W.HTML()
        self.threshold = W.FloatSlider(value=c.threshold, min=0.01, max=0.999, step=0.001, readout_format=".3f",
                                       description="Threshold", continuous_update=False,
                                       layout=W.Layout(width="520px"))
        self.threshold_view = W.HTML()
        self.cluster = W.Dropdown(options=[], description="Cluster", layout=W.Layout(width="420px"))
        self.cluster_view = W.HTML()
        self.pair = W.Dropdown(options=[], description="Pair", layout=W.Layout(width="420px"))
        self.key_1 = W.Text(description="Keys", placeholder="key 1", layout=W.Layout(width="240px"))
        self.key_2 = W.Text(placeholder="key 2", layout=W.Layout(width="160px"))
        self.explain_button = W.Button(description="Explain", icon="bar-chart",
                                       tooltip="the waterfall of the two keys' match weight")
        self.waterfall = W.HTML()
        self._build_run_controls(c, ResultView((("Summary", None),
                                                ("Blocking and model", _is_title("Blocking rules", "Pairs per blocking rule",
                                                                                 "Model", "Match weights")),
                                                ("Clusters", lambda b: _is_title("Cluster sizes", "Largest clusters",
                                                                                 "Matching pairs")(b)
                                                 or _is_chart("waterfall")(b)),
                                                ), sample_rows=sample_rows))
        # events
        self.table.observe(self._on_table, names="value")
        self.key.observe(lambda ch: self._quiet(ch, lambda v: c.set_key(v)), names="value")
        self.truth.observe(lambda ch: self._quiet(ch, lambda v: c.set_truth(None if v == _NONE else v)),
                           names="value")
        self.add_rule_button.on_click(lambda _: self.add_rule())
        self.rules.observe(lambda ch: self._quiet(ch, lambda v: c.set_blocking(parse_rule_lines(v))), names="value")
        self.stats_button.on_click(lambda _: self.show_block_stats())
        self.add_comparison_button.on_click(lambda _: self.add_comparison())
        self.comparisons.observe(self._on_comparisons, names="value")
        self.threshold.observe(lambda ch: self._quiet(ch, self._set_threshold), names="value")
        self.cluster.observe(lambda ch: self._quiet(ch, self.show_cluster), names="value")
        self.pair.observe(lambda ch: self._quiet(ch, self._pick_pair), names="value")
        self.explain_button.on_click(lambda _: self.explain())
        c.on_change(self._on_controller)
        self._sync_table()
        self._sync_texts()
        super().__init__([
            self.header, W.HBox([self.table, self.key, self.truth]), self.schema,
            W.HTML(wrap("<h3>Blocking</h3><p class='muted'>one rule per line: records equal on every part are "
                        "compared; parts are columns or expressions such as substr(surname,1,3)</p>")),
            W.HBox([self.block_columns, W.VBox([self.add_rule_button]), self.rules, self.stats_button]),
            self.stats_view,
            W.HTML(wrap("<h3>Comparisons</h3><p class='muted'>one per line: column: method [thresholds]</p>")),
            W.HBox([W.VBox([self.compare_column, self.compare_method, self.add_comparison_button]), self.comparisons]),
            self.problems_view,
            W.HBox([self.run_button, self.progress]), self.message,
            self.threshold, self.threshold_view, self.view,
            W.HTML(wrap("<h3>Clusters</h3>")), self.cluster, self.cluster_view,
            W.HTML(wrap("<h3>Why a pair scores what it does</h3>")),
            W.HBox([self.pair]), W.HBox([self.key_1, self.key_2, self.explain_button]), self.waterfall])

    # ----- public actions (what the buttons do)
    def add_rule(self) -> None:
        """Append a rule of the picked blocking columns."""
        try:
            self.controller.add_blocking_rule(list(self.block_columns.value))
        except ParameterError as exc:
            self.problems_view.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")
            return
        self._sync_texts()

    def add_comparison(self) -> None:
        """Append (or replace) the comparison of the picked column by the picked method."""
        if self.compare_column.value is None:
            return
        self.controller.add_comparison(self.compare_column.value, self.compare_method.value)
        self._sync_texts()

    def show_block_stats(self) -> None:
        """Count each rule's blocks and pairs now and show them, with the cumulative pairs chart."""
        self.stats_view.value = wrap("<p class='muted'>counting blocks ...</p>")
        stats = self.controller.block_stats()
        if stats is None:
            self.stats_view.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>"
                                         f"{render.esc(self.controller.stats_error)}</pre>")
            return
        total = int(stats["cumulative_pairs"].iloc[-1]) if len(stats) else 0
        self.stats_view.value = wrap(f"<p><b>{total:,}</b> pairs to compare</p>" + render.html_table(stats)
                                     + charts.img_tag(plot_block_stats(stats), "pairs per blocking rule"))

    def show_cluster(self, cluster_id: Any) -> None:
        """Show one cluster's records side by side and offer its pairs for the waterfall."""
        c = self.controller
        self._shown = (c.current.clusters if c.current is not None else None, cluster_id)
        if cluster_id is None or c.current is None:
            self.cluster_view.value = ""
            with self._guard():
                self.pair.options = []
            return
        side = c.cluster_table(cluster_id)
        self.cluster_view.value = wrap(f"<div class='scroll'>{side_by_side_html(side)}</div>"
                                       "<p class='muted'>values that differ from the most frequent one of their row "
                                       "are in red</p>")
        pairs = c.cluster_pairs(cluster_id)
        with self._guard():
            self.pair.options = [(f"{a} ~ {b}", (a, b)) for a, b in pairs]
            self.pair.value = pairs[0] if pairs else None
        if pairs:
            self._pick_pair(pairs[0])

    def explain(self) -> None:
        """The waterfall of the two keys typed (or the pair picked)."""
        c = self.controller
        k1, k2 = self.key_1.value.strip(), self.key_2.value.strip()
        if c.result is None:
            self.waterfall.value = wrap("<p class='muted'>run first</p>")
            return
        try:
            k1v, k2v = self._key_value(k1), self._key_value(k2)
            table = c.explain(k1v, k2v)
            fig = c.result.plot_waterfall(k1v, k2v)
        except DqkitError as exc:
            self.waterfall.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")
            return
        shown = table[["comparison", "value_1", "value_2", "level", "m", "u", "log2_bayes_factor", "match_weight"]]
        shown = shown.round({"m": 4, "u": 4, "log2_bayes_factor": 2, "match_weight": 2})
        self.waterfall.value = wrap(charts.img_tag(fig, f"waterfall of {k1} ~ {k2}") + render.html_table(shown))

    # ----- view <-> controller
    def _key_value(self, text: str) -> Any:
        """A typed key as the key column's type (numbers for a numeric key)."""
        kind = dict(self.controller.columns()).get(self.controller.key or "", "string")
        if kind in ("int", "bigint", "smallint", "tinyint"):
            try:
                return int(text)
            except ValueError:
                raise ParameterError(f"the key {self.controller.key!r} is a number, not {text!r}") from None
        return text

    def _quiet(self, change: dict[str, Any], fn: Callable[[Any], Any]) -> None:
        if self._guard.active:
            return
        try:
            fn(change["new"])
        except DqkitError as exc:
            self.problems_view.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")

    def _on_table(self, change: dict[str, Any]) -> None:
        if not self._guard.active and change["new"] != self.controller.table:
            self.controller.select_table(change["new"])

    def _on_comparisons(self, change: dict[str, Any]) -> None:
        if self._guard.active:
            return
        try:
            self.controller.set_comparisons(parse_comparison_lines(change["new"]))
        except ParameterError as exc:
            self.problems_view.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")

    def _set_threshold(self, value: float) -> None:
        self.threshold_view.value = wrap("<p class='muted'>clustering ...</p>")
        self.controller.set_threshold(value)

    def _pick_pair(self, pair: Any) -> None:
        if not pair:
            return
        self.key_1.value, self.key_2.value = str(pair[0]), str(pair[1])
        self.explain()

    def _on_controller(self, what: str) -> None:
        c = self.controller
        if what == "table":
            self._sync_table()
        elif what == "selection":
            self._render_problems()
        elif what == "threshold":
            self._render_threshold()

    def _sync_table(self) -> None:
        c = self.controller
        cols = c.columns()
        names = [n for n, _ in cols]
        keep_selection(self.table, [(t, t) for t in c.tables], self._guard)
        keep_selection(self.key, [(n, n) for n in names], self._guard)
        keep_selection(self.truth, [(_NONE, _NONE), *[(n, n) for n in names]], self._guard)
        keep_selection(self.compare_column, [(f"{n} : {t}", n) for n, t in cols], self._guard)
        with self._guard():
            self.table.value = c.table
            self.key.value = c.key if c.key in names else None
            self.truth.value = c.truth if isinstance(c.truth, str) and c.truth in names else _NONE
        self.block_columns.set_columns(cols)
        if cols:
            listed = ", ".join(f"{render.esc(n)} <span class='muted'>{render.esc(t)}</span>" for n, t in cols)
            self.schema.value = wrap(f"<div><b>{render.esc(c.table)}</b>: {listed}</div>")
        else:
            self.schema.value = wrap(f"<p class='bad'>{render.esc(c.listing.error)}</p>" if c.listing.error
                                     else "<p class='muted'>no table</p>")
        self.stats_view.value = ""
        self._render_problems()

    def _sync_texts(self) -> None:
        c = self.controller
        with self._guard():
            self.rules.value = "\n".join(_rule_line(r) for r in c.blocking)
            self.comparisons.value = "\n".join(_comparison_line(x) for x in c.comparisons)
            self.threshold.value = min(max(c.threshold, self.threshold.min), self.threshold.max)
        self._render_problems()

    def _render_problems(self) -> None:
        problems = self.controller.problems()
        self.run_button.disabled = bool(problems) or self.controller.status == "running"
        if problems:
            self.problems_view.value = wrap("<ul class='bad'>" + "".join(f"<li>{render.esc(p)}</li>" for p in problems)
                                            + "</ul>")
        else:
            n, m = len(self.controller.blocking), len(self.controller.comparisons)
            self.problems_view.value = wrap(f"<p class='ok'>{n} blocking rule(s), {m} comparison(s): ready</p>")

    def _render_threshold(self) -> None:
        c = self.controller
        with self._guard():
            self.threshold.value = min(max(c.threshold, self.threshold.min), self.threshold.max)
        metrics = c.metrics()
        if not metrics:
            self.threshold_view.value = ""
            return
        facts = "".join(f"<tr><th class='l'>{render.esc(k)}</th><td>{render.esc(v if not isinstance(v, int) else f'{v:,}')}"
                        "</td></tr>" for k, v in metrics.items())
        note = (f"<p class='muted'>The counts above and the cluster browser follow the slider; the tabs below show "
                f"the run at its threshold {c.result.threshold:g}.</p>" if c.result is not None else "")
        self.threshold_view.value = wrap(f"<table class='facts'>{facts}</table>{note}")
        sample = c.cluster_sample()
        options = [(f"{r.cluster_id} ({r.cluster_size} records)", r.cluster_id) for r in sample.itertuples()]
        old = self.cluster.value
        with self._guard():
            self.cluster.options = options
            values = [v for _, v in options]
            self.cluster.value = old if old in values else (values[0] if values else None)
        last = getattr(self, "_shown", (None, None))
        same = c.current is not None and last[0] is c.current.clusters and last[1] == self.cluster.value
        if not same:  # the same clusters and the same cluster: nothing to redraw
            self.show_cluster(self.cluster.value)

    def clear_results(self) -> None:
        """The tabs, the threshold counts, the cluster browser and the waterfall."""
        super().clear_results()
        self.threshold_view.value = self.cluster_view.value = self.waterfall.value = ""
        with self._guard():
            self.cluster.options = []
            self.pair.options = []
        self._shown = (None, None)

    def _on_run_change(self, what: str) -> None:
        super()._on_run_change(what)
        if what == "status" and self.controller.status != "running":
            self._render_problems()
