"""RulePicker and ViolationExplorer: BigDansing in a notebook.

``RulePicker`` writes FD and DC rules against a table's columns with live validation (a bad rule shows
the rule, a caret under the error and the hint) and loads or saves a rules YAML. ``ViolationExplorer``
runs detection, and repair when asked, in the background with progress and Cancel, then shows the
violations per rule, a sample of violations and candidate fixes, the violation graph of a chosen
component, and the repairs. As everywhere in the widget layer, plain-Python controllers
(``RulesController``, ``ViolationController``) hold the state and call dqkit; the views bind to them.
"""
from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as W
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from dqkit import charts, render
from dqkit.detect import DetectionResult, detect
from dqkit.errors import ParameterError, RuleError, UnknownColumnError
from dqkit.repair import METHODS, RepairResult, ViolationHypergraph, repair, violation_hypergraph
from dqkit.result import Table
from dqkit.rules import parse_rule, rules_from_yaml, validate_rules
from dqkit.sources import DatabaseSource
from dqkit.widgets.controllers import RunController, TableListing, _Observable, error_text
from dqkit.widgets.pickers import ColumnPicker, _Guard, keep_selection
from dqkit.widgets.result_view import ExplorerBase, ResultView, wrap

__all__ = ["RuleProblem", "RulesController", "RulePicker", "ViolationRun", "ViolationController",
           "ViolationGraphView", "ViolationExplorer"]

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
        return wrap(f"<p class='ok'><b>{n} rule{'s' if n != 1 else ''} valid</b>{render.esc(table)}</p>"
                    + render.html_table(frame))


