# Long because the metadata model M1-M7 and the checks that keep a spec valid read as one unit.
"""The TCFC metadata model (M1-M7): pairs of relations, nested fragmentation levels, aggregates.

A ``CompareSpec`` is the paper's metadata quintuple C = (r(R), s, tau^-1, listX_R, listA_R) plus the
implementation parameters of §3.3 (priority, healthy job depth). A ``TcfcSpec`` is the set of them.
Everything here is checked without touching any engine: nesting (M2), aggregates on R minus X, unique
aliases (M3), known functions, budget and depths. Checks that need a schema (unknown columns, types)
run in ``dqkit.tcfc.engines.bind`` before any aggregate query.

YAML/JSON shape (``load_spec``)::

    budget: 600                      # seconds (optional; the CLI's --budget wins)
    statistics: false                # P4: X = [] COUNT roots from exact Parquet footers (optional)
    pairs:
      - name: exam
        priority: 5
        healthy_depth: 2
        source: {url: "postgresql://user:pw@host/db", table: exam}
        target:
          tables: {fExam: data/fExam.parquet, dCourse: data/dCourse.parquet}   # Spark views for query
          query: "SELECT d.date AS exam_date, ... FROM fExam f JOIN ..."       # tau^-1
          columns: {has_passed: hasPassed}                                     # source name: target name
        aggregates: [[sum, has_passed, sumPassed], [count, "*", recCount]]     # default for every level
        levels:
          - X: []
          - X: [course_id]
          - {X: [course_id, student_id], A: [[count, "*", recCount]]}
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dqkit.errors import ParameterError

#: Aggregate functions (the paper's AF), plus ``hash``: the commutative row-hash aggregate (H1).
FUNCTIONS = ("count", "sum", "avg", "min", "max", "hash")
#: functions whose result is compared with a tolerance when it is a float (C4)
NUMERIC_ONLY = ("sum", "avg")
ALL_COLUMNS = "*"


class SpecError(ParameterError):
    """A TCFC spec that is malformed or inconsistent; the message names the pair and the level."""


@dataclass(frozen=True)
class Aggregate:
    """One triplet (af, A, B) of an aggregation set: ``af(A) AS B`` (A may be ``*`` for count/hash)."""

    function: str
    attribute: str
    alias: str

    def to_list(self) -> list[str]:
        return [self.function, self.attribute, self.alias]


@dataclass(frozen=True)
class Level:
    """One fragmentation level: the fragmentation set X (ordered as written) and its aggregation set."""

    X: tuple[str, ...]
    A: tuple[Aggregate, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"X": list(self.X), "A": [a.to_list() for a in self.A]}


@dataclass(frozen=True)
class Side:
    """One side of a pair: where it lives and how to read it.

    * ``url``: ``postgresql://...``, ``sqlite:///file.db``, ``duckdb:///file.duckdb``; None = Spark;
    * ``table``: a table name in that database, or for Spark any dqkit table source (path, catalog:db.t);
    * ``query``: tau^-1 as SQL in the side's own engine (for Spark, over the views named in ``tables``);
    * ``tables``: Spark only: view name -> dqkit table source, for ``query``;
    * ``columns``: attribute map, source attribute name -> this side's column name (renames);
    * ``frame``: Python API only: a Spark DataFrame or a builder ``() -> DataFrame`` (tau^-1 as a builder).
    """

    url: str | None = None
    table: str | None = None
    query: str | None = None
    tables: Mapping[str, str] = field(default_factory=dict)
    columns: Mapping[str, str] = field(default_factory=dict)
    frame: Any = field(default=None, compare=False, repr=False)

    @property
    def engine_kind(self) -> str:
        """``spark``, ``postgresql``, ``sqlite`` or ``duckdb``."""
        if self.url is None or self.url == "spark":
            return "spark"
        scheme = self.url.split(":", 1)[0].lower()
        if scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+"):
            return "postgresql"
        if scheme in ("sqlite", "duckdb"):
            return scheme
        raise SpecError(f"unknown database URL scheme {scheme!r} in {mask_url(self.url)}",
                        hint="use postgresql://, sqlite:///FILE or duckdb:///FILE, or leave url out for Spark")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.url is not None:
            out["url"] = self.url
        if self.table is not None:
            out["table"] = self.table if isinstance(self.table, str) else "<DataFrame>"
        if self.query is not None:
            out["query"] = self.query
        if self.tables:
            out["tables"] = {k: v if isinstance(v, str) else "<DataFrame>" for k, v in self.tables.items()}
        if self.columns:
            out["columns"] = dict(self.columns)
        if self.frame is not None:
            out["frame"] = "<DataFrame builder>"
        return out

    def describe(self) -> str:
        """A short label without credentials."""
        where = mask_url(self.url) if self.url else "spark"
        what = self.table if isinstance(self.table, str) else ("query" if self.query else "DataFrame")
        return f"{where}: {what}"


@dataclass(frozen=True)
class CompareSpec:
    """The metadata quintuple of one table pair (M1) plus priority, healthy depth and float tolerance."""

    name: str
    source: Side
    target: Side
    levels: tuple[Level, ...]
    priority: int = 0
    healthy_depth: int = 1
    abs_tol: float = 1e-9
    rel_tol: float = 1e-9

    @property
    def full_depth(self) -> int:
        return len(self.levels)

    @property
    def same_engine(self) -> bool:
        """Both sides computed by one engine (Spark, or the same database URL): hash aggregates allowed (H3)."""
        if self.source.engine_kind != self.target.engine_kind:
            return False
        return self.source.engine_kind == "spark" or self.source.url == self.target.url

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "priority": self.priority, "healthy_depth": self.healthy_depth,
                "abs_tol": self.abs_tol, "rel_tol": self.rel_tol,
                "source": self.source.to_dict(), "target": self.target.to_dict(),
                "levels": [lv.to_dict() for lv in self.levels]}

    def fingerprint(self) -> str:
        """A digest of everything that decides this pair's fragments (for result reuse, U1-U2)."""
        d = self.to_dict()
        d.pop("priority")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TcfcSpec:
    """The set C of compare specs, with an optional default budget, the batch cap (P1) and whether X = ∅
    COUNT roots may be answered from exact table statistics (P4; off by default)."""

    pairs: tuple[CompareSpec, ...]
    budget: float | None = None
    max_batch: int | None = None               # None: per engine (``dqkit.tcfc.engines.MAX_BATCH``)
    statistics: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pairs": [p.to_dict() for p in self.pairs]}
        if self.max_batch is not None:
            out["max_batch"] = self.max_batch
        if self.budget is not None:
            out["budget"] = self.budget
        if self.statistics:
            out["statistics"] = True
        return out

    def pair(self, name: str) -> CompareSpec:
        for p in self.pairs:
            if p.name == name:
                return p
        raise SpecError(f"no pair named {name!r}", hint=f"pairs: {', '.join(p.name for p in self.pairs)}")


