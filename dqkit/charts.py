"""Charts drawn from computed statistics (never from collected raw data), with matplotlib.

Shared by every result object: bar charts of counts and percentages, and the quartile chart, a box
plot drawn with ``Axes.bxp`` from min / Q1 / median / Q3 / max.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence

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


def to_png_base64(fig: Figure) -> str:
    """The figure as a base64 PNG (for self-contained HTML)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def img_tag(fig: Figure, alt: str) -> str:
    """An <img> with the figure embedded as a data URI."""
    import html

    return f"<img alt='{html.escape(alt, quote=True)}' src='data:image/png;base64,{to_png_base64(fig)}'/>"


def _short(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def save_all(figs: Sequence[tuple[str, Figure]], folder) -> list[str]:
    """Save (name, figure) pairs as PNG files into ``folder``; returns the file names."""
    from pathlib import Path

    names = []
    for name, fig in figs:
        fig.savefig(Path(folder) / f"{name}.png", dpi=100)
        names.append(f"{name}.png")
    return names
