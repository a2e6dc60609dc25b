"""Repair accuracy against a ground truth (BigDansing §6.6, R38): precision, recall, F1 and |R,G|.

Three versions of one table, paired by a key: the **dirty** input D, the **repaired** table R and
the **clean** ground truth G. Over the scored cells ``(key, attribute)``, with NULL-safe equality:

* changes: cells where R != D (what the repair updated);
* correct changes: changes where R == G (exact matches, as the paper counts them);
* errors: cells where D != G (what the repair should have fixed);
* precision = correct / changes, recall = correct / errors, F1 their harmonic mean;
* |R,G| (``distance``): the Euclidean distance between R and G over the numeric attributes,
  ``sqrt(sum((r - g)^2))`` over the cells where both are non-NULL; ``mismatches``: the cells of the
  non-numeric attributes where R != G, plus the numeric cells where exactly one of R, G is NULL
  (they have no numeric distance); ``distance_per_error`` and ``mismatches_per_error``: each divided
  by the number of errors e (the paper's |R,G|/e). The counts are exact whatever the partitioning;
  ``distance`` is a floating-point sum, so it may differ in its last bits between partitionings.

Edge cases, defined rather than left to a division by zero:

* no change at all: precision is 1.0 (no update was wrong);
* no error at all: recall is 1.0 (nothing was missed);
* F1 is 0.0 when precision and recall are both 0;
* no error at all: ``distance_per_error`` and ``mismatches_per_error`` are ``None`` (undefined).

The three tables must have the same columns with the same types (nullability ignored; an all-NULL
column of NULL type matches any type), the key must be unique and non-NULL in each, and the three
must hold the same keys. Everything that can be checked from the schemas is checked before any Spark
job; the rest (uniqueness, NULL keys, missing keys) comes out of the same single aggregation that
computes the counts, so no row reaches the driver.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitError, ParameterError, SchemaMismatchError, UnknownColumnError, UnsupportedTypeError
from dqkit.runtime.sparkutil import cancellable, col

__all__ = ["RepairAccuracy", "repair_accuracy", "SIDES"]

#: The three versions, in the order the checks and messages name them.
SIDES = ("dirty", "repaired", "clean")
_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
_COUNTS = ("changes", "correct_changes", "errors", "mismatches")


@dataclass(frozen=True)
class RepairAccuracy:
    """Accuracy of a repair against the ground truth (see the module docstring for each definition).

    ``per_attribute`` maps each scored attribute to its ``changes``, ``correct_changes``, ``errors``
    and ``mismatches`` (R != G, NULL-safe, whatever the type).
    """

    key: str
    attributes: tuple[str, ...]
    numeric_attributes: tuple[str, ...]
    rows: int
    changes: int
    correct_changes: int
    errors: int
    precision: float
    recall: float
    f1: float
    distance: float
    mismatches: int
    distance_per_error: float | None
    mismatches_per_error: float | None
    per_attribute: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def cells(self) -> int:
        """Cells scored: rows times attributes."""
        return self.rows * len(self.attributes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, ``cells``, and the per-attribute counts."""
        return {"key": self.key, "attributes": list(self.attributes),
                "numeric_attributes": list(self.numeric_attributes), "rows": self.rows, "cells": self.cells,
                "changes": self.changes, "correct_changes": self.correct_changes, "errors": self.errors,
                "precision": self.precision, "recall": self.recall, "f1": self.f1,
                "distance": self.distance, "mismatches": self.mismatches,
                "distance_per_error": self.distance_per_error, "mismatches_per_error": self.mismatches_per_error,
                "per_attribute": {a: dict(v) for a, v in self.per_attribute.items()}}

    def summary(self) -> str:
        """One line: precision, recall, F1 and the counts they come from."""
        return (f"precision {self.precision:.3f} ({self.correct_changes}/{self.changes} changes correct), "
                f"recall {self.recall:.3f} ({self.correct_changes}/{self.errors} errors fixed), F1 {self.f1:.3f}")

    def sections(self, sample_rows: int = 10) -> list[Any]:
        """The blocks a person reads (``dqkit.contract.result``): the measures, then the counts per attribute."""
        import pandas as pd

        from dqkit.contract.result import Facts, Table

        per_error = "undefined (no errors)"
        facts = {"precision": f"{self.precision:.4f}", "recall": f"{self.recall:.4f}", "F1": f"{self.f1:.4f}",
                 "changes": self.changes, "correct changes": self.correct_changes, "errors": self.errors,
                 "rows": self.rows, "cells scored": self.cells,
                 "|R,G| (numeric, Euclidean)": f"{self.distance:.4g}",
                 "|R,G|/e": per_error if self.distance_per_error is None else f"{self.distance_per_error:.4g}",
                 "mismatching cells (non-numeric)": self.mismatches,
                 "mismatches/e": per_error if self.mismatches_per_error is None else f"{self.mismatches_per_error:.4g}"}
        frame = pd.DataFrame([{"attribute": a, **{k: v[k] for k in _COUNTS}} for a, v in self.per_attribute.items()],
                             columns=["attribute", *_COUNTS])
        return [Facts("Repair accuracy", facts, key="accuracy"),
                Table("Per attribute", frame, note="mismatches: cells where the repaired value differs from the "
                                                   "ground truth", key="accuracy")]

    def _repr_html_(self) -> str:
        from dqkit.contract import render
        from dqkit.contract.result import sections_html

        return render.HTML_STYLE + sections_html(self.sections())


