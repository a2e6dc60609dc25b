"""What a saved dedup run is, read without Spark (not even a pyspark import): ``summary.json`` naming
the key and a ``clusters/`` table. ``dqkit dedup-diff`` checks its two folders with ``check_runs``
before anything else (``DedupDiffParams.validate``); ``dqkit.dedup.diff`` reads them."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from dqkit.errors import ParameterError, SourceError

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