# ------------------------------------------------------------------------------------------ parsing
def mask_url(url: str | None) -> str:
    """``url`` with any password replaced by ``***`` (for messages, logs and reports)."""
    if not url:
        return str(url)
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if parts.password is None:
        masked = url
    else:
        user = parts.username or ""
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        masked = urlunsplit((parts.scheme, f"{user}:***@{host}{port}", parts.path, parts.query, parts.fragment))
    # a password passed as a query parameter (?password=...)
    import re

    return re.sub(r"(?i)(password=)[^&]*", r"\1***", masked)


def check_budget(budget: float | None, what: str = "the budget") -> float | None:
    """A budget in seconds must be a finite number above 0 (None means no budget: the run completes).

    Needs no engine, so the CLI (and a parameter registry) can refuse a bad budget before Spark starts."""
    if budget is None:
        return None
    if isinstance(budget, bool):
        raise SpecError(f"{what} {budget!r} is not a number of seconds", hint="pass e.g. --budget 600")
    try:
        value = float(budget)
    except (TypeError, ValueError):
        raise SpecError(f"{what} {budget!r} is not a number of seconds", hint="pass e.g. --budget 600") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise SpecError(f"{what} must be a finite number of seconds, got {budget!r}",
                        hint="leave the budget out to run to completion")
    if not value > 0:
        raise SpecError(f"{what} must be more than 0 seconds, got {budget!r}",
                        hint="pass a positive number of seconds, or no budget to run to completion")
    return value


def check_run_options(connect_timeout: float | None = None, sample_rows: int | None = None,
                      max_batch: int | None = None) -> None:
    """The run's other numbers, checked without an engine: a connect timeout above 0 seconds (finite),
    at least 0 report rows shown, a batch cap of at least 1 fragment."""
    from dqkit.errors import ParameterError

    if connect_timeout is not None:
        try:
            t = float(connect_timeout)
        except (TypeError, ValueError):
            t = float("nan")
        if isinstance(connect_timeout, bool) or not (t > 0 and t != float("inf")):
            raise ParameterError(f"--connect-timeout must be a finite number of seconds above 0, got {connect_timeout!r}",
                                 hint="pass e.g. --connect-timeout 10")
    if sample_rows is not None and sample_rows < 0:
        raise ParameterError(f"--sample-rows must be 0 or more, got {sample_rows!r}",
                             hint="pass the number of report rows to show, e.g. --sample-rows 20")
    if max_batch is not None and (not isinstance(max_batch, int) or isinstance(max_batch, bool) or max_batch < 1):
        raise ParameterError(f"max_batch must be a whole number of fragments, at least 1, got {max_batch!r}",
                             hint="leave it out to use each engine's own cap")


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise SpecError(f"{where}: X must be a list of column names, got {value!r}")
    return tuple(value)


