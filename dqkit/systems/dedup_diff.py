"""The cluster diff of two saved dedup runs, declared once (``dqkit.dedup.diff``): clusters created,
removed, merged, split, regrouped, changed and unchanged, matched by record sets. Pandas over the
saved files: the command starts no JVM."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dqkit.errors import ParameterError, SourceError
from dqkit.systems.base import Params, System, param

CLUSTER = "cluster_id"
HINT = "give the folder `dqkit dedup ... --out FOLDER` wrote (it holds summary.json and clusters/)"


@dataclass(frozen=True)
class RunInfo:
    """A saved dedup run, as read from its folder without Spark."""

    folder: Path
    key: str
    link: bool
    clusters: Path
    format: str  # parquet or csv


def inspect_run(path: str | os.PathLike, what: str) -> RunInfo:
    """``path`` is a folder ``dqkit dedup --out`` wrote: ``summary.json`` naming the key and a
    ``clusters/`` table (Parquet or CSV). Refuses (``SourceError`` / ``ParameterError``) otherwise; no Spark."""
    text = os.fspath(path)
    if text.startswith("catalog:"):
        raise ParameterError(f"{what}: a catalog run ({text}) cannot be diffed", hint="save the runs to folders with --out")
    folder = Path(text).expanduser()
    if not text.strip() or not folder.exists():
        raise SourceError(f"{what}: no such folder: {text}", hint=HINT)
    if not folder.is_dir():
        raise ParameterError(f"{what}: {text} is a file, not a saved dedup run", hint=HINT)
    summary_file, clusters = folder / "summary.json", folder / "clusters"
    if not summary_file.is_file() or not clusters.is_dir():
        missing = [n for n, ok in (("summary.json", summary_file.is_file()), ("clusters/", clusters.is_dir())) if not ok]
        raise ParameterError(f"{what}: {text} is not a saved dedup run (no {' or '.join(missing)})", hint=HINT)
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ParameterError(f"{what}: {summary_file} cannot be read as JSON ({exc})", hint=HINT) from None
    if not isinstance(summary, dict) or not isinstance(summary.get("key"), str) or "candidate_pairs" not in summary:
        raise ParameterError(f"{what}: {summary_file} is not a dedup summary (no key or candidate_pairs)", hint=HINT)
    files = part_files(clusters)
    if not files:
        raise ParameterError(f"{what}: {clusters} holds no data files", hint=HINT)
    fmt = "csv" if all(f.name.lower().endswith((".csv", ".csv.gz")) for f in files) else "parquet"
    return RunInfo(folder, summary["key"], "link" in summary, clusters, fmt)


def check_runs(run_a: str | os.PathLike, run_b: str | os.PathLike) -> tuple[RunInfo, RunInfo]:
    """Both folders are saved dedup runs of the same kind (dedup or link) with the same key; no Spark."""
    a, b = inspect_run(run_a, "RUN_A"), inspect_run(run_b, "RUN_B")
    if a.folder.resolve() == b.folder.resolve():
        raise ParameterError("RUN_A and RUN_B are the same folder", hint="give two different saved runs")
    if a.key != b.key:
        raise ParameterError(f"the runs key their records differently: RUN_A by {a.key!r}, RUN_B by {b.key!r}",
                             hint="diff two runs of the same table with the same --key")
    if a.link != b.link:
        raise ParameterError("one run links two tables (--link) and the other deduplicates one",
                             hint="diff two dedup runs, or two link runs")
    return a, b


def part_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
                  and not p.name.endswith(".crc"))




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
    tabs=(("Summary", ("Verdict", "Facts", "Notes")), ("Changes", ("Table",))),
    exit_codes={0: "no cluster changed", 1: "clusters changed", 2: "error"},
    output="changes.csv (one row per change, with its clusters and records), summary.json and report.html",
    example={"run_a": "data/dedup/runs/night1", "run_b": "data/dedup/runs/night2"},
    session="environment",
)