# ----------------------------------------------------------------------------------------------- view
class RulePicker(W.VBox):
    """Write FD and DC rules for a table with live validation, and load or save them as YAML.

    Pick the table (its columns and types are listed), type rules one per line (``name: a -> b`` or
    ``name: not(t1.x > t2.x and t1.y < t2.y)``) or build an FD from two column pickers. Every edit is
    parsed and checked against the column types: a mistake shows the rule, a caret under it and a hint.
    ``value`` is the list of valid rules; ``controller`` is the ``RulesController`` behind it.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any = None, *, table: str | None = None,
                 rules: Any = None, spark: SparkSession | None = None,
                 controller: RulesController | None = None) -> None:
        if controller is None:
            if source is None:
                raise ParameterError("RulePicker needs a source (a table, a database or a TableListing)")
            controller = RulesController(source, table=table, rules=rules, spark=spark)
        c = self.controller = controller
        self._guard = _Guard()
        self.header = W.HTML(wrap(f"<b>source</b>: {render.esc(c.listing.label)}"))
        self.table = W.Dropdown(options=[], description="Table")
        self.table.observe(self._on_table, names="value")
        self.refresh_button = W.Button(description="Refresh", icon="refresh", tooltip="re-read the table list")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.schema = W.HTML()
        self.lhs = ColumnPicker(description="If equal")
        self.rhs = ColumnPicker(description="then equal")
        self.fd_name = W.Text(placeholder="name (optional)", layout=W.Layout(width="160px"))
        self.add_fd_button = W.Button(description="Add FD", icon="plus",
                                      tooltip="append the FD (left columns) -> (right columns) to the rules")
        self.add_fd_button.on_click(lambda _: self.add_fd())
        self.editor = W.Textarea(value=c.text, placeholder=_EXAMPLES, rows=8, continuous_update=True,
                                 layout=W.Layout(width="100%"))
        self.editor.observe(self._on_edit, names="value")
        self.status = W.HTML()
        self.path = W.Text(placeholder="rules.yaml", description="File", layout=W.Layout(width="360px"))
        self.load_button = W.Button(description="Load", icon="folder-open", tooltip="read a rules YAML or text file")
        self.save_button = W.Button(description="Save", icon="save", tooltip="write the rules as YAML")
        self.overwrite = W.Checkbox(value=False, description="overwrite", indent=False, layout=W.Layout(width="100px"))
        self.file_message = W.HTML()
        self.load_button.on_click(lambda _: self._file_action("load"))
        self.save_button.on_click(lambda _: self._file_action("save"))
        c.on_change(self._on_controller)
        self._sync_tables()
        self._render()
        super().__init__([
            self.header, W.HBox([self.table, self.refresh_button]), self.schema,
            W.HBox([self.lhs, self.rhs, W.VBox([self.fd_name, self.add_fd_button])]),
            self.editor, self.status,
            W.HBox([self.path, self.load_button, self.save_button, self.overwrite]), self.file_message])

    # ----- public API
    @property
    def value(self) -> list[Any]:
        """The valid rules (a line with a problem is left out)."""
        return list(self.controller.rules)

    @property
    def problems(self) -> list[RuleProblem]:
        return list(self.controller.problems)

    @property
    def text(self) -> str:
        return self.controller.text

    def refresh(self) -> None:
        self.controller.refresh()
        self._sync_tables()

    def add_fd(self) -> None:
        """Append the FD built from the two column pickers (what ``Add FD`` does)."""
        order = {c: i for i, (c, _) in enumerate(self.controller.columns())}
        lhs, rhs = (sorted(cols, key=lambda c: order.get(c, len(order))) for cols in (self.lhs.value, self.rhs.value))
        try:
            self.controller.add_fd(lhs, rhs, self.fd_name.value.strip() or None)
        except ParameterError as exc:
            self.file_message.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")
            return
        self.file_message.value = ""
        self.fd_name.value = ""

    def load(self, path: str | os.PathLike) -> None:
        self.path.value = os.fspath(path)
        self._file_action("load")

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        self.path.value, self.overwrite.value = os.fspath(path), overwrite
        self._file_action("save")

    # ----- view <-> controller
    def _file_action(self, action: str) -> None:
        path = self.path.value.strip()
        if not path:
            self.file_message.value = wrap("<p class='bad'>give a file name first</p>")
            return
        try:
            if action == "load":
                self.controller.load(path)
                done = f"loaded {len(self.controller.rules)} rule(s) from {path}"
            else:
                written = self.controller.save(path, self.overwrite.value)
                done = f"saved {len(self.controller.rules)} rule(s) to {written}"
        except (RuleError, ParameterError) as exc:
            self.file_message.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>"
                                           f"{render.esc(error_text(exc))}</pre>")
            return
        self.file_message.value = wrap(f"<p class='ok'>{render.esc(done)}</p>")

    def _on_edit(self, change: dict[str, Any]) -> None:
        if not self._guard.active:
            self.controller.set_text(change["new"])

    def _on_table(self, change: dict[str, Any]) -> None:
        if not self._guard.active and change["new"] != self.controller.table:
            self.controller.select_table(change["new"])

    def _on_controller(self, what: str) -> None:
        if what == "table":
            self._sync_tables()
        elif what == "rules":
            if self.editor.value != self.controller.text:
                with self._guard():
                    self.editor.value = self.controller.text
            self.status.value = self.controller.status_html()

    def _sync_tables(self) -> None:
        keep_selection(self.table, [(t, t) for t in self.controller.tables], self._guard)
        with self._guard():
            self.table.value = self.controller.table
        self._render_columns()

    def _render_columns(self) -> None:
        cols = self.controller.columns()
        self.lhs.set_columns(cols)
        self.rhs.set_columns(cols)
        if cols:
            listed = ", ".join(f"{render.esc(c)} <span class='muted'>{render.esc(t)}</span>" for c, t in cols)
            self.schema.value = wrap(f"<div><b>{render.esc(self.controller.table)}</b>: {listed}</div>")
        else:
            self.schema.value = wrap(f"<p class='bad'>{render.esc(self.controller.listing.error)}</p>"
                                     if self.controller.listing.error else "<p class='muted'>no table</p>")

    def _render(self) -> None:
        self.status.value = self.controller.status_html()


# ------------------------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class ViolationRun:
    """What one ``ViolationExplorer`` run produced.

    ``detection`` (a ``DetectionResult``), ``fixes`` (a bounded sample of its candidate fixes, at most
    ``sample_rows`` per rule), ``hypergraph`` and ``components`` (the largest components of the
    violation hypergraph: ``component, tid, attr, cells, violations``; None/empty without violations),
    ``repair`` (a ``RepairResult`` when repair was asked for) and ``seconds`` per stage.
    ``sections()`` is the detection's sections plus the fix sample, so the widget says what
    ``detection.to_html()`` says.
    """

    detection: DetectionResult
    fixes: pd.DataFrame
    hypergraph: ViolationHypergraph | None
    components: pd.DataFrame
    repair: RepairResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def sections(self, sample_rows: int = 10) -> list[Any]:
        blocks = list(self.detection.sections(sample_rows=sample_rows))
        if sample_rows and len(self.fixes):
            blocks.append(Table("First candidate fixes", self.fixes.groupby("rule", sort=False).head(sample_rows),
                                note=f"at most {sample_rows} per rule: the cell tid[attr] with its value, the "
                                     "fix, and the other value or constant the fix names"))
        return blocks


FIX_SAMPLE_COLUMNS = ["rule", "t1", "t2", "cell", "value", "fix", "other value"]


def fix_sample(detection: DetectionResult, n: int) -> pd.DataFrame:
    """At most ``n`` candidate fixes per rule (smallest tuple ids first), one Spark job."""
    if n <= 0 or not detection.total_violations or detection.mode == "count":
        return pd.DataFrame(columns=FIX_SAMPLE_COLUMNS)
    f = detection.candidate_fixes
    order = Window.partitionBy("rule").orderBy("t1", "t2", "tid", "attr", "fix")
    rows = (f.withColumn("_n", F.row_number().over(order)).where(F.col("_n") <= n)
            .orderBy("rule", "_n").collect())
    return pd.DataFrame([{"rule": r["rule"], "t1": r["t1"], "t2": r["t2"], "cell": f"{r['tid']}[{r['attr']}]",
                          "value": r["value"], "fix": r["fix"],
                          "other value": r["rhs_value"] if r["rhs_tid"] is not None else r["constant"]}
                         for r in rows], columns=FIX_SAMPLE_COLUMNS)


COMPONENT_COLUMNS = ["component", "tid", "attr", "cells", "violations"]


def largest_components(graph: ViolationHypergraph, n: int) -> pd.DataFrame:
    """The ``n`` largest components (cells, then id), named ``tid.attr`` by their smallest cell."""
    rows = graph.component_sizes().limit(n).collect()
    return pd.DataFrame([{"component": f"{r['component']['tid']}.{r['component']['attr']}",
                          "tid": r["component"]["tid"], "attr": r["component"]["attr"],
                          "cells": int(r["cells"]), "violations": int(r["violations"])} for r in rows],
                        columns=COMPONENT_COLUMNS)


class ViolationController(RunController):
    """State and actions of the violation explorer: the table and rules (a ``RulesController``), the
    key, whether to repair and how; a run detects, builds the violation hypergraph and, if asked,
    repairs, each step reported to the progress bar and cancellable.

    ``draw(component)`` gives the violation graph of one component of the last run (bounded by
    ``max_nodes``: a larger component is refused with a ``ParameterError`` saying so).
    """

    unit = "steps"

    def __init__(self, source: DatabaseSource | TableListing | Any = None, *, table: str | None = None,
                 rules: Any = None, key: str | None = None, repair: bool = False, method: str = "auto",
                 max_iterations: int = 10, sample_rows: int = 10, max_components: int = 50,
                 max_nodes: int = 60, spark: SparkSession | None = None,
                 ruleset: RulesController | None = None) -> None:
        super().__init__(spark)
        if ruleset is None and source is None:
            raise ParameterError("the violation explorer needs a source (a table, a database or a TableListing)")
        self.ruleset = ruleset or RulesController(source, table=table, rules=rules, spark=self.spark)
        self.key: str | None = None
        self.repair = bool(repair)
        self.method = "auto"
        self.max_iterations = 10
        self.sample_rows = sample_rows
        self.max_components = max_components
        self.max_nodes = max_nodes
        self.set_key(key)
        self.set_method(method)
        self.set_max_iterations(max_iterations)
        self.ruleset.on_change(self._on_ruleset)

    # ----- selections
    def columns(self) -> list[tuple[str, str]]:
        return self.ruleset.columns()

    def set_key(self, key: str | None) -> None:
        """The tuple-id column (unique, non-NULL); None: content ids."""
        known = [c for c, _ in self.columns()]
        if key is not None and key not in known:
            raise ParameterError(f"no column {key} in table {self.ruleset.table}", hint=f"columns: {', '.join(known)}")
        self.key = key
        self._changed("selection")

    def set_repair(self, on: bool) -> None:
        self.repair = bool(on)
        self._changed("selection")

    def set_method(self, method: str) -> None:
        if method not in METHODS:
            raise ParameterError(f"unknown repair method {method!r}", hint=f"one of {', '.join(METHODS)}")
        self.method = method
        self._changed("selection")

    def set_max_iterations(self, n: int) -> None:
        if int(n) < 1:
            raise ParameterError("max_iterations must be >= 1")
        self.max_iterations = int(n)
        self._changed("selection")

    def _on_ruleset(self, what: str) -> None:
        if what == "table" and self.key is not None and self.key not in dict(self.columns()):
            self.key = None
            self._changed("selection")

    # ----- running
    def arguments(self) -> dict[str, Any]:
        """The keyword arguments ``detect``/``repair`` get; a bad rule fails here, before any Spark job."""
        rules = self.ruleset.check()
        return {"table": self.ruleset.frame(), "rules": rules, "key": self.key, "name": self.ruleset.table}

    def expected_steps(self) -> int:
        return len(self.ruleset.rules) + 1 + (self.max_iterations if self.repair else 0)

    def work(self, progress: Callable[[str, str, int, int], None]) -> ViolationRun:
        args = self.arguments()
        n_rules = len(args["rules"])
        total = n_rules + 1 + (self.max_iterations if self.repair else 0)

        def step(stage: str, item: str, done: int, _total: int) -> None:
            progress(stage, item, done if stage == "detect" else n_rules + 1 + done, total)

        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        det = detect(args["table"], args["rules"], key=args["key"], spark=self.spark, name=args["name"],
                     progress=step)
        fixes = fix_sample(det, self.sample_rows)
        seconds["detect"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        graph = violation_hypergraph(det) if det.total_violations else None
        components = (largest_components(graph, self.max_components) if graph is not None
                      else pd.DataFrame(columns=COMPONENT_COLUMNS))
        progress("graph", "violation graph", n_rules + 1, total)
        seconds["graph"] = time.perf_counter() - t1
        repaired = None
        if self.repair:
            t2 = time.perf_counter()
            repaired = repair(args["table"], args["rules"], key=args["key"], method=self.method,
                              max_iterations=self.max_iterations, spark=self.spark, name=args["name"],
                              progress=lambda s, i, d, t: step("repair", i, d, t))
            seconds["repair"] = time.perf_counter() - t2
        seconds["total"] = time.perf_counter() - t0
        return ViolationRun(det, fixes, graph, components, repaired, seconds)

    # ----- the violation graph
    def component_options(self) -> list[tuple[str, tuple[Any, str]]]:
        """(label, component id) of the largest components of the last run, largest first."""
        run = self.result
        if run is None or not len(run.components):
            return []
        return [(f"{r.component}: {r.cells} cells, {r.violations} violation{'s' if r.violations != 1 else ''}",
                 (r.tid, r.attr)) for r in run.components.itertuples(index=False)]

    def draw(self, component: Any, max_nodes: int | None = None) -> Any:
        """The violation graph of ``component`` (a ``(tid, attr)`` id) as a matplotlib Figure."""
        run = self.result
        if run is None or run.hypergraph is None:
            raise ParameterError("no violation graph yet", hint="run the detection first")
        limit = self.max_nodes if max_nodes is None else int(max_nodes)
        tid, attr = component
        known = run.components[(run.components["tid"] == tid) & (run.components["attr"] == attr)]
        if len(known):  # refuse a large component before any Spark job
            cells, viols = int(known["cells"].iloc[0]), int(known["violations"].iloc[0])
            if cells + viols > limit:
                raise ParameterError(f"component {tid}.{attr} has {cells} cells and {viols} violations, more "
                                     f"than the {limit} nodes a readable graph can show",
                                     hint="raise max nodes, or pick a smaller component")
        g = run.hypergraph.to_networkx((tid, attr), max_nodes=limit)
        return charts.violation_graph(g, title=f"Component {tid}.{attr}")


# ----------------------------------------------------------------------------------------------- views
class ViolationGraphView(W.VBox):
    """A component picker (largest first), a node bound, and the chosen component's graph inline."""

    def __init__(self, controller: ViolationController) -> None:
        self.controller = controller
        self._guard = _Guard()
        self.component = W.Dropdown(options=[], description="Component", layout=W.Layout(width="420px"))
        self.component.observe(lambda _: None if self._guard.active else self.draw(), names="value")
        self.max_nodes = W.BoundedIntText(value=controller.max_nodes, min=2, max=2000, description="max nodes",
                                          layout=W.Layout(width="180px"))
        self.max_nodes.observe(self._on_max_nodes, names="value")
        self.image = W.HTML(wrap("<p class='muted'>Run to see the violation graph.</p>"))
        self.png: bytes | None = None
        self._more = ""
        super().__init__([W.HBox([self.component, self.max_nodes]), self.image])

    def clear(self) -> None:
        """No components offered and no graph drawn (before a run, while one runs, after a cancel)."""
        with self._guard():
            self.component.options = []
        self.png, self._more = None, ""
        self.image.value = wrap("<p class='muted'>Run to see the violation graph.</p>")

    def show(self, run: ViolationRun) -> None:
        """Offer the run's components and draw the largest."""
        options = self.controller.component_options()
        with self._guard():
            self.component.options = options
            self.component.value = options[0][1] if options else None
        if not options:
            self.png = None
            self.image.value = wrap("<p class='muted'>No violation has a cell to draw: nothing to show.</p>")
            return
        more = (f"<p class='muted'>The {len(options)} largest components are offered.</p>"
                if len(options) >= self.controller.max_components else "")
        self._more = more
        self.draw()

    def draw(self) -> None:
        """Draw the chosen component (a component too large for ``max nodes`` gives a message)."""
        import base64

        component = self.component.value
        if component is None:
            return
        try:
            fig = self.controller.draw(component, self.max_nodes.value)
        except ParameterError as exc:
            self.png = None
            self.image.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>"
                                    f"{render.esc(error_text(exc))}</pre>")
            return
        b64 = charts.to_png_base64(fig)
        self.png = base64.b64decode(b64)
        alt = f"violation graph of component {component[0]}.{component[1]}"
        self.image.value = wrap(f"<img alt='{render.esc(alt)}' src='data:image/png;base64,{b64}' "
                                f"style='max-width:100%;max-height:820px;width:auto'/>" + self._more)

    def _on_max_nodes(self, change: dict[str, Any]) -> None:
        self.controller.max_nodes = int(change["new"])
        if self.component.value is not None:
            self.draw()


