"""Entity deduplication and record linkage, declared once: ``dqkit.dedup`` (blocking, Fellegi-Sunter
match probabilities with EM, clusters, golden records).

``--out`` goes through the generic ``Result.save``: the result carries how its tables are written
(``DedupResult.saving``: Parquet or ``--csv``, the matches or ``--all-pairs``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from dqkit.errors import ParameterError
from dqkit.systems.base import Params, System, Tab, param

DEFAULT_SOURCES = ("left", "right")


@dataclass(frozen=True)
class DedupParams(Params):
    """What ``dqkit dedup``, ``dqkit report dedup`` and the derived dedup widget take."""

    table: str = param(help="Parquet/CSV/JSON path or catalog:db.table (CSV columns are read as text)",
                       positional=True, input=True, metavar="TABLE", accepts="table")
    key: str = param(help="the column identifying records (unique, not NULL)")
    config: str = param(help="blocking rules and comparisons, YAML (see --example-config)", metavar="FILE.yaml",
                        input=True, accepts="object")
    link: str | None = param(None, help="link TABLE to TABLE2 (record linkage): pairs only across the two tables, "
                                        "which both have the key and the compared columns",
                             metavar="TABLE2", input=True)
    sources: tuple[str, ...] = param(DEFAULT_SOURCES, help="with --link: names of the two tables in the source "
                                                           "and cluster_id columns",
                                     repeat=True, metavar="NAME1,NAME2")
    threshold: float | None = param(None, help="link pairs with match probability >= P (default: the config's, "
                                               "else 0.9)", low=0, high=1, metavar="P")
    truth: str | None = param(None, help="a column of true cluster ids: adds pairwise precision and recall",
                              metavar="COLUMN", accepts="object")
    all_pairs: bool = param(False, help="with --out: save every candidate pair, not only matches")
    csv: bool = param(False, help="with --out: write the tables as CSV instead of Parquet")
    sample_rows: int = param(10, help="clusters, pairs and golden records shown per section", low=0, metavar="N")
    since: str | None = param(None, help="the previous night's run (the folder `dedup --out` wrote): score only "
                                         "pairs with inserted or updated records, with its model, and keep its "
                                         "cluster ids; report clusters created, merged and split",
                              metavar="RUN", input=True)
    max_change: float = param(0.05, help="with --since, the cost rule: above this share of records inserted, "
                                         "deleted or updated, compare every pair of TABLE (still with the "
                                         "saved model)", low=0, high=1, metavar="SHARE")
    #: what the result calls an in-memory table (a notebook's name for it); not a parameter of any front end
    _name: str | None = field(default=None, compare=False)

    def validate(self) -> None:
        """Tables and config exist, the config is a YAML mapping, the key (and the truth column) are
        columns of each table, the sources name two tables of ``--link`` (file footers and headers)."""
        from dqkit.checks import preflight

        check_sources(self.sources, self.link)
        if self.in_memory("table") or self.in_memory("config"):  # a notebook's DataFrame or config mapping
            preflight.check_number(self.threshold, "--threshold", low=0, high=1)
            if not self.in_memory("config"):
                preflight.check_readable(self.config, "--config")
            dedup_config(self.config)  # the one config parser: a bad rule or comparison named here
            if not self.in_memory("table"):  # a file table with a config mapping: the key is one of its columns
                columns = preflight.table_columns(preflight.check_table(self.table))
                preflight.check_columns([self.key], columns, "--key")
            return
        preflight.dedup(self.table, self.key, self.config, link=self.link, threshold=self.threshold)
        if self.truth is not None and not self.in_memory("truth"):
            check_truth(self.truth, self.key, [self.table, *([self.link] if self.link else [])])
        if self.since is not None:
            check_since_params(self)


def check_since_params(params: DedupParams) -> None:
    """``--since``: one table, no --truth or --all-pairs, and a saved run of the same key, config and
    threshold (``dqkit.dedup.manifest``); no Spark, not even a pyspark import."""
    from dqkit.dedup.manifest import FULL_RUN, check_since, config_form, load_config_light, read_since

    for flag, given in (("--link", params.link is not None), ("--truth", params.truth is not None),
                        ("--all-pairs", params.all_pairs)):
        if given:
            raise ParameterError(f"--since continues a deduplication of one table night by night; it excludes {flag}",
                                 hint=f"leave out {flag}, or {FULL_RUN}")
    manifest = read_since(params.since)
    config = load_config_light(params.config)
    threshold = config.threshold if params.threshold is None else params.threshold
    check_since(manifest, params.since, key=params.key, config=config_form(config), threshold=threshold)


def check_sources(sources: tuple[str, ...], link: str | None) -> tuple[str, str]:
    """``--sources``: two different non-empty names, and only with ``--link``; no Spark."""
    if link is None and tuple(sources) != DEFAULT_SOURCES:
        raise ParameterError("--sources names the two tables of --link", hint="add --link TABLE2")
    if len(sources) != 2 or not all(s.strip() for s in sources) or sources[0] == sources[1]:
        raise ParameterError(f"--sources needs two different non-empty names, got {','.join(sources)!r}",
                             hint="e.g. --sources crm,erp")
    return sources[0], sources[1]


def check_truth(truth: str, key: str, tables: list[Any]) -> None:
    """``--truth`` names a column of every table other than the key; no Spark (footers and headers)."""
    from dqkit.checks import preflight

    if truth == key:
        raise ParameterError("--truth is the key itself", hint="name the column of true cluster ids")
    for table in tables:
        preflight.check_columns([truth], preflight.table_columns(preflight.check_table(table)), "--truth")


def check_output(params: DedupParams, out: str | None) -> None:
    """``--csv`` and ``--all-pairs`` shape what ``--out`` writes (so they need it); CSV goes to a folder."""
    if out is None:
        if params.csv or params.all_pairs:
            raise ParameterError("--csv and --all-pairs shape what --out writes", hint="add --out DIR")
        return
    if params.csv and os.fspath(out).startswith("catalog:"):
        raise ParameterError("CSV output goes to a folder, not a catalog", hint="drop --csv, or save to a folder")


def run(params: DedupParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The dedup (or link) of ``params`` (``dqkit.dedup.dedup``), set to be saved as ``--csv`` /
    ``--all-pairs`` say, with pairwise accuracy against ``--truth`` when given."""
    import dataclasses

    from dqkit.dedup import dedup

    config = dedup_config(params.config)  # parse errors with line and column, before any Spark job
    if params.since is not None:
        from dqkit.dedup.since import dedup_since

        result = dedup_since(params.table, params.since, params.key, config, threshold=params.threshold,
                             max_change=params.max_change, name=params._name or params.table, spark=spark,
                             progress=progress)
        return result.saving(format="csv" if params.csv else "parquet")
    table = params._name or (params.table if not params.in_memory("table") else "table")
    name = table if params.link is None else f"{table} ~ {params.link}"
    result = dedup(params.table, params.key, config, threshold=params.threshold, name=name, spark=spark,
                   progress=progress, other=params.link, sources=tuple(params.sources))
    result = result.saving(format="csv" if params.csv else "parquet", all_pairs=params.all_pairs)
    if params.truth is not None:
        from dqkit.dedup.evaluate import pair_accuracy

        named = params.truth if not params.in_memory("truth") else "the true pairs given"
        result = dataclasses.replace(result, truth=named, accuracy=pair_accuracy(result, params.truth))
    return result


