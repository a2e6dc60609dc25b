"""Checks that need no Spark, run by every command before a SparkSession starts.

The path, schema, file and output helpers, and the per-command checks of rules, dedup and lake that
call them (delta's, with its schema changes, are in ``dqkit.delta.preflight``).

A typo'd path, a rule file in the wrong encoding, a column that does not exist, a threshold of 7 or
an ``--out`` folder inside an input are refused here, in well under a second, with exit 2 and a hint,
instead of after a JVM has started. Nothing here imports pyspark or pandas: schemas come from Parquet
footers (pyarrow) and CSV headers (the csv module); rules, specs and queries are parsed with dqkit's
Spark-free parsers. A check that cannot be decided without Spark (a JSON table's columns, a catalog
table, a CSV in another dialect) is left to the kernel, never guessed.

Plain functions, so the CLI, the report adapters and the parameter registry can all call them.
"""
from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dqkit.errors import ParameterError, RuleError, SourceError, UnknownColumnError, UnknownTableError

CATALOG_PREFIX = "catalog:"
_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json"}
_COMPRESSIONS = {".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".xz"}
_TABLE_HINT = "check the path; a table is a Parquet, CSV or JSON file, a folder of them, or catalog:db.table"
TABLE_FILE_SUFFIXES = (".csv", ".parquet")
#: single files an ``--out`` may name besides folders: tables, and rules files (``discover --out RULES.yaml``)
OUTPUT_FILE_SUFFIXES = TABLE_FILE_SUFFIXES + (".yaml", ".yml")


# ------------------------------------------------------------------------------------------ paths
def _is_catalog(source: Any) -> bool:
    return isinstance(source, str) and source.startswith(CATALOG_PREFIX)


def file_format(name: str) -> str | None:
    """``parquet``, ``csv`` or ``json`` for a data file name (``users.csv.gz`` too); None otherwise."""
    suffixes = Path(name.lower()).suffixes
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        suffixes = suffixes[:-1]
    return _FORMATS.get(suffixes[-1]) if suffixes else None


def _ignored(name: str) -> bool:
    return name.startswith((".", "_")) or name.endswith(".crc")


def _data_files(folder: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not _ignored(d))
        out += [Path(root) / f for f in sorted(files)
                if not _ignored(f) and (file_format(f) is not None or f.startswith("part-"))]
    return out


def check_readable(path: str | os.PathLike, what: str) -> Path:
    """``path`` exists and can be read (a folder: listed); else ``SourceError`` naming ``what``."""
    p = Path(os.fspath(path)).expanduser()
    if not str(path).strip():
        raise SourceError(f"{what} is empty", hint=_TABLE_HINT)
    if not p.exists():
        raise SourceError(f"{what}: no such file or folder: {os.fspath(path)}", hint=_TABLE_HINT)
    if not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0)):
        raise SourceError(f"{what}: {os.fspath(path)} is not readable (permission denied)",
                          hint="fix its permissions, or copy it somewhere readable")
    return p


def check_table(source: Any, what: str = "the table") -> Path | None:
    """A table source that can be checked: exists, readable, a recognised format. None: a catalog
    table or an in-memory DataFrame (checked by Spark)."""
    if not isinstance(source, (str, os.PathLike)) or _is_catalog(source):
        return None
    p = check_readable(source, what)
    if p.is_file() and file_format(p.name) is None:
        raise SourceError(f"{what}: cannot tell the format of {p}: expected a .parquet, .csv or .json file",
                          hint="rename the file with its format's extension, or point at a folder of tables")
    if p.is_dir() and not _data_files(p):
        raise SourceError(f"{what}: the folder {p} holds no Parquet, CSV or JSON files", hint=_TABLE_HINT)
    return p


def table_columns(path: Path | None) -> list[str] | None:
    """The column names of a table file or folder, read without Spark: the Parquet footer or the CSV
    header. None when they cannot be known without Spark (JSON, a catalog, another CSV dialect)."""
    if path is None:
        return None
    files = [path] if path.is_file() else _data_files(path)
    if not files:
        return None
    first = files[0]
    fmt = _table_format(first)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(first).names)
        except Exception as exc:  # noqa: BLE001 - any footer error means the file is not readable Parquet
            raise SourceError(f"{first} is not a readable Parquet file: {str(exc).splitlines()[0][:200]}",
                              hint="the file is corrupt or incomplete; restore or rewrite it") from None
    if fmt == "csv" and first.name.lower().endswith(".csv"):
        return _csv_header(first)
    return None


