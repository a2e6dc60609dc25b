"""Blocking (BigDansing's Block + UCrossProduct, R39): which pairs of records are compared at all.

A blocking rule is a list of columns or expressions; two records are a *candidate pair* of the rule
when every part is equal and non-NULL on both. Several rules are united, and each unordered pair is
generated once: rule ``i`` keeps only the pairs that no earlier rule produced (the pair's block keys
of rules ``0..i-1`` differ or are NULL), the approach Splink takes, so no distinct over the pairs is
needed. Inside a block the pairs are ``id_1 < id_2`` (UCrossProduct: each unordered pair once).

Expressions such as ``substr(surname,1,3)`` are tokenised and checked against the table's columns
and a list of allowed functions, then rebuilt with every column quoted, and only then handed to
``F.expr``: user text is never evaluated and never pasted into SQL unchecked.

Oversized blocks: a block with more than ``max_block_size`` records is *purged* from its rule (it
produces no pairs under that rule, with a warning naming it; its records can still meet through
other rules) or refused, so no rule is ever silently quadratic. Block-size statistics per rule and
the number of pairs each rule adds are available before any comparison (``block_statistics``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.dedup.config import BlockingRule, ConfigError
from dqkit.errors import ParameterError, UnknownColumnError
from dqkit.runtime.sparkutil import col, quote_ident

ID = "_dq_id"
ID1, ID2 = "_dq_id1", "_dq_id2"
RULES = "_dq_rules"  # bitmask: the rules whose (kept) blocks hold both records of a pair
FIRST = "_dq_rule"  # the first rule that produced the pair
SOURCE = "source"  # linking: the table a record comes from (its name)
KEY_RULE = -1  # the record ids' own "rule" in the fused key check and block statistics


def record_id(sources: tuple[str, str], key: str) -> Column:
    """Linking: a record's id ``struct(s, k)``, ``s`` 0 for the left table and 1 for the right one
    (from the ``source`` column), ``k`` its key (keys may repeat across the two tables)."""
    return F.struct(F.when(F.col(SOURCE) == F.lit(sources[0]), F.lit(0)).otherwise(F.lit(1)).alias("s"),
                    col(key).alias("k"))


def block_col(i: int) -> str:
    return f"_dq_b{i}"


#: Functions a blocking expression may call: deterministic string, date and null helpers.
ALLOWED_FUNCTIONS = frozenset({
    "substr", "substring", "left", "right", "lower", "upper", "initcap", "trim", "ltrim", "rtrim",
    "soundex", "concat", "concat_ws", "coalesce", "length", "char_length", "year", "month", "day",
    "dayofmonth", "to_date", "regexp_replace", "replace", "translate", "reverse", "lpad", "rpad",
    "cast", "string", "int", "date",
})

_TOKEN = re.compile(r"""\s*(?:
    (?P<bq>`(?:[^`]|``)+`)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<str>'[^'\\]*')
  | (?P<punct>[(),]|\|\|)
)""", re.VERBOSE)


@dataclass(frozen=True)
class ParsedRule:
    """A blocking rule resolved against a table: its parts as Columns and the columns they read."""

    rule: BlockingRule
    parts: tuple[Column, ...]
    columns: frozenset[str]


def parse_part(text: str, columns: list[str], rule: str) -> tuple[Column, set[str]]:
    """One part of a blocking rule as a Column (a column name, or a checked expression)."""
    if text in columns:
        return col(text), {text}
    out: list[str] = []
    used: set[str] = set()
    pos = 0
    tokens: list[tuple[str, str]] = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ConfigError(f"blocking rule {rule!r}: cannot read {text!r} at character {pos + 1} "
                              f"({text[pos:pos + 10]!r})",
                              hint="a part is a column or a function call such as substr(surname,1,3); "
                                   "quote odd column names with backticks")
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    for n, (kind, tok) in enumerate(tokens):
        nxt = tokens[n + 1][1] if n + 1 < len(tokens) else ""
        if kind == "ident" and nxt == "(":
            if tok.lower() not in ALLOWED_FUNCTIONS:
                raise ConfigError(f"blocking rule {rule!r}: function {tok!r} is not allowed in a blocking "
                                  "expression", hint="allowed: " + ", ".join(sorted(ALLOWED_FUNCTIONS)))
            out.append(tok.lower())
        elif kind in ("ident", "bq"):
            name = tok[1:-1].replace("``", "`") if kind == "bq" else tok
            if name not in columns:
                raise UnknownColumnError(f"blocking rule {rule!r}: unknown column {name!r}",
                                         hint="columns are " + ", ".join(columns))
            used.add(name)
            out.append(quote_ident(name))
        else:
            out.append(tok)
    if not used:
        raise ConfigError(f"blocking rule {rule!r}: the part {text!r} reads no column",
                          hint="a blocking part must depend on the record, e.g. substr(surname,1,3)")
    return F.expr(" ".join(out)), used


