"""The dedup configuration: blocking rules, comparisons with their levels, and model settings.

A configuration is YAML (or the equivalent dict, or a ``DedupConfig``). The minimal form is

    blocking: [[surname], [given_name], [postcode]]
    comparisons:
      - {column: given_name, method: jaro_winkler}
      - {column: postcode, method: exact}

``example_config()`` returns a commented example with every option. A YAML file that does not parse,
or a value that does not fit, raises ``ConfigError`` naming the file, the line and the column (for a
dict, the path such as ``comparisons[2].method``). Column names are checked against the table later,
by ``dqkit.dedup`` (before any Spark job).
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dqkit.errors import RuleError

__all__ = ["ConfigError", "BlockingRule", "Comparison", "DedupConfig", "METHODS", "DEFAULT_THRESHOLDS",
           "TYPES", "load_config", "parse_config", "example_config"]


class ConfigError(RuleError):
    """A dedup configuration that does not parse or does not fit; the message says where."""


#: method -> what its thresholds mean (levels between "exact" and "else", from closest to farthest)
METHODS = {
    "exact": "no thresholds: exact / else",
    "levenshtein": "edit distances, ascending (close when distance <= t)",
    "jaro_winkler": "Jaro-Winkler similarities, descending (close when similarity >= t)",
    "jaccard": "Jaccard similarities of the word sets, descending",
    "token_set": "token-set ratios in [0, 1], descending (rapidfuzz token_set_ratio / 100)",
    "numeric": "absolute differences, ascending (close when |a - b| <= t)",
    "date": "absolute differences in days, ascending",
}

#: sensible default levels (Splink-like): two "close" levels between exact and else
DEFAULT_THRESHOLDS: dict[str, tuple[float, ...]] = {
    "exact": (),
    "levenshtein": (1, 2),
    "jaro_winkler": (0.92, 0.80),
    "jaccard": (0.8, 0.5),
    "token_set": (0.9, 0.7),
    "numeric": (1, 10),
    "date": (31, 365),
}

_ASCENDING = {"levenshtein", "numeric", "date"}  # thresholds are distances

#: column types a config may ask for (``types: {age: int}``); everything else is read as text
TYPES = {"string": "string", "text": "string", "int": "bigint", "integer": "bigint", "bigint": "bigint",
         "double": "double", "float": "double", "number": "double", "date": "date"}

ON_OVERSIZED = ("skip", "refuse")


@dataclass(frozen=True)
class BlockingRule:
    """One blocking rule: records whose ``on`` values (columns or expressions) are all equal and
    non-NULL are compared. ``name`` labels it in statistics."""

    on: tuple[str, ...]
    name: str

    @property
    def text(self) -> str:
        return ", ".join(self.on)


@dataclass(frozen=True)
class Comparison:
    """How one column is compared: ``method`` and its ``thresholds`` give the levels
    exact, one "close" level per threshold (closest first), else; a NULL side is the NULL level."""

    column: str
    method: str
    thresholds: tuple[float, ...] = ()
    name: str = ""
    date_format: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.column

    def level_labels(self) -> list[str]:
        """Labels of the levels from gamma 0 (else) up to exact; the NULL level (gamma -1) is ``null``."""
        op = "<=" if self.method in _ASCENDING else ">="
        unit = {"levenshtein": "edits", "date": "days"}.get(self.method, "")
        close = [f"{self.method} {op} {_num(t)}{(' ' + unit) if unit else ''}" for t in self.thresholds]
        return ["else", *reversed(close), "exact"]

    @property
    def n_levels(self) -> int:
        """Non-NULL levels: else, the close levels, exact."""
        return len(self.thresholds) + 2


@dataclass(frozen=True)
class DedupConfig:
    """Blocking rules, comparisons and model settings of a dedup run.

    ``threshold``: pairs with a match probability at least this are linked into clusters.
    ``max_block_size``: a block with more records is oversized; ``on_oversized`` ``"skip"`` drops
    it from its rule (with a warning: block purging, so no block costs more than
    max_block_size·(max_block_size−1)/2 comparisons) or ``"refuse"`` stops the run.
    ``u_sample_records``: records drawn (by a seeded hash) whose all-pairs comparisons estimate u.
    ``types``: columns read with another type than text.
    """

    blocking: tuple[BlockingRule, ...]
    comparisons: tuple[Comparison, ...]
    threshold: float = 0.9
    max_block_size: int = 2000
    on_oversized: str = "skip"
    u_sample_records: int = 1500
    em_max_iterations: int = 200
    em_tolerance: float = 1e-6
    seed: int = 42
    types: Mapping[str, str] = field(default_factory=dict)

    def columns(self) -> list[str]:
        """The compared columns, in order, each once."""
        return list(dict.fromkeys(c.column for c in self.comparisons))


def _num(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else f"{t:g}"


# ------------------------------------------------------------------------------------ parsing
class _Where:
    """Locates a path (keys and indexes) in the YAML node tree, for errors with line and column."""

    def __init__(self, source: str, node: Any = None) -> None:
        self.source = source
        self.node = node

    def __call__(self, path: Sequence[Any]) -> str:
        text = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
                       for i, p in enumerate(path)) or "(top level)"
        node = self.node
        mark = getattr(node, "start_mark", None)
        for p in path:
            if node is None:
                break
            child = None
            if isinstance(p, int) and getattr(node, "id", "") == "sequence" and p < len(node.value):
                child = node.value[p]
            elif getattr(node, "id", "") == "mapping":
                child = next((v for k, v in node.value if getattr(k, "value", None) == p), None)
            node = child
            if node is not None:
                mark = node.start_mark
        if self.node is not None and mark is not None:
            return f"{self.source}, line {mark.line + 1}, column {mark.column + 1} ({text})"
        return f"{self.source}: {text}"


def load_config(path: str | os.PathLike) -> DedupConfig:
    """Read a YAML dedup configuration file."""
    from dqkit.io.filecheck import read_text

    p = Path(path)
    text = read_text(p, "the dedup config", error=ConfigError,
                     hint="check the path and the file; `dqkit dedup --example-config` prints an example")
    return parse_config(text, source=str(p))


def parse_config(config: str | Mapping[str, Any] | DedupConfig, source: str = "config") -> DedupConfig:
    """A ``DedupConfig`` from YAML text, a dict, or a ``DedupConfig`` (returned as is)."""
    if isinstance(config, DedupConfig):
        return config
    if isinstance(config, Mapping):
        return _build(config, _Where(source))
    import yaml
    from yaml.constructor import SafeConstructor

    try:
        node = yaml.compose(config, Loader=yaml.SafeLoader)
        data = SafeConstructor().construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = exc.problem or exc.context or "invalid YAML"
        ctx = exc.context_mark
        if exc.context and ctx is not None and ctx is not mark:
            what += f" ({exc.context} started at line {ctx.line + 1}, column {ctx.column + 1})"
        raise ConfigError(f"{source}{where}: the YAML does not parse: {what}",
                          hint="check brackets, quotes and indentation there; "
                               "`dqkit dedup --example-config` prints a valid example") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: the YAML does not parse: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: a dedup config is a mapping with `blocking` and `comparisons`, "
                          f"not {type(data).__name__}",
                          hint="`dqkit dedup --example-config` prints an example")
    return _build(data, _Where(source, node))


_TOP = {"blocking", "comparisons", "threshold", "max_block_size", "on_oversized", "u_sample_records",
        "em", "seed", "types"}


def _build(data: Mapping[str, Any], where: _Where) -> DedupConfig:
    unknown = [k for k in data if k not in _TOP]
    if unknown:
        raise ConfigError(f"{where([unknown[0]])}: unknown setting {unknown[0]!r}",
                          hint=f"settings are {', '.join(sorted(_TOP))}")
    for req in ("blocking", "comparisons"):
        if req not in data:
            raise ConfigError(f"{where([])}: the config has no `{req}`",
                              hint="`dqkit dedup --example-config` prints an example")
    blocking = _blocking(data["blocking"], where)
    comparisons = _comparisons(data["comparisons"], where)
    types = data.get("types") or {}
    if not isinstance(types, Mapping):
        raise ConfigError(f"{where(['types'])}: `types` maps column names to types",
                          hint=f"types are {', '.join(sorted(TYPES))}")
    for col, t in types.items():
        if str(t).lower() not in TYPES:
            raise ConfigError(f"{where(['types', col])}: unknown type {t!r} for column {col!r}",
                              hint=f"types are {', '.join(sorted(TYPES))}")
    em = data.get("em") or {}
    if not isinstance(em, Mapping) or any(k not in ("max_iterations", "tolerance") for k in em):
        raise ConfigError(f"{where(['em'])}: `em` takes max_iterations and tolerance")
    kw: dict[str, Any] = {}
    if "threshold" in data:
        kw["threshold"] = _prob(data["threshold"], where(["threshold"]))
    if "max_block_size" in data:
        kw["max_block_size"] = _int(data["max_block_size"], where(["max_block_size"]), 2)
    if "on_oversized" in data:
        v = str(data["on_oversized"])
        if v not in ON_OVERSIZED:
            raise ConfigError(f"{where(['on_oversized'])}: on_oversized is {' or '.join(ON_OVERSIZED)}, not {v!r}")
        kw["on_oversized"] = v
    if "u_sample_records" in data:
        kw["u_sample_records"] = _int(data["u_sample_records"], where(["u_sample_records"]), 2)
    if "seed" in data:
        kw["seed"] = _int(data["seed"], where(["seed"]), 0)
    if "max_iterations" in em:
        kw["em_max_iterations"] = _int(em["max_iterations"], where(["em", "max_iterations"]), 1)
    if "tolerance" in em:
        tol = em["tolerance"]
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < float(tol) < 1:
            raise ConfigError(f"{where(['em', 'tolerance'])}: em.tolerance is a number in (0, 1)")
        kw["em_tolerance"] = float(tol)
    return DedupConfig(blocking=blocking, comparisons=comparisons,
                       types={str(k): TYPES[str(v).lower()] for k, v in types.items()}, **kw)


def _prob(v: Any, at: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= float(v) <= 1:
        raise ConfigError(f"{at}: a probability between 0 and 1 is expected, not {v!r}")
    return float(v)


def _int(v: Any, at: str, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ConfigError(f"{at}: a whole number >= {lo} is expected, not {v!r}")
    return int(v)


def _blocking(value: Any, where: _Where) -> tuple[BlockingRule, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        raise ConfigError(f"{where(['blocking'])}: `blocking` is a non-empty list of rules",
                          hint="for example blocking: [[surname], [postcode], [substr(given_name,1,3), state]]")
    rules: list[BlockingRule] = []
    for i, rule in enumerate(value):
        name = None
        at = ["blocking", i]
        if isinstance(rule, Mapping):
            # YAML 1.1 reads a bare `on:` key as the boolean true
            rule = {("on" if k is True else k): v for k, v in rule.items()}
            if "on" not in rule or any(k not in ("on", "name") for k in rule):
                raise ConfigError(f"{where(at)}: a blocking rule mapping has `on` (and optionally `name`)")
            name = rule.get("name")
            rule = rule["on"]
            at = [*at, "on"]
        parts = [rule] if isinstance(rule, str) else rule
        if not isinstance(parts, Sequence) or not parts or not all(isinstance(p, str) and p.strip() for p in parts):
            raise ConfigError(f"{where(at)}: a blocking rule is a column, an expression such as "
                              f"substr(surname,1,3), or a list of them; got {rule!r}")
        on = tuple(p.strip() for p in parts)
        rules.append(BlockingRule(on=on, name=str(name) if name else ", ".join(on)))
    names = [r.name for r in rules]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"{where(['blocking'])}: the blocking rule {dup!r} is given twice",
                          hint="each rule once (or give them different `name`s)")
    return tuple(rules)


_COMPARISON_KEYS = {"column", "method", "thresholds", "levels", "name", "date_format"}


def _comparisons(value: Any, where: _Where) -> tuple[Comparison, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise ConfigError(f"{where(['comparisons'])}: `comparisons` is a non-empty list of "
                          "{column: NAME, method: METHOD}")
    out: list[Comparison] = []
    for i, c in enumerate(value):
        at = ["comparisons", i]
        if not isinstance(c, Mapping) or "column" not in c:
            raise ConfigError(f"{where(at)}: a comparison is a mapping with `column` and `method`, got {c!r}")
        bad = [k for k in c if k not in _COMPARISON_KEYS]
        if bad:
            raise ConfigError(f"{where([*at, bad[0]])}: unknown comparison setting {bad[0]!r}",
                              hint=f"settings are {', '.join(sorted(_COMPARISON_KEYS))}")
        column = c["column"]
        if not isinstance(column, str) or not column:
            raise ConfigError(f"{where([*at, 'column'])}: `column` names one column, got {column!r}")
        method = str(c.get("method", "exact")).lower().replace("-", "_")
        if method not in METHODS:
            raise ConfigError(f"{where([*at, 'method'])}: unknown comparison method {c.get('method')!r}",
                              hint=f"methods are {', '.join(METHODS)}")
        key = "thresholds" if "thresholds" in c else "levels"
        raw = c.get(key, DEFAULT_THRESHOLDS[method])
        if method == "exact" and raw:
            raise ConfigError(f"{where([*at, key])}: method exact takes no thresholds")
        if (not isinstance(raw, Sequence) or isinstance(raw, str)
                or not all(isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in raw)):
            raise ConfigError(f"{where([*at, key])}: thresholds are a list of numbers, got {raw!r}",
                              hint=f"{method}: {METHODS[method]}")
        ts = tuple(float(t) for t in raw)
        asc = method in _ASCENDING
        ordered = all((a < b) if asc else (a > b) for a, b in zip(ts, ts[1:]))
        in_range = all(t >= 0 for t in ts) and (asc or all(0 < t <= 1 for t in ts))
        if not ordered or not in_range:
            raise ConfigError(f"{where([*at, key])}: thresholds of {method} are {METHODS[method]}, got {list(raw)}")
        fmt = c.get("date_format")
        if fmt is not None and (method != "date" or not isinstance(fmt, str)):
            raise ConfigError(f"{where([*at, 'date_format'])}: date_format (a Spark date pattern such as "
                              "yyyyMMdd) belongs to method date")
        out.append(Comparison(column=column, method=method, thresholds=ts, name=str(c.get("name") or ""),
                              date_format=fmt))
    labels = [c.label for c in out]
    dup = next((n for n in labels if labels.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"{where(['comparisons'])}: two comparisons are named {dup!r}",
                          hint="give one of them a `name`")
    return tuple(out)


def example_config() -> str:
    """A commented example configuration with every option (what ``--example-config`` prints)."""
    return """\