def _table_format(f: Path) -> str | None:
    """A data file's format by its name, Spark's ``part-...parquet`` files included."""
    return file_format(f.name) or ("parquet" if f.name.startswith("part-") and "parquet" in f.name else None)


def record_bound(table: Any) -> int | None:
    """At most how many records the table file or folder ``table`` holds, read without Spark: the row
    counts of its Parquet footers (exact), or the lines of its plain CSV files (a record ends one line
    at least; a quoted field over several lines only raises the bound). None when it cannot be known
    so (a DataFrame, a catalog table, JSON, compressed CSV, an unreadable footer)."""
    if not isinstance(table, (str, os.PathLike)):
        return None
    path = Path(os.fspath(table)).expanduser()
    try:
        files = [path] if path.is_file() else _data_files(path) if path.is_dir() else []
        if not files:
            return None
        total = 0
        for f in files:
            fmt = _table_format(f)
            if fmt == "parquet":
                import pyarrow.parquet as pq

                total += pq.ParquetFile(f).metadata.num_rows
            elif fmt == "csv" and f.name.lower().endswith(".csv"):
                with open(f, "rb") as fh:
                    lines, last = 0, b""
                    for chunk in iter(lambda: fh.read(1 << 24), b""):
                        lines, last = lines + chunk.count(b"\n"), chunk[-1:]
                total += lines + (last not in (b"", b"\n"))
            else:
                return None
        return total
    except Exception:  # noqa: BLE001 - a bound that cannot be read is unknown, never an error here
        return None