def parse_rules(df: DataFrame, rules: tuple[BlockingRule, ...]) -> list[ParsedRule]:
    """Resolve every rule against ``df`` (analysis only, no Spark job)."""
    columns = list(df.columns)
    parsed = []
    for r in rules:
        parts, used = [], set()
        for p in r.on:
            c, u = parse_part(p, columns, r.name)
            parts.append(c)
            used |= u
        try:
            df.select(*parts).schema  # noqa: B018 - analysis: arity and types of the functions
        except Exception as exc:  # pyspark AnalysisException / Connect equivalent
            from dqkit.errors import describe_error

            raise ConfigError(f"blocking rule {r.name!r} does not fit the table: {describe_error(exc)}",
                              hint="check the function's arguments") from None
        parsed.append(ParsedRule(r, tuple(parts), frozenset(used)))
    return parsed


def block_key(parts: tuple[Column, ...]) -> Column:
    """The block key of a rule: the struct of its parts, NULL when any part is NULL (NULL blocks nothing)."""
    not_null = F.lit(True)
    for p in parts:
        not_null = not_null & p.isNotNull()
    return F.when(not_null, F.struct(*[p.alias(f"p{i}") for i, p in enumerate(parts)]))


def _block_json(i: int) -> Column:
    return F.to_json(F.struct(F.col(block_col(i)).alias("k")))


def purge_oversized(records: DataFrame, oversized: dict[int, list[str]]) -> DataFrame:
    """Records with a rule's block key set to NULL where the block is oversized (block purging).

    ``oversized``: per rule index, the JSON keys of its oversized blocks (few: at most
    records / max_block_size per rule), so purging is an expression, not another shuffle."""
    out = records
    for i, keys in oversized.items():
        if keys:
            b = block_col(i)
            out = out.withColumn(b, F.when(~_block_json(i).isin(*keys), F.col(b)))
    return out


def side_col(column: str = ID) -> Column:
    """Linking: the source of a record id (0 the left table, 1 the right one); ids are ``struct(s, k)``."""
    return F.col(column).getField("s")


def _block_sizes(records: DataFrame, n_rules: int, link: bool = False, key_null: Column | None = None) -> DataFrame:
    """``(r, k, n, nl, z)``: records per block ``k`` (its key as JSON) of rule ``r`` (``nl`` of them from the
    left table when linking), only blocks that imply a pair (two records; linking: one of each side).

    With ``key_null`` (the record's key is NULL) also every record id as a block of rule ``-1``, kept
    whatever its size, ``z`` true for a NULL key: the key check in the same aggregation."""
    left = (side_col() == 0).cast("int") if link else F.lit(0)
    entries = [F.struct(F.lit(i).alias("r"), _block_json(i).alias("k"),
                        F.col(block_col(i)).isNotNull().alias("ok"), F.lit(False).alias("z"))
               for i in range(n_rules)]
    if key_null is not None:
        entries.append(F.struct(F.lit(KEY_RULE).alias("r"), F.to_json(F.struct(F.col(ID).alias("k"))).alias("k"),
                                F.lit(True).alias("ok"), key_null.alias("z")))
    keyed = records.select(left.alias("_dq_left"), F.explode(F.array(*entries)).alias("e")).where(
        F.col("e.ok")).select("e.r", "e.k", "e.z", "_dq_left")
    out = keyed.groupBy("r", "k").agg(F.count(F.lit(1)).alias("n"), F.sum("_dq_left").alias("nl"),
                                      F.max("z").alias("z"))
    implies = ((F.col("nl") >= 1) & (F.col("n") > F.col("nl"))) if link else (F.col("n") >= 2)
    return out.where(implies | (F.col("r") == KEY_RULE)) if key_null is not None else out.where(implies)


