"""Diftong's ``calc_diff``: whether two values differ and by how much, per type, as Spark expressions."""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import UnsupportedTypeError

def check_calc_diff_type(table: str, column: str, dtype: T.DataType) -> None:
    """Raise ``UnsupportedTypeError`` for a type ``calc_diff`` cannot compare."""
    if isinstance(dtype, (T.MapType, T.CalendarIntervalType, T.NullType)) or dtype.typeName() == "variant":
        raise UnsupportedTypeError(
            f"column {table}.{column} has type {dtype.simpleString()}, which column validation cannot compare",
            hint=f"exclude it with --exclude {table}.{column} (row validation still covers it)")
    if isinstance(dtype, (T.ArrayType, T.StructType)) and _has_map(dtype):
        raise UnsupportedTypeError(
            f"column {table}.{column} ({dtype.simpleString()}) contains a map, which cannot be compared",
            hint=f"exclude it with --exclude {table}.{column}")


def _has_map(dtype: T.DataType) -> bool:
    if isinstance(dtype, T.MapType):
        return True
    if isinstance(dtype, T.ArrayType):
        return _has_map(dtype.elementType)
    if isinstance(dtype, T.StructType):
        return any(_has_map(f.dataType) for f in dtype.fields)
    return False


def _is_float(dtype: T.DataType) -> bool:
    return isinstance(dtype, (T.FloatType, T.DoubleType))


def changed(old: Column, new: Column, dtype: T.DataType, abs_tol: float = 0.0, rel_tol: float = 0.0) -> Column:
    """True when the two values differ (NULL-safe; floats within tolerance or both NaN are equal)."""
    if _is_float(dtype):
        both_nan = F.isnan(old) & F.isnan(new)
        close = F.abs(new - old) <= F.lit(abs_tol) + F.lit(rel_tol) * F.greatest(F.abs(old), F.abs(new))
        same = (old.isNull() & new.isNull()) | (old.isNotNull() & new.isNotNull() & (both_nan | close))
        return ~F.coalesce(same, F.lit(False))
    return ~old.eqNullSafe(new)


def calc_diff(old: Column, new: Column, dtype: T.DataType, abs_tol: float = 0.0, rel_tol: float = 0.0) -> Column:
    """The paper's ``calc_diff``: the magnitude of the change from ``old`` to ``new``.

    NULL when the values are equal, both NULL, or one side is NULL (see the module docstring).
    """
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType)):
        magnitude = F.abs(new.cast("long") - old.cast("long"))
    elif isinstance(dtype, T.LongType):
        magnitude = F.abs(new.cast("decimal(20,0)") - old.cast("decimal(20,0)"))
    elif isinstance(dtype, T.DecimalType):
        magnitude = F.abs(new - old)
    elif _is_float(dtype):
        magnitude = F.abs(new.cast("double") - old.cast("double"))
    elif isinstance(dtype, T.StringType):
        magnitude = F.levenshtein(old, new)
    elif isinstance(dtype, T.DateType):
        magnitude = F.abs(F.datediff(new, old))
    elif isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        micros = F.unix_micros(new.cast("timestamp")) - F.unix_micros(old.cast("timestamp"))
        magnitude = F.abs(micros) / F.lit(1_000_000.0)
    else:  # boolean, binary, array, struct: a change indicator
        magnitude = F.lit(1)
    both = old.isNotNull() & new.isNotNull()
    return F.when(both & changed(old, new, dtype, abs_tol, rel_tol), magnitude)


def _double(x: float) -> str:
    return f"{float(x)!r}D"  # a double literal (a bare 0.0 would be a decimal in Spark SQL)


def changed_sql(old: str, new: str, dtype: T.DataType, abs_tol: float = 0.0, rel_tol: float = 0.0,
                any_number: bool = False) -> str:
    """``changed`` as Spark SQL text over two expressions (``old``, ``new``: quoted identifiers or paths).

    The column stage builds its expressions as SQL text: one driver-to-JVM call per expression, where
    the same expression built from Columns costs hundreds (each function, operator and literal is a
    call), which made building the column stage's query cost more than running it on a small delta.
    With ``any_number`` (a per-column tolerance) the tolerance applies to integral and decimal columns too.
    """
    if _is_float(dtype) or (any_number and isinstance(dtype, T.NumericType)):
        close = (f"abs({new} - {old}) <= {_double(abs_tol)} + {_double(rel_tol)} * "
                 f"greatest(abs({old}), abs({new}))")
        same = (f"({old} IS NULL AND {new} IS NULL) OR ({old} IS NOT NULL AND {new} IS NOT NULL AND "
                f"((isnan({old}) AND isnan({new})) OR ({close})))")
        return f"(NOT coalesce({same}, false))"
    return f"(NOT ({old} <=> {new}))"


def calc_diff_sql(old: str, new: str, dtype: T.DataType, abs_tol: float = 0.0, rel_tol: float = 0.0,
                  any_number: bool = False) -> str:
    """``calc_diff`` as Spark SQL text over two expressions (see ``changed_sql``)."""
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType)):
        magnitude = f"abs(CAST({new} AS BIGINT) - CAST({old} AS BIGINT))"
    elif isinstance(dtype, T.LongType):
        magnitude = f"abs(CAST({new} AS DECIMAL(20,0)) - CAST({old} AS DECIMAL(20,0)))"
    elif isinstance(dtype, T.DecimalType):
        magnitude = f"abs({new} - {old})"
    elif _is_float(dtype):
        magnitude = f"abs(CAST({new} AS DOUBLE) - CAST({old} AS DOUBLE))"
    elif isinstance(dtype, T.StringType):
        magnitude = f"levenshtein({old}, {new})"
    elif isinstance(dtype, T.DateType):
        magnitude = f"abs(datediff({new}, {old}))"
    elif isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        magnitude = (f"abs(unix_micros(CAST({new} AS TIMESTAMP)) - unix_micros(CAST({old} AS TIMESTAMP)))"
                     f" / {_double(1_000_000.0)}")
    else:  # boolean, binary, array, struct: a change indicator
        magnitude = "1"
    changes = changed_sql(old, new, dtype, abs_tol, rel_tol, any_number)
    return f"(CASE WHEN {old} IS NOT NULL AND {new} IS NOT NULL AND {changes} THEN {magnitude} END)"


def diff_unit(dtype: T.DataType) -> str:
    """What ``calc_diff`` measures for a type (see the module docstring)."""
    if isinstance(dtype, T.StringType):
        return "Levenshtein distance (characters)"
    if isinstance(dtype, T.DateType):
        return "days"
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return "seconds"
    if isinstance(dtype, T.NumericType):
        return "absolute difference"
    return "1 per change"
