"""Benchmark the layer searchers on synthetic mapping-like problems with a known optimum.

For each problem (coexplore.search.synthetic.make_synthetic, seeds 0..P-1) and searcher, run
to --budget samples and record the best-so-far curve. Prints, per problem, the gap to the
optimum (best / optimum) at 1k, 10k and the full budget, and the sample-efficiency ratio:
samples single-agent RL needs to reach its own final best, divided by the samples MARL needs
to reach the same value (">=" when MARL reaches it at its first check after the warm-up).
Writes results/bench/search_synthetic.json. Timing is the searchers' own overhead (ask + tell),
excluding the objective, on one thread (BLAS threads are pinned to 1 before numpy loads).
The 1k and 10k checkpoints are capped at --budget, and the result keys are named after the
samples actually used: gap_1k, gap_10k, median_gap_10k, ... at the default budget; gap_2k,
median_gap_2k, ... with --budget 2000.

    python bench/search_synthetic.py --problems 8 --budget 100000
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.search.registry import make_searcher, mapper_spec  # noqa: E402
from coexplore.search.space import DiscreteSpace  # noqa: E402
from coexplore.search.synthetic import make_synthetic  # noqa: E402
from histories import best_at, samples_to  # noqa: E402
from shared_data import HelpFormatter, positive  # noqa: E402

TARGETS = (1.5, 1.25, 1.1, 1.05)  # best / optimum thresholds for samples-to-target
DEFAULT = ("random", "ga", "sa", "rl", "marl_noclust", "marl", "marl_oracle")



def run_one(name: str, problem, budget: int, seed: int, batch: int) -> dict:
    space = problem.space
    if name == "marl_oracle":  # MARL with the true groups (upper bound for the clustering)
        space = DiscreteSpace(space.cardinalities, space.names, space.ordinal, problem.true_groups)
        spec = mapper_spec("marl")
        spec.config.clustering = "given"
        searcher = make_searcher(spec, space, seed)
    else:
        searcher = make_searcher(name, space, seed)
    searcher.budget = budget
    overhead = 0.0
    curve = []
    while searcher.samples < budget:
        t = time.perf_counter()
        x = searcher.ask(min(batch, budget - searcher.samples))
        overhead += time.perf_counter() - t
        losses = problem(x)
        t = time.perf_counter()
        searcher.tell(x, losses)
        overhead += time.perf_counter() - t
        curve.append((searcher.samples, searcher.best_loss))
    out = {"curve": curve, "overhead_s": overhead}
    if name == "marl":
        out["agents"] = [list(map(int, c)) for c in searcher.clusters]
    return out


def label(n: int) -> str:
    """A sample count as used in result keys: 10000 -> "10k", 2500 -> "2500"."""
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--problems", type=positive, default=8, help="number of synthetic problems")
    ap.add_argument("--first", type=int, default=0, help="first problem seed")
    ap.add_argument("--groups", type=positive, default=12, help="parameter groups per problem")
    ap.add_argument("--budget", type=positive, default=100_000, help="samples per searcher run")
    ap.add_argument("--batch", type=positive, default=100, help="samples per ask/tell round")
    ap.add_argument("--seed", type=int, default=0, help="searcher seed")
    ap.add_argument("--searchers", default=",".join(DEFAULT),
                    help="comma list of searchers (marl_oracle = MARL given the true groups)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "search_synthetic.json"),
                    help="JSON file for the curves and the summary")
    args = ap.parse_args(argv)
    n1k, n10k = min(1000, args.budget), min(10_000, args.budget)    # checkpoints, capped at the budget
    k1, k10 = label(n1k), label(n10k)
    names = args.searchers.split(",")
    rows = []
    for p in range(args.first, args.first + args.problems):
        problem = make_synthetic(n_groups=args.groups, seed=p)
        _, opt = problem.optimum()
        res = {}
        for name in names:
            res[name] = run_one(name, problem, args.budget, args.seed, args.batch)
        row = {"problem": p, "n_params": problem.space.n_params, "size": float(problem.space.size),
               "optimum": opt, "true_groups": problem.true_groups, "results": {}}
        for name, r in res.items():
            row["results"][name] = {
                "curve": [[int(s), float(b)] for s, b in r["curve"]],
                **{f"samples_to_{t}": samples_to(r["curve"], t * opt, rtol=1e-12) for t in TARGETS},
                f"gap_{k1}": best_at(r["curve"], n1k) / opt,
                f"gap_{k10}": best_at(r["curve"], n10k) / opt,
                "gap_full": r["curve"][-1][1] / opt,
                "overhead_s": r["overhead_s"],
                f"overhead_{k10}_s": r["overhead_s"] * min(1.0, 10_000 / args.budget),
                **({"agents": r["agents"]} if "agents" in r else {}),
            }
        if "rl" in res and "marl" in res:
            target = res["rl"]["curve"][-1][1]
            s_rl = samples_to(res["rl"]["curve"], target, rtol=1e-12)
            s_marl = samples_to(res["marl"]["curve"], target, rtol=1e-12)
            row["rl_target"] = target
            row["samples_rl"] = s_rl
            row["samples_marl"] = s_marl
            row["ratio"] = (s_rl / s_marl) if s_marl else None
        rows.append(row)
        line = f"problem {p:2d} ({problem.space.n_params} params, {problem.space.size:.1e} pts)"
        print(line, flush=True)
        for name in names:
            r = row["results"][name]
            extra = f"  agents={len(r['agents'])}" if "agents" in r else ""
            print(f"  {name:13s} best/opt {k1} {r[f'gap_{k1}']:9.3f}  {k10} {r[f'gap_{k10}']:8.3f}  "
                  f"{label(args.budget)} {r['gap_full']:7.3f}  overhead {r['overhead_s']:6.2f}s{extra}",
                  flush=True)
        if "ratio" in row:
            ratio = "never" if row["ratio"] is None else f"{row['ratio']:.1f}x"
            print(f"  samples to RL's final best: RL {row['samples_rl']}, MARL {row['samples_marl']} -> {ratio}",
                  flush=True)
    summary = {}
    for name in names:
        g10 = [r["results"][name][f"gap_{k10}"] for r in rows]
        gf = [r["results"][name]["gap_full"] for r in rows]
        summary[name] = {f"median_gap_{k10}": float(np.median(g10)), "median_gap_full": float(np.median(gf)),
                         f"within5_{k10}": int(sum(g <= 1.05 for g in g10)),
                         f"median_overhead_{k10}_s": float(np.median([r["results"][name][f"overhead_{k10}_s"]
                                                                      for r in rows]))}
    for t in TARGETS:
        for name in names:
            reach = [r["results"][name][f"samples_to_{t}"] for r in rows]
            got = sorted(x for x in reach if x is not None)
            summary[name][f"median_samples_to_{t}"] = (
                float(np.median([x if x is not None else np.inf for x in reach])) if got else None)
            summary[name][f"reached_{t}"] = len(got)
        if "rl" in names and "marl" in names:
            ratios = []
            for r in rows:
                a, b = r["results"]["rl"][f"samples_to_{t}"], r["results"]["marl"][f"samples_to_{t}"]
                a = a if a is not None else np.inf
                b = b if b is not None else np.inf
                if np.isfinite(a) or np.isfinite(b):
                    ratios.append(a / b)
            summary[f"rl_over_marl_samples_to_{t}"] = [round(float(x), 2) for x in ratios]
    if rows and "ratio" in rows[0]:
        ratios = [r["ratio"] if r["ratio"] is not None else 0.0 for r in rows]
        summary["median_ratio_rl_over_marl"] = float(np.median(ratios))
        # MARL at 10k (or the budget, if smaller) vs the best of any searcher at the full budget
        best_any = [min(r["results"][n]["gap_full"] for n in names if n != "marl_oracle") for r in rows]
        summary[f"marl_{k10}_within5_of_best_any"] = int(sum(
            r["results"]["marl"][f"gap_{k10}"] <= 1.05 * b for r, b in zip(rows, best_any)))
    print("\nsummary (medians over problems; gaps are best/optimum; inf = not reached)")
    for k, v in summary.items():
        print(f"  {k}: {v}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows, "summary": summary}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
