"""What ``detect --since`` checks before Spark starts: is OLD a saved detection result, and may it be reused?

``detect --out`` writes a ``manifest.json`` beside the violations: a hash of the rules' text, the key,
the input, the mode and the types of the columns the rules read. ``detect NEW --since SAVED`` reuses
the saved violations only when the rules hash, the key and the column types agree and the saved run
kept every violation (not ``--count-only`` or ``--sample``); otherwise it refuses (exit 2) with the
reason, so a stale result never passes for a fresh one. Nothing here imports pyspark.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dqkit.errors import ParameterError, SchemaMismatchError

MANIFEST = "manifest.json"
FORMAT = 1
#: the parquet folder of a saved result holding ``(key, _dq_fp_hi, _dq_fp_lo)`` over the rules' columns
FINGERPRINTS = "row_fingerprints"


def rules_digest(rules: Sequence[Any]) -> str:
    """SHA-256 of the rules' names and text, in a canonical order: equal for the same rule set."""
    lines = sorted(f"{getattr(r, 'name', '')}\t{r}" for r in rules)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def rule_columns(rules: Sequence[Any]) -> list[str]:
    """The columns the rules read, sorted (the columns a row's fingerprint covers)."""
    return sorted({c for r in rules for c in getattr(r, "columns", ())})


def pairs_unique(rule: Any) -> bool:
    """Whether a detection lists each violation of ``rule`` once as an identity (sorted keys), so the
    saved rows of a rule need no ``distinct`` and their count is its count of identities.

    True for FDs and symmetric DCs (unordered pairs, ``t1 < t2``), one-tuple DCs, and asymmetric DCs
    with a strict order between the same column of both tuples (``t1.salary > t2.salary``: ``(a, b)`` and
    ``(b, a)`` cannot both violate). False otherwise (UDF rules, other asymmetric DCs: both orders may).
    """
    kind = getattr(rule, "kind", None)
    if kind == "fd":
        return True
    if kind != "dc":
        return False
    if rule.arity == 1 or rule.symmetric:
        return True
    return any(p.op in ("<", ">") and getattr(p.right, "column", None) == p.left.column
               for p in rule.cross_predicates)


def make_manifest(rules: Sequence[Any], key: str | None, table: Any, mode: str,
                  schema: Mapping[str, str], counts: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The manifest of a detection result (``detect --out``): what a later ``--since`` checks.

    ``counts``: each rule's saved violations as identities (rule + sorted keys), where exact; a later
    ``--since`` takes a rule's persisting count as this minus its resolved ones instead of recounting
    the saved list (``identity_counts``)."""
    cols = rule_columns(rules)
    return {"dqkit": "detect", "format": FORMAT, "rules_sha256": rules_digest(rules),
            "rules": [getattr(r, "name", str(r)) for r in rules], "key": key,
            "input": str(table), "mode": mode, "columns": cols,
            "schema": {c: schema[c] for c in ([key] if key else []) + cols if c in schema},
            "fingerprints": FINGERPRINTS if key and mode == "violations" else None,
            "identities": {k: int(v) for k, v in (counts or {}).items()} if mode == "violations" else {}}


def identity_counts(manifest: Mapping[str, Any], rules: Sequence[Any]) -> dict[str, int]:
    """The saved identity count of each of ``rules`` the manifest holds (none from an older dqkit)."""
    got = manifest.get("identities") or {}
    return {r.name: int(got[r.name]) for r in rules if isinstance(got.get(r.name), int) and got[r.name] >= 0}


def saved_manifest(path: Any) -> dict[str, Any] | None:
    """The manifest of a saved detection result at ``path``, or None when ``path`` is not one (a table)."""
    if not isinstance(path, (str, Path)) or str(path).startswith("catalog:"):
        return None
    p = Path(path).expanduser() / MANIFEST
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ParameterError(f"--since: cannot read {p} ({exc})",
                             hint="pass the folder `dqkit detect --out` wrote, or the old table") from None
    if not isinstance(data, dict) or data.get("dqkit") != "detect":
        raise ParameterError(f"--since: {p} is not the manifest of a detection result",
                             hint="pass the folder `dqkit detect --out` wrote, or the old table")
    return data


def check_saved(manifest: Mapping[str, Any], path: Any, rules: Sequence[Any], key: str | None,
                schema: Mapping[str, str] | None = None) -> None:
    """Refuse a saved result that cannot stand for OLD under these rules and key (no Spark).

    ``schema``: the new table's column types when known (Parquet footers); a rule column whose type
    changed refuses too, since the saved violations were found under the old types.
    """
    again = "run `dqkit detect OLD --rules ... --key KEY --out FOLDER` again, or pass the old table itself"
    if manifest.get("format") != FORMAT:
        raise ParameterError(f"--since: {path} was written by another dqkit version (format "
                             f"{manifest.get('format')!r}, expected {FORMAT})", hint=again)
    if manifest.get("mode") != "violations" or not manifest.get("fingerprints"):
        raise ParameterError(f"--since: {path} does not hold every violation and row fingerprint (mode "
                             f"{manifest.get('mode')!r}, key {manifest.get('key')!r})",
                             hint="save OLD with --key and without --count-only or --sample; " + again)
    if manifest.get("key") != key:
        raise ParameterError(f"--since: {path} was detected with key {manifest.get('key')!r}, not {key!r}",
                             hint="give the same --key, or " + again)
    if manifest.get("rules_sha256") != rules_digest(rules):
        saved = ", ".join(manifest.get("rules") or [])
        raise ParameterError(f"--since: {path} was detected with other rules ({saved or 'none'}); "
                             "its violations cannot be reused",
                             hint="give the same rule files, or " + again)
    if schema:
        changed = [f"{c} ({t} -> {schema[c]})" for c, t in (manifest.get("schema") or {}).items()
                   if c in schema and schema[c] != t]
        if changed:
            raise SchemaMismatchError(f"--since: column types changed since {path}: {', '.join(changed)}",
                                      hint=again)
