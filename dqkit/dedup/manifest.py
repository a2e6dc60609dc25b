"""What a saved dedup run is, read without Spark (not even a pyspark import): ``summary.json`` naming
the key and a ``clusters/`` table. ``dqkit dedup-diff`` checks its two folders with ``check_runs``
before anything else (``DedupDiffParams.validate``); ``dqkit.dedup.diff`` reads them."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


# ------------------------------------------------------------------ what `dedup --since` reuses
#: the file of a saved dedup run that ``dedup --since`` reads: the model, the config and the ids
SINCE_MANIFEST = "dedup_manifest.json"
SINCE_FORMAT = 1
#: the table of a saved run holding ``(key, _dq_fp_hi, _dq_fp_lo)`` over the matching columns
FINGERPRINTS = "fingerprints"
FULL_RUN = "run a full dedup (without --since, with --out) to start a new chain of nights"


def config_form(cfg: Any) -> dict[str, Any]:
    """What of a ``DedupConfig`` decides which pairs are compared and how: blocking rules, comparisons
    (column, method, thresholds, name, date format), column types and oversized-block handling. The
    threshold is compared on its own (``--threshold`` overrides the config's); the EM settings, the u
    sample and the seed do not matter to ``--since`` (the saved model is reused)."""
    return {"blocking": [list(r.on) for r in cfg.blocking],
            "comparisons": [{"column": c.column, "method": c.method, "thresholds": [float(t) for t in c.thresholds],
                             "name": c.name, "date_format": c.date_format} for c in cfg.comparisons],
            "types": {k: cfg.types[k] for k in sorted(cfg.types)},
            "max_block_size": int(cfg.max_block_size), "on_oversized": cfg.on_oversized}


def load_config_light(path: str | os.PathLike) -> Any:
    """The ``DedupConfig`` of a config file, parsed without importing pyspark: ``dqkit/dedup/config.py``
    imports none, but importing it as ``dqkit.dedup.config`` would run ``dqkit.dedup``'s ``__init__``
    (which does), so when the package is not loaded yet the module is loaded from its file."""
    import importlib.util
    import sys

    module = sys.modules.get("dqkit.dedup.config")
    if module is None and "dqkit.dedup" in sys.modules:
        import dqkit.dedup.config as module  # noqa: PLR0402 - already cheap: the package is loaded
    if module is None:
        spec = importlib.util.spec_from_file_location("dqkit.dedup.config", Path(__file__).parent / "dedup" / "config.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["dqkit.dedup.config"] = module
        spec.loader.exec_module(module)
    return module.load_config(path)


def _differences(saved: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    out = []
    if saved.get("blocking") != now["blocking"]:
        out.append("blocking rules " + " | ".join(", ".join(r) for r in saved.get("blocking") or [])
                   + " then, " + " | ".join(", ".join(r) for r in now["blocking"]) + " now")
    if saved.get("comparisons") != now["comparisons"]:
        def show(cs: Any) -> str:
            return ", ".join(f"{c['column']} ({c['method']}{' ' + str(c['thresholds']) if c['thresholds'] else ''})"
                             for c in cs or [])
        out.append(f"comparisons {show(saved.get('comparisons'))} then, {show(now['comparisons'])} now")
    for k in ("types", "max_block_size", "on_oversized"):
        if saved.get(k) != now[k]:
            out.append(f"{k} {saved.get(k)!r} then, {now[k]!r} now")
    return out


def read_since(path: Any) -> dict[str, Any]:
    """The ``dedup_manifest.json`` of the saved run ``path`` (``dqkit dedup --out``), refusing a folder
    that is no dedup run, a link run, a catalog, or a run saved before ``--since`` existed; no Spark."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if text is None or text.startswith("catalog:"):
        raise ParameterError(f"--since: {path!r} is not a folder; a catalog run cannot serve as --since",
                             hint="give the folder `dqkit dedup ... --out FOLDER` wrote the night before")
    run = inspect_run(text, "--since")
    if run.link:
        raise ParameterError(f"--since: {text} links two tables; --since continues a deduplication of one table",
                             hint=FULL_RUN)
    file = run.folder / SINCE_MANIFEST
    if not file.is_file():
        raise ParameterError(f"--since: {text} holds no {SINCE_MANIFEST}: it was saved by a dqkit without "
                             "incremental dedup (or by hand), so it lacks the model and the record "
                             "fingerprints", hint=FULL_RUN)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ParameterError(f"--since: {file} cannot be read as JSON ({exc})", hint=FULL_RUN) from None
    if not isinstance(data, dict) or data.get("dqkit") != "dedup":
        raise ParameterError(f"--since: {file} is not a dedup manifest", hint=FULL_RUN)
    if data.get("format") != SINCE_FORMAT:
        raise ParameterError(f"--since: {text} was written by another dqkit version (format {data.get('format')!r}, "
                             f"expected {SINCE_FORMAT})", hint=FULL_RUN)
    if not (run.folder / FINGERPRINTS).is_dir() or not (run.folder / "pairs").is_dir():
        missing = [n for n in (FINGERPRINTS, "pairs") if not (run.folder / n).is_dir()]
        raise ParameterError(f"--since: {text} lacks {' and '.join(f'{m}/' for m in missing)}", hint=FULL_RUN)
    data["_folder"] = str(run.folder)
    data["_format"] = run.format
    return data


def check_since(manifest: Mapping[str, Any], path: Any, *, key: str, config: Mapping[str, Any],
                threshold: float) -> None:
    """Refuse a saved run that cannot stand for the previous night of this dedup: another key, another
    config (blocking rules, comparisons, types, oversized-block handling) or another threshold; the
    message names the difference. No Spark."""
    if manifest.get("key") != key:
        raise ParameterError(f"--since: {path} keyed its records by {manifest.get('key')!r}, not {key!r}",
                             hint=f"give --key {manifest.get('key')}, or {FULL_RUN}")
    diff = _differences(manifest.get("config") or {}, config)
    if diff:
        raise ParameterError(f"--since: {path} was deduplicated with another config: {'; '.join(diff)}",
                             hint=f"give the config of that run, or {FULL_RUN}")
    saved = manifest.get("threshold")
    if not isinstance(saved, (int, float)) or float(saved) != float(threshold):
        raise ParameterError(f"--since: {path} linked pairs at threshold {saved!r}, not {threshold:g}",
                             hint=f"give --threshold {saved}, or {FULL_RUN}")