def _csv_header(path: Path) -> list[str] | None:
    """The header of a comma-separated file (a BOM is dropped); None for another dialect or a file
    that is not UTF-8 (left to the reader, which says more)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            first = fh.readline(1 << 20)
    except UnicodeDecodeError:
        return None
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}", hint="check its permissions") from None
    if not first.strip() or ("," not in first and any(c in first for c in ";\t|")) or '""' in first \
            or "\\" in first:
        return None  # another dialect, or quoting Spark's reader (escape: backslash) may read otherwise
    try:
        return [c.strip() for c in next(csv.reader([first]))]
    except (csv.Error, StopIteration):
        return None


def database_tables(source: Any, what: str) -> dict[str, Path] | None:
    """{table name: path} of a database source (a folder of tables, or one table), checked to exist;
    None for a catalog database or a layout only the reader can judge."""
    if not isinstance(source, (str, os.PathLike)) or _is_catalog(source):
        return None
    p = check_readable(source, what)
    if p.is_file():
        check_table(p, what)
        return {_table_name(p): p}
    children = sorted(c for c in p.iterdir() if not _ignored(c.name) or c.name == "_SUCCESS")
    if any(c.name == "_SUCCESS" or c.name.startswith("part-") or (c.is_dir() and "=" in c.name) for c in children):
        return {p.name: p}
    tables = {_table_name(c): c for c in children if (c.is_dir() and _data_files(c)) or
              (c.is_file() and file_format(c.name))}
    if not tables:
        raise SourceError(f"{what}: the folder {p} holds no tables (Parquet, CSV or JSON files or folders of them)",
                          hint=_TABLE_HINT)
    return tables


def _table_name(p: Path) -> str:
    fmt = file_format(p.name)
    if fmt is None:
        return p.name
    name = p.name
    if Path(name.lower()).suffix in _COMPRESSIONS:
        name = name[: -len(Path(name).suffix)]
    return name[: -len(Path(name).suffix)]


def check_columns(names: Iterable[str], columns: Sequence[str] | None, what: str) -> None:
    """Every name in ``names`` is a column (when the columns are known); else ``UnknownColumnError``."""
    if columns is None:
        return
    for name in names:
        if name not in columns:
            close = [c for c in columns if c.lower() == str(name).lower()]
            raise UnknownColumnError(f"{what}: unknown column {name!r}",
                                     hint=(f"did you mean {close[0]!r}? " if close else "")
                                     + f"columns: {', '.join(columns)}")


# ------------------------------------------------------------------------------------------ files
def read_text_file(path: str | os.PathLike, what: str, error: type = ParameterError) -> str:
    """The text of a small input file (rules, config, spec): it exists, is readable, not empty, UTF-8
    and not binary (``dqkit.io.filecheck.read_text``, the one implementation)."""
    from dqkit.io.filecheck import read_text

    return read_text(path, what, error=error, hint="check the path, and give a UTF-8 text or YAML file")


def load_rule_file(path: str | os.PathLike) -> list[Any]:
    """The rules of one rules file, refusing a binary, non-UTF-8 or empty file, or one without a rule
    (``RuleError``)."""
    from dqkit.rules import parse_rules, rules_from_yaml

    text = read_text_file(path, "the rules file", RuleError)
    p = os.fspath(path)
    rules = rules_from_yaml(text, p) if p.endswith((".yaml", ".yml")) else parse_rules(text)
    if not rules:
        raise RuleError(f"the rules file {p} holds no rules", hint="write one rule per line, e.g. zip -> city")
    return rules


def check_rule_columns(rules: Iterable[Any], columns: Sequence[str] | None) -> None:
    """Every column a rule names exists in the table (when its columns are known)."""
    for rule in rules:
        check_columns(getattr(rule, "columns", ()), columns, f"rule {getattr(rule, 'name', rule)!r}")


def check_yaml_file(path: str | os.PathLike, what: str) -> Any:
    """A YAML (or JSON) input file that is readable text and parses; returns the document."""
    import yaml

    text = read_text_file(path, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ParameterError(f"{what} {os.fspath(path)}{where} is not valid YAML: "
                             f"{getattr(exc, 'problem', None) or exc}", hint="fix the YAML") from None


# ------------------------------------------------------------------------------------------ output
def _inside(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


def check_out(target: str | os.PathLike | None, inputs: Iterable[Any] = (), overwrite: bool = False) -> None:
    """Refuse an ``--out`` that would destroy data: the input itself, inside an input, holding an
    input, under a file, or existing (unless ``overwrite``). ``catalog:DB`` is checked when saving."""
    if target is None:
        return
    text = os.fspath(target)
    if not text.strip():
        raise ParameterError("the output target is empty", hint="name a folder or catalog:DB")
    if text.startswith(CATALOG_PREFIX):
        return
    out = Path(text).expanduser().resolve()
    for source in inputs:
        if not isinstance(source, (str, os.PathLike)) or _is_catalog(source) or not os.fspath(source):
            continue
        inp = Path(os.fspath(source)).expanduser().resolve()
        if out == inp or _inside(out, inp) or _inside(inp, out):
            raise ParameterError(f"the output {out} would overwrite the input {inp}",
                                 hint="write the output to a folder outside every input")
    for parent in [out, *out.parents]:
        if parent.exists():
            if parent != out and not parent.is_dir():
                raise ParameterError(f"cannot write the output under {parent}: it is a file, not a folder",
                                     hint="choose a folder path")
            break
    from dqkit.runtime.atomic import sweep

    sweep(out)  # what a killed run left beside this output goes first (it may finish a killed commit)
    if out.exists() and not overwrite:
        raise ParameterError(f"the output {out} exists", hint="choose a new folder, or pass --overwrite to replace it")
    if out.exists() and not out.is_dir() and out.suffix.lower() not in OUTPUT_FILE_SUFFIXES:
        raise ParameterError(f"the output {out} is a file, not a folder", hint="choose a folder path")


# ------------------------------------------------------------------------------------------ numbers
def check_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                 integer: bool = False, low_open: bool = False) -> float | int | None:
    """``value`` (None passes) as a number within [low, high] (``low_open``: above low); else
    ``ParameterError`` naming the option and the range."""
    if value is None:
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value) if integer and float(value) == int(float(value)) else float(value)
        if integer and not isinstance(number, int):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        kind = "a whole number" if integer else "a number"
        raise ParameterError(f"{name} must be {kind}, not {value!r}") from None
    if number != number or (low is not None and (number <= low if low_open else number < low)) or \
            (high is not None and number > high):
        lo = "" if low is None else (f"more than {low:g}" if low_open else f"at least {low:g}")
        hi = "" if high is None else f"at most {high:g}"
        raise ParameterError(f"{name} must be {' and '.join(x for x in (lo, hi) if x)}, not {value!r}",
                             hint=f"pass {name} within that range")
    return number


# ------------------------------------------------------------------------------------------ commands
def _split(value: Any, sep: str = ",") -> list[str]:
    from dqkit.checks.params import split_list

    return split_list(value, sep)


def check_table_columns(columns: Sequence[str] | None, table: Any, command: str) -> None:
    """A table read from its footer or header has columns, none named like dqkit's own (no Spark)."""
    from dqkit.checks.reserved import check_reserved

    if columns is None:
        return
    if not columns:
        raise SourceError(f"{os.fspath(table)} has no columns",
                          hint="a table needs at least one column: remove the file, or write it with its columns")
    check_reserved(columns, table=os.fspath(table), command=command)


