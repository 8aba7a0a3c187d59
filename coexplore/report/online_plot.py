"""`coexplore online`'s charts: SLA satisfaction per scheduler, overall and per DNN, and against the
offered load when several loads are served (matplotlib, Agg).

Left: each scheduler's mean SLA rate over the evaluation streams (bar) with every stream's rate
(dots), best first. Right: the mean SLA rate per DNN (tenant), grouped by scheduler, the legend
outside the axes. Each scheduler keeps its colour in every chart. Built on a bare `Figure` (no pyplot
state) and written whole or not at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


# one colour per scheduler, the same in every chart (relmas red)
COLOURS = {"relmas": "tab:red", "sjf": "tab:blue", "edf": "tab:orange", "lsf": "tab:green", "prema": "tab:purple",
           "fcfs": "tab:brown", "static": "tab:gray", "magma": "tab:pink", "random": "tab:olive"}


def scheduler_colours(names: list[str]) -> dict[str, str]:
    """COLOURS, and for other names (a scheduler of the user's) colours COLOURS does not use, in turn."""
    spare = [c for c in ("tab:pink", "tab:cyan", "black", "gold", "navy") if c not in COLOURS.values()]
    out, k = {}, 0
    for n in names:
        if n in COLOURS:
            out[n] = COLOURS[n]
        else:
            out[n] = spare[k % len(spare)]
            k += 1
    return out


def draw_sla(data: dict, path: str | Path, title: str = "") -> Path:
    """Write the chart of an online.json record (`coexplore.cli.online`) and return its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    means = data["schedulers"]
    names = sorted(means, key=lambda n: -means[n]["sla_rate"])
    models = [m["name"] for m in data["models"]]
    colour = scheduler_colours(list(means))
    fig = Figure(figsize=(12.0, 4.4))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
    x = np.arange(len(names))
    left.bar(x, [means[n]["sla_rate"] for n in names], color=[colour[n] for n in names], alpha=0.85)
    for i, n in enumerate(names):
        per = means[n]["sla_rate_per_seed"]
        left.plot(np.full(len(per), x[i]), per, "k.", markersize=4)
    left.set_xticks(x, names, rotation=30, ha="right")
    left.set_ylim(0, 1.02)
    left.set_ylabel("SLA satisfaction rate")
    left.set_title("all requests (dots: each stream)", fontsize=10)
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        per = means[n]["per_model_sla_rate"]
        right.bar(np.arange(len(models)) + (i - (len(names) - 1) / 2) * width,
                  [per.get(m, np.nan) for m in models], width, label=n, color=colour[n])
    right.set_xticks(np.arange(len(models)), models)
    right.set_ylim(0, 1.02)
    right.set_title("per DNN (tenant)", fontsize=10)
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)   # outside: hides no bar
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    from coexplore.report.schedule_plot import save_png
    return save_png(fig, path)


def draw_sla_by_load(data: dict, path: str | Path, title: str = "") -> Path:
    """Write the SLA rate of each scheduler against the offered load (online.json's `loads`): a line per
    scheduler through its mean over the streams, a band from its worst to its best stream."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    loads = data["loads"]
    x = [e["load"] for e in loads]
    names = sorted(data["schedulers"], key=lambda n: -data["schedulers"][n]["sla_rate"])
    colour = scheduler_colours(names)
    fig = Figure(figsize=(8.0, 4.6))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for n in names:
        per = [e["schedulers"][n]["sla_rate_per_seed"] for e in loads]
        ax.plot(x, [e["schedulers"][n]["sla_rate"] for e in loads], "o-", color=colour[n], label=n,
                linewidth=2.2 if n == "relmas" else 1.4)
        ax.fill_between(x, [min(p) for p in per], [max(p) for p in per], color=colour[n], alpha=0.12, linewidth=0)
    basis = data["run"]["scenario"].get("basis", "fastest")
    ax.set_xlabel("offered load" + (" (of the cores' capacity)" if basis == "capacity" else
                                    " (fastest-core work per core-cycle)"))
    ax.set_ylabel("SLA satisfaction rate")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    from coexplore.report.schedule_plot import save_png
    return save_png(fig, path)
