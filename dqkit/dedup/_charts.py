"""Dedup's charts (block sizes, match weights, a pair's waterfall, cluster sizes) and the weight <-> probability
conversions they share with the result; a mixin so ``DedupResult`` keeps its ``plot_*`` methods."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def weight_to_probability(w: float) -> float:
    return 1.0 / (1.0 + 2.0 ** (-w))


def probability_to_weight(p: float) -> float:
    if p <= 0:
        return -math.inf
    if p >= 1:
        return math.inf
    return math.log2(p / (1 - p))


def plot_block_stats(stats: pd.DataFrame):
    """Pairs per blocking rule from ``blocking_stats``' table (so it is drawn before any comparison):
    the comparisons its blocks imply, the new pairs it adds (each pair counted once) and, as in
    Splink's cumulative comparisons chart, the pairs of all rules up to it."""
    from matplotlib.figure import Figure

    from dqkit.contract.charts import PLAIN

    s = stats
    fig = Figure(figsize=(7.5, min(max(2.2, 0.65 * len(s) + 1.4), 12)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(s))[::-1]
    ax.barh(y + 0.2, s["comparisons"], height=0.4, color="#c6dbef", label="comparisons in its blocks")
    if "new_pairs" in s:
        bars = ax.barh(y - 0.2, s["new_pairs"], height=0.4, color="#4c72b0", label="new pairs (counted once)")
        ax.bar_label(bars, labels=[f"+{int(v):,}" for v in s["new_pairs"]], padding=3, fontsize=8, **PLAIN)
    if "cumulative_pairs" in s:
        cum = s["cumulative_pairs"].to_numpy()
        ax.plot(cum, y, color="#cf222e", marker="o", linewidth=1.2, label="cumulative pairs")
        for x, yy in zip(cum, y):
            ax.annotate(f"{int(x):,}", (x, yy), xytext=(4, 5), textcoords="offset points", fontsize=8,
                        color="#cf222e", **PLAIN)
    ax.set_yticks(y, [str(r) for r in s["rule"]], **PLAIN)
    ax.set_xlabel("pairs", **PLAIN)
    total = int(s["cumulative_pairs"].iloc[-1]) if "cumulative_pairs" in s and len(s) else None
    ax.set_title("Blocking rules: pairs before comparison" + (f" ({total:,} in all)" if total is not None else ""),
                 **PLAIN)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22 if len(s) < 4 else -0.1), ncol=3, fontsize=8,
              frameon=False)
    ax.margins(x=0.18, y=0.08)
    return fig


def blocking_table(stats: pd.DataFrame, max_rows: int | None = None, link: bool = False) -> list[Any]:
    """The "Blocking rules" section: one row per rule, narrow enough for a report page, at most
    ``max_rows`` rules (the rest counted under the table, as every long table is); and, only when a
    rule has oversized blocks, an "Oversized blocks" table of them (rule, blocks, pairs skipped).

    ``rule`` is the rule's text (with its name when the config names it otherwise); headers are
    words, not identifiers. The JSON keeps ``block_stats`` as it is."""
    from dqkit.contract.result import Table

    s = stats
    rules = [str(on) if str(name) == str(on) else f"{name}: {on}" for name, on in zip(s["rule"], s.get("on", s["rule"]))]
    shown = pd.DataFrame({"rule": rules})
    for column, header in (("blocks", "blocks"), ("largest_block", "largest block"),
                           ("records_in_blocks", "records in blocks"), ("comparisons", "comparisons"),
                           ("new_pairs", "new pairs"), ("cumulative_pairs", "cumulative pairs")):
        if column in s:
            shown[header] = s[column].astype("int64").to_numpy()
    big = s["oversized_blocks"].astype("int64") if "oversized_blocks" in s else pd.Series(0, index=s.index)
    skipped = s["comparisons_skipped"].astype("int64") if "comparisons_skipped" in s else big * 0
    oversized = pd.DataFrame({"rule": rules, "oversized blocks": big.to_numpy(), "pairs skipped": skipped.to_numpy()})
    oversized = oversized[oversized["oversized blocks"] > 0]
    note = ("comparisons = Σ n_left·n_right" if link else "comparisons = Σ n(n−1)/2") + (
        " over the rule's blocks; new pairs = pairs no earlier rule produced (each pair is compared once); "
        "cumulative pairs = the pairs of every rule up to this one; ")
    note += ("oversized blocks are skipped (below)" if len(oversized) else "no block is oversized (none skipped)")
    blocks = [Table("Blocking rules", shown, note=note, max_rows=max_rows)]
    if len(oversized):
        blocks.append(Table("Oversized blocks", oversized.reset_index(drop=True), max_rows=max_rows,
                            note="blocks of more than max_block_size records are skipped: their pairs are not compared"))
    return blocks