@dataclass(frozen=True)
class KeyCounts:
    """What the key check needs, from the block statistics' aggregation: rows (and rows of the left
    table when linking), rows with a NULL key, and key values held by more than one row."""

    rows: int
    left_rows: int
    nulls: int
    repeats: int


def block_statistics(records: DataFrame, rules: list[ParsedRule], max_block_size: int,
                     link: bool = False) -> pd.DataFrame:
    """Block sizes per rule, from one aggregation over (rule, block): blocks with two or more
    records, the largest block, records in blocks, and the comparisons the rule's blocks imply
    (Σ n(n−1)/2; linking Σ n_left·n_right, before removing pairs that earlier rules produce), split
    into kept and oversized (more than ``max_block_size`` records)."""
    return _statistics(records, rules, max_block_size, link, None)[0]


def key_and_block_statistics(records: DataFrame, rules: list[ParsedRule], max_block_size: int,
                             link: bool = False) -> tuple[pd.DataFrame, KeyCounts]:
    """``block_statistics`` and the key check's counts (``KeyCounts``) from the same single Spark job:
    the record ids are one more "rule" of the aggregation, so the input is read once for both.
    ``records``' id is the key (linking: ``struct(s, k)``, a NULL key is a NULL ``k``)."""
    null = F.col(ID).getField("k").isNull() if link else F.col(ID).isNull()
    stats, key = _statistics(records, rules, max_block_size, link, null)
    assert key is not None
    return stats, key


def _statistics(records: DataFrame, rules: list[ParsedRule], max_block_size: int, link: bool,
                key_null: Column | None) -> tuple[pd.DataFrame, KeyCounts | None]:
    n = len(rules)
    cols = ["rule", "on", "blocks", "largest_block", "records_in_blocks", "comparisons",
            "oversized_blocks", "comparisons_skipped"]
    if n == 0 and key_null is None:
        return pd.DataFrame(columns=cols), None
    big = F.col("n") > max_block_size
    if link:
        pairs = (F.col("nl") * (F.col("n") - F.col("nl"))).cast("long")
    else:
        pairs = (F.col("n") * (F.col("n") - 1) / 2).cast("long")
    rows = {r["r"]: r for r in _block_sizes(records, n, link, key_null).groupBy("r").agg(
        F.count(F.lit(1)).alias("blocks"), F.max("n").alias("largest"), F.sum("n").alias("records"),
        F.sum(F.when(~big, pairs).otherwise(0)).alias("kept"), F.sum(F.when(big, 1).otherwise(0)).alias("big"),
        F.sum(F.when(big, pairs).otherwise(0)).alias("skipped"),
        F.sum("nl").alias("left"), F.sum(F.when(F.col("z"), F.col("n")).otherwise(0)).alias("nulls"),
        F.count(F.when(~F.col("z") & (F.col("n") > 1), 1)).alias("repeats")).collect()}
    key = None
    if key_null is not None:
        k = rows.get(KEY_RULE)
        key = KeyCounts(*(int(k[c] or 0) if k else 0 for c in ("records", "left", "nulls", "repeats")))
    data = []
    for i, pr in enumerate(rules):
        r = rows.get(i)
        data.append({"rule": pr.rule.name, "on": pr.rule.text, "blocks": int(r["blocks"]) if r else 0,
                     "largest_block": int(r["largest"]) if r else 0,
                     "records_in_blocks": int(r["records"]) if r else 0,
                     "comparisons": int(r["kept"]) if r else 0,
                     "oversized_blocks": int(r["big"]) if r else 0,
                     "comparisons_skipped": int(r["skipped"]) if r else 0})
    return pd.DataFrame(data, columns=cols), key


