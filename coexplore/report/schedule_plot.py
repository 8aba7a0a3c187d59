"""Gantt chart of one schedule with the bandwidth timeline under it, and the PNG writer every
chart shares (matplotlib, Agg).

Imported lazily (only the CLI and reports draw), so the schedulers and the model never need
matplotlib.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coexplore.system.evaluator import Trace
from coexplore.system.jobs import JobTable


def plot_schedule(table: JobTable, tr: Trace, path: str | Path, title: str = "") -> Path:
    """Write a PNG: top = one row per core with its jobs (coloured by DNN, with a legend, when the
    table holds several); bottom = stacked allocated bandwidth per core over time with the system
    bandwidth as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    N = table.num_cores
    cmap = plt.get_cmap("tab20")
    fig, (ax, axb) = plt.subplots(2, 1, figsize=(11, 2.0 + min(0.45 * N, 60.0) + 2.5), sharex=True,
                                  gridspec_kw={"height_ratios": [max(N, 2), 3]})
    # several DNNs (up to 20): a colour per DNN, named in a legend; else a colour per job
    dnns = list(dict.fromkeys(j.dnn or "(none)" for j in table.jobs))
    by_dnn = 1 < len(dnns) <= 20
    # tab20 pairs a dark and a light shade of each hue: the first 10 DNNs get the 10 dark hues
    hue = [*range(0, 20, 2), *range(1, 20, 2)]
    at = {d: hue[k] for k, d in enumerate(dnns[:20])}
    colour = [at[j.dnn or "(none)"] if by_dnn else i % 20 for i, j in enumerate(table.jobs)]
    # one broken_barh call per core (a barh per job took a minute for 50,000 jobs)
    for c in range(N):
        jobs = np.flatnonzero(tr.job_core == c)
        jobs = jobs[np.argsort(tr.job_start[jobs], kind="stable")]
        if len(jobs):
            spans = list(zip(tr.job_start[jobs], tr.job_end[jobs] - tr.job_start[jobs]))
            # jobs of one DNN back to back alternate in shade: each job stays visible without borders
            faces = [cmap(colour[j], alpha=1.0 if k % 2 == 0 or not by_dnn else 0.7) for k, j in enumerate(jobs)]
            # (outlines on every core or none: thin jobs' outlines would draw solid black bars)
            ax.broken_barh(spans, (c - 0.4, 0.8), facecolors=faces,
                           edgecolor="black", linewidth=0.3 if table.num_jobs < 2000 else 0)
    if by_dnn:
        from matplotlib.patches import Patch
        ax.legend(handles=[Patch(facecolor=cmap(at[d]), edgecolor="black", label=d) for d in dnns],
                  loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, title="DNN", title_fontsize=7,
                  borderaxespad=0.0, ncol=1 + (len(dnns) - 1) // 10)   # beside the chart: never over a job
    ax.set_yticks(range(N))
    ax.set_yticklabels(table.cores)
    ax.set_ylim(N - 0.5, -0.5)           # every core's row, first on top, an idle last one too
    ax.set_ylabel("core")
    import textwrap                       # (a long title wraps, never runs off the figure)
    ax.set_title(textwrap.fill((title or f"makespan {tr.makespan:.4g} cycles")
                               + ("" if by_dnn else "  (a colour per job)"), 90))
    # the cores' bandwidth colours: dark, and another palette than the jobs' tab20 (whose dark hues
    # are tab10's: a core would share a job's colour; Set3's pale ones vanish on white)
    core_cmap = plt.get_cmap("Dark2")
    # bandwidth: stacked steps per core
    edges = np.concatenate([tr.seg_start, tr.seg_end[-1:]])
    bottom = np.zeros(len(tr.seg_start))
    for c in range(N):
        top = bottom + tr.seg_bw[:, c]
        axb.fill_between(edges, np.append(bottom, bottom[-1]), np.append(top, top[-1]),
                         step="post", color=core_cmap(c % core_cmap.N), alpha=0.8,
                         linewidth=0, label=table.cores[c])
        bottom = top
    axb.axhline(tr.bandwidth, color="black", linestyle="--", linewidth=1, label="system BW")
    axb.set_ylabel("bandwidth (B/cycle)")
    axb.set_xlabel("time (cycles)")
    axb.set_xlim(0, tr.makespan)
    axb.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, borderaxespad=0.0,
               ncol=1 + N // 12)                # beside the chart, as the DNN legend: never over the data
    fig.tight_layout()
    try:
        return save_png(fig, path)
    finally:
        plt.close(fig)


def save_png(fig, path: str | Path) -> Path:
    """Write a matplotlib figure as a PNG (110 dpi) whole or not at all (a temporary file renamed into
    place: a Ctrl-C or a full disk never leaves half a chart); the charts of schedule, sweep and online."""
    import re
    import warnings

    from coexplore.errors import CoexploreNote
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.savefig(tmp, dpi=110)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    missing = []                      # matplotlib's one warning per character and draw: said once, in words
    for w in caught:
        glyph = re.match(r"Glyph (\d+) .*missing from font", str(w.message))
        if glyph:
            missing.append(chr(int(glyph.group(1))))
        else:
            warnings.warn(w.message, w.category, stacklevel=2)
    if missing:
        chars = "".join(dict.fromkeys(missing))
        warnings.warn(f"the characters {chars!r} of the names are not in the charts' font: they show as boxes "
                      "there (the HTML and CSV files have them)", CoexploreNote, stacklevel=2)
    return path