def example_config() -> str:
    """A commented example config (``dqkit dedup --example-config``)."""
    from dqkit.dedup import example_config as text

    return text()


DEDUP = System(
    name="dedup",
    summary="find duplicate records: blocking, match probabilities, clusters, golden records",
    description="Find records that describe the same entity (Fellegi-Sunter match probabilities with EM-estimated "
                "parameters, no labels needed), cluster them and merge each cluster into a golden record; with "
                "--link, link two tables (pairs only across them).",
    params=DedupParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("summary", "accuracy", "notes")), ("Blocking and model", ("blocking", "model")),
          ("Clusters", ("clusters", "pairs", "golden")),
          Tab("Changes", ("changes",), when=("changes",))),
    progress_unit="stages",
    exit_codes={0: "no duplicate (no link)", 1: "duplicates (links) found", 2: "error"},
    output="the pairs, clusters and golden records (Parquet, or CSV with --csv), summary.json and report.html; "
           "fingerprints/ and dedup_manifest.json, what the next night's --since reads",
    example={"table": "data/dedup/people.csv", "key": "rec_id", "config": "data/dedup/dedup.yaml"},
    actions={"example_config": ("print a commented example config and exit", example_config)},
    check_output=check_output,
)


# -- what a dedup front end needs besides the run: the config read once, the comparison methods and the
# -- blocking statistics shown before anything is compared (the kernel loaded only when called)
def dedup_config(config: Any) -> Any:
    """The ``DedupConfig`` of ``config``: a YAML file, YAML text or a mapping (the one config parser,
    ``dqkit.dedup.load_config``/``parse_config``; its errors name the line or the key)."""
    from dqkit.dedup import load_config, parse_config

    is_path = isinstance(config, os.PathLike) or (isinstance(config, str) and "\n" not in config
                                                   and os.path.isfile(config))
    return load_config(config) if is_path else parse_config(config, source="the config")