class DedupCharts:
    """The ``plot_*`` methods of ``DedupResult`` (it provides ``block_stats``, ``weight_histogram``,
    ``threshold``, ``explain`` and ``cluster_sizes``)."""

    def plot_block_sizes(self):
        """Pairs per blocking rule: the comparisons its blocks imply, the new pairs it adds and the
        cumulative pairs (``plot_block_stats``)."""
        return plot_block_stats(self.block_stats)

    def plot_match_weights(self):
        """Histogram of the candidate pairs' match weights, with the threshold's weight marked."""
        from matplotlib.figure import Figure

        from dqkit.contract.charts import PLAIN

        h = self.weight_histogram
        fig = Figure(figsize=(7, 3.2), layout="constrained")
        ax = fig.subplots()
        if len(h):
            ax.bar(h["weight"] + 0.5, h["pairs"], width=0.9, color="#4c72b0")
        t = probability_to_weight(self.threshold)
        if math.isfinite(t):
            ax.axvline(t, color="#cf222e", linestyle="--", label=f"threshold p={self.threshold:g}")
            ax.legend(fontsize=8)
        ax.set_xlabel("match weight (log2 odds)", **PLAIN)
        ax.set_ylabel("pairs", **PLAIN)
        ax.set_title("Match weights of the candidate pairs", **PLAIN)
        if not len(h):
            ax.text(0.5, 0.5, "no candidate pairs", ha="center", va="center", transform=ax.transAxes)
        return fig

    def plot_waterfall(self, key_1: Any, key_2: Any):
        """Waterfall of one pair: the prior, then each comparison's log2 Bayes factor, to the final weight."""
        from matplotlib.figure import Figure

        from dqkit.contract.charts import PLAIN

        e = self.explain(key_1, key_2)
        labels = [f"{r.comparison}: {r.level}" if r.level else str(r.comparison) for r in e.itertuples()]
        labels.append("match weight")
        starts = list(e["match_weight"] - e["log2_bayes_factor"]) + [0.0]
        widths = list(e["log2_bayes_factor"]) + [float(e["match_weight"].iloc[-1])]
        fig = Figure(figsize=(7, max(2.2, 0.42 * len(labels) + 1.2)), layout="constrained")
        ax = fig.subplots()
        y = np.arange(len(labels))[::-1]
        colors = ["#2da44e" if w >= 0 else "#cf222e" for w in widths]
        colors[0], colors[-1] = "#8c959f", "#4c72b0"
        bars = ax.barh(y, widths, left=starts, color=colors, height=0.6)
        ax.bar_label(bars, labels=[f"{w:+.1f}" for w in widths], padding=3, fontsize=8, **PLAIN)
        ax.axvline(0, color="#1f2328", linewidth=0.8)
        ends = [a + b for a, b in zip(starts, widths)]
        lo, hi = min(0.0, *starts, *ends), max(0.0, *starts, *ends)
        pad = 0.12 * (hi - lo or 1.0)  # room for the labels at both ends (bars' sticky edges defeat margins)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_yticks(y, labels, **PLAIN)
        ax.set_xlabel("log2 Bayes factor / match weight", **PLAIN)
        ax.set_title(f"{key_1} ~ {key_2}\nmatch weight {widths[-1]:.1f}, probability {e.attrs['probability']:.4f}",
                     fontsize=10, **PLAIN)
        return fig

    def plot_cluster_sizes(self):
        """Clusters per size (records per cluster), singletons included."""
        from dqkit.contract import charts as ch

        return ch.barh({f"{s} record{'s' if s > 1 else ''}": n for s, n in self.cluster_sizes.items()},
                       "Cluster sizes", "clusters", "size", integer=True)
