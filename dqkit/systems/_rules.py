"""What ``detect`` and ``repair`` (BigDansing) both take: a table, rule files and an optional key.

The two declarations (``dqkit.systems.detect``, ``dqkit.systems.repair``) extend ``RulesParams`` so
the table, ``--rules`` and ``--key`` read, check and document the same way in both commands, reports
and widgets. Nothing here imports Spark.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.systems.base import Params, param


def blank_to_none(value: Any) -> str | None:
    """A column name as given (names may hold spaces), or None for a blank text (the reports'
    ``-p key ""`` means a content id)."""
    text = str(value)
    return text if text.strip() else None


@dataclass(frozen=True)
class RulesParams(Params):
    """A table checked against rules: the fields ``dqkit detect`` and ``dqkit repair`` share."""

    table: str = param(help="the table: a Parquet, CSV or JSON path, or catalog:db.table", positional=True,
                       input=True)
    rules: tuple[str, ...] = param(help="rules file: YAML or text, one rule per line", repeat=True, sep="",
                                   metavar="FILE", input=True)
    key: str | None = param(None, help="column identifying tuples (default: a deterministic content id)",
                            parse=blank_to_none, metavar="KEY")

    def check_rules(self, command: str) -> list[Any]:
        """The table and rule files exist, the rules parse and name columns of the table, the key is
        one of them (``dqkit.checks.preflight.rules_command``, no Spark); returns the rules."""
        from dqkit.checks import preflight

        return preflight.rules_command(self.table, list(self.rules), key=self.key, command=command)

    def load_rules(self) -> list[Any]:
        """The rules of every rule file, in order (parsed, not checked against the table)."""
        from dqkit.checks.preflight import load_rule_file

        return [r for f in self.rules for r in load_rule_file(f)]
