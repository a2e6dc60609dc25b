"""What ``detect`` and ``repair`` (BigDansing) both take: a table, rule files and an optional key.

The two declarations (``dqkit.systems.detect``, ``dqkit.systems.repair``) extend ``RulesParams`` so
the table, ``--rules`` and ``--key`` read, check and document the same way in both commands, reports
and widgets. Nothing here imports Spark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dqkit.errors import ParameterError, RuleError
from dqkit.systems.base import Params, RuleText, param


def blank_to_none(value: Any) -> str | None:
    """A column name as given (names may hold spaces), or None for a blank text (the reports'
    ``-p key ""`` means a content id)."""
    text = str(value)
    return text if text.strip() else None


@dataclass(frozen=True)
class RulesParams(Params):
    """A table checked against rules: the fields ``dqkit detect`` and ``dqkit repair`` share."""

    table: str = param(help="the table: a Parquet, CSV or JSON path, or catalog:db.table", positional=True,
                       input=True, accepts="table")
    rules: tuple[str, ...] = param(help="rules file: YAML or text, one rule per line", repeat=True, sep="",
                                   metavar="FILE", input=True, accepts="rules")
    key: str | None = param(None, help="column identifying tuples (default: a deterministic content id)",
                            parse=blank_to_none, metavar="KEY")
    #: what the result calls an in-memory table (a notebook's name for it); not a parameter of any front end
    _name: str | None = field(default=None, compare=False)

    def check_rules(self, command: str) -> list[Any]:
        """The table and rule files exist, the rules parse and name columns of the table, the key is
        one of them (``dqkit.checks.preflight.rules_command``, no Spark); returns the rules."""
        from dqkit.checks import preflight

        if not (self.in_memory("table") or self.in_memory("rules")):
            return preflight.rules_command(self.table, list(self.rules), key=self.key, command=command)
        rules = self.load_rules()  # typed rules or rule objects (a notebook's): parsed here, no file read
        if not rules:
            raise ParameterError("no rules given", hint="write one rule per line, e.g. zip -> city")
        if not self.in_memory("table"):  # a DataFrame's columns are checked when it is read
            columns = preflight.table_columns(preflight.check_table(self.table))
            preflight.check_table_columns(columns, self.table, command)
            if self.key:
                preflight.check_columns([self.key], columns, "--key")
            preflight.check_rule_columns(rules, columns)
        return rules

    def load_rules(self) -> list[Any]:
        """The rules of every rule file, typed text (``RuleText``) or rule object, in order (parsed, not
        checked against the table)."""
        from dqkit.checks.preflight import load_rule_file

        out: list[Any] = []
        for item in self.rules:
            if isinstance(item, RuleText):
                from dqkit.rules import parse_rules

                parsed = parse_rules(str(item))
                if not parsed:
                    raise RuleError("the rules typed hold no rule", hint="write one rule per line, e.g. zip -> city")
                out += parsed
            elif isinstance(item, str) or hasattr(item, "__fspath__"):
                out += load_rule_file(item)
            else:
                out.append(item)  # a rule object
        return out

    def table_name(self) -> str:
        """What the result calls the table: its path, or ``table`` for an in-memory DataFrame."""
        return self._name or (str(self.table) if not self.in_memory("table") else "table")
