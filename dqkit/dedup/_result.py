"""The result of a dedup run: scored pairs, clusters, golden records, the model, and how to read them.

Long because one result class holds every section it renders, its charts' data and its saving, which
share its lazy frames (golden records are computed in ``dqkit.dedup._golden``)."""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup._cluster import cluster_records  # noqa: F401 - re-exported (tests, callers)
from dqkit.dedup._charts import (  # noqa: F401 - re-exported (evaluate, dqkit.dedup)
    DedupCharts, blocking_table, plot_block_stats, probability_to_weight, weight_to_probability,
)
from dqkit.dedup._em import FSModel
from dqkit.dedup._golden import _K, CLUSTER, SIZE, golden_records  # noqa: F401 - re-exported (tests, callers)
from dqkit.dedup.config import DedupConfig
from dqkit.errors import ParameterError
from dqkit.contract.result import Chart, Facts, Notes, Result, Table, Verdict, keyed, sized_for_files
from dqkit.runtime.sparkutil import checkpoint_on_read, col


@dataclass(frozen=True, eq=False, repr=False)
class DedupResult(DedupCharts, Result):
    """The outcome of ``dedup``. DataFrames stay lazy (the levels of the candidate pairs and the
    clusters are checkpointed once); the summaries are small aggregates computed at the threshold.

    * ``pairs``: every candidate pair ``key_1 < key_2, rule, match_weight, probability,
      gamma_<comparison>...`` (levels: -1 NULL, 0 else, 1.. close, highest exact); ``matches``: those
      with probability >= ``threshold``;
    * ``clusters``: ``(<key>, cluster_id)`` for every record, the cluster id the smallest key of its
      connected component of matches (a record without match is its own cluster);
    * ``golden``: one record per cluster, ``cluster_id, cluster_size`` and every other column;
    * ``model``: the Fellegi–Sunter m, u and prior; ``model_table()`` shows them per level;
    * ``explain(k1, k2)`` / ``plot_waterfall(k1, k2)``: each comparison's share of a pair's weight;
    * ``at_threshold(p)``: the same run with clusters at another threshold (no re-comparison);
    * ``saving(format, all_pairs)``: the same run, saved by ``save`` as CSV and/or with every pair;
    * ``accuracy``: a ``dqkit.dedup.evaluate.PairAccuracy`` against the true clusters of column
      ``truth`` (set by the dedup system's ``--truth``): its sections then add precision and recall.
    """

    system = "dqkit dedup"

    table: str
    key: str
    config: DedupConfig
    threshold: float
    records: DataFrame
    compare_records: DataFrame
    levelled_pairs: DataFrame | None  # the Spark route's levelled pairs; None: they are on the driver
    model: FSModel
    sessions: tuple[dict[str, Any], ...]
    block_stats: pd.DataFrame
    n_records: int
    n_pairs: int
    u_pairs: int
    patterns: np.ndarray  # the level patterns of the candidate pairs (G × comparisons), -1 NULL
    pattern_counts: np.ndarray  # pairs per pattern row
    rule_names: tuple[str, ...]
    dtypes: Mapping[str, T.DataType]
    notes: tuple[str, ...] = ()
    golden_fn: Callable[[pd.DataFrame], Mapping[str, Any]] | None = None
    input_paths: tuple[Any, ...] = ()
    clusters: DataFrame | None = None
    n_matching_pairs: int = 0
    cluster_sizes: Mapping[int, int] = field(default_factory=dict)
    save_format: str = "parquet"
    save_all_pairs: bool = False
    sources: tuple[str, str] | None = None  # linking: the names of the left and right tables
    source_records: tuple[int, int] | None = None  # linking: records of each table
    truth: str | None = None  # the column of true cluster ids that ``accuracy`` was measured against
    accuracy: Any = None  # a PairAccuracy (dqkit.dedup.evaluate), or None
    oversized: Mapping[int, list[str]] = field(default_factory=dict)  # purged blocks per rule (JSON keys)
    driver_pairs: Any = None  # the pairs still on the driver (dqkit.dedup._driver.DriverPairs), or None

    @property
    def is_link(self) -> bool:
        """True for record linkage of two tables (``link`` / ``dedup(..., other=...)``)."""
        return self.sources is not None

    def _pair_key(self, column: str) -> Column:
        return F.col(column).getField("k") if self.is_link else F.col(column)

    def _id_is(self, side: int, key: Any) -> Column:
        """The internal id of the record with ``key`` (linking: of the table ``side``, 0 left / 1 right)."""
        if self.is_link:
            return (F.col(B.ID).getField("s") == F.lit(side)) & (F.col(B.ID).getField("k") == F.lit(key))
        return F.col(B.ID) == F.lit(key)

    # ---------------------------------------------------------------------------- pairs and scores
    def _weight_column(self) -> tuple[Column, list[Column]]:
        return weight_column(self.model)

    @property
    def levelled(self) -> DataFrame:
        """Every candidate pair's ids, first rule, rules' bitmask and levels (the driver route's are read
        from a file written once: ``DriverPairs.frame``)."""
        if self.levelled_pairs is not None:
            return self.levelled_pairs
        return self.driver_pairs.frame(self.records.sparkSession)

    def _scored(self, levelled: DataFrame) -> DataFrame:
        w, _ = self._weight_column()
        return levelled.select("*", w.alias("match_weight")).withColumn(
            "probability", F.lit(1.0) / (F.lit(1.0) + F.pow(F.lit(2.0), -F.col("match_weight"))))

    @functools.cached_property
    def scored(self) -> DataFrame:
        """Internal pairs (``_dq_id1, _dq_id2``, levels) with ``match_weight`` and ``probability``."""
        return self._scored(self.levelled)

    @property
    def pairs(self) -> DataFrame:
        """Every candidate pair: ``key_1, key_2, rule, match_weight, probability, gamma_<comparison>...``."""
        return self._pairs_of(self.scored)

    def _pairs_of(self, scored: DataFrame) -> DataFrame:
        names = F.array(*[F.lit(n) for n in self.rule_names]) if self.rule_names else F.array()
        return scored.select(
            self._pair_key(B.ID1).alias("key_1"), self._pair_key(B.ID2).alias("key_2"),
            F.element_at(names, F.col(B.FIRST) + 1).alias("rule"), "match_weight", "probability",
            *[F.col(C.gamma_col(i)).alias(f"gamma_{c.label}") for i, c in enumerate(self.config.comparisons)])

    @property
    def matches(self) -> DataFrame:
        """The pairs with probability >= threshold (the edges of the clusters)."""
        w = probability_to_weight(self.threshold)
        if self.driver_pairs is not None and math.isfinite(w):  # only the matching pairs reach Spark
            matching = self._pattern_weights() >= w  # the same doubles as Spark's match_weight
            return self._pairs_of(self._scored(self.driver_pairs.matching_frame(self.records.sparkSession,
                                                                                  matching)))
        if not math.isfinite(w):
            return self.pairs if w < 0 else self.pairs.where(F.lit(False))
        return self.pairs.where(F.col("match_weight") >= F.lit(w))

    def _pattern_weights(self) -> np.ndarray:
        """The match weight of each pattern row, added in the order Spark adds them (same doubles)."""
        bfs = self.model.log2_bayes_factors()
        out = np.empty(len(self.pattern_counts))
        for g, row in enumerate(self.patterns):
            total = self.model.prior_weight
            for k, lvl in enumerate(row):
                total = total + (float(bfs[k][lvl]) if lvl >= 0 else 0.0)
            out[g] = total
        return out

    # ---------------------------------------------------------------------------- clusters
    def at_threshold(self, threshold: float) -> DedupResult:
        """This run with clusters, golden records and summaries at ``threshold`` (pairs are not re-compared)."""
        if not 0 <= threshold <= 1:
            raise ParameterError(f"threshold must be a probability between 0 and 1, not {threshold!r}")
        # weights, not probabilities, are compared: the same doubles in Spark and here
        w = probability_to_weight(float(threshold))
        if self.clusters is not None and self.matching_pairs_at(threshold) == self.n_matching_pairs:
            # the matches at two thresholds are nested sets: as many pairs means the same pairs, so the
            # same clusters (no Spark job: a slider that moves within one weight step costs nothing)
            return dataclasses.replace(self, threshold=float(threshold))
        matching = self._pattern_weights() >= w
        n_matching = int(self.pattern_counts[matching].sum())
        if self.driver_pairs is not None:  # labelled and counted where the pairs are (dqkit.dedup._driver)
            labelled, sizes = self.driver_pairs.clusters(matching, self.n_records)
            clusters = cluster_records(self.records, self.key, labelled).transform(checkpoint_on_read)
        else:
            hit = self.scored.where(F.col("match_weight") >= F.lit(w)) if math.isfinite(w) else (
                self.scored if w < 0 else self.scored.where(F.lit(False)))
            clusters = cluster_records(self.records, self.key, hit.select(B.ID1, B.ID2), self.sources, n_matching)
            clusters = clusters.transform(checkpoint_on_read)
            sizes = {int(r["s"]): int(r["n"]) for r in clusters.groupBy(CLUSTER).agg(F.count(F.lit(1)).alias("s"))
                     .groupBy("s").agg(F.count(F.lit(1)).alias("n")).collect()}
        return dataclasses.replace(self, threshold=float(threshold), clusters=clusters,
                                   n_matching_pairs=int(n_matching), cluster_sizes=dict(sorted(sizes.items())))

    def matching_pairs_at(self, threshold: float) -> int:
        """Candidate pairs with probability >= ``threshold`` (from the pattern counts: no Spark job)."""
        w = probability_to_weight(float(threshold))
        return int(self.pattern_counts[self._pattern_weights() >= w].sum()) if len(self.pattern_counts) else 0

    @functools.cached_property
    def golden(self) -> DataFrame:
        """One golden record per cluster: ``cluster_id, cluster_size`` and every column but the key.
        Per column the most frequent non-NULL value of the cluster, ties to the smallest value
        (deterministic), or ``golden_record(records)`` when given. Kept by the first job that reads it
        whole (its sample, or its save), so the other reads it again instead of recomputing it."""
        return checkpoint_on_read(self._golden())

    def _golden(self) -> DataFrame:
        if self.is_link:  # records by "<source>:<key>", without the source and key columns
            rid = "_dq_record"
            attrs = [c for c in self.records.columns if c not in (self.key, B.SOURCE)]
            recs = self.records.select(record_label(self.key).alias(rid), *[col(a) for a in attrs])
            cl = self._clusters().select(record_label(self.key).alias(rid), CLUSTER)
            return golden_records(recs, cl, rid, self.golden_fn)
        return golden_records(self.records, self._clusters(), self.key, self.golden_fn)

    def _clusters(self) -> DataFrame:
        if self.clusters is None:
            raise ParameterError("this result has no clusters yet", hint="call at_threshold(p)")
        return self.clusters

    @property
    def duplicate_clusters(self) -> int:
        """Clusters with two or more records."""
        return sum(n for s, n in self.cluster_sizes.items() if s > 1)

    @property
    def records_in_duplicates(self) -> int:
        return sum(s * n for s, n in self.cluster_sizes.items() if s > 1)

    @property
    def largest_cluster(self) -> int:
        return max(self.cluster_sizes, default=0)

    @property
    def n_clusters(self) -> int:
        """Clusters, singletons included: the rows of the golden table."""
        return sum(self.cluster_sizes.values())

    def cluster_sample(self, n: int = 10, max_records: int = 10) -> pd.DataFrame:
        """The ``n`` largest duplicate clusters (ties by id) with at most ``max_records`` of their keys."""
        cl = self._clusters()
        member = record_label(self.key) if self.is_link else col(self.key)
        rows = self.first_rows(("clusters", max_records), n, lambda k: (
            cl.groupBy(CLUSTER).agg(F.count(F.lit(1)).alias(SIZE),
                                    F.slice(F.sort_array(F.collect_list(member)), 1, max_records).alias("keys"))
            .where(F.col(SIZE) > 1).orderBy(F.desc(SIZE), CLUSTER).limit(k).collect()))
        return pd.DataFrame([{CLUSTER: r[CLUSTER], SIZE: r[SIZE], "keys": ", ".join(map(str, r["keys"]))} for r in rows],
                            columns=[CLUSTER, SIZE, "keys"])

    def cluster_records(self, cluster_id: Any, limit: int = 50) -> pd.DataFrame:
        """The records of one cluster side by side (at most ``limit``), sorted by key."""
        sel = self._clusters().where(F.col(CLUSTER) == F.lit(cluster_id))
        if self.is_link:
            cl = sel.select(record_label(self.key).alias(_K))
            recs = self.records.join(cl, record_label(self.key) == cl[_K]).drop(_K)
            order = [col(B.SOURCE), col(self.key)]
        else:
            cl = sel.select(col(self.key).alias(_K))
            recs = self.records.join(cl, self.records[self.key] == cl[_K]).drop(_K)
            order = [col(self.key)]
        return pd.DataFrame([r.asDict() for r in recs.orderBy(*order).limit(limit).collect()],
                            columns=self.records.columns)

    # ---------------------------------------------------------------------------- the model
    def model_table(self) -> pd.DataFrame:
        """One row per comparison and level: m, u and the level's log2 Bayes factor."""
        rows = []
        for c, m, u, bf in zip(self.config.comparisons, self.model.m, self.model.u, self.model.log2_bayes_factors()):
            labels = c.level_labels()
            for lvl in range(len(m) - 1, -1, -1):
                rows.append({"comparison": c.label, "level": labels[lvl], "gamma": lvl, "m": float(m[lvl]),
                             "u": float(u[lvl]), "log2_bayes_factor": float(bf[lvl])})
        return pd.DataFrame(rows, columns=["comparison", "level", "gamma", "m", "u", "log2_bayes_factor"])

    def explain(self, key_1: Any, key_2: Any) -> pd.DataFrame:
        """Why a pair scores what it does (the waterfall's data): the prior, then per comparison the
        two values, the level, m, u and the log2 Bayes factor added, with the running match weight.
        Any two records can be explained, candidate pair or not."""
        cache = self.__dict__.setdefault("_explained", {})
        if (key_1, key_2) not in cache:
            cache[(key_1, key_2)] = self._explain(key_1, key_2)
        return cache[(key_1, key_2)].copy()

    def _explain(self, key_1: Any, key_2: Any) -> pd.DataFrame:
        comps = self.config.comparisons
        columns = self.config.columns()
        carry = [C.value_col(k) for k in range(len(columns))]
        recs = self.compare_records
        left = recs.where(self._id_is(0, key_1)).select(F.col(B.ID).alias(B.ID1), *[F.col(c).alias(f"{c}_l") for c in carry])
        right = recs.where(self._id_is(1, key_2)).select(F.col(B.ID).alias(B.ID2), *[F.col(c).alias(f"{c}_r") for c in carry])
        got = C.add_levels(left.crossJoin(right), comps, columns, dict(self.dtypes)).limit(1).collect()
        if not got:
            raise ParameterError(f"no record with key {key_1!r} or {key_2!r}", hint=f"keys are values of {self.key!r}")
        row = got[0]
        bfs = self.model.log2_bayes_factors()
        total = self.model.prior_weight
        out = [{"comparison": "prior", "value_1": "", "value_2": "", "level": "", "m": np.nan, "u": np.nan,
                "log2_bayes_factor": total, "match_weight": total}]
        for i, c in enumerate(comps):
            g = int(row[C.gamma_col(i)])
            k = columns.index(c.column)
            bf = float(bfs[i][g]) if g >= 0 else 0.0
            total += bf
            out.append({"comparison": c.label, "value_1": row[f"{C.value_col(k)}_l"],
                        "value_2": row[f"{C.value_col(k)}_r"], "level": c.level_labels()[g] if g >= 0 else "null",
                        "m": float(self.model.m[i][g]) if g >= 0 else np.nan,
                        "u": float(self.model.u[i][g]) if g >= 0 else np.nan,
                        "log2_bayes_factor": bf, "match_weight": total})
        frame = pd.DataFrame(out)
        frame.attrs["probability"] = weight_to_probability(total)
        return frame

    @functools.cached_property
    def weight_histogram(self) -> pd.DataFrame:
        """Candidate pairs per whole-number match weight (from the pattern counts: no Spark job)."""
        if not len(self.pattern_counts):
            return pd.DataFrame(columns=["weight", "pairs"])
        h = (pd.DataFrame({"weight": np.floor(self._pattern_weights()).astype(np.int64), "pairs": self.pattern_counts})
             .groupby("weight", as_index=False)["pairs"].sum())
        h["pairs"] = h["pairs"].astype(np.int64)
        return h

    # ---------------------------------------------------------------------------- the contract
    def verdict_block(self) -> Verdict:
        if self.is_link:
            assert self.sources is not None and self.source_records is not None
            sizes = (f"{self.source_records[0]:,} {self.sources[0]} and {self.source_records[1]:,} "
                     f"{self.sources[1]} records")
            if self.duplicate_clusters == 0:
                return Verdict(True, "NO LINKS", f"{sizes}, {self.n_pairs:,} candidate pairs, none with match "
                                                 f"probability >= {self.threshold:g}")
            return Verdict(False, "LINKED", f"{self.n_matching_pairs:,} matching pairs across {sizes}: "
                                            f"{self.duplicate_clusters:,} linked cluster(s) hold "
                                            f"{self.records_in_duplicates:,} records (largest {self.largest_cluster})"
                                            f"; {self.n_clusters:,} golden records")
        if self.duplicate_clusters == 0:
            return Verdict(True, "NO DUPLICATES", f"{self.n_records:,} records, {self.n_pairs:,} candidate pairs, "
                                                  f"none with match probability >= {self.threshold:g}")
        return Verdict(False, "DUPLICATES", f"{self.duplicate_clusters:,} cluster(s) hold {self.records_in_duplicates:,} "
                                            f"of {self.n_records:,} records ({self.n_matching_pairs:,} matching pairs, "
                                            f"largest cluster {self.largest_cluster}); "
                                            f"{self.n_clusters:,} golden records")

    def metrics(self) -> dict[str, float]:
        """Records, candidate and matching pairs, clusters, and the duplicate share (records in a
        cluster of two or more over all records)."""
        n = self.n_records
        return {"records": float(n), "candidate_pairs": float(self.n_pairs),
                "matching_pairs": float(self.n_matching_pairs), "clusters": float(self.n_clusters),
                "duplicate_clusters": float(self.duplicate_clusters),
                "records_in_duplicates": float(self.records_in_duplicates),
                "duplicate_share": float(self.records_in_duplicates) / n if n else 0.0,
                "largest_cluster": float(self.largest_cluster)}

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        model = {c.label: {"method": c.method, "levels": c.level_labels(), "m": [float(x) for x in m],
                           "u": [float(x) for x in u], "log2_bayes_factor": [float(x) for x in bf]}
                 for c, m, u, bf in zip(self.config.comparisons, self.model.m, self.model.u,
                                        self.model.log2_bayes_factors())}
        return {"table": self.table, "key": self.key, "verdict": v.label, "summary": v.summary,
                "records": self.n_records, "candidate_pairs": self.n_pairs, "threshold": self.threshold,
                "matching_pairs": self.n_matching_pairs, "clusters": self.n_clusters,
                "duplicate_clusters": self.duplicate_clusters, "records_in_duplicates": self.records_in_duplicates,
                "largest_cluster": self.largest_cluster,
                "cluster_sizes": {str(s): n for s, n in self.cluster_sizes.items()},
                "blocking": self.block_stats.to_dict(orient="records"),
                "model": {"prior": self.model.prior, "prior_weight": self.model.prior_weight,
                          "u_sample_pairs": self.u_pairs, "comparisons": model},
                "em_sessions": [dict(s) for s in self.sessions], "notes": list(self.notes),
                **({"accuracy": {"truth": self.truth, **self.accuracy.at(self.threshold)}}
                   if self.accuracy is not None else {}),
                **({"link": {"sources": list(self.sources), "records": dict(zip(self.sources, self.source_records or ()))}}
                   if self.sources else {})}

    def sections(self, sample_rows: int = 10) -> list[Any]:
        cfg = self.config
        blocks: list[Any] = [keyed("summary", self.verdict_block()), Facts("What was linked" if self.is_link else "What was deduplicated", key="summary", items={
            **({"tables": self.table, "link": "pairs only across the two tables; clusters are the connected "
                                              "components of the cross-table matches"}
               if self.is_link else {"table": self.table}), "key": self.key, "records": self.n_records,
            "blocking rules": len(cfg.blocking), "comparisons": ", ".join(f"{c.label} ({c.method})" for c in cfg.comparisons),
            "candidate pairs": self.n_pairs, "threshold": self.threshold,
            "matching pairs": self.n_matching_pairs, "clusters with duplicates": self.duplicate_clusters,
            "records in them": self.records_in_duplicates, "golden records": self.n_clusters,
            "prior (two random records match)": f"{self.model.prior:.3g}"}), keyed("summary", self._config_facts())]
        blocks += keyed("blocking", blocking_table(self.block_stats, max_rows=sample_rows or None, link=self.is_link))
        blocks.append(Chart("Pairs per blocking rule", "block_sizes", self.plot_block_sizes, key="blocking"))
        blocks.append(Table("Model", self.model_table(),
                            note="m = P(level | match), u = P(level | non-match); a pair's match weight is "
                                 f"{self.model.prior_weight:.2f} (prior) + Σ log2(m/u); NULL adds 0", key="model"))
        blocks.append(Chart("Match weights", "match_weights", self.plot_match_weights, key="model"))
        blocks.append(Table("Cluster sizes", pd.DataFrame({"size": list(self.cluster_sizes),
                                                           "clusters": list(self.cluster_sizes.values())}),
                            key="clusters"))
        blocks.append(Chart("Cluster sizes", "cluster_sizes", self.plot_cluster_sizes, key="clusters"))
        if sample_rows and self.duplicate_clusters:
            blocks.append(Table("Largest clusters", self.cluster_sample(sample_rows),
                                note=f"at most {sample_rows} clusters, 10 keys each", key="clusters"))
            def strongest(k: int) -> list[Any]:
                return (self.matches.orderBy(F.desc("match_weight"), "key_1", "key_2")
                        .select("key_1", "key_2", "rule", "match_weight", "probability").limit(k).collect())
            top = self.first_rows("matching pairs", sample_rows, strongest)
            blocks.append(Table("Matching pairs", pd.DataFrame([r.asDict() for r in top]),
                                note=f"the {sample_rows} with the highest match weight", key="pairs"))
            if top:  # the weakest of the first ten: the same pair whatever page of pairs is shown
                last = self.first_rows("matching pairs", 10, strongest)[-1]
                k1, k2 = last["key_1"], last["key_2"]
                blocks.append(Chart(f"Why {k1} ~ {k2} match", "waterfall",
                                    functools.partial(self.plot_waterfall, k1, k2), key="pairs"))
        if sample_rows and self.duplicate_clusters:
            golden = pd.DataFrame(self.first_rows("golden", sample_rows, lambda k: [
                r.asDict() for r in self.golden.where(F.col(SIZE) > 1).orderBy(F.desc(SIZE), CLUSTER).limit(k).collect()]),
                columns=self.golden.columns)
            blocks.append(Table("Golden records of the largest clusters", golden,
                                note=f"at most {sample_rows}; per column the most frequent non-NULL value of the "
                                     "cluster's records (ties to the smallest)", key="golden"))
        blocks += keyed("accuracy", self._accuracy_blocks())
        if self.notes:
            blocks.append(Notes("Notes", list(self.notes), key="notes"))
        return blocks

    def _config_facts(self) -> Facts:
        cfg = self.config
        return Facts("Config", {"blocking rules": " | ".join(r.text for r in cfg.blocking),
                                **{f"comparison {c.label}": f"{c.method}: " + ", ".join(c.level_labels()[::-1])
                                   for c in cfg.comparisons},
                                "max_block_size": cfg.max_block_size, "u sample records": cfg.u_sample_records,
                                "seed": cfg.seed})

    def _accuracy_blocks(self) -> list[Any]:
        """Pairwise precision and recall against ``truth`` (only when ``accuracy`` was measured)."""
        if self.accuracy is None:
            return []
        here = self.accuracy.at(self.threshold)
        curve = self.accuracy.curve(sorted({0.01, 0.1, 0.5, 0.9, 0.99, 0.999, self.threshold}))
        return [Facts(f"Pairwise accuracy at threshold {self.threshold:g}",
                      {"true pairs": here["true_pairs"], "matching pairs": here["predicted"],
                       "true matching pairs": here["true_positives"], "precision": f"{here['precision']:.4f}",
                       "recall": f"{here['recall']:.4f}", "F1": f"{here['f1']:.4f}"}),
                Table("Precision and recall by threshold", curve.round(4),
                      note=f"true pairs: every pair of records with the same {self.truth or 'true id'}; the matches "
                           "are pairs, not their transitive closure")]

    def frames(self, all_pairs: bool | None = None, **_: Any) -> dict[str, DataFrame]:
        """``pairs`` (the matches, or every candidate pair with ``all_pairs``, default as ``saving`` set),
        ``clusters`` and ``golden``; none when they are saved as CSV (``_save_extra`` writes those)."""
        if self.save_format == "csv":
            return {}
        return self._frame_map(self.save_all_pairs if all_pairs is None else all_pairs)

    def _frame_map(self, all_pairs: bool) -> dict[str, DataFrame]:
        from dqkit.dedup._since_io import FINGERPRINTS, fingerprints

        return {"pairs": self.pairs if all_pairs else self.matches, "clusters": self._clusters(),
                "golden": self.golden,
                **({} if self.is_link else {FINGERPRINTS: fingerprints(self.records, self.key, self.config)})}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)

    def frame_rows(self, all_pairs: bool | None = None, **_: Any) -> dict[str, int]:
        from dqkit.dedup._since_io import FINGERPRINTS

        every = self.save_all_pairs if all_pairs is None else all_pairs
        return {"pairs": self.n_pairs if every else self.n_matching_pairs, "clusters": self.n_records,
                "golden": self.n_clusters, FINGERPRINTS: self.n_records}

    def _save_extra(self, folder: Path) -> None:
        if self.save_format == "csv":
            rows = self.frame_rows()
            for rel, frame in self._frame_map(self.save_all_pairs).items():
                sized_for_files(frame, rows=rows.get(rel)).write.mode("error").option("header", "true").csv((folder / rel).as_posix())
        if not self.is_link:  # what the next night's `dedup --since` reads
            from dqkit.dedup import _since_io as io

            io.write_manifest(folder, io.manifest(
                key=self.key, key_type=self.records.schema[self.key].dataType.simpleString(), cfg=self.config,
                threshold=self.threshold, model=self.model, oversized=self.oversized, records=self.n_records,
                clusters=self.n_clusters, matching_pairs=self.n_matching_pairs, save_format=self.save_format,
                all_pairs=self.save_all_pairs, schema=io.schema_of(self.records, self.key, self.config)))

    def saving(self, format: str = "parquet", all_pairs: bool = False) -> DedupResult:
        """This run, to be saved by ``save`` (the generic ``Result.save``) with the tables as ``format``
        (``parquet``, or ``csv`` with a header, to a folder only) and ``pairs`` holding every candidate
        pair (``all_pairs``) or only the matches."""
        if format not in SAVE_FORMATS:
            raise ParameterError(f"unknown save format {format!r}", hint="parquet or csv")
        return dataclasses.replace(self, save_format=format, save_all_pairs=bool(all_pairs))


#: The formats ``saving`` writes the tables in.
SAVE_FORMATS = ("parquet", "csv")


def weight_column(model: FSModel) -> tuple[Column, list[Column]]:
    """A pair's match weight as a Spark expression of its levels (and each comparison's part): the
    prior weight plus each level's log2 Bayes factor, NULL adding 0."""
    parts = []
    for i, bf in enumerate(model.log2_bayes_factors()):
        g = F.col(C.gamma_col(i))
        e = F.when(g < 0, F.lit(0.0))
        for lvl, v in enumerate(bf):
            e = e.when(g == lvl, F.lit(float(v)))
        parts.append(e.otherwise(F.lit(0.0)))
    total = F.lit(model.prior_weight)
    for p in parts:
        total = total + p
    return total, parts


def record_label(key: str) -> Column:
    """Linking: a record as ``"<source>:<key>"`` (the key may occur in both tables)."""
    return F.concat_ws(":", F.col(B.SOURCE), col(key).cast("string"))
