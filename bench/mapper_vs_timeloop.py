"""coexplore's layer mappers against timeloop-mapper, on the official exercises' mapper runs.

Every dense v0.4 mapper case of the Timeloop/Accelergy exercises (the example designs, exercises 05
and 06, the Eyeriss tutorial designs, the DSE tutorial) keeps the mapping timeloop-mapper found
(`timeloop-mapper.map.yaml`) and the settings it searched with (the processed input's `mapper:`:
algorithm, optimization metrics, threads, victory condition, timeout). Each case is searched again
by coexplore with the same architecture, ERT, layer, constraints and objective (timeloop-mapper's
`[delay, energy]` is coexplore's `latency`: fewer cycles first, then less energy), by MARL, the GA,
and timeloop-mapper's own algorithm as coexplore runs it, for --budget samples and --seeds seeds.
The model runs with the pre-2025 stride rule, under which it reproduces every count of these
references (they predate Timeloop PR #297); the benchmark checks that Timeloop's mapping evaluates
to the reference's cycles and energy before it compares.

Reported per case: the mapspace size, Timeloop's value (EDP in J*cycle, or cycles), and per
searcher the median over seeds of (best / Timeloop's) at 1,000 and at --budget samples (below 1:
better than timeloop-mapper's mapping), the median samples to reach Timeloop's value ('-' when
most seeds do not within the budget) and the median seconds per run. For latency cases a run that
matches Timeloop's cycles counts as reaching it, and its energy against Timeloop's is reported.
Writes results/bench/mapper_vs_timeloop.json (and a .partial.jsonl run log: an interrupted run
resumes, a changed searcher reruns alone).

    python bench/mapper_vs_timeloop.py                                # ../shared exercises, 10,000 samples, 3 seeds
    python bench/mapper_vs_timeloop.py --cases tests/data/exercises_v4    # the copies in a clone
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from histories import best_at, samples_to  # noqa: E402
from mapper_sample_efficiency import version  # noqa: E402
from runlog import RunLog  # noqa: E402
from shared_data import HelpFormatter, positive, require  # noqa: E402

STRIDE_RULE = "pre2025"       # the references' Timeloop (before PR #297)
SEARCHERS = ("marl", "ga", "timeloop")     # timeloop: the case's own algorithm, as coexplore runs it
EARLY = 1_000


def ref_folder(case_dir: Path) -> Path:
    """A case's folder of reference outputs: `ref/` in ../shared, the folder itself in tests/data."""
    return case_dir / "ref" if (case_dir / "ref").is_dir() else case_dir


def mapper_cases(root: Path) -> list[Path]:
    """Dense v0.4 cases whose reference is a timeloop-mapper run (../shared's _index.csv marks the
    Sparseloop ones; tests/data holds dense cases only)."""
    sparse = set()
    if (root / "_index.csv").exists():
        sparse = {r["case"] for r in csv.DictReader(open(root / "_index.csv")) if r["sparse"] == "True"}
    return [d for d in sorted(root.iterdir()) if d.name.startswith("v4_") and d.name not in sparse
            and (ref_folder(d) / "timeloop-mapper.map.yaml").exists()]


def load_case(case_dir: Path):
    """(context, constraints, Timeloop's mapper spec, the reference run) of one case."""
    from coexplore.model.reference import load_reference_run
    from coexplore.search import registry
    from coexplore.spec.constraints import load_constraints
    ref = ref_folder(case_dir)
    run = load_reference_run(ref)
    ctx = run.context
    ctx.stride_rule = STRIDE_RULE
    constraints = load_constraints(ctx.arch, None, ctx.problem)
    spec = registry.load_mapper(str(ref / "parsed-processed-input.yaml"))   # timeloop-mapper's `mapper:`
    return ctx, constraints, spec, run


def objective_value(ctx, arrays, objective: str) -> float:
    from coexplore.search import registry
    from coexplore.search.layer import metric_arrays
    return float(registry.objective_loss(metric_arrays(ctx.evaluate(arrays)), objective)[0])


def run_one(job: dict) -> dict:
    from coexplore.search import registry
    from coexplore.search.layer import NoValidMapping, map_layer
    ctx, constraints, tl_spec, _ = load_case(Path(job["case_dir"]))
    spec = tl_spec if job["searcher"] == "timeloop" else registry.load_mapper(job["searcher"])
    spec.objective = tl_spec.objective          # as `coexplore map --searcher NAME` on the case's input
    t0 = time.perf_counter()
    out = {k: job[k] for k in ("case", "searcher", "seed")}
    try:
        res = map_layer(ctx, constraints, spec, job["budget"], job["seed"])
    except NoValidMapping as exc:
        return {**out, "error": str(exc), "wall_s": time.perf_counter() - t0}
    return {**out, "algorithm": spec.searcher, "history": res.history, "samples": res.samples,
            "cycles": res.best["cycles"], "energy_pJ": res.best["energy_pJ"], "wall_s": time.perf_counter() - t0}


def reference_numbers(case_dir: Path) -> tuple[int, float]:
    """Timeloop's cycles and energy (pJ) for its mapping, from the reference data."""
    ref = ref_folder(case_dir)
    f = ref / "reference.json" if (ref / "reference.json").exists() else case_dir / "summary.json"
    s = json.loads(f.read_text())["summary"]        # tests/data copies, or ../shared's summaries
    return int(s["cycles"]), float(s["energy_pJ_from_per_compute"])