#: The explorer's tabs over ``ViolationRun.sections()``: the verdict, counts and chart; the samples.
DETECTION_TABS = (
    ("Violations per rule", None),
    ("Violations and fixes", lambda b: isinstance(b, Table) and b.title in ("First violations",
                                                                            "First candidate fixes")),
)


class ViolationView(W.Tab):
    """The explorer's four tabs: violations per rule, violations and fixes, violation graph, repairs.

    The detection tabs and the repairs tab are ``ResultView`` tabs (``sections()`` of the run and of
    the ``RepairResult``); the graph tab is interactive.
    """

    #: not ``titles``: that is ipywidgets 8's own Tab trait, and a class attribute of that name blanks the tabs
    TAB_TITLES = ("Violations per rule", "Violations and fixes", "Violation graph", "Repairs")

    def __init__(self, graph: ViolationGraphView, sample_rows: int = 10) -> None:
        self.detection_view = ResultView(DETECTION_TABS, sample_rows)
        self.repair_view = ResultView((("Repairs", None),), sample_rows)
        self.graph = graph
        super().__init__(children=[*self.detection_view.children, graph, *self.repair_view.children])
        for i, title in enumerate(self.TAB_TITLES):
            self.set_title(i, title)
        self.clear()

    def show(self, run: ViolationRun) -> None:
        self.detection_view.show(run)
        if run.repair is not None:
            self.repair_view.show(run.repair)
        else:
            self.repair_view.children[0].value = wrap(
                "<p class='muted'>Not repaired: tick <b>repair</b> and run again to repair the table and see "
                "each change (old → new).</p>")
        self.graph.show(run)
        self.selected_index = 0

    def clear(self) -> None:
        """No result in any tab, the graph included."""
        self.detection_view.clear()
        self.repair_view.clear()
        if isinstance(self.graph, ViolationGraphView):  # any widget may stand in the graph tab
            self.graph.clear()


