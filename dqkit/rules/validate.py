"""Rules checked against a table schema (unknown columns, types that cannot be compared), without Spark."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from dqkit.errors import RuleError, UnknownColumnError
from dqkit.rules.model import ORDERING_OPS, Attr, Const, FunctionalDependency
from dqkit.rules.udf import UDFRule, Rule
from dqkit.rules.parse import check_rule_size


# ----------------------------------------------------------------------------------------- validation
_NUMERIC = ("byte", "short", "integer", "long", "int", "bigint", "smallint", "tinyint", "float", "double", "decimal")


def type_class(type_name: str) -> str:
    """Comparison class of a Spark type name: numeric, string, date, timestamp, boolean or other."""
    t = type_name.lower()
    if t.startswith(_NUMERIC):
        return "numeric"
    if t in ("string",) or t.startswith(("varchar", "char")):
        return "string"
    if t == "date":
        return "date"
    if t.startswith("timestamp"):
        return "timestamp"
    if t == "boolean":
        return "boolean"
    return "other"


def _const_class(c: Const) -> str:
    return "string" if isinstance(c.value, str) else "numeric"


def validate_rules(rules: Sequence[Rule], types: Mapping[str, str], key: str | None = None) -> None:
    """Check rules against a schema (column -> Spark type name) before any Spark job runs.

    Raises ``UnknownColumnError`` for a column the table lacks and ``RuleError`` for comparisons
    between types that cannot be compared or ordered.
    """
    cols = list(types)
    for rule in rules:
        if isinstance(rule, UDFRule):
            continue
        if isinstance(rule, FunctionalDependency):
            check_rule_size(rule.name, len(rule.lhs) + len(rule.rhs), "attributes")
        else:
            check_rule_size(rule.name, len(rule.predicates))
        for c in rule.columns:
            if c not in types:
                close = [x for x in cols if x.lower() == c.lower()]
                raise UnknownColumnError(
                    f"rule {rule.name!r}: unknown column {c!r}",
                    hint=(f"did you mean {close[0]!r}? " if close else "") + f"columns: {', '.join(cols)}")
        if isinstance(rule, FunctionalDependency):
            for c in rule.columns:
                if type_class(types[c]) == "other":
                    raise RuleError(f"rule {rule.name!r}: column {c!r} has type {types[c]}, which an FD "
                                    f"cannot compare", hint="cast it to a string first")
            continue
        for p in rule.predicates:
            lt = type_class(types[p.left.column])
            if isinstance(p.right, Attr):
                rt = type_class(types[p.right.column])
                rdesc = f"{p.right} ({types[p.right.column]})"
            else:
                rt = _const_class(p.right)
                rdesc = f"the constant {p.right}"
                if isinstance(p.right.value, float) and not math.isfinite(p.right.value):
                    raise RuleError(f"rule {rule.name!r}: predicate '{p}': non-finite constant")
                if rt == "string" and lt in ("date", "timestamp"):
                    rt = lt  # ISO date/timestamp literals compare with temporal columns
            ldesc = f"{p.left} ({types[p.left.column]})"
            if lt == "other" or rt == "other":
                raise RuleError(f"rule {rule.name!r}: predicate '{p}': {ldesc} and {rdesc} cannot be "
                                f"compared", hint="only numbers, strings, dates, timestamps and booleans")
            if lt != rt:
                raise RuleError(f"rule {rule.name!r}: predicate '{p}' compares {ldesc} with {rdesc}: "
                                f"types that cannot be compared", hint="cast one side so both have the same type")
            if p.op in ORDERING_OPS and lt == "boolean":
                raise RuleError(f"rule {rule.name!r}: predicate '{p}': booleans cannot be ordered",
                                hint="use = or != on boolean columns")
    if key is not None and key not in types:
        raise UnknownColumnError(f"unknown key column {key!r}", hint=f"columns: {', '.join(cols)}")