def _aggregate(item: Any, where: str) -> Aggregate:
    if isinstance(item, Aggregate):
        return item
    if isinstance(item, Mapping):
        item = [item.get("function", item.get("af")), item.get("attribute", item.get("A")),
                item.get("alias", item.get("B"))]
    if isinstance(item, str):  # "count(*) as recCount" is not parsed: keep one format
        raise SpecError(f"{where}: cannot read the aggregate {item!r}",
                        hint="write [function, attribute, alias], e.g. [count, '*', recCount]")
    if not isinstance(item, (list, tuple)) or len(item) not in (2, 3):
        raise SpecError(f"{where}: an aggregate is [function, attribute, alias], got {item!r}")
    fn, attr = str(item[0]).lower(), item[1]
    alias = item[2] if len(item) == 3 else f"{fn}_{'all' if attr == ALL_COLUMNS else attr}"
    if fn not in FUNCTIONS:
        raise SpecError(f"{where}: unknown aggregate function {item[0]!r}", hint=f"use one of {', '.join(FUNCTIONS)}")
    if not isinstance(attr, str) or not attr:
        raise SpecError(f"{where}: the aggregate {item!r} names no attribute", hint="use a column name or '*'")
    if attr == ALL_COLUMNS and fn not in ("count", "hash"):
        raise SpecError(f"{where}: {fn}(*) is not an aggregate", hint="only count and hash take '*'")
    if not isinstance(alias, str) or not alias:
        raise SpecError(f"{where}: the aggregate {item!r} has no alias")
    return Aggregate(fn, attr, alias)


def _side(value: Any, where: str) -> Side:
    if isinstance(value, Side):
        return value
    if isinstance(value, str) or isinstance(value, os.PathLike):
        text = os.fspath(value)
        if "://" in text and not text.startswith("file:"):
            raise SpecError(f"{where}: a database URL needs a table or a query",
                            hint="write {url: ..., table: NAME} or {url: ..., query: 'SELECT ...'}")
        return Side(table=text)
    if hasattr(value, "schema") and hasattr(value, "groupBy") or callable(value):
        return Side(frame=value)
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: a side is a table source or a mapping with url/table/query, got {value!r}")
    unknown = set(value) - {"url", "table", "query", "tables", "columns", "frame", "engine", "relation",
                            "tau_inverse_sql"}
    if unknown:
        raise SpecError(f"{where}: unknown keys {sorted(unknown)}",
                        hint="a side has url, table, query, tables and columns")
    url = value.get("url")
    if value.get("engine") not in (None, "spark") and url is None:
        raise SpecError(f"{where}: engine {value.get('engine')!r} needs a url")
    table = value.get("table", value.get("relation"))
    query = value.get("query", value.get("tau_inverse_sql"))
    frame = value.get("frame")
    given = [k for k, v in (("table", table), ("query", query), ("frame", frame)) if v is not None]
    if len(given) != 1:
        raise SpecError(f"{where}: give exactly one of table, query (tau^-1) or frame, got {given or 'none'}")
    tables = value.get("tables") or {}
    columns = value.get("columns") or {}
    if not isinstance(tables, Mapping) or not isinstance(columns, Mapping):
        raise SpecError(f"{where}: tables and columns are mappings of names")
    if tables and (url not in (None, "spark") or query is None):
        raise SpecError(f"{where}: tables (Spark views for a query) only go with a Spark query",
                        hint="in a database, name its tables directly in the query")
    side = Side(url=None if url in (None, "spark") else str(url),
                table=None if table is None else table if hasattr(table, "schema") else os.fspath(table),
                query=query, tables={str(k): v if hasattr(v, "schema") else os.fspath(v) for k, v in tables.items()},
                columns={str(k): str(v) for k, v in columns.items()}, frame=frame)
    side.engine_kind  # noqa: B018 - checks the scheme
    return side


def _int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: {what} must be an integer, got {value!r}")
    return value


