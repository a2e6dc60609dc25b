"""Discovered rules as a rules YAML that ``dqkit detect --rules`` and ``dqkit repair --rules`` read
unchanged: ``rules: [{name, rule, ...}]``, the loader reading ``name`` and ``rule`` and leaving the
other fields (``kind``, ``error``, ``violations``, ``support``, ``score``) to people and tools."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def rule_entries(rules: Sequence[Any]) -> list[dict[str, Any]]:
    """One mapping per ranked rule: its name (``fd1``, ``dc1``, by rank), text and measures."""
    out: list[dict[str, Any]] = []
    counts = {"fd": 0, "dc": 0}
    for r in rules:
        counts[r.kind] += 1
        out.append({"name": f"{r.kind}{counts[r.kind]}", "rule": r.text, "kind": r.kind,
                    "error": round(float(r.g3), 6), "violations": int(r.violations), "support": int(r.support),
                    "score": round(float(r.score), 6)})
    return out


def rules_yaml(rules: Sequence[Any], header: Sequence[str] = ()) -> str:
    """The rules file text: comment lines (``header``), then ``rules:`` with one entry per rule."""
    import yaml

    lines = [f"# {h}" for h in header]
    lines.append("# error: g3 for an FD (rows to delete / rows), the violating share of ordered tuple pairs for a DC;")
    lines.append("# support: rows whose left-hand side is shared with another row (FD), pairs checked (DC).")
    body = yaml.safe_dump({"rules": rule_entries(rules)}, sort_keys=False, allow_unicode=True, width=1000)
    return "\n".join(lines) + "\n" + body


def write_rules(target: str | os.PathLike, text: str) -> Path:
    """Write the rules file atomically (a sibling temporary file renamed onto ``target``)."""
    from dqkit.runtime.atomic import atomic_file

    path = Path(os.fspath(target)).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
