"""Presentation only: the dedup pair browser's state (the threshold slider re-cutting clusters, the cluster
and pair browser, the block-size preview), which the ``dedup`` declaration cannot express.

``DedupController`` holds the table, key, blocking rules, comparisons, threshold and truth; its run is
``dedup``'s ``System.run`` with the declared ``DedupParams`` (the table a DataFrame, the config the
mapping the boxes make, read by the one config parser). The one-line text forms of a blocking rule and
a comparison below are the boxes' display, turned into that mapping. ``DedupExplorer`` is its view."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from dqkit.errors import DqkitError, ParameterError
from dqkit.io.sources import DatabaseSource
from dqkit.systems import Params, get
from dqkit.systems.dedup import block_stats, comparison_methods, config_parts, dedup_config
from dqkit.widgets.controllers import RunController, TableListing, error_text
from dqkit.widgets.declared import convert

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

    system = "dedup"

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
        self.accuracy: Any = None  # a PairAccuracy, when the truth is known
        self.current: Any = None  # the DedupResult at the current threshold
        self._cuts: dict[int, Any] = {}
        self._samples: dict[int, tuple[Any, pd.DataFrame]] = {}
        self.select_table(table if table is not None else (self.tables[0] if self.tables else None))
        if key is not None:
            self.set_key(key)
        if config is not None:
            self.set_config(config)
        if threshold is not None:
            self.threshold = convert("dedup", "threshold", threshold)
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
        if method not in comparison_methods():
            raise ParameterError(f"unknown comparison method {method!r}",
                                 hint=f"methods: {', '.join(comparison_methods())}")
        self.set_comparisons([*[c for c in self.comparisons if c["column"] != column],
                              {"column": column, "method": method}])

    def set_config(self, config: Any) -> None:
        """Take blocking rules, comparisons and settings from a dedup config (YAML path or text, dict)."""
        parts = config_parts(config)  # dedup's one config parser
        self.blocking, self.comparisons = parts["blocking"], parts["comparisons"]
        self.settings, self.threshold = parts["settings"], parts["threshold"]
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
                dedup_config(self.config_dict())
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
            self.stats = block_stats(self.frame(), self.key, self.config_dict() if self.comparisons else
                                     {**self.config_dict(), "comparisons": [{"column": self.key, "method": "exact"}]},
                                     spark=self.spark)
        except DqkitError as exc:
            self.stats_error = error_text(exc)
        except Exception as exc:  # a Spark error: shown, not lost
            self.stats_error = error_text(exc)
        self._changed("stats")
        return self.stats

    # ----- running
    def expected_steps(self) -> int:
        return 4

    def params(self) -> Params:
        """``dedup``'s checked ``Params``: the chosen table (a DataFrame, named as listed), the key, the
        config the boxes make, the threshold and the truth (a column, or the true key pairs)."""
        if self.problems():
            raise ParameterError(self.problems()[0])
        params = get("dedup").prepare(table=self.frame(), key=self.key, config=self.config_dict(),
                                      threshold=self.threshold, truth=self.truth)
        return dataclasses.replace(params, _name=self.table)

    def _on_status(self, what: str) -> None:
        if what == "status" and self.status == "running":  # a new run: the last one's clusters are gone
            self.current, self._cuts, self._samples, self.accuracy = None, {}, {}, None
        if what == "status" and self.status == "done" and self.result is not None:
            self.accuracy = getattr(self.result, "accuracy", None)
            self.threshold = self.result.threshold
            self.current = self.result
            self._cuts = {self.result.n_matching_pairs: self.result}
            self._samples = {}
            self._changed("threshold")

    # ----- after running
    def set_threshold(self, threshold: float) -> Any:
        """Clusters at ``threshold`` (no re-scoring; the clusters are recomputed only when the set of
        matching pairs changes, and each set is computed once)."""
        threshold = convert("dedup", "threshold", threshold)  # dedup's declared threshold: a probability
        if threshold is None:
            raise ParameterError("the threshold is a match probability between 0 and 1", hint="pick one, e.g. 0.9")
        self.threshold = threshold
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


# ----------------------------------------------------------------------------------------------- view
