"""MAGMA vs baselines on MAGMA's task types x settings x bandwidths (makespan, lower = better).

For every cell (task, setting, bandwidth) and seed, each method gets the same budget of
evaluated candidates; the heuristics row is the best of the 12 FCFS/SJF/HEFT x
GREEDY/RR/MET/HEFT schedules (12 samples). Reports each method's makespan normalised to
MAGMA's (median over seeds; > 1 = MAGMA better), how often MAGMA beats every baseline, how
MAGMA compares with the original code's GA (`magma_ga_100x100_best` in golden_eval.json),
and the time MAGMA needs for the budget. Writes results/bench/magma_vs_baselines.json and a
bar plot like the paper's (normalised makespan per method, per task).

    python bench/magma_vs_baselines.py                      # full: 64 cells x 5 seeds x all
    python bench/magma_vs_baselines.py --quick              # 1 seed, 2,000 samples, fast methods
    python bench/magma_vs_baselines.py --tasks lang --settings S2,S5 --seeds 3 --methods magma,random,cma
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from coexplore.system.bounds import LP_SLACK, lower_bound  # noqa: E402
from coexplore.system.evaluator import evaluate  # noqa: E402
from coexplore.system.heuristics import HEURISTICS, heuristic_schedule  # noqa: E402
from coexplore.system.schedule import search_schedule  # noqa: E402
from coexplore.system.tables import load_table  # noqa: E402

from runlog import RunLog, source_version  # noqa: E402
from shared_data import HelpFormatter, comma_list, positive, require  # noqa: E402

TASKS = {"vision": "batch_conv", "lang": "batch_lang", "recom": "batch_recom", "mix": "batch_mix"}
SETTINGS = {"S1": 2, "S2": 3, "S3": 8, "S4": 4, "S5": 5, "S6": 6}   # paper label -> code index
BANDWIDTHS = {2: (1, 16), 3: (1, 16), 4: (1, 16, 256), 5: (1, 16, 256), 6: (1, 16, 256),
              8: (1, 16, 256)}
METHODS = ("magma", "random", "stdga", "pso", "cma", "de", "tbpsa", "oneplusone", "heuristics")
FAST = ("magma", "random", "stdga", "heuristics")
SHARED = "project reference data in ../shared; not in a clone"



COMMON = ("coexplore/system/evaluator.py", "coexplore/system/encoding.py")
SOURCES = {"magma": ("coexplore/system/magma.py", "coexplore/system/heuristics.py"),
           "heuristics": ("coexplore/system/heuristics.py",),
           "random": ("coexplore/system/baselines.py",), "stdga": ("coexplore/system/baselines.py",)}
NG_SOURCES = ("coexplore/system/baselines.py", "coexplore/search/nevergrad_adapter.py")


def version(method: str) -> str:
    """Hash of the code a method's result depends on: a changed method reruns, others resume."""
    return source_version(*COMMON, *SOURCES.get(method, NG_SOURCES))


def run_one(job):
    table = load_table(Path(job["magma_dir"]) / "tables" / job["batch"] / f"S{job['setting']}"
                       / f"{job['inst']}.csv")
    method, bw = job["method"], job["bw"]
    t0 = time.perf_counter()
    if method == "heuristics":
        best, name = np.inf, None
        for h in HEURISTICS:
            core, prio = heuristic_schedule(table.latency, h)
            m = evaluate(table.latency, table.bandwidth, bw, core[None], prio[None]).makespan[0]
            if m < best:
                best, name = float(m), h
        return {**job, "makespan": best, "samples": len(HEURISTICS),
                "seconds": time.perf_counter() - t0, "heuristic": name}
    r = search_schedule(table, bw, method, job["budget"], job["seed"])
    return {**job, "makespan": float(r.makespan), "samples": int(r.samples),
            "seconds": time.perf_counter() - t0}