def oversized_blocks(records: DataFrame, rules: list[ParsedRule], max_block_size: int, link: bool = False
                     ) -> dict[int, list[tuple[str, int]]]:
    """Every oversized block per rule index, as (JSON key, records), largest first: one aggregation.
    There are at most records / max_block_size of them per rule, so they are few."""
    rows = (_block_sizes(records, len(rules), link).where(F.col("n") > max_block_size)
            .orderBy("r", F.desc("n"), "k").collect())
    out: dict[int, list[tuple[str, int]]] = {}
    for row in rows:
        out.setdefault(int(row["r"]), []).append((row["k"], int(row["n"])))
    return out


def describe_block(key_json: str) -> str:
    """A block key as people read it: its values joined by commas."""
    import json

    key = json.loads(key_json).get("k") or {}
    return ", ".join(str(v) for v in key.values())


def candidate_pairs(records: DataFrame, n_rules: int, carry: list[str], link: bool = False) -> DataFrame:
    """The candidate pairs of all rules, each unordered pair once: ``_dq_id1 < _dq_id2`` (linking:
    ``_dq_id1`` from the left table, ``_dq_id2`` from the right one, never two of one table), the first
    rule that produced it (``_dq_rule``), the bitmask of every rule whose blocks hold it
    (``_dq_rules``), and each ``carry`` column of both records as ``{c}_l`` / ``{c}_r``.

    ``records`` has ``_dq_id``, the (purged) block keys ``_dq_b{i}`` and the ``carry`` columns.
    """
    keys = [block_col(j) for j in range(n_rules)]
    side = {s: records.select(F.col(ID).alias(ID1 if s == "l" else ID2),
                              *[F.col(k).alias(f"{k}_{s}") for k in keys],
                              *[F.col(c).alias(f"{c}_{s}") for c in carry]) for s in ("l", "r")}
    out: DataFrame | None = None
    for i in range(n_rules):
        b = block_col(i)
        left = side["l"].where(F.col(f"{b}_l").isNotNull())
        right = side["r"].where(F.col(f"{b}_r").isNotNull())
        if link:  # only pairs across the two tables
            joined = left.where(side_col(ID1) == 0).join(right.where(side_col(ID2) == 1),
                                                         F.col(f"{b}_l") == F.col(f"{b}_r"))
        else:
            joined = left.join(right, F.col(f"{b}_l") == F.col(f"{b}_r")).where(F.col(ID1) < F.col(ID2))
        same = [F.coalesce(F.col(f"{k}_l") == F.col(f"{k}_r"), F.lit(False)) for k in keys]
        for j in range(i):  # produced by an earlier rule: that rule has it
            joined = joined.where(~same[j])
        mask = F.lit(0)
        for j in range(n_rules):
            mask = mask + F.when(same[j], F.lit(1 << j)).otherwise(F.lit(0))
        part = joined.select(ID1, ID2, F.lit(i).alias(FIRST), mask.cast("long").alias(RULES),
                             *[F.col(f"{c}_{s}") for c in carry for s in ("l", "r")])
        out = part if out is None else out.unionByName(part)
    assert out is not None
    return out


def oversized_notes(blocks: Mapping[int, list[tuple[str, int]]], rules: list[ParsedRule], skipped: list[int],
                    max_block_size: int, refuse: bool) -> tuple[dict[int, list[str]], list[str]]:
    """The purged keys per rule and the warnings for the oversized ``blocks`` found (per rule, (JSON key,
    records) largest first) and the comparisons each rule skips, or with ``refuse`` the refusal. Shared by
    a full run (``oversized_blocks``) and ``dedup --since`` (which finds them near the touched records)."""
    if not any(blocks.values()):
        return {}, []
    lines = []
    for i, found in sorted(blocks.items()):
        ex = "; ".join(f"[{describe_block(k)}] {n} records" for k, n in found[:5])
        lines.append(f"blocking rule {rules[i].rule.name!r}: {len(found)} block(s) exceed max_block_size="
                     f"{max_block_size} ({ex}); {skipped[i]:,} comparisons")
    hint = ("make the rule finer (add a column, e.g. [surname, substr(given_name,1,1)]), or raise "
            "max_block_size if that many comparisons are intended")
    if refuse:
        raise ParameterError("oversized blocks: " + " | ".join(lines), hint=hint)
    notes = [line + " skipped (the blocks are purged from this rule); " + hint for line in lines]
    return {i: [k for k, _ in found] for i, found in blocks.items()}, notes
