"""Charts drawn from computed statistics (never from collected raw data), with matplotlib.

Shared by every result object: bar charts of counts and percentages, and the quartile chart, a box
plot drawn with ``Axes.bxp`` from min / Q1 / median / Q3 / max.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Mapping

# Figures are built with the object API (no pyplot state), so they work headless and in notebooks.
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

#: Every label is plain text: a name such as ``$x$`` must not be parsed as math markup.
PLAIN = {"usetex": False, "parse_math": False}


def _figure(n_bars: int) -> Figure:
    # a bar is about 0.4 inch high, so one bar is a strip, not a whole panel
    height = min(max(1.5, 0.4 * n_bars + 1.0), 12)
    return Figure(figsize=(7, height), layout="constrained")


def barh(values: Mapping[str, float], title: str, xlabel: str, ylabel: str, integer: bool = False) -> Figure:
    """Horizontal bars, one per label (X = value, Y = label), labels in the given order.

    ``integer``: the values are counts, so the axis shows whole numbers only.
    """
    fig = _figure(len(values))
    ax = fig.subplots()
    labels = list(values)[::-1]
    nums = [float(values[k]) for k in labels]
    positions = list(range(len(labels)))
    bars = ax.barh(positions, nums, color="#4c72b0", height=0.6)
    ax.set_yticks(positions, [str(k) for k in labels], **PLAIN)
    ax.bar_label(bars, labels=[_short(v) for v in nums], padding=3, fontsize=9, **PLAIN)
    ax.set_title(title, **PLAIN)
    ax.set_xlabel(xlabel, **PLAIN)
    ax.set_ylabel(ylabel, **PLAIN)
    ax.margins(x=0.15)
    if integer:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if not values:
        ax.text(0.5, 0.5, "nothing to show", ha="center", va="center", transform=ax.transAxes)
    return fig


def message_figure(title: str, text: str) -> Figure:
    """A chart that could not be drawn: its title over the reason, as plain text."""
    import textwrap

    fig = Figure(figsize=(7, 1.5), layout="constrained")
    ax = fig.subplots()
    ax.set_axis_off()
    ax.set_title(title, **PLAIN)
    ax.text(0.5, 0.5, textwrap.fill(text, 80), ha="center", va="center", transform=ax.transAxes, **PLAIN)
    return fig


def quartile_chart(stats: Mapping[str, Mapping[str, float]], title: str, xlabel: str = "difference",
                   units: Mapping[str, str] | None = None) -> Figure:
    """Box plots from computed {min, q1, median, q3, max}: one panel per column, each on its own scale.

    Columns carry different units (characters, days, currency), so they do not share an axis and each
    panel's axis names its unit (``units[column]``). Columns without differences are skipped. A column
    with one difference (n = 1) is drawn as a marked point with its value, not a collapsed box.
    """
    units = units or {}
    rows = [(name, s) for name, s in stats.items() if s.get("count") and s.get("median") is not None]
    fig = Figure(figsize=(7, max(1.6, 0.9 * len(rows) + 0.8)), layout="constrained")
    if not rows:
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no differences", ha="center", va="center", transform=ax.transAxes, **PLAIN)
        ax.set_axis_off()
        fig.suptitle(title, **PLAIN)
        return fig
    fig.set_size_inches(7, max(1.6, 1.25 * len(rows) + 0.6))
    axes = fig.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, (name, s) in zip(axes, rows):
        lo, hi, med = float(s["min"]), float(s["max"]), float(s["median"])
        n = int(s["count"]) - int(s.get("null_changes") or 0)
        if lo == hi:  # one value (n = 1, or all changes equal): a point, not a box of zero width
            ax.plot([med], [1], marker="D", markersize=9, color="#cf222e", linestyle="none")
            ax.set_yticks([1], [str(name)], **PLAIN)
        else:
            box = {"label": "", "whislo": lo, "q1": float(s["q1"]), "med": med,
                   "q3": float(s["q3"]), "whishi": hi, "fliers": []}
            ax.bxp([box], orientation="horizontal", showfliers=False, patch_artist=True, widths=0.6,
                   boxprops={"facecolor": "#c6dbef"}, medianprops={"color": "#cf222e", "linewidth": 2})
            ax.set_yticks([1], [str(name)], **PLAIN)
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.1, 0.5)
        ax.set_xlim(lo - pad, hi + pad)
        ax.tick_params(axis="both", labelsize=9)
        if all(float(v).is_integer() for v in (lo, hi, s["q1"], s["q3"])):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_xlabel(f"{xlabel} ({units[name]})" if name in units else xlabel, fontsize=9, **PLAIN)
        summary = (f"one change: {_short(med)}" if lo == hi and n <= 1 else
                   f"n={n}  min={_short(lo)}  median={_short(med)}  max={_short(hi)}")
        ax.set_title(summary, loc="right", fontsize=9, color="#1f2328", **PLAIN)
    fig.suptitle(title, **PLAIN)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure drawn once as PNG bytes (100 dpi): what a saved ``NAME.png`` and an embedded image hold."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def to_png_base64(fig: Figure | bytes) -> str:
    """The figure (or its ``png_bytes``) as a base64 PNG (for self-contained HTML)."""
    return base64.b64encode(fig if isinstance(fig, bytes) else png_bytes(fig)).decode("ascii")


def img_tag(fig: Figure | bytes, alt: str) -> str:
    """An <img> with the figure (or its ``png_bytes``) embedded as a data URI."""
    import html

    return f"<img alt='{html.escape(alt, quote=True)}' src='data:image/png;base64,{to_png_base64(fig)}'/>"


def _short(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


#: Colours of the rules in a violation graph (cycled when there are more rules).
RULE_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
                "#ccb974", "#64b5cd")


def violation_graph(g: "networkx.Graph", title: str = "Violation graph", max_labels: int = 60) -> Figure:  # noqa: F821
    """One bounded component of the violation hypergraph, drawn as its incidence graph.

    ``g`` is what ``ViolationHypergraph.to_networkx`` returns: cell nodes (``kind="cell"``, labelled
    ``tid.attr = value``) and violation nodes (``kind="violation"``, ``rule``), an edge from each
    violation to each of its cells. Cells are labelled circles; violations are small squares; edges
    and squares take their rule's colour, named in the legend. The layout is deterministic (a seeded
    spring layout over the nodes in sorted order), so the same component always looks the same. At
    most ``max_labels`` cells are labelled (those in most violations first); the title says so.
    """
    import networkx as nx
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    def order(node: object) -> tuple[str, str]:
        return (g.nodes[node].get("kind", ""), repr(node))

    nodes = sorted(g.nodes, key=order)
    cells = [n for n in nodes if g.nodes[n].get("kind") == "cell"]
    violations = [n for n in nodes if g.nodes[n].get("kind") == "violation"]
    rules = sorted({str(g.nodes[n].get("rule")) for n in violations} |
                   {str(d.get("rule")) for _, _, d in g.edges(data=True)})
    colour = {r: RULE_COLOURS[i % len(RULE_COLOURS)] for i, r in enumerate(rules)}

    n = len(nodes)
    side = min(11.0, 5.0 + 0.12 * n)
    fig = Figure(figsize=(side, side * 0.75), layout="constrained")
    ax = fig.subplots()
    ax.set_axis_off()
    if not n:
        ax.text(0.5, 0.5, "nothing to show", ha="center", va="center", transform=ax.transAxes, **PLAIN)
        ax.set_title(title, **PLAIN)
        return fig

    ordered = nx.Graph()
    ordered.add_nodes_from(nodes)
    ordered.add_edges_from(sorted(g.edges, key=lambda e: (order(e[0]), order(e[1]))))
    pos = nx.spring_layout(ordered, seed=7, k=1.6 / max(1.0, n ** 0.5), iterations=200)

    for rule in rules:  # edges, one collection per rule so the colours say which rule
        segments = [(pos[u], pos[v]) for u, v, d in g.edges(data=True) if str(d.get("rule")) == rule]
        if segments:
            ax.add_collection(LineCollection(segments, colors=colour[rule], linewidths=1.4, alpha=0.8, zorder=1))
    if cells:
        xy = [pos[c] for c in cells]
        ax.scatter([p[0] for p in xy], [p[1] for p in xy], s=220, c="#f6f8fa", edgecolors="#57606a",
                   linewidths=1.0, zorder=2)
    for rule in rules:
        vs = [v for v in violations if str(g.nodes[v].get("rule")) == rule]
        if vs:
            ax.scatter([pos[v][0] for v in vs], [pos[v][1] for v in vs], s=45, marker="s", c=colour[rule],
                       zorder=3)

    labelled = sorted(cells, key=lambda c: (-g.degree(c), order(c)))[:max(0, max_labels)]
    for c in labelled:
        text = str(g.nodes[c].get("label") or c)
        text = text if len(text) <= 40 else text[:39] + "…"
        ax.annotate(text, pos[c], xytext=(0, 8), textcoords="offset points", fontsize=8, ha="center",
                    va="bottom", zorder=4, bbox={"boxstyle": "round,pad=0.15", "facecolor": "white",
                                                 "edgecolor": "none", "alpha": 0.75}, **PLAIN)
    ax.margins(0.18)

    handles = [Line2D([0], [0], color=colour[r], marker="s", linewidth=1.4) for r in rules]
    counts = {r: sum(1 for v in violations if str(g.nodes[v].get("rule")) == r) for r in rules}
    legend = ax.legend(handles, [f"{r} ({counts[r]} violation{'s' if counts[r] != 1 else ''})" for r in rules],
                       loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False, title="rule")
    for t in [*legend.get_texts(), legend.get_title()]:
        t.set_parse_math(False)
    shown = f"{len(cells)} cells, {len(violations)} violations"
    if len(labelled) < len(cells):
        shown += f"; labels on {len(labelled)} cells"
    # the figure's title, not the axes': the legend beside the axes narrows them, and a long title centred
    # over narrow axes was clipped at the left edge of the image
    # (wrapped to the figure's width, which follows the number of nodes)
    import textwrap

    fig.suptitle(textwrap.fill(f"{title} ({shown})", width=max(30, int(side * 9))), **PLAIN)
    return fig