class ViolationExplorer(ExplorerBase):
    """Detect (and repair) the violations of rules on a table interactively.

    ``ViolationExplorer(source, table=..., rules=..., key=...)`` shows a ``RulePicker`` for the table
    and the rules, a key, a repair checkbox with the method and the iteration bound, and ``Run``
    (or ``.run()``). Spark's progress and a Cancel button show while it works; the result
    (``.result``, a ``ViolationRun``) appears in four tabs: violations per rule with a chart, a sample
    of violations and candidate fixes, the violation graph of a chosen component, and the repairs
    (each change old → new, violations per rule before and after). Errors show as readable messages.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any, *, table: str | None = None, rules: Any = None,
                 key: str | None = None, repair: bool = False, method: str = "auto", max_iterations: int = 10,
                 sample_rows: int = 10, max_nodes: int = 60, spark: SparkSession | None = None) -> None:
        c = ViolationController(source, table=table, rules=rules, key=key, repair=repair, method=method,
                                max_iterations=max_iterations, sample_rows=sample_rows, max_nodes=max_nodes,
                                spark=spark)
        self._guard = _Guard()
        self.rule_picker = RulePicker(controller=c.ruleset)
        self.graph = ViolationGraphView(c)
        self._build_run_controls(c, ViolationView(self.graph, sample_rows))
        self.key = W.Dropdown(options=[], description="Key")
        self.key.observe(self._on_key, names="value")
        self.repair_box = W.Checkbox(value=c.repair, description="repair", indent=False, layout=W.Layout(width="80px"))
        self.repair_box.observe(lambda ch: c.set_repair(ch["new"]), names="value")
        self.method = W.Dropdown(options=list(METHODS), value=c.method, description="method",
                                 layout=W.Layout(width="260px"))
        self.method.observe(lambda ch: c.set_method(ch["new"]), names="value")
        self.max_iterations = W.BoundedIntText(value=c.max_iterations, min=1, max=1000, description="iterations",
                                               layout=W.Layout(width="180px"))
        self.max_iterations.observe(lambda ch: c.set_max_iterations(ch["new"]), names="value")
        c.ruleset.on_change(lambda what: self._sync_key() if what == "table" else None)
        self._sync_key()
        super().__init__([
            self.rule_picker,
            W.HBox([self.key, self.repair_box, self.method, self.max_iterations]),
            W.HBox([self.run_button]), self.progress, self.message, self.view])

    # ----- public API
    @property
    def result(self) -> ViolationRun | None:
        return self.controller.result

    @property
    def tabs(self) -> ViolationView:
        return self.view

    # ----- view -> controller
    def _sync_key(self) -> None:
        # "" stands for content ids: a Dropdown cannot offer None as a value
        options = [("(content ids)", "")] + [(f"{col} : {t}", col) for col, t in self.controller.columns()]
        with self._guard():
            self.key.options = options
            self.key.value = self.controller.key or ""

    def _on_key(self, change: dict[str, Any]) -> None:
        if not self._guard.active:
            self.controller.set_key(change["new"] or None)
