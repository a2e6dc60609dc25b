"""Seeded data-lake generator for R2D2 (spec §7.2): root tables and derived copies, with a lineage manifest.

Roots have an ``id``, a low-cardinality ``region`` (the partition column of partitioned roots), a
``day`` date and a mix of categorical, integer and decimal columns drawn from one shared pool of
names (so unrelated roots can still have contained *schemas*: hard negatives for the content
stages); some roots hold a nested struct ``product {sku, price}`` (flattened to ``product.sku``,
``product.price``) and some columns hold NULLs. Derived tables apply one transformation to a root or
to an earlier derived table, so chains form:

* ``where``: rows whose categorical value is one chosen by a Zipf law over the values' frequency
  ranks (exponent ``zipf_a``; the paper's fitted parameters are not published) -> contained;
* ``project``: some non-key columns dropped, then a Zipf ``where`` -> contained;
* ``add_rows``: rows appended, each column sampled from its empirical distribution -> the source is
  contained in the new table;
* ``add_column``: a linear combination of two numeric columns appended -> the source is contained;
* ``noise``: Gaussian noise on one numeric column of a share of the rows -> a hard negative;
* ``copy`` / ``shuffle``: an exact copy, or rows shuffled and columns permuted -> duplicates.

Tables are written as Parquet (single files, or folders partitioned by ``region``), CSV or JSON
Lines; nested tables only as Parquet or JSON. ``_lineage.json`` (ignored by ``dqkit.io.sources`` as an
``_``-prefixed file) records each table's parent, transformation, format, rows and bytes: the
"human" transformation knowledge of §5.1. Ground truth is NOT taken from it (containment also holds
transitively and by coincidence): use ``dqkit.lake.ground_truth``. Same seed, same lake.

    python data/lake.py --roots 6 --derived 30 --rows 2000 --out /tmp/lake
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MANIFEST = "_lineage.json"
_POOL_CAT = ["status", "channel", "segment", "color", "tier", "brand", "city", "device"]
_POOL_NUM = ["amount", "qty", "score", "weight", "price_usd", "rating", "age", "visits", "discount", "latency"]
_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
          "lima", "mike", "november", "oscar", "papa"]


@dataclass
class TableSpec:
    """One table of the lake as the manifest records it."""

    name: str
    format: str
    path: str
    parent: str | None
    transformation: str
    rows: int
    columns: list[str]
    bytes: int = 0
    partitioned: bool = False
    nested: bool = False
    params: dict[str, Any] = field(default_factory=dict)


def _root(rng: np.random.Generator, i: int, rows: int, nested: bool) -> pd.DataFrame:
    cats = list(rng.choice(_POOL_CAT, size=int(rng.integers(1, 4)), replace=False))
    nums = list(rng.choice(_POOL_NUM, size=int(rng.integers(2, 5)), replace=False))
    data: dict[str, Any] = {
        "id": np.arange(rows, dtype=np.int64) + 1000 * i,
        "region": rng.choice([f"r{k}" for k in range(4)], size=rows, p=[0.4, 0.3, 0.2, 0.1]),
        "day": pd.Series(pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 60, size=rows), unit="D")).dt.date,
    }
    for c in cats:
        k = int(rng.integers(3, 9))
        p = 1.0 / np.arange(1, k + 1) ** 1.2
        vals = np.array([f"{w}" for w in rng.choice(_WORDS, size=k, replace=False)], dtype=object)
        data[c] = vals[rng.choice(k, size=rows, p=p / p.sum())]
    for c in nums:
        if c in ("qty", "age", "visits"):
            data[c] = rng.integers(0, 100, size=rows).astype(np.int64)
        else:
            data[c] = np.round(rng.normal(50, 20, size=rows), 2)
    df = pd.DataFrame(data)
    # NULL-bearing rows: containment must survive them (null-safe comparisons)
    holes = rng.random(rows) < 0.05
    df.loc[holes, cats[0]] = None
    if nested:
        skus = rng.integers(100, 120, size=rows)
        prices = np.round(rng.uniform(1, 30, size=rows), 2)
        df["product"] = [{"sku": int(s), "price": float(p)} for s, p in zip(skus, prices)]
    return df


def _zipf_value(rng: np.random.Generator, s: pd.Series, a: float) -> Any:
    counts = s.dropna().value_counts(sort=True)
    if counts.empty:
        return None
    ranks = np.arange(1, len(counts) + 1, dtype=float)
    p = ranks ** -a
    return counts.index[int(rng.choice(len(counts), p=p / p.sum()))]


def _categoricals(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c in _POOL_CAT or c == "region"]


def _numerics(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c in _POOL_NUM or c.startswith("combo_")]


def _derive(rng: np.random.Generator, src: pd.DataFrame, op: str, a: float, j: int) -> tuple[pd.DataFrame, dict]:
    if op in ("where", "project"):
        out = src
        params: dict[str, Any] = {}
        if op == "project":
            optional = [c for c in src.columns if c not in ("id", "region")]
            drop = list(rng.choice(optional, size=int(rng.integers(1, max(2, len(optional) // 2 + 1))), replace=False))
            out = out.drop(columns=drop)
            params["dropped"] = sorted(drop)
        c = str(rng.choice(_categoricals(out)))
        v = _zipf_value(rng, out[c], a)
        params.update({"column": c, "value": v})
        return out[out[c] == v].reset_index(drop=True), params
    if op == "add_rows":
        k = max(1, len(src) // 10)
        new = {}
        for c in src.columns:
            new[c] = list(src[c].sample(n=k, replace=True, random_state=int(rng.integers(2**31))))
        extra = pd.DataFrame(new, columns=src.columns)
        extra["id"] = np.arange(k, dtype=np.int64) + 10_000_000 + 1000 * j
        return pd.concat([src, extra], ignore_index=True), {"rows_added": k}
    if op == "add_column":
        nums = _numerics(src)
        x, y = (nums + nums)[:2]
        a1, a2 = float(rng.integers(1, 4)), float(rng.integers(1, 4))
        out = src.copy()
        out[f"combo_{j}"] = np.round(a1 * src[x].astype(float) + a2 * src[y].astype(float), 2)
        return out, {"of": [x, y], "coefficients": [a1, a2]}
    if op == "noise":
        nums = [c for c in _numerics(src) if src[c].dtype.kind == "f"] or _numerics(src)
        c = str(rng.choice(nums))
        out = src.copy()
        hit = rng.random(len(out)) < 0.3
        if not hit.any() and len(out):
            hit[0] = True
        noise = np.round(rng.normal(0, 5, size=int(hit.sum())), 2)
        noise[noise == 0] = 0.01
        out[c] = out[c].astype(float)
        out.loc[hit, c] = np.round(out.loc[hit, c] + noise, 2)
        return out, {"column": c, "share": 0.3}
    if op == "copy":
        return src.copy(), {}
    if op == "shuffle":
        cols = list(src.columns)
        rng.shuffle(cols)
        return src.sample(frac=1.0, random_state=int(rng.integers(2**31)))[cols].reset_index(drop=True), {}
    raise ValueError(op)


def _write(df: pd.DataFrame, folder: Path, name: str, fmt: str, partitioned: bool) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if fmt == "parquet":
        table = pa.Table.from_pandas(df, preserve_index=False)
        if partitioned:
            path = folder / name
            pq.write_to_dataset(table, path.as_posix(), partition_cols=["region"],
                                basename_template="part-{i}.parquet")
            return path
        path = folder / f"{name}.parquet"
        pq.write_table(table, path.as_posix())
        return path
    if fmt == "csv":
        path = folder / f"{name}.csv"
        df.to_csv(path, index=False)
        return path
    path = folder / f"{name}.json"
    out = df.copy()
    if "day" in out:
        out["day"] = out["day"].astype(str)
    out.to_json(path, orient="records", lines=True, date_format="iso")
    return path


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


OPS = ("where", "project", "add_rows", "add_column", "noise", "copy", "shuffle")
_OP_P = (0.26, 0.16, 0.12, 0.12, 0.18, 0.08, 0.08)


def generate_lake(out: str | os.PathLike, roots: int = 4, derived: int = 12, rows: int = 300, seed: int = 0,
                  zipf_a: float = 1.5, nested_share: float = 0.25, partitioned_share: float = 0.4,
                  formats: tuple[float, float, float] = (0.7, 0.15, 0.15), overwrite: bool = False) -> Path:
    """Write a seeded lake of ``roots`` root and ``derived`` derived tables under ``out``; returns ``out``.

    ``rows`` is the size of each root; ``formats`` the shares of Parquet, CSV and JSON. The folder is
    written beside ``out`` and renamed into place (no half-written lake); an existing ``out`` is
    refused unless ``overwrite``.
    """
    rng = np.random.default_rng(seed)
    target = Path(out)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists")
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        frames: dict[str, pd.DataFrame] = {}
        specs: list[TableSpec] = []

        def emit(name: str, df: pd.DataFrame, parent: str | None, op: str, params: dict, nested: bool) -> None:
            fmt = str(rng.choice(["parquet", "csv", "json"], p=list(formats)))
            if nested and fmt == "csv":
                fmt = "parquet"
            part = fmt == "parquet" and rng.random() < partitioned_share and df["region"].notna().all() \
                if "region" in df else False
            path = _write(df, tmp, name, fmt, bool(part))
            frames[name] = df
            specs.append(TableSpec(name, fmt, path.name, parent, op, len(df), list(df.columns), _size(path),
                                   bool(part), nested, _jsonable(params)))

        for i in range(roots):
            nested = bool(rng.random() < nested_share)
            emit(f"root{i}", _root(rng, i, rows, nested), None, "root", {}, nested)
        for j in range(derived):
            names = list(frames)
            # prefer recent tables, so chains form (Dyn-Lin's line graphs)
            w = np.arange(1, len(names) + 1, dtype=float) ** 1.5
            src = names[int(rng.choice(len(names), p=w / w.sum()))]
            op = str(rng.choice(OPS, p=list(_OP_P)))
            if op in ("add_column", "noise") and not _numerics(frames[src]):
                op = "copy"  # a projection dropped every numeric column: nothing to combine or perturb
            df, params = _derive(rng, frames[src], op, zipf_a, j)
            if len(df) == 0:
                df, op, params = frames[src].copy(), "copy", {}
            nested = "product" in df.columns
            emit(f"t{j:03d}_{op}", df, src, op, params, nested)
        (tmp / MANIFEST).write_text(json.dumps({"seed": seed, "roots": roots, "derived": derived, "rows": rows,
                                                "zipf_a": zipf_a, "tables": [asdict(s) for s in specs]}, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def read_manifest(lake: str | os.PathLike) -> dict[str, Any]:
    """The lineage manifest of a generated lake."""
    return json.loads((Path(lake) / MANIFEST).read_text())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--roots", type=int, default=4)
    p.add_argument("--derived", type=int, default=12)
    p.add_argument("--rows", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--zipf-a", type=float, default=1.5)
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true")
    a = p.parse_args(argv)
    path = generate_lake(a.out, a.roots, a.derived, a.rows, a.seed, a.zipf_a, overwrite=a.overwrite)
    m = read_manifest(path)
    print(f"{path}: {len(m['tables'])} tables, {sum(t['bytes'] for t in m['tables']):,} bytes")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
