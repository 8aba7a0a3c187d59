"""The sweep's objectives plotted against each other, the Pareto front highlighted (matplotlib, Agg).

matplotlib is imported lazily (only reports draw). The figure is built on a bare `Figure` with an
Agg canvas, never through pyplot, so drawing leaves no global figure state behind.

Layout by the number of objectives: 1 -> a bar per successful point, the best ones marked;
2 -> one scatter with the front joined by its staircase (the border of the region it dominates);
k >= 3 -> one scatter per pair of objectives (k*(k-1)/2 panels), the front highlighted in each.
"""

from __future__ import annotations

import math
import numbers
from itertools import combinations
from pathlib import Path

import numpy as np

from coexplore.sweep.metrics import Objective

FRONT_COLOUR = "tab:red"
OTHER_COLOUR = "0.6"
LABEL_LIMIT = 20          # ids written beside the points up to this many per panel: more would hide them


def axis_label(obj: Objective) -> str:
    """'name (unit)', or just the name for a unitless objective."""
    return f"{obj.name} ({obj.unit})" if obj.unit else obj.name


def wants_log(values) -> bool:
    """Log scale when the values are all positive and span more than 10x."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return bool(len(v) and (v > 0).all() and v.max() > 10.0 * v.min())


def objective_matrix(points: list[dict], objectives: list[Objective]) -> np.ndarray:
    """[points, objectives] floats; NaN where a record lacks the value (a failed point)."""
    out = np.full((len(points), len(objectives)), np.nan)
    for i, p in enumerate(points):
        for j, o in enumerate(objectives):
            v = p.get(o.column)
            if isinstance(v, numbers.Real) and not isinstance(v, bool):   # numpy scalars too
                out[i, j] = float(v)
    return out


def panel_grid(n_objectives: int) -> tuple[list[tuple[int, int]], int, int]:
    """The objective pairs drawn (one panel each; one pseudo-pair for 1 or 2 objectives) and the
    (rows, columns) of panels."""
    if n_objectives <= 2:
        return [(0, n_objectives - 1)], 1, 1
    pairs = list(combinations(range(n_objectives), 2))
    cols = 3 if len(pairs) <= 6 else 5
    return pairs, math.ceil(len(pairs) / cols), cols


def draw_pareto(points: list[dict], objectives: list[Objective], front, title: str = ""):
    """The figure `plot_pareto` writes (a matplotlib Figure, not saved)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not 1 <= len(objectives) <= 5:
        raise ValueError(f"plot_pareto draws 1 to 5 objectives, got {len(objectives)}")
    front = np.asarray(front, dtype=bool).reshape(-1)
    if len(front) != len(points):
        raise ValueError(f"front has {len(front)} flags for {len(points)} points")
    vals = objective_matrix(points, objectives)
    failed = np.array([p.get("status") != "ok" for p in points], dtype=bool)
    drawn = ~failed & np.isfinite(vals).all(axis=1)
    notes = []
    if failed.any():
        notes.append(f"{int(failed.sum())} failed point{'s' if failed.sum() > 1 else ''} not shown")
    if (~failed & ~drawn).any():
        k = int((~failed & ~drawn).sum())
        notes.append(f"{k} point{'s' if k > 1 else ''} without finite values not shown")
    what = "Pareto front: " + ", ".join(o.name for o in objectives)
    head = f"{title} \N{EM DASH} {what}" if title else what
    head = head.replace("$", r"\$")         # (a system name's $ is text, not matplotlib's maths)
    full_title = head + ("\n" + "; ".join(notes) if notes else "")
    ids = [str(p.get("point", i)) for i, p in enumerate(points)]

    pairs, rows, cols = panel_grid(len(objectives))
    if len(objectives) == 1:
        n = int(drawn.sum())
        size = (min(max(6.0, 0.35 * n + 2.0), 20.0), 4.8)
    elif len(objectives) == 2:
        size = (7.5, 6.0)
    else:
        size = (4.3 * cols, 3.9 * rows + 0.6)
    fig = Figure(figsize=size if drawn.any() else (7.0, 3.0))
    FigureCanvasAgg(fig)
    if not drawn.any():
        ax = fig.add_subplot(1, 1, 1)
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no successful point to plot ({len(points)} point{'s' if len(points) != 1 else ''})",
                ha="center", va="center", fontsize=14, transform=ax.transAxes)
        fig.suptitle(full_title)
        return fig

    on = drawn & front
    off = drawn & ~front
    if len(objectives) == 1:
        _bars(fig.add_subplot(1, 1, 1), vals[:, 0], ids, drawn, on, objectives[0])
    else:
        panels = []
        for k, (a, b) in enumerate(pairs):
            ax = fig.add_subplot(rows, cols, k + 1)
            labels = _scatter(ax, vals[:, a], vals[:, b], ids, on, off, objectives[a], objectives[b],
                              staircase=len(objectives) == 2, legend=k == 0)
            panels.append((ax, vals[:, a], vals[:, b], labels))
    fig.suptitle(full_title)
    fig.tight_layout()
    if len(objectives) > 1:
        for ax, x, y, labels in panels:           # placed once the panels have their final size
            _place_labels(ax, x, y, drawn, labels)
    return fig


