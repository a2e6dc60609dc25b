"""The cluster diff of two saved dedup runs (``dqkit dedup-diff RUN_A RUN_B``): which clusters were
created, removed, merged, split, regrouped, changed or left unchanged, with the records involved.

Cluster ids are arbitrary across runs (the smallest key of a component, which moves when records
come and go), so clusters are matched by their **record sets**, never by id. The two runs' cluster
assignments (``record -> cluster_id``, the ``clusters/`` table ``dqkit dedup --out`` writes) form a
bipartite graph: an A cluster and a B cluster are joined when they share a record. Each connected
component of that graph is one change, classified by how many A and B clusters it holds:

* ``unchanged``: one A cluster and one B cluster with the same records (ids may differ);
* ``changed``: one A and one B cluster whose records differ only by records that are in one run
  but not the other (a record added to the table joined the cluster, or a dropped one left it);
* ``merged``: several A clusters -> one B cluster; ``split``: one A cluster -> several B clusters;
* ``regrouped``: several A clusters and several B clusters in one component: records moved between
  clusters (a record leaving cluster X for cluster Y is a split of X and a merge into Y at once, so it
  is reported as one ``regrouped`` change naming every cluster involved, not as a merge plus a split);
* ``created``: a B cluster whose records were all absent from A (new records only);
* ``removed``: an A cluster whose records are all absent from B.

Every A cluster and every B cluster is in exactly one change. Everything here is pandas over the
saved files: no Spark, so the command starts no JVM; the checks of the two folders are
``dqkit.dedup.manifest.check_runs`` (no pyspark import).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dqkit.errors import ParameterError
from dqkit.contract.result import Facts, Notes, Result, Table, Verdict
from dqkit.dedup.manifest import CLUSTER, HINT, RunInfo, check_runs, part_files

#: The kinds of change, in the order they are reported.
KINDS = ("created", "removed", "merged", "split", "regrouped", "changed", "unchanged")
_KIND_NOTES = {
    "created": "B clusters whose records are all new (absent from run A)",
    "removed": "A clusters whose records are all gone (absent from run B)",
    "merged": "several A clusters became one B cluster",
    "split": "one A cluster became several B clusters",
    "regrouped": "records moved between clusters: several A clusters and several B clusters share records",
    "changed": "one A cluster and one B cluster, differing only by records present in one run",
    "unchanged": "the same records in both runs (the cluster id may differ)",
}


def read_assignment(run: RunInfo) -> pd.Series:
    """``record -> cluster_id`` of a saved run, both as text (a link run's record is ``source:key``)."""
    files = part_files(run.clusters)
    if run.format == "csv":
        frame = pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False) for f in files], ignore_index=True)
    else:
        frame = pd.read_parquet(run.clusters)
    need = [run.key, CLUSTER, *(["source"] if run.link else [])]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ParameterError(f"{run.clusters} lacks the column(s) {', '.join(missing)}", hint=HINT)
    record = frame[run.key].astype(str)
    if run.link:
        record = frame["source"].astype(str) + ":" + record
    out = pd.Series(frame[CLUSTER].astype(str).to_numpy(), index=record.to_numpy(), name=CLUSTER)
    if out.index.has_duplicates:
        dup = out.index[out.index.duplicated()][0]
        raise ParameterError(f"{run.clusters}: record {dup!r} is in more than one cluster", hint=HINT)
    return out


