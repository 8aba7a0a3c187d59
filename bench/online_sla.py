"""Benchmark: the learned online scheduler (relmas) against the heuristics, RELMAS-style.

For each workload scenario (vision, language + recommendation, mixed) on a heterogeneous system
(default: 2 Simba-like + 2 Eyeriss-like cores sharing 25.6 GB/s): the job table is built through
the layer mapper (cached), relmas is trained once at the training load, then every scheduler serves
the same evaluation streams at several loads (generalisation across loads: relmas never sees the
other loads). Reported per (scenario, load): each scheduler's mean SLA satisfaction rate over the
streams, relmas's SLA gain over the best and the worst heuristic (SLA_relmas / SLA_other - 1, the
form of RELMAS's "+173%") and its energy overhead against the best-SLA heuristic.

    python bench/online_sla.py [--generations 25] [--loads 0.5 0.8 1.2] [--jobs 2]

The job tables go through the layer cache: $COEXPLORE_CACHE if set, else results/cache.sqlite of
the repository. Trainings are logged in results/bench/online_sla_runs.jsonl (an interrupted run resumes; changing
the online package retrains); the summary is results/bench/online_sla.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from runlog import RunLog, source_version  # noqa: E402
from shared_data import comma_list, positive, positive_float  # noqa: E402

SCENARIOS = {
    "vision": ["alexnet", "resnet50", "vgg16"],
    "language": ["bert_base", "dlrm_mlp"],
    "mixed": ["resnet50", "vgg16", "bert_base"],
}
VERSION_FILES = [f"coexplore/online/{m}.py" for m in ("models", "stream", "simulator", "policy", "train")]   # what training depends on


def served(system_file: str, workloads: list[str], layer_budget: int):
    from coexplore.bundled import resolve
    from coexplore.model.cache import ENV_VAR, ResultCache
    from coexplore.online.models import served_system
    from coexplore.system.from_system import system_job_table
    cache = ResultCache(os.environ.get(ENV_VAR) or ROOT / "results" / "cache.sqlite")
    try:
        table, system = system_job_table(system_file, [resolve("problems", w) for w in workloads],
                                         layer_budget=layer_budget, cache=cache)
    finally:
        cache.close()
    return served_system(table, system.offchip_bytes_per_cycle)


def train_one(task):
    """(scenario, weights, history, seconds) of one training (run in a worker process)."""
    name, system_file, workloads, layer_budget, load, requests, generations, streams = task
    from coexplore.online.stream import Scenario
    from coexplore.online.train import TrainSettings, train_policy
    ss = served(system_file, workloads, layer_budget)
    t0 = time.perf_counter()
    policy, state = train_policy(ss, Scenario(load=load, requests=requests),
                                 TrainSettings(generations=generations, streams=streams))
    return name, policy.weights.tolist(), state["history"], time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default=str(ROOT / "arch" / "hetero_2simba_2eyeriss.yaml"),
                    help="system YAML or bundled name (default: the 2 Simba-like + 2 Eyeriss-like system)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated scenarios, of: " + ", ".join(SCENARIOS) + " (default: all)")
    ap.add_argument("--loads", type=positive_float, nargs="+", default=[0.5, 0.8, 1.2],
                    help="offered loads every scheduler serves (default 0.5 0.8 1.2)")
    ap.add_argument("--train-load", type=positive_float, default=0.8, help="the load relmas is trained at (default 0.8)")
    ap.add_argument("--requests", type=positive, default=200, help="requests per stream (default 200)")
    ap.add_argument("--seeds", type=positive, default=5, help="evaluation streams per (scenario, load) (default 5)")
    ap.add_argument("--generations", type=positive, default=25, help="relmas training generations (default 25)")
    ap.add_argument("--streams", type=positive, default=3, help="training streams per generation (default 3)")
    ap.add_argument("--layer-budget", type=positive, default=2000,
                    help="layer mapper samples per (layer, core design) for the job tables (default 2000)")
    ap.add_argument("--jobs", type=positive, default=2, help="trainings run at once in processes (default 2)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "online_sla.json"),
                    help="summary JSON (default results/bench/online_sla.json)")
    args = ap.parse_args()

    from coexplore.online.compare import gains, mean_summary, run_schedulers
    from coexplore.online.policy import LearnedScheduler, Policy
    from coexplore.online.schedulers import HEURISTICS, heuristic
    from coexplore.online.stream import Scenario
    from coexplore.workers.processes import in_processes

    names = comma_list(ap, args.scenarios, SCENARIOS, "--scenarios")
    version = source_version(*VERSION_FILES)
    log = RunLog(Path(args.out).with_name("online_sla_runs.jsonl"),
                 ("scenario", "system", "load", "requests", "generations", "streams", "layer_budget"))
    key = {"system": Path(args.system).name, "load": args.train_load, "requests": args.requests,
           "generations": args.generations, "streams": args.streams, "layer_budget": args.layer_budget,
           "version": version}
    for n in names:                       # map every scenario's layers once, before the processes share the cache
        served(args.system, SCENARIOS[n], args.layer_budget)
    todo = [(n, args.system, SCENARIOS[n], args.layer_budget, args.train_load, args.requests, args.generations,
             args.streams) for n in names if {**key, "scenario": n} not in log]
    for n, w, hist, secs in in_processes(train_one, todo, args.jobs):
        log.append({**key, "scenario": n, "weights": w, "history": hist, "train_s": secs})
        print(f"trained {n}: {secs:.0f} s, training SLA {hist[0][0]:.3f} -> {hist[-1][0]:.3f}", flush=True)
    rows = []
    for n in names:
        rec = log.get({**key, "scenario": n})
        ss = served(args.system, SCENARIOS[n], args.layer_budget)
        for load in args.loads:
            scheds = {h: heuristic(h) for h in HEURISTICS}
            scheds["relmas"] = LearnedScheduler(Policy(rec["weights"]))
            res = run_schedulers(ss, Scenario(load=load, requests=args.requests), scheds, list(range(args.seeds)))
            means = {k: mean_summary(v) for k, v in res.items()}
            heur = {k: v for k, v in means.items() if k != "relmas"}
            best = max(heur, key=lambda k: heur[k]["sla_rate"])
            worst = min(heur, key=lambda k: heur[k]["sla_rate"])
            g = gains(means, "relmas")
            rows.append({"scenario": n, "load": load, "workloads": SCENARIOS[n],
                         "sla": {k: v["sla_rate"] for k, v in means.items()},
                         "energy_pJ": {k: v["energy_pJ"] for k, v in means.items()},
                         "best_heuristic": best, "worst_heuristic": worst,
                         "gain_vs_best": g[best]["sla_gain"], "gain_vs_worst": g[worst]["sla_gain"],
                         "energy_vs_best": g[best]["energy_overhead"],
                         "energy_per_met_vs_best": g[best]["energy_per_met_overhead"],
                         "streams_better_vs_best": g[best]["streams_better"],
                         "fairness": {k: v["fairness_jain"] for k, v in means.items()},
                         "per_model_sla": {k: v["per_model_sla_rate"] for k, v in means.items()},
                         "train_s": rec["train_s"], "decision_us": means["relmas"]["decision_us"]})
    print("\n| scenario | load | best heuristic | its SLA | relmas SLA | vs best | streams better | vs worst "
          "| energy vs best | per met request |\n|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scenario']} | {r['load']:g} | {r['best_heuristic']} | {r['sla'][r['best_heuristic']]:.3f} | "
              f"{r['sla']['relmas']:.3f} | {100 * r['gain_vs_best']:+.1f}% | {r['streams_better_vs_best']}/{args.seeds} | "
              + ("n/a" if r["gain_vs_worst"] is None else f"{100 * r['gain_vs_worst']:+.0f}% ({r['worst_heuristic']})")
              + f" | {100 * r['energy_vs_best']:+.1f}% | {100 * r['energy_per_met_vs_best']:+.1f}% |")
    print("\nper scheduler SLA rate (mean over streams):")
    cols = [*HEURISTICS, "relmas"]
    print(f"{'scenario':9} {'load':>4} | " + " ".join(f"{c:>6}" for c in cols))
    for r in rows:
        print(f"{r['scenario']:9} {r['load']:4g} | " + " ".join(f"{r['sla'][c]:6.3f}" for c in cols))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"settings": vars(args), "version": version, "rows": rows}, indent=1) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