def parse_pair(raw: Mapping[str, Any] | CompareSpec, index: int = 0) -> CompareSpec:
    """One compare spec from a mapping, checked (M2, M3); see the module docstring for the shape."""
    if isinstance(raw, CompareSpec):
        return validate_pair(raw)
    if not isinstance(raw, Mapping):
        raise SpecError(f"pair #{index + 1} is not a mapping")
    name = str(raw.get("name") or f"pair{index + 1}")
    where = f"pair {name!r}"
    unknown = set(raw) - {"name", "priority", "healthy_depth", "source", "target", "levels", "aggregates",
                          "abs_tol", "rel_tol", "tolerance"}
    if unknown:
        raise SpecError(f"{where}: unknown keys {sorted(unknown)}",
                        hint="a pair has name, priority, healthy_depth, source, target, aggregates, levels, tolerance")
    for part in ("source", "target", "levels"):
        if raw.get(part) in (None, [], {}):
            raise SpecError(f"{where} has no {part}")
    default_a = raw.get("aggregates")
    levels_raw = raw["levels"]
    if not isinstance(levels_raw, (list, tuple)):
        raise SpecError(f"{where}: levels must be a list")
    levels = []
    for i, lv in enumerate(levels_raw):
        lw = f"{where}, level {i + 1}"
        if isinstance(lv, Level):
            levels.append(lv)
            continue
        if isinstance(lv, (list, tuple, str)) or lv is None:
            lv = {"X": lv}
        if not isinstance(lv, Mapping):
            raise SpecError(f"{lw}: a level is {{X: [...], A: [...]}}")
        aggs = lv.get("A", default_a)
        if not aggs:
            raise SpecError(f"{lw} has no aggregates", hint="give A on the level or aggregates on the pair")
        levels.append(Level(_names(lv.get("X"), lw), tuple(_aggregate(a, lw) for a in aggs)))
    tol = raw.get("tolerance") or {}
    pair = CompareSpec(
        name=name, source=_side(raw["source"], f"{where}, source"), target=_side(raw["target"], f"{where}, target"),
        levels=tuple(levels), priority=_int(raw.get("priority", 0), "priority", where),
        healthy_depth=_int(raw.get("healthy_depth", 1), "healthy_depth", where),
        abs_tol=float(tol.get("abs", raw.get("abs_tol", 1e-9))), rel_tol=float(tol.get("rel", raw.get("rel_tol", 1e-9))))
    return validate_pair(pair)


def validate_pair(pair: CompareSpec) -> CompareSpec:
    """Check one pair without any engine: M2 (nesting), M3 (aggregates), depths, tolerances, H3."""
    where = f"pair {pair.name!r}"
    if not pair.levels:
        raise SpecError(f"{where} has no levels", hint="give at least one level, e.g. X: []")
    previous: tuple[str, ...] | None = None
    for i, lv in enumerate(pair.levels):
        lw = f"{where}, level {i + 1}"
        if len(set(lv.X)) != len(lv.X):
            raise SpecError(f"{lw}: X names a column twice: {list(lv.X)}")
        if previous is not None and not (set(previous) < set(lv.X)):
            raise SpecError(
                f"{lw}: the levels are not nested: X{i}={list(previous)} must be a strict subset of X{i + 1}={list(lv.X)}",
                hint="each level adds at least one column to the one before (X1 ⊂ X2 ⊂ ...; X1 may be [])")
        previous = lv.X
        if not lv.A:
            raise SpecError(f"{lw} has no aggregates")
        aliases: set[str] = set()
        for a in lv.A:
            if a.function not in FUNCTIONS:
                raise SpecError(f"{lw}: unknown aggregate function {a.function!r}")
            if a.attribute in lv.X:
                raise SpecError(f"{lw}: the aggregate {a.function}({a.attribute}) is on a fragmentation column",
                                hint="aggregate only attributes outside X (values in X are equal by definition); "
                                     "use [count, '*', ALIAS] to count rows")
            if a.alias in aliases or a.alias in lv.X:
                raise SpecError(f"{lw}: the alias {a.alias!r} is used twice or collides with X")
            aliases.add(a.alias)
            if a.function == "hash" and not pair.same_engine:
                raise SpecError(f"{lw}: the hash aggregate needs both sides in the same engine; "
                                f"{pair.source.describe()} and {pair.target.describe()} differ",
                                hint="use native aggregates (count, sum, min, max) across engines (H3)")
            if a.function == "hash" and pair.source.engine_kind not in ("spark", "duckdb"):
                raise SpecError(f"{lw}: the hash aggregate runs on Spark (dqkit.primitives.fingerprint) and DuckDB only",
                                hint="use count, sum, min and max in this database")
    if not 1 <= pair.healthy_depth <= pair.full_depth:
        raise SpecError(f"{where}: healthy_depth {pair.healthy_depth} is outside 1..{pair.full_depth}",
                        hint="healthy_depth is the deepest level a pair without differences is compared at")
    if pair.abs_tol < 0 or pair.rel_tol < 0:
        raise SpecError(f"{where}: tolerances must not be negative")
    return pair