def _ratio(num: int, den: int, empty: float) -> float:
    return empty if den == 0 else num / den


def _is_numeric(t: T.DataType) -> bool:
    return isinstance(t, _NUMERIC)


def _types(df: DataFrame) -> dict[str, T.DataType]:
    return {f.name: f.dataType for f in df.schema.fields}


def _comparable(t: T.DataType) -> bool:
    """Whether NULL-safe equality works on values of type ``t`` (maps, and anything holding one, do not)."""
    if isinstance(t, T.MapType):
        return False
    if isinstance(t, T.ArrayType):
        return _comparable(t.elementType)
    if isinstance(t, T.StructType):
        return all(_comparable(f.dataType) for f in t.fields)
    return True


def _strip_nullability(t: T.DataType) -> str:
    """A type's name with nullability (of fields and elements) left out, for schema comparison."""
    if isinstance(t, T.ArrayType):
        return f"array<{_strip_nullability(t.elementType)}>"
    if isinstance(t, T.MapType):
        return f"map<{_strip_nullability(t.keyType)},{_strip_nullability(t.valueType)}>"
    if isinstance(t, T.StructType):
        return "struct<" + ",".join(f"{f.name}:{_strip_nullability(f.dataType)}" for f in t.fields) + ">"
    return t.simpleString()


