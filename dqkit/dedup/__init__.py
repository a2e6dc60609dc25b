"""Entity deduplication (BigDansing's dedup rule, R39, made probabilistic): blocking, comparisons,
unsupervised Fellegi–Sunter match scores, clusters and golden records.

``dedup(table, key, config)`` runs, all on Spark DataFrames:

1. **Block** (``_blocking``): the candidate pairs of every blocking rule, each unordered pair once,
   with block-size statistics first and oversized blocks purged (or refused) with a warning;
2. **Compare** (``_compare``): one level per comparison and pair (exact / close / else / NULL), with
   Spark built-ins and ``dqkit.primitives.similarity`` (rapidfuzz) in pandas UDFs that return the level; the levels are kept once (``dqkit.runtime.sparkutil.checkpoint_on_read``);
3. **Estimate** (``_em``): u from all pairs of a seeded sample of records, m by EM per blocking
   rule with u fixed, λ by EM, then u again without the sample's likely matches and m, λ refitted,
   all on aggregated level-pattern counts (the driver never holds pairs);
   known matching pairs (``labels``) set m instead;
4. **Score**: match weight and probability of each pair, as Spark expressions of the levels;
5. **Cluster**: connected components of the pairs with probability >= threshold (``_cluster`` calls
   ``dqkit.primitives.components``, shared with repair: up to 4M matching pairs labelled on the driver from one
   Arrow fetch, more by distributed rounds); the cluster id is the smallest record key; a golden record per cluster.

A run of one table whose candidate pairs fit (``DQKIT_DEDUP_DRIVER_PAIRS``, default 10M) makes steps 1-3's
pairs, levels, pattern counts and u sample on the driver instead (``_driver``: one Arrow fetch, the same
numbers), and its clusters from the matching pairs there; the summary notes "scored on the driver".

``link(left, right, key, config)`` (or ``dedup(..., other=right)``) links two tables instead: the
same steps with pairs only across the tables (record linkage; see ``link`` for what clusters mean).
``blocking_stats(table, key, config)`` gives step 1's statistics and the pairs each rule adds, before
anything is compared. The result is a ``DedupResult`` (``dqkit.contract.result.Result`` contract).
"""
from __future__ import annotations

from dqkit.runtime.lazy import lazy_face

__all__ = ['dedup', 'link', 'blocking_stats', 'DedupResult', 'DedupConfig', 'BlockingRule',
           'Comparison', 'ConfigError', 'FSModel', 'load_config', 'parse_config', 'example_config',
           'read_records']

__getattr__, __dir__ = lazy_face(__name__, __all__)