def parse_spec(raw: Mapping[str, Any] | Sequence[Any]) -> TcfcSpec:
    """A ``TcfcSpec`` from parsed YAML/JSON (a mapping with ``pairs``, or a bare list of pairs)."""
    if isinstance(raw, (list, tuple)):
        raw = {"pairs": raw}
    if not isinstance(raw, Mapping):
        raise SpecError("a TCFC spec is a mapping with a 'pairs' list")
    unknown = set(raw) - {"pairs", "comparisons", "budget", "max_batch", "statistics"}
    if unknown:
        raise SpecError(f"unknown top-level keys {sorted(unknown)}",
                        hint="a spec has pairs, budget, max_batch and statistics")
    pairs_raw = raw.get("pairs", raw.get("comparisons"))
    if not pairs_raw or not isinstance(pairs_raw, (list, tuple)):
        raise SpecError("the spec has no pairs", hint="list at least one pair under 'pairs:'")
    pairs = tuple(parse_pair(p, i) for i, p in enumerate(pairs_raw))
    names = [p.name for p in pairs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"pair names must be unique: {dup} repeat")
    max_batch = None if raw.get("max_batch") is None else _int(raw["max_batch"], "max_batch", "spec")
    if max_batch is not None and max_batch < 1:
        raise SpecError("max_batch must be at least 1")
    statistics = raw.get("statistics", False)
    if not isinstance(statistics, bool):
        raise SpecError(f"statistics must be true or false, not {statistics!r}",
                        hint="statistics: true lets X = [] COUNT roots use exact Parquet footer row counts (P4)")
    return TcfcSpec(pairs, check_budget(raw.get("budget")), max_batch, statistics)


def load_spec(path_or_text: str | os.PathLike | Mapping[str, Any] | TcfcSpec) -> TcfcSpec:
    """Load and check a spec from a YAML or JSON file (or an already parsed mapping) (M7)."""
    if isinstance(path_or_text, TcfcSpec):
        return path_or_text
    if isinstance(path_or_text, (Mapping, list, tuple)):
        return parse_spec(path_or_text)
    from dqkit.io.filecheck import load_yaml

    path = Path(os.fspath(path_or_text))
    if not path.exists():
        raise SpecError(f"no such spec file: {path}", hint="pass a YAML or JSON file")
    raw = load_yaml(path, "the TCFC spec", error=SpecError,  # YAML is a superset of JSON
                    hint="fix the spec file: a YAML/JSON mapping with 'pairs:'")
    if not isinstance(raw, (Mapping, list)):
        raise SpecError(f"the TCFC spec {path} holds a {type(raw).__name__}, not a mapping with 'pairs:'",
                        hint="a spec is a YAML/JSON mapping: pairs, budget, max_batch, statistics")
    spec = parse_spec(raw)
    return _relative_to(spec, path.parent)


def _relative_to(spec: TcfcSpec, base: Path) -> TcfcSpec:
    """Relative local paths in a spec file are read from the file's folder."""
    def fix(text: str | None) -> str | None:
        if text is None or text.startswith("catalog:") or "://" in text:
            return text
        p = Path(text)
        cand = p if p.is_absolute() else base / p
        return str(cand) if cand.exists() else text

    def fix_url(url: str | None) -> str | None:
        if url is None or not url.startswith(("sqlite:///", "duckdb:///")):
            return url
        scheme, rest = url.split(":///", 1)
        if rest.startswith("/") or rest == ":memory:" or not (base / rest).exists():
            return url
        return f"{scheme}:///{(base / rest).as_posix()}"

    def side(s: Side) -> Side:
        if s.url is None:
            return replace(s, table=fix(s.table), tables={k: fix(v) or v for k, v in s.tables.items()})
        return replace(s, url=fix_url(s.url))

    return replace(spec, pairs=tuple(replace(p, source=side(p.source), target=side(p.target)) for p in spec.pairs))


def dump_spec(spec: TcfcSpec) -> str:
    """The spec as YAML text; ``load_spec`` of it gives the same spec back (M7)."""
    import yaml

    return yaml.safe_dump(spec.to_dict(), sort_keys=False, allow_unicode=True)


SideLike = Side | Mapping[str, Any] | str | Callable[[], Any]