def _check_schemas(frames: Mapping[str, DataFrame], key: str,
                   attributes: Sequence[str] | None) -> tuple[list[str], dict[str, T.DataType]]:
    """The attributes to score and the common type of each column; raises before any Spark job."""
    types = {side: _types(df) for side, df in frames.items()}
    for side in SIDES:
        if key not in types[side]:
            raise UnknownColumnError(f"the key column {key!r} is not in the {side} table",
                                     hint=f"its columns: {', '.join(types[side]) or '(none)'}")
    names = {side: set(t) for side, t in types.items()}
    if len({frozenset(n) for n in names.values()}) > 1:
        every = set().union(*names.values())
        diffs = [f"{c} (missing from {', '.join(s for s in SIDES if c not in names[s])})"
                 for c in sorted(every) if any(c not in names[s] for s in SIDES)]
        raise SchemaMismatchError("the dirty, repaired and clean tables do not have the same columns: "
                                  + "; ".join(diffs),
                                  hint="score versions of one table: the repair keeps every column")
    common: dict[str, T.DataType] = {}
    bad = []
    for c in frames["dirty"].columns:
        known = {side: types[side][c] for side in SIDES if not isinstance(types[side][c], T.NullType)}
        kinds = {_strip_nullability(t) for t in known.values()}
        if len(kinds) > 1:
            bad.append(f"{c} (" + ", ".join(f"{s} {known[s].simpleString()}" for s in known) + ")")
        common[c] = next(iter(known.values()), T.NullType())
    if bad:
        raise SchemaMismatchError("the dirty, repaired and clean tables give columns different types: "
                                  + "; ".join(bad), hint="cast the columns to one type before scoring")
    if attributes is None:
        chosen = [c for c in frames["dirty"].columns if c != key]
    else:
        chosen = list(dict.fromkeys(attributes))
        unknown = [a for a in chosen if a not in common]
        if unknown:
            raise UnknownColumnError(f"unknown attribute(s) to score: {', '.join(map(repr, unknown))}",
                                     hint=f"columns: {', '.join(c for c in common if c != key)}")
        if key in chosen:
            raise ParameterError(f"the key {key!r} cannot be scored", hint="it pairs the rows; leave it out")
    if not chosen:
        raise ParameterError("there is no attribute to score", hint="the tables hold only the key column")
    for c in [key, *chosen]:
        if not _comparable(common[c]):
            raise UnsupportedTypeError(f"column {c!r} has type {common[c].simpleString()}, which cannot be "
                                       "compared for equality", hint="leave it out of the attributes")
    return chosen, common


def _nonzero(v: Any) -> int:
    return int(v or 0)


