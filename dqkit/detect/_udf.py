"""Execution of UDF rules (BigDansing jobs, ``dqkit.rules.Job``) on Spark DataFrames.

Logical to physical (§3.2, §4.2): labels are data flows; Scope runs as ``mapInPandas``; Block adds a
blocking key; an Iterate over one blocked flow runs per block (``groupBy().applyInPandas``), over two
blocked flows as a CoBlock (``cogroup``); a Detect with no Iterate gets UCrossProduct: each unordered
pair of units once, inside each block, or, with no Block, over hash partitions paired i <= j (an
equi-join on the partition pair, never a cartesian product). Every callable sees pandas frames on
executors, never single rows on the driver. Inside blocks, the pairs of all blocks of a partition are
generated at once (numpy) and Detect is called on batches of up to ``PAIR_BATCH`` pairs, so small
blocks do not cost one Python call each; a count returns one number per partition, no pair rows.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.detect._plan import _Plan, pair_table
from dqkit.errors import RuleError
from dqkit.rules import UDFRule
from dqkit.io.sources import read_table
from dqkit.runtime.sparkutil import apply_in_pandas, cogroup_in_pandas, col, map_in_pandas
from dqkit.primitives.violations import FIX_CELL_FIELDS, fix_schema, tuple_ids

BLOCK = "_dq_block"


def _pair_frame(pdf, i: np.ndarray, j: np.ndarray, cols: list[str]):
    import pandas as pd

    data = {}
    for c in cols:
        v = pdf[c].to_numpy()
        data[f"{c}_1"] = v[i]
        data[f"{c}_2"] = v[j]
    return pd.DataFrame(data)


PAIR_BATCH = 100_000  # candidate pairs per Detect call (bounds the memory of one call)


def _block_pairs(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """UCrossProduct inside every block of rows sorted by (block, tid): the index pairs (i, j), i < j,
    of the same block, each unordered pair once, for all blocks at once (vectorised, no loop)."""
    n = len(block)
    if n < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    idx = np.arange(n, dtype=np.int64)
    last = np.ones(n, dtype=bool)
    last[:-1] = block[1:] != block[:-1]
    block_end = np.minimum.accumulate(np.where(last, idx, n - 1)[::-1])[::-1]
    partners = block_end - idx  # rows after i in its block
    i = np.repeat(idx, partners)
    first = np.cumsum(partners) - partners
    j = i + 1 + (np.arange(len(i), dtype=np.int64) - np.repeat(first, partners))
    return i, j


def _detect_pairs(pdf, i: np.ndarray, j: np.ndarray, cols: list[str], fn, count_only: bool, batch: int):
    """Detect over the candidate pairs (i, j) of ``pdf``, in calls of at most ``batch`` pairs.

    Yields the violating pair frames, or (``count_only``) one total count."""
    total = 0
    for s in range(0, len(i), batch):
        c = _pair_frame(pdf, i[s:s + batch], j[s:s + batch], cols)
        m = _mask(fn(c), len(c))
        if count_only:
            total += int(np.count_nonzero(m))
        elif m.any():
            yield c[m]
    if count_only:
        yield total


def _blocks_fn(fn, cols: list[str], count_only: bool, batch: int):
    """``mapInPandas`` over a partition holding whole blocks, sorted by (block, tid): one vectorised pass
    over all its blocks (pairs of a block that spans several Arrow batches are kept together)."""
    def whole_blocks(it):
        """The partition's rows in chunks that each hold only whole blocks."""
        import pandas as pd

        carry = None
        for p in it:
            if carry is not None and len(carry):
                p = pd.concat([carry, p], ignore_index=True)
            p = p.reset_index(drop=True)
            if not len(p):
                continue
            block = p[BLOCK].to_numpy()
            # the partition's last block may go on in the next batch: carry it over
            tail = int(np.flatnonzero(block != block[-1])[-1]) + 1 if (block != block[-1]).any() else 0
            done, carry = p.iloc[:tail].reset_index(drop=True), p.iloc[tail:]
            if len(done):
                yield done
        if carry is not None and len(carry):
            yield carry.reset_index(drop=True)

    def run(it):
        import pandas as pd

        total = 0
        for chunk in whole_blocks(it):
            i, j = _block_pairs(chunk[BLOCK].to_numpy())
            for out in _detect_pairs(chunk, i, j, cols, fn, count_only, batch):
                if count_only:
                    total += out
                else:
                    yield out
        if count_only:
            yield pd.DataFrame({"n": [total]})
    return run