def diff_assignments(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    """One row per change between the assignments ``a`` and ``b`` (``record -> cluster``, matched by
    record sets): ``kind, a_clusters, b_clusters, records, records_a, records_b, new_records,
    gone_records, record_list`` (lists sorted). Every cluster of ``a`` and of ``b`` is in exactly one row."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(x: tuple[str, str]) -> tuple[str, str]:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for c in a.unique():
        parent[("A", c)] = ("A", c)
    for c in b.unique():
        parent[("B", c)] = ("B", c)
    shared = a.index.intersection(b.index)
    edges = pd.DataFrame({"a": a.loc[shared].to_numpy(), "b": b.loc[shared].to_numpy()}).drop_duplicates()
    for ca, cb in zip(edges["a"], edges["b"]):
        ra, rb = find(("A", ca)), find(("B", cb))
        if ra != rb:
            parent[rb] = ra
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for node in parent:
        groups.setdefault(find(node), []).append(node)
    members_a = a.groupby(a, sort=False).groups if len(a) else {}
    members_b = b.groupby(b, sort=False).groups if len(b) else {}
    rows = []
    for nodes in groups.values():
        ca = sorted(c for s, c in nodes if s == "A")
        cb = sorted(c for s, c in nodes if s == "B")
        rec_a = {r for c in ca for r in members_a[c]}
        rec_b = {r for c in cb for r in members_b[c]}
        rows.append({"kind": classify(len(ca), len(cb), rec_a == rec_b), "a_clusters": ca, "b_clusters": cb,
                     "records": len(rec_a | rec_b), "records_a": len(rec_a), "records_b": len(rec_b),
                     "new_records": len(rec_b - rec_a), "gone_records": len(rec_a - rec_b),
                     "record_list": sorted(rec_a | rec_b)})
    frame = pd.DataFrame(rows, columns=["kind", "a_clusters", "b_clusters", "records", "records_a", "records_b",
                                        "new_records", "gone_records", "record_list"])
    order = {k: i for i, k in enumerate(KINDS)}
    frame["_o"] = frame["kind"].map(order)
    frame["_first"] = frame["record_list"].map(lambda r: r[0] if r else "")
    return (frame.sort_values(["_o", "records", "_first"], ascending=[True, False, True], kind="stable")
            .drop(columns=["_o", "_first"]).reset_index(drop=True))


def classify(n_a: int, n_b: int, same_records: bool) -> str:
    """The kind of a component with ``n_a`` A clusters and ``n_b`` B clusters (see the module docstring)."""
    if n_a == 0:
        return "created"
    if n_b == 0:
        return "removed"
    if n_a == 1 and n_b == 1:
        return "unchanged" if same_records else "changed"
    if n_b == 1:
        return "merged"
    if n_a == 1:
        return "split"
    return "regrouped"


@dataclass(frozen=True, eq=False, repr=False)
class DedupDiffResult(Result):
    """The cluster diff of two saved dedup runs: ``changes`` (one row per change, ``diff_assignments``),
    the records and clusters of each run. Rendered through ``sections()``; ``save`` writes ``changes.csv``."""

    system = "dqkit dedup-diff"

    run_a: str
    run_b: str
    key: str
    changes: pd.DataFrame
    records_a: int
    records_b: int
    clusters_a: int
    clusters_b: int
    input_paths: tuple[Any, ...] = field(default_factory=tuple)

    @property
    def counts(self) -> dict[str, int]:
        """Changes per kind (every kind, zeros included)."""
        got = self.changes["kind"].value_counts()
        return {k: int(got.get(k, 0)) for k in KINDS}

    @property
    def n_changed(self) -> int:
        return sum(n for k, n in self.counts.items() if k != "unchanged")

    def verdict_block(self) -> Verdict:
        c = self.counts
        if self.n_changed == 0:
            return Verdict(True, "NO CHANGE", f"the {self.clusters_a:,} clusters of {self.records_a:,} records are "
                                              "the same in both runs")
        parts = ", ".join(f"{n:,} {k}" for k, n in c.items() if n and k != "unchanged")
        return Verdict(False, "CLUSTERS CHANGED", f"{parts}; {c['unchanged']:,} unchanged "
                                                  f"({self.clusters_a:,} clusters in A, {self.clusters_b:,} in B)")

    def metrics(self) -> dict[str, float]:
        """Cluster changes by kind, records and clusters on each side."""
        from dqkit.contract.metrics import flatten

        d = self.to_dict()
        return flatten({k: v for k, v in d.items() if k not in ("run_a", "run_b", "key")})

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        gone = int(self.changes["gone_records"].sum()) if len(self.changes) else 0
        new = int(self.changes["new_records"].sum()) if len(self.changes) else 0
        return {"run_a": self.run_a, "run_b": self.run_b, "key": self.key, "verdict": v.label, "summary": v.summary,
                **self.counts, "records": {"a": self.records_a, "b": self.records_b, "added": new, "removed": gone},
                "clusters": {"a": self.clusters_a, "b": self.clusters_b}}

    def _table(self, kind: str, sample_rows: int, max_records: int = 10) -> Table:
        rows = self.changes[self.changes["kind"] == kind]
        shown = rows.head(sample_rows)

        def ids(values: list[str]) -> str:
            return ", ".join(values[:max_records]) + (f" (+{len(values) - max_records} more)"
                                                      if len(values) > max_records else "")

        frame = pd.DataFrame({"clusters in A": shown["a_clusters"].map(ids), "clusters in B": shown["b_clusters"].map(ids),
                              "records": shown["records"], "new": shown["new_records"], "gone": shown["gone_records"],
                              "record ids": shown["record_list"].map(ids)})
        hidden = len(rows) - len(shown)
        note = _KIND_NOTES[kind] + (f"; {hidden:,} more not shown" if hidden else "")
        return Table(f"{kind.capitalize()} ({len(rows):,})", frame, note=note)

    def sections(self, sample_rows: int = 10) -> list[Any]:
        c = self.counts
        d = self.to_dict()["records"]
        blocks: list[Any] = [self.verdict_block(), Facts("What was compared", {
            "run A": self.run_a, "run B": self.run_b, "key": self.key,
            "records": f"{self.records_a:,} in A, {self.records_b:,} in B ({d['added']:,} added, {d['removed']:,} gone)",
            "clusters": f"{self.clusters_a:,} in A, {self.clusters_b:,} in B",
            **{k: c[k] for k in KINDS}})]
        if sample_rows:
            blocks += [self._table(k, sample_rows) for k in KINDS if c[k] and k != "unchanged"]
            if c["unchanged"]:
                blocks.append(self._table("unchanged", sample_rows))
        blocks.append(Notes("How clusters are matched", [
            "clusters are matched by their record sets, not by their ids (ids are arbitrary across runs)",
            "a record moving from one cluster to another is one 'regrouped' change naming every cluster involved"]))
        return blocks

    def frames(self, **_: Any) -> dict[str, Any]:
        return {}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)

    def _save_extra(self, folder: Path) -> None:
        out = self.changes.copy()
        for c in ("a_clusters", "b_clusters", "record_list"):
            out[c] = out[c].map(lambda v: " ".join(v))
        out.to_csv(folder / "changes.csv", index=False)


def dedup_diff(run_a: str | os.PathLike, run_b: str | os.PathLike) -> DedupDiffResult:
    """The cluster diff of two saved dedup runs (folders ``dqkit dedup --out`` wrote); no Spark."""
    ia, ib = check_runs(run_a, run_b)
    a, b = read_assignment(ia), read_assignment(ib)
    return DedupDiffResult(run_a=os.fspath(run_a), run_b=os.fspath(run_b), key=ia.key, changes=diff_assignments(a, b),
                           records_a=len(a), records_b=len(b), clusters_a=int(a.nunique()),
                           clusters_b=int(b.nunique()), input_paths=(os.fspath(run_a), os.fspath(run_b)))