def case_summary(case_dir: Path, loaded: tuple, runs: list[dict], budget: int) -> dict:
    """The comparison of one case (`loaded`: its `load_case`) from its finished runs."""
    from coexplore.mapspace.space import MapSpace
    ctx, constraints, tl_spec, run = loaded
    objective = tl_spec.objective
    arrays = run.arrays()
    ev = ctx.evaluate(arrays)
    tl_value = objective_value(ctx, arrays, objective)
    ref_cycles, ref_energy = reference_numbers(case_dir)
    ms = MapSpace(ctx.arch, ctx.problem, constraints)
    entry = {"case": case_dir.name, "objective": objective, "timeloop_algorithm": tl_spec.searcher,
             "timeloop_value": tl_value, "timeloop_cycles": int(ev.cycles[0]),
             "timeloop_energy_pJ": float(ev.energy_pJ[0]),
             "model_matches_reference": bool(int(ev.cycles[0]) == ref_cycles
                                             and abs(float(ev.energy_pJ[0]) / ref_energy - 1) < 1e-4),
             "mapspace_log10_size": ms.log10_size(), "searchers": {}}
    for s in SEARCHERS:
        rs = [r for r in runs if r["searcher"] == s and "history" in r]
        if not rs:
            continue
        reach = [samples_to(r["history"], tl_value, rtol=1e-9) for r in rs]
        reached = sorted(x for x in reach if x is not None)
        e = {"algorithm": rs[0]["algorithm"], "runs": len(rs),
             "best_over_timeloop_at_1k": statistics.median(best_at(r["history"], EARLY) for r in rs) / tl_value,
             "best_over_timeloop": statistics.median(r["history"][-1][1] for r in rs) / tl_value,
             "reached": len(reached),
             "median_samples_to_timeloop": reached[len(rs) // 2] if len(reached) > len(rs) // 2 else None,
             "wall_s_median": statistics.median(r["wall_s"] for r in rs)}
        if objective == "latency":
            e["energy_over_timeloop"] = statistics.median(r["energy_pJ"] for r in rs) / entry["timeloop_energy_pJ"]
        entry["searchers"][s] = e
    entry["budget"] = budget
    return entry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--cases", default=str(ROOT.parent / "shared" / "timeloop-exercises"),
                    help="folder of exercise cases (../shared/timeloop-exercises, or tests/data/exercises_v4)")
    ap.add_argument("--budget", type=positive, default=10_000, help="samples per run")
    ap.add_argument("--seeds", type=positive, default=3, help="seeds per case and searcher")
    ap.add_argument("--jobs", type=positive, default=2, help="worker processes")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "mapper_vs_timeloop.json"), help="JSON summary")
    args = ap.parse_args()
    cases = mapper_cases(require(args.cases, "--cases", "the Timeloop/Accelergy exercises"))
    if not cases:
        print(f"mapper_vs_timeloop.py: no dense v0.4 timeloop-mapper cases in {args.cases}", file=sys.stderr)
        raise SystemExit(2)
    jobs = [{"case": c.name, "case_dir": str(c), "searcher": s, "seed": seed, "budget": args.budget}
            for c in cases for s in SEARCHERS for seed in range(args.seeds)]
    loaded = {c.name: load_case(c) for c in cases}
    for j in jobs:          # the code version of the searcher that runs
        j["version"] = version(loaded[j["case"]][2].searcher if j["searcher"] == "timeloop" else j["searcher"])
    out_path = Path(args.out)
    log = RunLog(out_path.with_suffix(".partial.jsonl"), ("case", "searcher", "seed", "budget"))
    todo = [j for j in jobs if j not in log]
    print(f"{len(cases)} cases, {len(jobs)} runs ({len(jobs) - len(todo)} already done), "
          f"budget {args.budget:,}, {args.seeds} seeds", flush=True)
    from tqdm import tqdm
    with ProcessPoolExecutor(args.jobs) as pool, log:
        for job, r in tqdm(zip(todo, pool.map(run_one, todo)), total=len(todo), desc="runs"):
            log.append({**r, "budget": job["budget"], "version": job["version"]})
    runs = [log.get(j) for j in jobs]
    summary = {"budget": args.budget, "seeds": args.seeds, "stride_rule": STRIDE_RULE,
               "cases": [case_summary(c, loaded[c.name], [r for r in runs if r["case"] == c.name], args.budget)
                         for c in cases]}
    out_path.write_text(json.dumps(summary, indent=1))
    print_table(summary)
    print(f"wrote {out_path}")


def _fmt_samples(e: dict) -> str:
    n = e["median_samples_to_timeloop"]
    return f"{n:,}" if n is not None else "-"


def print_table(summary: dict) -> None:
    b = summary["budget"]
    print(f"\nbest / timeloop-mapper's mapping (median over {summary['seeds']} seeds; < 1: better), "
          f"at 1,000 and {b:,} samples; samples to reach it (median); seconds per run")
    head = f"{'case':44s} {'objective':9s} {'log10 size':>10s} {'timeloop':>14s}"
    for s in SEARCHERS:
        head += f" | {s + ' (1k / ' + format(b // 1000) + 'k / reach / s)':>36s}"
    print(head)
    for e in summary["cases"]:
        line = (f"{e['case']:44s} {e['objective']:9s} {e['mapspace_log10_size']:10.1f} "
                f"{e['timeloop_value']:14.6g}")
        for s in SEARCHERS:
            x = e["searchers"].get(s)
            cell = "-" if x is None else (f"{x['best_over_timeloop_at_1k']:.3f} / {x['best_over_timeloop']:.3f} / "
                                          f"{_fmt_samples(x)} / {x['wall_s_median']:.1f}")
            line += f" | {cell:>36s}"
        print(line + ("" if e["model_matches_reference"] else "   (model != reference numbers!)"))
    for e in summary["cases"]:
        if e["objective"] == "latency":
            en = ", ".join(f"{s} {x['energy_over_timeloop']:.3f}" for s, x in e["searchers"].items())
            print(f"  {e['case']}: energy of the best / Timeloop's: {en}")


if __name__ == "__main__":
    main()