# dqkit dedup configuration (YAML). Only `blocking` and `comparisons` are required.

# Blocking: which pairs of records are compared at all. Each rule is a column, an expression
# (substr, lower, upper, trim, soundex, left, right, concat, coalesce, ...) or a list of them;
# two records are compared when every part of at least one rule is equal and not NULL.
# A pair found by several rules is compared once.
blocking:
  - [surname]
  - [given_name]
  - [postcode]
  - [date_of_birth]
  - [soc_sec_id]
  - {name: initials+state, on: ["substr(given_name,1,1)", "substr(surname,1,1)", state]}

# Comparisons: how two records are compared, column by column. Each one has levels
# exact / close ... / else, and NULL when a side is missing (NULL is neither evidence for nor against).
# methods and their default thresholds:
#   exact                                   exact / else
#   levenshtein   edit distances  [1, 2]    exact / <= 1 / <= 2 / else
#   jaro_winkler  similarities    [0.92, 0.8]
#   jaccard       word-set similarity [0.8, 0.5]
#   token_set     token-set ratio [0.9, 0.7]
#   numeric       |a - b|         [1, 10]   (numeric columns: see `types`)
#   date          days apart      [31, 365] (date columns, or text with date_format)
comparisons:
  - {column: given_name, method: jaro_winkler}
  - {column: surname, method: jaro_winkler, thresholds: [0.95, 0.88, 0.7]}
  - {column: date_of_birth, method: levenshtein}
  - {column: soc_sec_id, method: levenshtein}
  - {column: street_number, method: exact}
  - {column: address_1, method: token_set}
  - {column: postcode, method: exact}
  # - {column: date_of_birth, name: dob_days, method: date, date_format: yyyyMMdd}

# Columns are read as text (digit strings such as postcodes keep their leading zeros);
# give a type where a column must be numeric or a date: string, int, double, date.
# types: {age: int}

threshold: 0.9           # pairs with match probability >= threshold are linked into clusters
max_block_size: 2000     # a larger block is oversized ...
on_oversized: skip       # ... and skipped with a warning (skip), or stops the run (refuse)
u_sample_records: 1500   # records whose all-pairs comparisons estimate u (non-match probabilities)
seed: 42
em: {max_iterations: 200, tolerance: 1.0e-6}
"""
