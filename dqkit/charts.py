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


def _figure(n_bars: int) -> Figure:
    height = max(2.2, 0.35 * n_bars + 1.2)
    return Figure(figsize=(7, height), layout="constrained")


def barh(values: Mapping[str, float], title: str, xlabel: str, ylabel: str) -> Figure:
    """Horizontal bars, one per label (X = value, Y = label), labels in the given order."""
    fig = _figure(len(values))
    ax = fig.subplots()
    labels = list(values)[::-1]
    nums = [float(values[k]) for k in labels]
    bars = ax.barh(labels, nums, color="#4c72b0")
    ax.bar_label(bars, labels=[_short(v) for v in nums], padding=3, fontsize=8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.margins(x=0.15)
    if not values:
        ax.text(0.5, 0.5, "nothing to show", ha="center", va="center", transform=ax.transAxes)
    return fig


def quartile_chart(stats: Mapping[str, Mapping[str, float]], title: str, xlabel: str = "difference") -> Figure:
    """Box plots from computed {min, q1, median, q3, max}: one panel per column, each on its own scale.

    Columns carry different units (characters, days, currency), so they do not share an axis.
    Columns without differences are skipped.
    """
    rows = [(name, s) for name, s in stats.items() if s.get("count") and s.get("median") is not None]
    fig = Figure(figsize=(7, max(1.6, 0.9 * len(rows) + 0.8)), layout="constrained")
    if not rows:
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no differences", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        fig.suptitle(title)
        return fig
    axes = fig.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, (name, s) in zip(axes, rows):
        box = {"label": name, "whislo": float(s["min"]), "q1": float(s["q1"]), "med": float(s["median"]),
               "q3": float(s["q3"]), "whishi": float(s["max"]), "fliers": []}
        ax.bxp([box], orientation="horizontal", showfliers=False, patch_artist=True, widths=0.6,
               boxprops={"facecolor": "#c6dbef"}, medianprops={"color": "#cf222e", "linewidth": 2})
        lo, hi = float(s["min"]), float(s["max"])
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.1, 0.5)
        ax.set_xlim(lo - pad, hi + pad)
        ax.tick_params(axis="x", labelsize=8)
        ax.text(1.0, 1.02, f"n={int(s['count'])}  min={_short(lo)}  median={_short(float(s['median']))}  "
                f"max={_short(hi)}", transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="#656d76")
    axes[-1].set_xlabel(xlabel)
    fig.suptitle(title)
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