def rules_command(table: Any, rule_files: Sequence[Any], *, key: str | None = None, out: Any = None,
                  overwrite: bool = False, numbers: Mapping[str, tuple[Any, dict[str, Any]]] | None = None,
                  command: str = "detect") -> list[Any]:
    """``dqkit detect`` / ``repair``: the table and rule files exist, rules parse and name columns of
    the table, the key is a column, numbers are in range, ``--out`` is safe. Returns the rules."""
    if not rule_files:
        raise ParameterError("no rules given", hint="pass --rules FILE (repeat for several files)")
    path = check_table(table)
    for f in rule_files:
        check_readable(f, "--rules")
    check_out(out, [table, *rule_files], overwrite)
    for name, (value, limits) in (numbers or {}).items():
        check_number(value, name, **limits)
    rules = [r for f in rule_files for r in load_rule_file(f)]
    columns = table_columns(path)
    check_table_columns(columns, table, command)
    if key:
        check_columns([key], columns, "--key")
    check_rule_columns(rules, columns)
    return rules


def dedup(table: Any, key: str, config: Any, *, link: Any = None, threshold: Any = None, out: Any = None,
          overwrite: bool = False) -> None:
    """``dqkit dedup``: tables and config exist, the key is a column of each table, 0 <= threshold <= 1,
    ``DQKIT_DEDUP_DRIVER_PAIRS`` (if set) a pair count."""
    check_number(threshold, "--threshold", low=0, high=1)
    dedup_driver_pairs()
    paths = [check_table(table)] + ([check_table(link, "--link")] if link is not None else [])
    check_readable(config, "--config")
    check_out(out, [table, config, *([link] if link is not None else [])], overwrite)
    if not isinstance(check_yaml_file(config, "the dedup config"), Mapping):
        raise ParameterError(f"the dedup config {config} is not a YAML mapping",
                             hint="`dqkit dedup --example-config` prints an example")
    for p in paths:
        columns = table_columns(p)
        check_table_columns(columns, p, "dedup")
        check_columns([key], columns, "--key")


#: the environment variable bounding dedup's driver route (``dqkit.dedup._driver``), and its default
DEDUP_DRIVER_PAIRS_ENV = "DQKIT_DEDUP_DRIVER_PAIRS"
DEDUP_DRIVER_PAIRS = 10_000_000


def dedup_driver_pairs(environ: Mapping[str, str] | None = None) -> int:
    """``DQKIT_DEDUP_DRIVER_PAIRS``: at most this many candidate pairs (and records) are scored on the
    driver (default ``DEDUP_DRIVER_PAIRS``; 0: always on Spark); else ``ParameterError`` naming it."""
    raw = (os.environ if environ is None else environ).get(DEDUP_DRIVER_PAIRS_ENV)
    if raw is None or not raw.strip():
        return DEDUP_DRIVER_PAIRS
    text = raw.strip().replace("_", "")
    if not (text.isascii() and text.isdigit()):
        raise ParameterError(f"{DEDUP_DRIVER_PAIRS_ENV} must be a whole number of pairs (0 or more), not {raw!r}",
                             hint=f"unset it (default {DEDUP_DRIVER_PAIRS:,}), set it to 0 to score every dedup "
                                  f"on Spark, or to a pair count such as {DEDUP_DRIVER_PAIRS}")
    return int(text)


def lake(source: Any, *, s: Any = 4, t: Any = 10, seed: Any = 0, costs: Any = None, out: Any = None,
         overwrite: bool = False) -> None:
    """``dqkit lake``: the lake folder exists, s and t are at least 1, the cost file is text."""
    database_tables(source, "the lake")
    check_number(s, "--s", low=1, integer=True)
    check_number(t, "--t", low=1, integer=True)
    check_number(seed, "--seed", integer=True)
    check_out(out, [source] + ([costs] if costs else []), overwrite)
    if costs:
        read_text_file(costs, "the cost file")