def _block_fn(fn):
    def run(p):
        return fn([p.drop(columns=[BLOCK], errors="ignore")])
    return run


def _coblock_fn(fn):
    def run(p1, p2):
        return fn([p1.drop(columns=[BLOCK], errors="ignore"), p2.drop(columns=[BLOCK], errors="ignore")])
    return run


def _mask(result: Any, n: int) -> np.ndarray:
    m = np.asarray(result, dtype=bool)
    if m.shape != (n,):
        raise RuleError(f"Detect returned {m.shape} values for {n} candidates; return one boolean per candidate")
    return m


def udf_plan(rule: UDFRule, spark: SparkSession, mode: str, nb_parts: int = 8):
    """Build the physical plan of a UDF rule (lazy), returning a detection ``_Plan``."""
    flows: dict[str, DataFrame] = {}
    blocked: dict[str, bool] = {}
    logical: list[str] = []
    physical: list[str] = []
    detect_op = [op for op in rule.operators if op.kind == "detect"]
    if len(detect_op) != 1:
        raise RuleError(f"job {rule.name!r}: dqkit runs one Detect per job; split it into several jobs")
    detect_op = detect_op[0]
    genfix = next((op for op in rule.operators if op.kind == "genfix"), None)
    for op in rule.operators:
        if op.kind == "input":
            df = read_table(op.fn, spark)
            key = op.options.get("key")
            if key is None and "tid" in df.columns:
                key = "tid"
            base = df.select(tuple_ids(df, key).cast("string").alias("tid"),
                             *[col(c) for c in df.columns if c != "tid"])
            for lab in op.options["labels"]:
                flows[lab], blocked[lab] = base, False
            logical.append(f"Input -> {', '.join(op.options['labels'])}")
        elif op.kind == "scope":
            lab = op.inputs[0]
            df = flows[lab]
            if isinstance(op.fn, (list, tuple)):
                flows[lab] = df.select("tid", *[col(c) for c in op.fn if c != "tid"])
                physical.append(f"PScope[{lab}]: projection")
            else:
                fn = op.fn
                schema = op.options.get("schema") or df.schema
                flows[lab] = map_in_pandas(df, lambda it, fn=fn: (fn(p) for p in it), schema)
                physical.append(f"PScope[{lab}]: mapInPandas")
            logical.append(f"{op.name}[{lab}]")
        elif op.kind == "block":
            lab = op.inputs[0]
            df = flows[lab]
            if isinstance(op.fn, str) or isinstance(op.fn, (list, tuple)):
                cols = [op.fn] if isinstance(op.fn, str) else list(op.fn)
                missing = [c for c in cols if c not in df.columns]
                if missing:
                    raise RuleError(f"job {rule.name!r}: Block on unknown column {missing[0]!r} of flow {lab!r}",
                                    hint=f"columns: {', '.join(df.columns)}")
                key = col(cols[0]).cast("string") if len(cols) == 1 else F.to_json(F.struct(*[col(c) for c in cols]))
                flows[lab] = df.withColumn(BLOCK, key)
            else:
                fn = op.fn

                def add_key(it, fn=fn):
                    for p in it:
                        p = p.copy()
                        p[BLOCK] = [None if k is None else str(k) for k in fn(p)]
                        yield p
                flows[lab] = map_in_pandas(df, add_key, T.StructType(
                    [f for f in df.schema.fields if f.name != BLOCK] + [T.StructField(BLOCK, T.StringType())]))
            flows[lab] = flows[lab].where(F.col(BLOCK).isNotNull())
            blocked[lab] = True
            logical.append(f"{op.name}[{lab}]")
            physical.append(f"PBlock[{lab}]: hash grouping")
        elif op.kind == "iterate":
            ins = list(op.inputs)
            fn = op.fn
            schema = op.options["schema"]
            if len(ins) == 2 and all(blocked[x] for x in ins):
                out = cogroup_in_pandas(flows[ins[0]], flows[ins[1]], BLOCK, _coblock_fn(fn), schema)
                physical.append(f"CoBlock({', '.join(ins)}) -> PIterate -> {op.output}")
            elif len(ins) == 1 and blocked[ins[0]]:
                out = apply_in_pandas(flows[ins[0]], BLOCK, _block_fn(fn), schema)
                physical.append(f"PBlock({ins[0]}) -> PIterate -> {op.output}")
            elif len(ins) == 1:
                out = apply_in_pandas(flows[ins[0]].withColumn(BLOCK, F.lit("")), BLOCK, _block_fn(fn), schema)
                physical.append(f"PIterate({ins[0]}, one group) -> {op.output}")
            else:
                raise RuleError(f"job {rule.name!r}: Iterate over {len(ins)} flows needs each of them blocked "
                                f"(CoBlock) and at most two flows")
            if "tid" not in out.columns:
                raise RuleError(f"job {rule.name!r}: the schema of Iterate {op.output!r} must have a 'tid' column")
            flows[op.output], blocked[op.output] = out, False
            logical.append(f"{op.name}[{', '.join(ins)} -> {op.output}]")
    # Detect (+ default Iterate)
    lab = detect_op.inputs[0]
    df = flows[lab]
    fn = detect_op.fn
    cols = [c for c in df.columns if c != BLOCK]
    fields = {f.name: f for f in df.schema.fields}
    if detect_op.options["input"] == "units":
        def det_units(it, fn=fn):
            for p in it:
                yield p[_mask(fn(p), len(p))]
        cand = map_in_pandas(df, det_units, df.schema).withColumnRenamed("tid", "tid_1") \
            .withColumn("tid_2", F.lit(None).cast("string"))
        physical.append(f"PDetect[{lab}]: mapInPandas over units")
        operator = "Scope+Detect"
    else:
        pair_schema = T.StructType([T.StructField(f"{c}_{k}", fields[c].dataType) for c in cols for k in (1, 2)])
        batch = int(PAIR_BATCH)

        if blocked[lab]:
            # every block in one partition (hash on the block key), rows sorted by (block, tid); one
            # mapInPandas pass per partition generates the pairs of all its blocks at once
            grouped = df.repartition(BLOCK).sortWithinPartitions(BLOCK, "tid")
            cand = map_in_pandas(grouped, _blocks_fn(fn, cols, False, batch), pair_schema)
            counter = map_in_pandas(grouped, _blocks_fn(fn, cols, True, batch), "n long")
            operator = "Block+UCrossProduct"
            physical.append(f"UCrossProduct inside blocks of {lab} -> PDetect (hash partitions on the block key, "
                            f"sorted by block and tid; mapInPandas over all blocks of a partition, "
                            f"at most {batch} pairs per Detect call)")
        else:
            operator = "UCrossProduct"
            b = max(1, nb_parts)
            part = df.withColumn("_dq_h", F.pmod(F.xxhash64("tid"), F.lit(b)).cast("int"))
            pt_rows = [(i * b + j, i, j) for i in range(b) for j in range(i, b)]
            pt = pair_table(spark, pt_rows)
            left = part.join(F.broadcast(pt), F.col("_dq_h") == F.col("_dq_i")).withColumn("_dq_side", F.lit(0))
            right = part.join(F.broadcast(pt), (F.col("_dq_h") == F.col("_dq_j")) & (F.col("_dq_i") != F.col("_dq_j"))) \
                .withColumn("_dq_side", F.lit(1))
            # A fixed number of partitions: Spark's adaptive execution would otherwise coalesce these
            # few small rows into one task, although each pair group is heavy work for Detect.
            both = left.unionByName(right).select("_dq_pair", "_dq_side", *[col(c) for c in cols]) \
                .repartition(len(pt_rows), "_dq_pair")

            def all_pairs(p):
                import pandas as pd
                lo = p[p["_dq_side"] == 0].drop(columns=["_dq_pair", "_dq_side"])
                hi = p[p["_dq_side"] == 1].drop(columns=["_dq_pair", "_dq_side"])
                if len(hi) == 0:
                    both_ = lo.sort_values("tid", kind="stable").reset_index(drop=True)
                    i2, j2 = np.triu_indices(len(both_), k=1)
                else:
                    i, j = np.meshgrid(np.arange(len(lo)), np.arange(len(hi)), indexing="ij")
                    both_ = pd.concat([lo, hi], ignore_index=True)
                    i, j = i.ravel(), j.ravel() + len(lo)
                    t = both_["tid"].to_numpy()
                    swap = t[i] > t[j]
                    i2, j2 = np.where(swap, j, i), np.where(swap, i, j)
                return both_, i2, j2

            def det_all(p):
                import pandas as pd
                both_, i2, j2 = all_pairs(p)
                out = list(_detect_pairs(both_, i2, j2, cols, fn, False, batch))
                return pd.concat(out, ignore_index=True) if out else _pair_frame(both_, i2[:0], j2[:0], cols)

            def count_all(p):
                import pandas as pd
                both_, i2, j2 = all_pairs(p)
                return pd.DataFrame({"n": list(_detect_pairs(both_, i2, j2, cols, fn, True, batch))})
            cand = apply_in_pandas(both, "_dq_pair", det_all, pair_schema)
            counter = apply_in_pandas(both, "_dq_pair", count_all, "n long")
            physical.append(f"UCrossProduct over {b} hash partitions paired i <= j "
                            f"(equi-join on the pair id, no cartesian product) -> PDetect "
                            f"(at most {batch} pairs per Detect call)")
    viol = cand.select(F.lit(rule.name).alias("rule"), F.col("tid_1").alias("t1"), F.col("tid_2").alias("t2"))
    logical.append(f"{detect_op.name}[{lab}]")
    fixes = None
    if genfix is not None:
        gfn = genfix.fn
        out_schema = fix_schema()

        def gen(it, gfn=gfn, rule_name=rule.name):
            import pandas as pd
            for p in it:
                f = gfn(p)
                f = pd.DataFrame(f) if not isinstance(f, pd.DataFrame) else f.copy()
                if len(f) == len(p) and "t1" not in f.columns:
                    f["t1"] = p["tid_1"].to_numpy()
                    f["t2"] = p["tid_2"].to_numpy()
                f = f.reset_index(drop=True)
                for c in ("t1", "t2") + FIX_CELL_FIELDS:
                    if c not in f.columns:
                        f[c] = None
                f = f.astype(object).where(f.notna(), None)
                for c in ("t1", "t2") + FIX_CELL_FIELDS:
                    f[c] = [None if v is None else str(v) for v in f[c]]
                f["rule"] = rule_name
                f["kind"] = "udf"
                rhs = [f"{t}[{a}]" if t is not None else (k if k is not None else "")
                       for t, a, k in zip(f["rhs_tid"], f["rhs_attr"], f["constant"])]
                f["fix"] = [f"{t}[{a}] {o} {r}" for t, a, o, r in zip(f["tid"], f["attr"], f["op"], rhs)]
                yield f[list(out_schema.names)]
        fixes = map_in_pandas(cand, gen, out_schema)
        logical.append(f"{genfix.name}[{lab}]")
        physical.append("PGenFix: mapInPandas over violations")

    def count():
        if detect_op.options["input"] == "units":
            return cand.count(), None
        # one count per partition (or partition pair) comes back; no violating pair is materialised
        return sum(int(r[0]) for r in counter.collect()), None

    return _Plan(rule, operator, " -> ".join(logical), "; ".join(physical), viol, count, {"_fixes": fixes})