def config_parts(config: Any) -> dict[str, Any]:
    """A config as the fields a front end edits: ``blocking`` (each rule a list of parts), ``comparisons``
    (``{column, method[, thresholds, name, date_format]}``, thresholds only when not the method's
    default), ``settings`` (the other keys that differ from their defaults) and ``threshold``."""
    from dqkit.dedup.config import DEFAULT_THRESHOLDS

    cfg = dedup_config(config)
    comparisons = []
    for c in cfg.comparisons:
        item: dict[str, Any] = {"column": c.column, "method": c.method}
        if c.thresholds != DEFAULT_THRESHOLDS[c.method]:
            item["thresholds"] = list(c.thresholds)
        if c.name:
            item["name"] = c.name
        if c.date_format:
            item["date_format"] = c.date_format
        comparisons.append(item)
    defaults = type(cfg)(blocking=cfg.blocking, comparisons=cfg.comparisons)
    settings = {k: getattr(cfg, k) for k in ("max_block_size", "on_oversized", "u_sample_records", "seed")
                if getattr(cfg, k) != getattr(defaults, k)}
    if cfg.types:
        settings["types"] = dict(cfg.types)
    return {"blocking": [list(r.on) for r in cfg.blocking], "comparisons": comparisons, "settings": settings,
            "threshold": cfg.threshold}


def comparison_methods() -> tuple[str, ...]:
    """The comparison methods a config may name."""
    from dqkit.dedup.config import METHODS

    return tuple(METHODS)


def block_stats(table: Any, key: str, config: Any, spark: Any = None) -> Any:
    """Each blocking rule's block sizes and pairs, with the cumulative pairs (``dqkit.dedup.blocking_stats``),
    before anything is compared."""
    from dqkit.dedup import blocking_stats

    return blocking_stats(table, key, config, spark=spark)


def block_stats_blocks(stats: Any) -> list[Any]:
    """The blocking statistics as section blocks: the pairs to compare, the table, the cumulative chart."""
    from dqkit.contract.result import Chart, Facts
    from dqkit.dedup import blocking_table, plot_block_stats

    total = int(stats["cumulative_pairs"].iloc[-1]) if len(stats) else 0
    return [Facts("Block sizes", {"pairs to compare": f"{total:,}"}, key="blocking"), *blocking_table(stats),
            Chart("Pairs per blocking rule", "block_stats", lambda: plot_block_stats(stats), key="blocking")]