KEY = ("batch", "setting", "inst", "bw", "method", "seed", "budget")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--magma-dir", default=str(ROOT.parent / "shared" / "magma"),
                    help=f"MAGMA's data (tables/, golden_eval.json); {SHARED}")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma list of task types: " + ",".join(TASKS))
    ap.add_argument("--settings", default=",".join(SETTINGS), help="comma list of settings, S1..S6")
    ap.add_argument("--bandwidths", default=None,
                    help="comma list of system bandwidths (default: MAGMA's per setting)")
    ap.add_argument("--seeds", type=positive, default=5, help="seeds per cell and method (0..N-1)")
    ap.add_argument("--budget", type=positive, default=10_000, help="evaluated candidates per run")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma list of methods (magma is always added)")
    ap.add_argument("--inst", default="insts0", help="job-table instance (CSV name under tables/TASK/S*/)")
    ap.add_argument("--jobs", type=positive, default=1, help="worker processes")
    ap.add_argument("--quick", action="store_true",
                    help="1 seed, 2,000 samples, methods " + ",".join(FAST))
    ap.add_argument("--report-only", action="store_true",
                    help="no new runs: report what the run log holds (seeds may be uneven)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "magma_vs_baselines.json"),
                    help="JSON summary; the bar plot goes beside it as .png")
    ap.add_argument("--log", default=None,
                    help="run log, resumed if it exists (default: OUT with suffix .partial.jsonl)")
    a = ap.parse_args(argv)
    require(Path(a.magma_dir) / "tables", "--magma-dir", "MAGMA's job tables")
    if a.quick:
        a.seeds, a.budget, a.methods = 1, 2000, ",".join(FAST)
    methods = comma_list(ap, a.methods, METHODS, "--methods")
    tasks = comma_list(ap, a.tasks, TASKS, "--tasks")
    settings = comma_list(ap, a.settings, SETTINGS, "--settings")
    if "magma" not in methods:
        methods.insert(0, "magma")
    golden = {}
    gfile = Path(a.magma_dir) / "golden_eval.json"
    if gfile.exists():
        for c in json.loads(gfile.read_text())["cases"]:
            if c["inst"] == a.inst:
                golden[(c["batch"], c["setting"], c["bw"])] = c
    cells = []
    for task in tasks:
        for s in settings:
            idx = SETTINGS[s]
            bws = [float(b) for b in a.bandwidths.split(",")] if a.bandwidths else BANDWIDTHS[idx]
            cells += [(task, s, idx, bw) for bw in bws]
    # fast methods first, then seed-major: an interrupted run has every cell at the same seeds
    versions = {m: version(m) for m in methods}
    jobs = [{"magma_dir": a.magma_dir, "batch": TASKS[t], "setting": idx, "inst": a.inst, "bw": bw,
             "method": m, "seed": seed, "budget": a.budget, "version": versions[m]}
            for seed in range(a.seeds) for m in methods
            for (t, s, idx, bw) in cells if not (m == "heuristics" and seed > 0)]
    jobs.sort(key=lambda j: (j["method"] not in FAST, j["seed"]))
    log = RunLog(Path(a.log) if a.log else Path(a.out).with_suffix(".partial.jsonl"), KEY)
    todo = [] if a.report_only else [j for j in jobs if j not in log]
    print(f"{len(jobs)} runs ({sum(j in log for j in jobs)} already in {log.path.name})", file=sys.stderr)
    from tqdm import tqdm
    with log, (Pool(a.jobs) if a.jobs > 1 else _Serial()) as pool:
        for rec in tqdm(pool.imap(run_one, todo), total=len(todo), desc="runs", file=sys.stderr):
            log.append(rec)
    res = {}
    for j in jobs:
        r = log.get(j)
        if r is not None:
            res.setdefault((j["batch"], j["setting"], j["bw"], j["method"]), []).append(
                (r["seed"], r["makespan"], r["samples"], r["seconds"], r.get("heuristic")))
    cells = [c for c in cells if all((TASKS[c[0]], c[2], c[3], m) in res for m in methods)]
    if not cells:
        raise SystemExit("no cell has results for every method yet")
    seeds_used = {m: sorted({len(res[(TASKS[t], idx, bw, m)]) for (t, s, idx, bw) in cells})
                  for m in methods}
    rows = []
    for (t, s, idx, bw) in cells:
        b = TASKS[t]
        ref = np.median([r[1] for r in res[(b, idx, bw, "magma")]])
        table = load_table(Path(a.magma_dir) / "tables" / b / f"S{idx}" / f"{a.inst}.csv")
        lb = lower_bound(table.latency, table.bandwidth, bw)
        row = {"task": t, "setting": s, "setting_index": idx, "bandwidth": bw,
               "magma_median": float(ref), "lower_bound": lb,
               "magma_optimal": bool(ref <= lb * (1 + 2 * LP_SLACK)),
               "magma_per_seed": [r[1] for r in sorted(res[(b, idx, bw, "magma")])],
               "magma_seconds": float(np.mean([r[3] for r in res[(b, idx, bw, "magma")]]))}
        for m in methods:
            vals = [r[1] for r in res[(b, idx, bw, m)]]
            row[m] = float(np.median(vals)) / ref
        g = golden.get((b, idx, bw))
        if g:
            row["original_ga"] = g["magma_ga_100x100_best"] / ref
            row["original_rs"] = g["random_search_10k_best"] / ref
            row["magma_le_original_seeds"] = float(np.mean(
                [r[1] <= g["magma_ga_100x100_best"] * (1 + 1e-12) for r in res[(b, idx, bw, "magma")]]))
        row["heuristic_best"] = res[(b, idx, bw, "heuristics")][0][4] if "heuristics" in methods else None
        rows.append(row)
    base = [m for m in methods if m != "magma"]
    hdr = f"{'task':<7}{'set':<4}{'BW':>5} {'MAGMA':>10} " + "".join(f"{m[:9]:>10}" for m in base)
    hdr += f"{'origGA':>9}"
    print(f"makespan / MAGMA's (median over seeds, budget {a.budget}); > 1 = MAGMA better; seeds per "
          "method: " + ", ".join(f"{m} {'/'.join(map(str, v))}" for m, v in seeds_used.items()))
    print(hdr)
    for r in rows:
        line = f"{r['task']:<7}{r['setting']:<4}{r['bandwidth']:>5g} {r['magma_median']:>10.4g} "
        line += "".join(f"{r[m]:>10.3f}" for m in base)
        line += f"{r.get('original_ga', float('nan')):>9.4f}"
        print(line)
    wins = [all(r[m] > 1 + 1e-12 for m in base) for r in rows]
    ge = [all(r[m] >= 1 - 1e-12 for m in base) for r in rows]
    opt = [r["magma_optimal"] for r in rows]
    win_or_opt = [w or o for w, o in zip(wins, opt)]
    if base:
        print(f"\ncells where MAGMA beats every baseline: {sum(wins)}/{len(rows)}; beats every baseline or "
              f"reaches the lower bound (optimal, nothing can beat it): {sum(win_or_opt)}/{len(rows)}; "
              f"no baseline better: {sum(ge)}/{len(rows)}")
    else:
        print("\nno baseline in --methods: MAGMA is compared with the original code's GA only")
    for r in rows:
        lost = [f"{m} {r[m]:.4f}" for m in base if r[m] < 1 - 1e-12]
        if lost:
            print(f"  better than MAGMA in {r['task']} {r['setting']} BW {r['bandwidth']:g}: {', '.join(lost)}")
    for m in base:
        v = np.array([r[m] for r in rows])
        print(f"  {m:<11} geomean {np.exp(np.mean(np.log(v))):.3f}  max {v.max():.3f}  "
              f"MAGMA strictly better in {np.sum(v > 1 + 1e-12)}/{len(v)}")
    og = [r for r in rows if "original_ga" in r]
    if og:
        le = sum(r["original_ga"] >= 1 - 1e-12 for r in og)
        per_seed = np.mean([r["magma_le_original_seeds"] for r in og])
        v = np.array([r["original_ga"] for r in og])
        print(f"\nMAGMA (median over seeds) <= original code's GA: {le}/{len(og)} cases; "
              f"per seed: {per_seed:.1%}; geomean origGA/MAGMA {np.exp(np.mean(np.log(v))):.4f}")
    gap = np.array([r["magma_median"] / r["lower_bound"] for r in rows])
    print(f"MAGMA (median over seeds) / makespan lower bound: median {np.median(gap):.3f}, max {gap.max():.3f}; "
          f"at the bound in {int(np.sum(opt))}/{len(rows)} cells")
    secs = [r["magma_seconds"] for r in rows]
    print(f"MAGMA time per run ({a.budget} samples): mean {np.mean(secs):.2f} s, max {np.max(secs):.2f} s")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cells_magma_beats_all": sum(wins), "cells_magma_beats_all_or_optimal":
                               sum(win_or_opt), "cells_no_baseline_better": sum(ge),
                               "magma_over_lower_bound_median": float(np.median(gap)),
                               "magma_over_lower_bound_max": float(gap.max()), "budget": a.budget, "seeds": a.seeds, "seeds_per_method": seeds_used,
                               "methods": methods,
                               "inst": a.inst, "rows": rows}, indent=1) + "\n")
    png = _plot(rows, base, out.with_suffix(".png"))
    print(f"wrote {out} and {png}")


def _plot(rows, base, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(tasks) * (len(base) + 1) / 4), 4))
    width = 0.8 / (len(base) + 1)
    x = np.arange(len(tasks))
    for i, m in enumerate(["magma", *base]):
        vals = [np.exp(np.mean(np.log([r[m] if m != "magma" else 1.0 for r in rows if r["task"] == t])))
                for t in tasks]
        ax.bar(x + i * width, vals, width, label=m)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x + width * len(base) / 2)
    ax.set_xticklabels(tasks)
    ax.set_yscale("log")
    ax.set_ylabel("makespan / MAGMA (geomean over settings x BW)")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class _Serial:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap(self, f, it):
        return map(f, it)


if __name__ == "__main__":
    main()
