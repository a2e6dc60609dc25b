"""The cluster diff of two saved dedup runs, declared once (``dqkit.dedup.diff``): clusters created,
removed, merged, split, regrouped, changed and unchanged, matched by record sets. Pandas over the
saved files: the command starts no JVM."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.dedup.manifest import check_runs
from dqkit.systems.base import Params, System, param


@dataclass(frozen=True)
class DedupDiffParams(Params):
    """What ``dqkit dedup-diff``, ``dqkit report dedup-diff`` and its widget take."""

    run_a: str = param(help="the earlier run: a folder `dqkit dedup --out` wrote (summary.json, clusters/)",
                       positional=True, input=True, metavar="RUN_A")
    run_b: str = param(help="the later run: a folder `dqkit dedup --out` wrote, with the same --key",
                       positional=True, input=True, metavar="RUN_B")
    sample_rows: int = param(10, help="changes shown per kind (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """Both folders are saved dedup runs (summary.json with the key, clusters/ with data files), of
        the same kind and key; no Spark."""
        check_runs(self.run_a, self.run_b)


def run(params: DedupDiffParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The diff of ``params`` (``dqkit.dedup.diff.dedup_diff``); ``spark`` is not used."""
    from dqkit.dedup.diff import dedup_diff

    return dedup_diff(params.run_a, params.run_b)


DEDUP_DIFF = System(
    name="dedup-diff",
    summary="compare the clusters of two saved dedup runs: created, removed, merged, split, unchanged",
    description="Compare the cluster assignments of two saved dedup runs (dqkit dedup --out). Clusters are "
                "matched by their record sets, not their ids: an A and a B cluster sharing a record belong to "
                "one change, classified as created, removed, merged (several A -> one B), split (one A -> "
                "several B), regrouped (records moved: several A and several B), changed (one A and one B "
                "differing only by records in one run) or unchanged.",
    params=DedupDiffParams,
    run=run,
    tabs=(("Summary", ("summary", "notes")), ("Changes", ("changes",))),
    exit_codes={0: "no cluster changed", 1: "clusters changed", 2: "error"},
    output="changes.csv (one row per change, with its clusters and records), summary.json and report.html",
    example={"run_a": "data/dedup/runs/night1", "run_b": "data/dedup/runs/night2"},
    session="environment",
)
