"""BigDansing's detection, declared once: violations of FDs and denial constraints in a table
(``dqkit.detect``)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dqkit.errors import ParameterError
from dqkit.systems._rules import RulesParams
from dqkit.systems.base import System, param


def check_detect_mode(count_only: bool, sample: int | None) -> None:
    """``--count-only`` materialises no violation, ``--sample N`` keeps N per rule: not both."""
    if count_only and sample is not None:
        raise ParameterError("--count-only and --sample exclude each other",
                             hint="give --count-only for counts alone, or --sample N for N violations per rule")


def detect_mode(count_only: bool, sample: int | None) -> str:
    """The kernel's ``mode`` for these options: count, sample or violations."""
    return "count" if count_only else ("sample" if sample is not None else "violations")


@dataclass(frozen=True)
class DetectParams(RulesParams):
    """What ``dqkit detect``, ``dqkit report detect`` and the detect widget take."""

    count_only: bool = param(False, help="count violations without materialising them")
    sample: int | None = param(None, help="keep at most N violations per rule", low=1, metavar="N")
    nb_parts: int | None = param(None, help="OCJoin range partitions (default 16)", low=1, metavar="N")
    explain: bool = param(False, help="print the logical, consolidated and physical plans")
    sample_rows: int = param(10, help="violations shown per rule (text, html, report)", low=0, metavar="N")
    since: str | None = param(None, help="the previous version: the old table, or the folder `detect --out` "
                                         "wrote for it; report violations new, resolved and persisting "
                                         "since then, re-checking only changed rows (needs --key)",
                              metavar="OLD", input=True)
    max_change: float = param(0.05, help="with --since, the cost rule: above this share of rows changed, detect "
                                         "both versions in full and diff them", low=0, high=1, metavar="SHARE")

    def validate(self) -> None:
        """The options agree; the table, rule files, rules and key are checked without Spark."""
        check_detect_mode(self.count_only, self.sample)
        rules = self.check_rules("detect")
        if self.since is not None:
            check_since(self, rules)


def check_since(params: DetectParams, rules: list[Any]) -> None:
    """``--since`` needs a key and full violation lists; a saved OLD must match the rules and key (no Spark)."""
    from dqkit.checks import preflight
    from dqkit.detect.since_manifest import check_saved, saved_manifest

    if params.key is None:
        raise ParameterError("--since needs --key: violations are matched across versions by the keys of their rows",
                             hint="give --key COLUMN, a column unique and non-NULL in both versions")
    if params.count_only or params.sample is not None:
        raise ParameterError("--since lists every new, resolved and persisting violation: it excludes "
                             "--count-only and --sample", hint="leave out --count-only and --sample")
    manifest = saved_manifest(params.since)
    if manifest is not None:
        check_saved(manifest, params.since, rules, params.key)
        return
    path = preflight.check_table(params.since, "--since")
    columns = preflight.table_columns(path)
    if columns is not None:
        preflight.check_columns([params.key], columns, "--key")
        preflight.check_rule_columns(rules, columns)


def run(params: DetectParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The violations of ``params`` (``dqkit.detect.detect``)."""
    from dqkit.detect import detect

    if params.since is not None:
        from dqkit.detect.since import detect_since

        return detect_since(params.table, params.since, params.load_rules(), key=str(params.key), spark=spark,
                            name=str(params.table), max_change=params.max_change)
    return detect(params.table, params.load_rules(), key=params.key,
                  mode=detect_mode(params.count_only, params.sample), sample=params.sample,
                  nb_parts=params.nb_parts, name=str(params.table), spark=spark, progress=progress)


def explain(result: Any, params: DetectParams) -> Mapping[str, str]:
    """With ``--explain``: the plans, printed after the result and added to its JSON as ``explain``."""
    return {"explain": result.explain()} if params.explain and hasattr(result, "explain") else {}


DETECT = System(
    name="detect",
    summary="detect violations of FDs and denial constraints (BigDansing)",
    description="Detect violations of rules (FDs, denial constraints) in a table: violations per rule, the "
                "first violations and their candidate fixes.",
    params=DetectParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("Verdict", "Facts")), ("Violations", ("Table",)), ("Charts", ("Chart",))),
    exit_codes={0: "no violation", 1: "violations (with --since: the text says how many are new)", 2: "error"},
    output="summary, plan, violations and candidate fixes",
    example={"table": "data/bigdansing_table1.csv", "rules": ["data/bigdansing_table1_rules.yaml"], "key": "tid"},
    emit_extra=explain,
    progress_unit="rules",
)
