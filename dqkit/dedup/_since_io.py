"""What a saved dedup run holds for the next night's ``dedup --since`` (written by ``--out``, read back
by ``dqkit.dedup.since``): the record fingerprints over the matching columns (``fingerprints/``) and
``dedup_manifest.json`` (the key and its type, the config's matching part, the threshold, the model
m/u/λ, the oversized blocks, the ids retired so far). The Spark-free checks of a saved run are
``dqkit.dedup.manifest``."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql import DataFrame

from dqkit.dedup import _blocking as B
from dqkit.dedup._em import FSModel
from dqkit.dedup.config import DedupConfig
from dqkit.dedup.manifest import FINGERPRINTS, SINCE_FORMAT, SINCE_MANIFEST, config_form
from dqkit.primitives.fingerprint import FP_HI, FP_LO, row_fingerprint
from dqkit.runtime.sparkutil import col

__all__ = ["fingerprint_columns", "fingerprints", "manifest", "write_manifest", "model_from", "schema_of", "FINGERPRINTS"]


def fingerprint_columns(records: DataFrame, cfg: DedupConfig) -> list[str]:
    """The columns that decide a record's pairs and levels: compared and blocking columns, sorted
    (a change elsewhere changes no pair, so it is no change for ``--since``)."""
    rules = B.parse_rules(records, cfg.blocking)
    return sorted({*cfg.columns(), *[c for r in rules for c in r.columns]})


def fingerprints(records: DataFrame, key: str, cfg: DedupConfig) -> DataFrame:
    """``key, _dq_fp_hi, _dq_fp_lo``: each record's 128-bit fingerprint over ``fingerprint_columns``."""
    hi, lo = row_fingerprint(records, fingerprint_columns(records, cfg))
    return records.select(col(key), hi.alias(FP_HI), lo.alias(FP_LO))


def schema_of(records: DataFrame, key: str, cfg: DedupConfig) -> dict[str, str]:
    """The types of the key and the fingerprinted columns (a type change is a change of every record)."""
    return {c: records.schema[c].dataType.simpleString() for c in [key, *fingerprint_columns(records, cfg)]}


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def manifest(*, key: str, key_type: str, cfg: DedupConfig, threshold: float, model: FSModel,
             oversized: Mapping[int, Iterable[str]], records: int, clusters: int, matching_pairs: int,
             save_format: str, all_pairs: bool, retired: Iterable[Any] = (), schema: Mapping[str, str] = ()
             ) -> dict[str, Any]:
    """The ``dedup_manifest.json`` of a saved run (floats as JSON keep every bit: the model read back
    scores exactly as it did)."""
    return {"dqkit": "dedup", "format": SINCE_FORMAT, "key": key, "key_type": key_type,
            "config": config_form(cfg), "threshold": float(threshold),
            "model": {"names": list(model.names), "m": [[float(x) for x in m] for m in model.m],
                      "u": [[float(x) for x in u] for u in model.u], "prior": float(model.prior)},
            "oversized": {str(i): sorted(k) for i, k in sorted(oversized.items()) if k},
            "schema": dict(schema), "records": int(records), "clusters": int(clusters),
            "matching_pairs": int(matching_pairs), "save_format": save_format, "all_pairs": bool(all_pairs),
            "retired_ids": [_plain(v) for v in retired]}


def write_manifest(folder: Path, data: Mapping[str, Any]) -> None:
    (folder / SINCE_MANIFEST).write_text(json.dumps(data, indent=1), encoding="utf-8")


def model_from(data: Mapping[str, Any]) -> FSModel:
    """The ``FSModel`` a manifest saved (bit for bit)."""
    m = data["model"]
    return FSModel(tuple(m["names"]), tuple(np.array(x, dtype=float) for x in m["m"]),
                   tuple(np.array(x, dtype=float) for x in m["u"]), float(m["prior"]))