def repair_accuracy(dirty: Any, repaired: Any, clean: Any, key: str, attributes: Sequence[str] | None = None, *,
                    spark: SparkSession | None = None) -> RepairAccuracy:
    """Score ``repaired`` against the ground truth ``clean``, given the ``dirty`` input it was repaired from.

    Each table is any ``dqkit.io.sources.read_table`` source (a DataFrame, a path, ``catalog:db.t``);
    ``repaired`` may also be a ``RepairResult`` (its ``repaired`` table is used). ``key`` pairs the
    rows; ``attributes`` are the columns scored (default: every column but the key). Computed with
    one Spark aggregation; only its single result row reaches the driver.
    """
    from dqkit.runtime.session import get_spark
    from dqkit.io.sources import read_table

    if not isinstance(key, str) or not key:
        raise ParameterError("a key column is needed to pair the rows of the three tables",
                             hint="pass key='tid' (a column unique in each table)")
    if isinstance(attributes, str):
        attributes = [attributes]
    if hasattr(repaired, "repaired") and hasattr(repaired, "changes"):
        repaired = repaired.repaired
    spark = spark or get_spark()
    frames = {side: read_table(src, spark) for side, src in zip(SIDES, (dirty, repaired, clean))}
    attrs, common = _check_schemas(frames, key, attributes)
    numeric = [a for a in attrs if _is_numeric(common[a])]

    # one shuffle: the three versions tagged and grouped by key, one struct of the attributes per side
    side_col, vals = "__dq_side", "__dq_vals"
    parts = []
    for i, side in enumerate(SIDES):
        df = frames[side]
        parts.append(df.select(col(key).cast(common[key]).alias("k"), F.lit(i).alias(side_col),
                               F.struct(*[col(a).cast(common[a]).alias(f"a{j}") for j, a in enumerate(attrs)])
                               .alias(vals)))
    union = parts[0].unionByName(parts[1]).unionByName(parts[2])
    per_key = union.groupBy("k").agg(
        *[F.count(F.when(F.col(side_col) == i, 1)).alias(f"n{i}") for i in range(3)],
        *[F.first(F.when(F.col(side_col) == i, F.col(vals)), ignorenulls=True).alias(f"v{i}") for i in range(3)])

    complete = (F.col("n0") == 1) & (F.col("n1") == 1) & (F.col("n2") == 1) & F.col("k").isNotNull()

    def count_if(cond: Column) -> Column:
        return F.sum(F.when(complete & cond, 1).otherwise(0))

    aggs: list[Column] = [count_if(F.lit(True)).alias("rows"),
                          F.sum(F.when(F.col("k").isNull(), F.col("n0") + F.col("n1") + F.col("n2"))).alias("null_keys")]
    for i, side in enumerate(SIDES):
        n = F.col(f"n{i}")
        key_ok = F.col("k").isNotNull()
        aggs += [F.sum(F.when(key_ok & (n > 1), 1).otherwise(0)).alias(f"dup{i}"),
                 F.min(F.when(key_ok & (n > 1), F.col("k").cast("string"))).alias(f"dup_example{i}"),
                 F.sum(F.when(key_ok & (n == 0), 1).otherwise(0)).alias(f"miss{i}"),
                 F.min(F.when(key_ok & (n == 0), F.col("k").cast("string"))).alias(f"miss_example{i}")]
    for j, a in enumerate(attrs):
        d, r, g = (F.col(f"v{i}")[f"a{j}"] for i in range(3))
        changed = ~r.eqNullSafe(d)
        aggs += [count_if(changed).alias(f"changes{j}"),
                 count_if(changed & r.eqNullSafe(g)).alias(f"correct_changes{j}"),
                 count_if(~d.eqNullSafe(g)).alias(f"errors{j}"),
                 count_if(~r.eqNullSafe(g)).alias(f"mismatches{j}")]
        if a in numeric:
            both = r.isNotNull() & g.isNotNull()
            diff = r.cast("double") - g.cast("double")
            aggs += [F.sum(F.when(complete & both, diff * diff).otherwise(F.lit(0.0))).alias(f"sq{j}"),
                     count_if(r.isNull() != g.isNull()).alias(f"nullmis{j}")]
    with cancellable("the accuracy computation"):
        row = per_key.agg(*aggs).collect()[0]

    if _nonzero(row["null_keys"]):
        raise ParameterError(f"the key {key!r} is NULL in {_nonzero(row['null_keys'])} row(s)",
                             hint="every row needs a key to be paired with its other versions")
    for i, side in enumerate(SIDES):
        if _nonzero(row[f"dup{i}"]):
            raise ParameterError(f"the key {key!r} is not unique in the {side} table: {_nonzero(row[f'dup{i}'])} "
                                 f"value(s) repeat, for example {row[f'dup_example{i}']!r}",
                                 hint="pass a column (or fix the table) so that each row has its own key")
    missing = [f"{_nonzero(row[f'miss{i}'])} key(s) of the others missing from the {side} table "
               f"(for example {row[f'miss_example{i}']!r})" for i, side in enumerate(SIDES) if _nonzero(row[f"miss{i}"])]
    if missing:
        raise DqkitError("the dirty, repaired and clean tables do not hold the same rows: " + "; ".join(missing),
                         hint="score versions of one table: the repair keeps every row and its key")

    per: dict[str, dict[str, int]] = {a: {k: _nonzero(row[f"{k}{j}"]) for k in _COUNTS} for j, a in enumerate(attrs)}
    changes = sum(p["changes"] for p in per.values())
    correct = sum(p["correct_changes"] for p in per.values())
    errors = sum(p["errors"] for p in per.values())
    distance = math.sqrt(sum(float(row[f"sq{j}"] or 0.0) for j, a in enumerate(attrs) if a in numeric))
    mismatches = (sum(per[a]["mismatches"] for a in attrs if a not in numeric)
                  + sum(_nonzero(row[f"nullmis{j}"]) for j, a in enumerate(attrs) if a in numeric))
    precision = _ratio(correct, changes, 1.0)
    recall = _ratio(correct, errors, 1.0)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return RepairAccuracy(key=key, attributes=tuple(attrs), numeric_attributes=tuple(numeric),
                          rows=_nonzero(row["rows"]), changes=changes, correct_changes=correct, errors=errors,
                          precision=precision, recall=recall, f1=f1, distance=distance, mismatches=mismatches,
                          distance_per_error=None if errors == 0 else distance / errors,
                          mismatches_per_error=None if errors == 0 else mismatches / errors,
                          per_attribute=per)
