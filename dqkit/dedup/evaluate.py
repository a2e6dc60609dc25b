"""Pairwise precision and recall of a dedup run against known true links, at any threshold.

``pair_accuracy(result, truth)`` counts, in one Spark aggregation, the true matching pairs among the
candidate pairs of each level pattern. A pair's match weight depends only on its level pattern, so
the counts per pattern give precision and recall at every threshold without another Spark job: the
explorer's threshold slider and the tutorial's precision/recall curve read them on the driver.

``truth`` is either the name of a column of the deduplicated table holding the true cluster (the
entity; a NULL entity matches nothing), or the true matching pairs (a DataFrame of two key columns,
or a list of key pairs). Pairwise measures, as FEBRL and Splink's benchmarks count them:

* predicted: candidate pairs with probability >= threshold (the matches; not their transitive closure);
* precision = true predicted / predicted (1.0 when nothing is predicted);
* recall = true predicted / all true pairs, blocked or not (1.0 when there is no true pair);
* F1 their harmonic mean (0.0 when both are 0).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup._result import DedupResult, probability_to_weight
from dqkit.errors import ParameterError, UnknownColumnError
from dqkit.runtime.sparkutil import col

__all__ = ["PairAccuracy", "pair_accuracy"]


@dataclass(frozen=True)
class PairAccuracy:
    """Candidate and true pairs per match weight; ``at(p)`` gives the measures at threshold ``p``."""

    weights: np.ndarray  # distinct match weights of the candidate pairs, ascending
    pairs: np.ndarray  # candidate pairs per weight
    true_found: np.ndarray  # true pairs among them
    true_pairs: int  # all true pairs (candidate pairs or not)

    def at(self, threshold: float) -> dict[str, Any]:
        """``predicted, true_positives, true_pairs, precision, recall, f1`` at ``threshold``."""
        if not 0 <= threshold <= 1:
            raise ParameterError(f"threshold must be a probability between 0 and 1, not {threshold!r}")
        w = probability_to_weight(float(threshold))
        hit = self.weights >= w if not math.isnan(w) else np.zeros(len(self.weights), bool)
        predicted = int(self.pairs[hit].sum())
        tp = int(self.true_found[hit].sum())
        precision = tp / predicted if predicted else 1.0
        recall = tp / self.true_pairs if self.true_pairs else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"threshold": float(threshold), "predicted": predicted, "true_positives": tp,
                "true_pairs": self.true_pairs, "precision": precision, "recall": recall, "f1": f1}

    def curve(self, thresholds: Iterable[float] = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)
              ) -> pd.DataFrame:
        """The measures at each of ``thresholds`` (one row each)."""
        return pd.DataFrame([self.at(t) for t in thresholds])


def pair_accuracy(result: DedupResult, truth: str | DataFrame | Iterable[tuple[Any, Any]]) -> PairAccuracy:
    """Count the true pairs per level pattern of ``result`` (see the module docstring for ``truth``).

    One aggregation over the candidate pairs (and one count of the true pairs); only the per-pattern
    counts reach the driver."""
    key = result.key
    records = result.records
    levelled = result.levelled
    comps = result.config.comparisons
    gammas = [C.gamma_col(i) for i in range(len(comps))]
    key_type = records.schema[key].dataType
    if isinstance(truth, str):
        if truth not in records.columns:
            raise UnknownColumnError(f"the truth column {truth!r} is not in the table",
                                     hint="columns are " + ", ".join(records.columns))
        if truth == key:
            raise ParameterError("the truth column is the key itself", hint="name the column of true cluster ids")
        ents = records.select(col(key).alias("_dq_k"), col(truth).alias("_dq_e"))
        left = ents.select(F.col("_dq_k").alias(B.ID1), F.col("_dq_e").alias("_dq_e1"))
        right = ents.select(F.col("_dq_k").alias(B.ID2), F.col("_dq_e").alias("_dq_e2"))
        marked = (levelled.select(B.ID1, B.ID2, *gammas).join(left, B.ID1).join(right, B.ID2)
                  .select(*gammas, (F.col("_dq_e1") == F.col("_dq_e2")).alias("_dq_t")))
        per = ents.where(F.col("_dq_e").isNotNull()).groupBy("_dq_e").agg(F.count(F.lit(1)).alias("n"))
        true_pairs = int(per.agg(F.coalesce(F.sum(F.col("n") * (F.col("n") - 1) / 2), F.lit(0))).collect()[0][0])
    else:
        lab = _label_pairs(result, truth, key_type)
        lab = lab.select(F.least(B.ID1, B.ID2).alias(B.ID1), F.greatest(B.ID1, B.ID2).alias(B.ID2)) \
            .where(F.col(B.ID1) != F.col(B.ID2)).distinct().withColumn("_dq_t", F.lit(True))
        marked = levelled.select(B.ID1, B.ID2, *gammas).join(lab, [B.ID1, B.ID2], "left") \
            .select(*gammas, F.coalesce(F.col("_dq_t"), F.lit(False)).alias("_dq_t"))
        true_pairs = int(lab.count())
    rows = (marked.groupBy(*gammas).agg(F.count(F.lit(1)).alias("n"),
                                        F.count(F.when(F.col("_dq_t"), 1)).alias("t")).collect())
    patterns = np.array([[int(r[g]) for g in gammas] for r in rows], dtype=np.int64).reshape(-1, len(gammas))
    # the weights as the result computes them (the same doubles the threshold is compared with)
    weights = dataclasses.replace(result, patterns=patterns, pattern_counts=np.ones(len(rows)))._pattern_weights()
    frame = pd.DataFrame({"weight": weights,
                          "pairs": [int(r["n"]) for r in rows], "true": [int(r["t"]) for r in rows]},
                         columns=["weight", "pairs", "true"])
    per_weight = frame.groupby("weight", as_index=False)[["pairs", "true"]].sum().sort_values("weight")
    return PairAccuracy(per_weight["weight"].to_numpy(float), per_weight["pairs"].to_numpy(np.int64),
                        per_weight["true"].to_numpy(np.int64), true_pairs)


def _label_pairs(result: DedupResult, truth: Any, key_type: T.DataType) -> DataFrame:
    """The true pairs as a DataFrame ``(_dq_id1, _dq_id2)`` of the key's type."""
    if hasattr(truth, "columns") and hasattr(truth, "select"):
        if len(truth.columns) < 2:
            raise ParameterError("true pairs need two key columns")
        return truth.select(col(truth.columns[0]).cast(key_type).alias(B.ID1),
                            col(truth.columns[1]).cast(key_type).alias(B.ID2))
    try:
        pairs = [tuple(p) for p in truth]
    except TypeError:
        raise ParameterError(f"truth is a column name, a DataFrame of two key columns or a list of key pairs, "
                             f"not {type(truth).__name__}") from None
    if any(len(p) != 2 for p in pairs):
        raise ParameterError("true pairs are (key_1, key_2) tuples")
    spark = result.records.sparkSession
    schema = T.StructType([T.StructField(B.ID1, key_type), T.StructField(B.ID2, key_type)])
    return spark.createDataFrame(pairs, schema)