def _bars(ax, v, ids, drawn, on, obj: Objective) -> None:
    idx = np.flatnonzero(drawn)
    colours = [FRONT_COLOUR if on[i] else OTHER_COLOUR for i in idx]
    ax.bar(np.arange(len(idx)), v[idx], color=colours, edgecolor="black", linewidth=0.4)
    _scale(ax.yaxis, ax.set_yscale, v[idx])
    step = max(1, math.ceil(len(idx) / 40))            # at most ~40 tick labels
    ax.set_xticks(np.arange(0, len(idx), step))
    ax.set_xticklabels([ids[i] for i in idx[::step]], rotation=90, fontsize=8)
    ax.set_xlabel("point")
    ax.set_ylabel(axis_label(obj))
    best = [ids[i] for i in idx if on[i]]
    if best:
        from matplotlib.patches import Patch
        shown = ", ".join(best[:5]) + (" ..." if len(best) > 5 else "")
        ax.legend(handles=[Patch(facecolor=FRONT_COLOUR, edgecolor="black",
                                 label=f"best ({obj.sense}): {shown}")], fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _scale(axis, set_scale, v) -> None:
    """Log scale for values spanning more than 10x, labelled at 1, 2, 5 x 10^k over few decades
    (matplotlib's labelled minor ticks overlap on small panels); else linear with short labels."""
    from matplotlib.ticker import (LogFormatterSciNotation, LogLocator, MaxNLocator, NullFormatter,
                                   ScalarFormatter)

    if not wants_log(v):
        axis.set_major_locator(MaxNLocator(6))
        fmt = ScalarFormatter(useMathText=True)
        fmt.set_powerlimits((-3, 4))          # 0.0012 -> 1.2 x 10^-3: labels stay short
        axis.set_major_formatter(fmt)
        return

    set_scale("log")
    if np.log10(v.max() / v.min()) < 2.5:
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
    axis.set_minor_formatter(NullFormatter())


def _arrow(xo: Objective, yo: Objective) -> str:
    """The direction in which a panel's points get better."""
    return {("min", "min"): "\u2199", ("max", "min"): "\u2198",
            ("min", "max"): "\u2196", ("max", "max"): "\u2197"}[(xo.sense, yo.sense)]


def _scatter(ax, x, y, ids, on, off, xo: Objective, yo: Objective, *, staircase: bool,
             legend: bool) -> list[tuple[int, str, bool]]:
    """Draw one panel; returns the labels to write beside its points (`_labels`; none past LABEL_LIMIT)."""
    small = len(ids) > 200
    ax.scatter(x[off], y[off], s=14 if small else 26, color=OTHER_COLOUR, edgecolor="none",
               label=f"dominated ({int(off.sum())})" if off.any() else "_nolegend_", zorder=2)
    ax.scatter(x[on], y[on], s=40, color=FRONT_COLOUR, edgecolor="black", linewidth=0.5,
               label=f"Pareto front ({int(on.sum())})", zorder=3)
    if staircase and on.sum() > 1:
        f = np.flatnonzero(on)
        f = f[np.lexsort((y[f], x[f]))]
        # the border of the region the front dominates: with x minimised a front point's
        # y holds until the next point's x (steps-post); with x maximised it holds back to the
        # previous point's x (steps-pre)
        ax.plot(x[f], y[f], drawstyle="steps-post" if xo.sense == "min" else "steps-pre",
                color=FRONT_COLOUR, linewidth=1.2, alpha=0.8, zorder=2.5)
    drawn = on | off
    _scale(ax.xaxis, ax.set_xscale, x[drawn])
    _scale(ax.yaxis, ax.set_yscale, y[drawn])
    ax.set_xlabel(axis_label(xo))
    ax.set_ylabel(axis_label(yo))
    ax.grid(alpha=0.3)
    ax.set_title(f"better: {_arrow(xo, yo)}", loc="right", fontsize=8, color="0.3")
    if legend:
        ax.legend(fontsize=7)
    fronts = np.flatnonzero(on)
    named = np.flatnonzero(drawn) if drawn.sum() <= LABEL_LIMIT else fronts   # few points: the dominated too
    if len(fronts) > LABEL_LIMIT:                                              # (then the report's table)
        return []
    return _labels(named, x, y, ids, on, np.flatnonzero(drawn), ax.get_xscale() == "log", ax.get_yscale() == "log")


# where a label may go beside its point (offset in points, alignment): above right first, as
# dominated points' below right; the others where those would cover another label or point
_OFFSETS = (((4, 4), "left", "bottom"), ((4, -4), "left", "top"), ((-4, 4), "right", "bottom"),
            ((-4, -4), "right", "top"), ((0, 7), "center", "bottom"), ((0, -7), "center", "top"))


def _place_labels(ax, x, y, drawn, labels) -> None:
    """Write each label beside its point where it covers the fewest other labels and points and
    stays inside the panel (front points' labels placed first, so they get the best places)."""
    renderer = ax.figure.canvas.get_renderer()
    pts = ax.transData.transform(np.column_stack([x[drawn], y[drawn]]))
    r = 3.5 * ax.figure.dpi / 72                  # a marker's half size in pixels
    box = ax.get_window_extent(renderer)
    placed: list = []

    def cost(bb, own) -> float:
        inside = (pts[:, 0] + r > bb.x0) & (pts[:, 0] - r < bb.x1) & (pts[:, 1] + r > bb.y0) & (pts[:, 1] - r < bb.y1)
        near = np.sum(inside & np.any(pts != own, axis=1))        # (the label's own point not counted)
        covered = sum(max(0.0, min(bb.x1, o.x1) - max(bb.x0, o.x0)) * max(0.0, min(bb.y1, o.y1) - max(bb.y0, o.y0))
                      for o in placed)
        outside = bb.width * bb.height - max(0.0, min(bb.x1, box.x1) - max(bb.x0, box.x0)) \
            * max(0.0, min(bb.y1, box.y1) - max(bb.y0, box.y0))
        return covered + 2 * outside + 40.0 * near
    for i, text, front in sorted(labels, key=lambda t: not t[2]):
        order = _OFFSETS if front else (_OFFSETS[1], _OFFSETS[0], *_OFFSETS[2:])
        best = None
        for offset, ha, va in order:
            note = ax.annotate(text, (x[i], y[i]), textcoords="offset points", xytext=offset, ha=ha, va=va,
                               fontsize=7 if front else 6, color="black" if front else "0.45", zorder=4)
            bb = note.get_window_extent(renderer).padded(2)     # (a gap between neighbours' labels)
            c = cost(bb, ax.transData.transform((x[i], y[i])))
            if best is None or c < best[0]:
                if best is not None:
                    best[1].remove()
                best = (c, note, bb)
            else:
                note.remove()
            if c == 0:
                break
        placed.append(best[2])


SPOT = 0.015       # points closer than this fraction of a panel's span share one label


def _labels(rows, x, y, ids, on, drawn, xlog: bool = False, ylog: bool = False) -> list[tuple[int, str, bool]]:
    """One label per spot of a panel: points drawn at (nearly) the same place, front or dominated,
    are named together (p09/p13: front points first, a dominated one among them in parentheses,
    p09/(p13)), not written over each other; (index, text, whether a front point is among them).
    Near: within SPOT of the span of the points `drawn`."""
    rows = sorted(rows, key=lambda i: (not on[i], i))

    def unit(v, log):
        v = np.log10(np.maximum(v, 1e-300)) if log else np.asarray(v, float)
        lo, hi = (v[drawn].min(), v[drawn].max()) if len(drawn) else (0.0, 1.0)
        return (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
    u, w = unit(x, xlog), unit(y, ylog)
    spots: list[list[int]] = []
    for i in rows:
        near = next((m for m in spots if abs(u[m[0]] - u[i]) <= SPOT and abs(w[m[0]] - w[i]) <= SPOT), None)
        (near.append(i) if near is not None else spots.append([i]))
    def text(m):                    # a dominated point at a front point's spot in parentheses: not on the front
        first, rest = [str(ids[i]) for i in m if on[i]], [str(ids[i]) for i in m if not on[i]]
        return "/".join(first + ([f"({'/'.join(rest)})"] if first and rest else rest))
    return [(m[0], text(m), bool(on[m[0]])) for m in spots]


def plot_pareto(points: list[dict], objectives: list[Objective], front, path: str | Path,
                title: str = "") -> Path:
    """Write the Pareto plot of a sweep's records as a PNG (whole or not at all) and return its path.
    `front` flags the non-dominated points (`coexplore.sweep.pareto.pareto_front`); failed points
    and points without finite objective values are left out and counted in the title."""
    from coexplore.report.schedule_plot import save_png
    return save_png(draw_pareto(points, objectives, front, title), path)
