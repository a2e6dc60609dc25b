"""RulesController: a table and the FD and DC rules written for it, checked on every edit without Spark.

The rules editor's state (``RulePicker`` is its view): each line parsed with ``dqkit.rules.parse_rule``
and checked against the table's column types; a bad line is a ``RuleProblem`` with the line, the cause,
the hint and a caret under the error. Plain Python (no ipywidgets), so tests drive it headlessly.
"""
from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.errors import ParameterError, RuleError, UnknownColumnError
from dqkit.contract.result import Table, sections_html
from dqkit.rules import parse_rule, rules_from_yaml, validate_rules
from dqkit.io.sources import DatabaseSource
from dqkit.widgets.controllers import TableListing, _Observable
from dqkit.widgets.result_view import wrap

__all__ = ["RuleProblem", "RulesController"]

#: Where a ``RuleError`` from the parser puts the error: ``rule 'name', column N: cause``.
_POSITION = re.compile(r", column (\d+): ")
#: A column name the rule parser reads without backticks.
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_EXAMPLES = "phiF: zipcode -> city\nphiD: not(t1.rate > t2.rate and t1.salary < t2.salary)"


# ------------------------------------------------------------------------------------------ problems
@dataclass(frozen=True)
class RuleProblem:
    """What is wrong with one line of rules: the line as written, the cause, the hint and, when the
    error has a position, ``caret`` (0-based offset in ``text``) so the view can point at it."""

    line: int  # 1-based line of the rules text; 0 for the rules as a whole
    text: str
    message: str
    hint: str | None = None
    caret: int | None = None

    def pointer(self) -> str:
        """The rule line with a caret under the error position (the line alone when there is none)."""
        return self.text if self.caret is None else f"{self.text}\n{' ' * self.caret}^"

    def to_text(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}\n{self.pointer()}" + (f"\nHint: {self.hint}" if self.hint else "")

    def to_html(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        hint = f"<div class='muted'>Hint: {render.esc(self.hint)}</div>" if self.hint else ""
        return (f"<div class='bad'>{render.esc(where + self.message)}</div>"
                f"<pre style='margin:2px 0 4px;padding:4px 6px;background:#f6f8fa'>{render.esc(self.pointer())}</pre>"
                f"{hint}")


def _parse_problem(lineno: int, line: str, exc: RuleError) -> RuleProblem:
    """A parser error on ``line``: the caret goes under the column the error names (it counts from the
    rule's body, after any ``name:`` prefix, so the body's offset in the line is added)."""
    first, *rest = exc.message.split("\n")
    m = _POSITION.search(first)
    caret = None
    if m and rest:
        body = rest[0][2:]  # the error repeats the body, indented by two spaces
        end = len(line.rstrip())
        if body and line.rstrip().endswith(body):
            caret = end - len(body) + int(m.group(1)) - 1
    return RuleProblem(lineno, line, first, exc.hint, caret)


def _column_caret(line: str, body_start: int, column: str) -> int | None:
    """Offset in ``line`` of the first mention of ``column`` after ``body_start`` (None if not found)."""
    m = re.compile(r"(?<![\w`])`?" + re.escape(column) + r"`?(?![\w`])").search(line, body_start)
    return None if m is None else m.start()


def _body(line: str, name: str) -> tuple[str, int]:
    """The rule text of a stripped line without its ``name:`` prefix, and where it starts in ``line``."""
    s = line.strip()
    start = len(line) - len(line.lstrip())
    if s == name:
        return s, start
    m = re.match(r"\s*" + re.escape(name) + r"\s*:(?!=)\s*", s)
    if m and s[m.end():]:
        return s[m.end():], start + m.end()
    return s, start


def _ident(column: str) -> str:
    """A column as the rule parser reads it (backticks around names that are not plain identifiers)."""
    return column if _PLAIN_NAME.fullmatch(column) else "`" + column.replace("`", "``") + "`"


def _rule_line(name: str, body: str) -> str:
    """``name: body`` as one editor line (just ``body`` for an unnamed rule, whose name is its text)."""
    return body if name == body else f"{name}: {body}"


# ----------------------------------------------------------------------------------------- controller
class RulesController(_Observable):
    """A table and the rules written for it, checked on every edit without any Spark job.

    ``text`` holds the rules one per line (``name: rule``, ``#`` comments), as ``dqkit.rules.parse_rules``
    reads them. ``set_text`` parses each line with ``parse_rule`` and checks the rule against the
    table's column types with ``validate_rules``: ``rules`` are the rules that passed, ``problems`` one
    ``RuleProblem`` per bad line, so every mistake shows at once, each with its caret and hint.
    ``source`` is a database (folder, ``catalog:DB``, a ``{name: table}`` mapping), one table path or
    DataFrame, or a ``TableListing``.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any, *, table: str | None = None,
                 rules: Any = None, spark: SparkSession | None = None) -> None:
        super().__init__()
        if isinstance(source, TableListing):
            self.listing = source
        else:
            single = not isinstance(source, (str, os.PathLike, Mapping))
            self.listing = TableListing({"table": source} if single else source, spark)
        self.table: str | None = None
        self.text = ""
        self.rules: list[Any] = []
        self.problems: list[RuleProblem] = []
        self._bodies: dict[str, str] = {}
        tables = self.listing.tables
        if table is not None:
            self.select_table(table)
        elif tables:
            self.table = tables[0]
        if rules is not None:
            self.set_rules(rules)

    # ----- the table
    @property
    def tables(self) -> list[str]:
        return self.listing.tables

    def columns(self) -> list[tuple[str, str]]:
        """(column, type) pairs of the chosen table (none when no table is chosen)."""
        return self.listing.schema(self.table) if self.table in self.listing.frames else []

    def types(self) -> dict[str, str]:
        return dict(self.columns())

    def frame(self) -> Any:
        """The chosen table as a DataFrame."""
        return self.listing.frame(self.table)

    def select_table(self, table: str | None) -> None:
        """Choose the table the rules are written for; the rules are checked again against its columns."""
        self.listing.check(table)
        self.table = table
        self._changed("table")
        self.set_text(self.text)

    def refresh(self) -> None:
        """Re-read the table list; the chosen table stays if it still exists."""
        self.listing.refresh()
        keep = self.table if self.table in self.listing.frames else (self.tables[0] if self.tables else None)
        self.select_table(keep)

    # ----- the rules
    @property
    def valid(self) -> bool:
        """True when there is at least one rule and no problem."""
        return bool(self.rules) and not self.problems

    def set_text(self, text: str) -> None:
        """Replace the rules text and check every line (the live validation of the editor)."""
        self.text = text
        types = self.types()
        rules: list[Any] = []
        problems: list[RuleProblem] = []
        bodies: dict[str, str] = {}
        first_line: dict[str, int] = {}
        for lineno, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            try:
                rule = parse_rule(s)
            except RuleError as exc:
                problems.append(_parse_problem(lineno, line, exc))
                continue
            body, start = _body(line, rule.name)
            if rule.name in first_line:
                problems.append(RuleProblem(lineno, line, f"rule name {rule.name!r} is used more than once "
                                            f"(first on line {first_line[rule.name]})",
                                            "give every rule its own name", len(line) - len(line.lstrip())))
                continue
            first_line[rule.name] = lineno
            if types:
                try:
                    validate_rules([rule], types)
                except UnknownColumnError as exc:
                    unknown = next((c for c in rule.columns if c not in types), None)
                    caret = _column_caret(line, start, unknown) if unknown is not None else None
                    problems.append(RuleProblem(lineno, line, exc.message, exc.hint, caret))
                    continue
                except RuleError as exc:
                    problems.append(RuleProblem(lineno, line, exc.message, exc.hint))
                    continue
            rules.append(rule)
            bodies[rule.name] = body
        self.rules, self.problems, self._bodies = rules, problems, bodies
        self._changed("rules")

    def set_rules(self, rules: Any) -> None:
        """Load rules given as a rules file path, rule text (one per line) or a list of rules or texts."""
        if isinstance(rules, os.PathLike) or (isinstance(rules, str) and "\n" not in rules
                                              and os.path.isfile(rules)):
            self.load(rules)
        elif isinstance(rules, str):
            self.set_text(rules)
        else:
            lines = []
            for r in rules:
                if isinstance(r, str):
                    lines.append(r)
                else:
                    lines.append(_rule_line(r.name, str(r)))
            self.set_text("\n".join(lines))

    def add_rule(self, line: str) -> None:
        """Append one rule line to the text (and check it)."""
        text = self.text.rstrip("\n")
        self.set_text(f"{text}\n{line}" if text else line)

    def add_fd(self, lhs: Sequence[str], rhs: Sequence[str], name: str | None = None) -> str:
        """Append the FD ``lhs -> rhs`` (named ``name``, or ``fdN``); returns the line added."""
        if not lhs or not rhs:
            raise ParameterError("an FD needs columns on both sides",
                                 hint="pick the columns that determine (left) and the determined ones (right)")
        if not name:
            taken = {r.name for r in self.rules} | set(re.findall(r"^\s*(fd\d+)\s*:", self.text, re.M))
            name = next(f"fd{i}" for i in range(1, len(taken) + 2) if f"fd{i}" not in taken)
        line = f"{name}: {', '.join(map(_ident, lhs))} -> {', '.join(map(_ident, rhs))}"
        self.add_rule(line)
        return line

    def check(self) -> list[Any]:
        """The rules, or a ``RuleError`` naming the first problem (what a run calls before Spark starts)."""
        if self.problems:
            p = self.problems[0]
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise RuleError(f"the rules have a problem{more}: " + p.to_text().split("\nHint: ")[0], hint=p.hint)
        if not self.rules:
            raise RuleError("no rules to check", hint="write one rule per line, e.g. " + _EXAMPLES.splitlines()[0])
        return list(self.rules)

    # ----- files
    def to_yaml(self) -> str:
        """The rules as YAML in the form ``rules_from_yaml`` reads (``rules: [{name, rule}, ...]``)."""
        import yaml

        rules = self.check()
        doc = {"rules": [{"name": r.name, "rule": self._bodies.get(r.name, str(r))} for r in rules]}
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)

    def from_yaml(self, text: str, source: str = "<yaml>") -> None:
        """Replace the rules with those of a rules YAML (a malformed file leaves the rules as they were)."""
        rules = rules_from_yaml(text, source)
        self.set_text("\n".join(_rule_line(r.name, _body(r.text, r.name)[0] if r.text else str(r))
                                for r in rules))

    def load(self, path: str | os.PathLike) -> None:
        """Read a rules file: YAML (``.yaml``/``.yml``) or plain text, one rule per line."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise RuleError(f"cannot read rules file {p}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise RuleError(f"rules file {p} is not UTF-8 text", hint="save it as UTF-8") from None
        if p.suffix.lower() in (".yaml", ".yml"):
            self.from_yaml(text, str(p))
        else:
            self.set_text(text)

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> str:
        """Write the rules as YAML to ``path`` (atomically); refuses rules with problems and, unless
        ``overwrite``, an existing file. Returns the path written."""
        p = Path(path)
        text = self.to_yaml()
        if p.exists() and not overwrite:
            raise ParameterError(f"{p} exists", hint="tick overwrite (or pass overwrite=True) to replace it")
        if not p.parent.is_dir():
            raise ParameterError(f"no folder {p.parent} to save into")
        tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, p)
        finally:
            if tmp.exists():
                tmp.unlink()
        return str(p)

    # ----- rendering
    def status_html(self) -> str:
        """The live validation as escaped HTML: each problem with its caret and hint, or the valid rules."""
        if self.listing.error:
            return wrap(f"<p class='bad'>{render.esc(self.listing.error)}</p>")
        if self.problems:
            n = len(self.problems)
            head = f"<p class='bad'><b>{n} problem{'s' if n != 1 else ''}</b></p>"
            return wrap(head + "".join(p.to_html() for p in self.problems))
        if not self.rules:
            return wrap("<p class='muted'>Write one rule per line, for example:</p>"
                        f"<pre>{render.esc(_EXAMPLES)}</pre>")
        frame = pd.DataFrame([{"rule": r.name, "kind": r.kind.upper(), "definition": self._bodies.get(r.name, str(r)),
                               "columns": ", ".join(r.columns)} for r in self.rules],
                             columns=["rule", "kind", "definition", "columns"])
        table = f" on {self.table}" if self.table else " (no table chosen: columns not checked)"
        n = len(self.rules)
        return (render.HTML_STYLE + f"<div class='dqkit'><p class='ok'><b>{n} rule{'s' if n != 1 else ''} valid</b>"
                f"{render.esc(table)}</p></div>" + sections_html([Table("", frame)]))
