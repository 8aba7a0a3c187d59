"""Layer-mapper sample efficiency: best EDP against cost-model samples, every searcher, several seeds.

Pairs: Simba-like and Eyeriss-like cores x (3x3 conv, 1x1 conv, strided conv, GEMM), plus three
small layers whose distinct mappings are all enumerated (the optimum reference; searched with
10,000 samples). Finished runs go to a .partial.jsonl log keyed by the searcher's code version,
so an interrupted run resumes and a changed searcher reruns alone. For each pair, searcher
and seed the best EDP after 100 ... BUDGET samples is recorded; reported per pair: the median
best EDP at each checkpoint, the samples each searcher needs to come within 5% of the best value
any searcher found, wall time, and MARL's sample-efficiency ratio against the single-agent
baselines (samples the baseline needs to reach its own final best / samples MARL needs to reach
that value): `rl` (the project's target, the same learner as MARL's agents) and `ppo` (the MARL
paper's baseline, an MLP policy). Writes
results/bench/mapper_sample_efficiency.json and results/bench/mapper_<pair>.png.

    python bench/mapper_sample_efficiency.py            # budget 100,000, 5 seeds (long: ~30 min on 2 cores)
    python bench/mapper_sample_efficiency.py --ratio-seeds 20   # + rl, ppo and marl seeds 5-19 for the ratios (~50 min more)
    python bench/mapper_sample_efficiency.py --quick    # budget 10,000, 2 seeds, 4 searchers (~12 min on 2 cores:
                                                        # enumerating the small layers' optima takes most; kept in the log)

A Ctrl-C stops the workers at once and keeps the finished runs (and enumerated optima) in the log.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from histories import best_at, samples_to  # noqa: E402
from runlog import RunLog, source_version  # noqa: E402
from shared_data import HelpFormatter  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "timeloop_corpus"
PAIRS = [
    ("simba_like", "resnet50_res3a_2b", "conv 3x3"),
    ("simba_like", "resnet50_res2a_2a", "conv 1x1"),
    ("simba_like", "alexnet_conv1", "strided conv"),
    ("simba_like", "bert_qkv", "GEMM"),
    ("eyeriss_like", "resnet50_res3a_2b", "conv 3x3"),
    ("eyeriss_like", "mobilenetv2_pw", "conv 1x1"),
    ("eyeriss_like", "resnet50_conv1", "strided conv"),
    ("eyeriss_like", "bert_qkv", "GEMM"),
]
# small layers: every distinct mapping is enumerated (coexplore.mapspace.enumerate) for the optimum
SMALL_LAYERS = {"small_gemm": {"C": 4, "M": 4, "P": 8},
                "small_fc": {"C": 8, "M": 16, "P": 4},
                "small_conv": {"C": 4, "M": 8, "P": 4, "Q": 4, "R": 3, "S": 3}}
SMALL = [("simple_weight_stationary", "small_gemm", "small GEMM (exhaustive)"),
         ("simba_like", "small_fc", "small 1x1 (exhaustive)"),
         ("eyeriss_like", "small_conv", "small conv 3x3 (exhaustive)")]
SMALL_BUDGET = 10_000
SEARCHERS = ["random", "random_pruned", "linear_pruned", "ga", "sa", "rl", "ppo", "marl", "marl_noclust"]
# single-agent baselines MARL's sample ratio is measured against: the project's target is `rl` (the
# same learner as MARL's agents); `ppo` is the MARL paper's own baseline (an MLP policy)
RATIO_REFS = {"rl": "RL", "ppo": "PPO"}
_S = "coexplore/search/"
_LEARNER = (_S + "rl.py", _S + "memo.py", _S + "losses.py")
SOURCES = {"random": (_S + "random_search.py",), "random_pruned": (_S + "pruned.py",),
           "linear_pruned": (_S + "pruned.py",), "ga": (_S + "ga.py", _S + "mutation.py"),
           "sa": (_S + "annealing.py", _S + "mutation.py"), "rl": _LEARNER,
           "marl": (_S + "marl.py", *_LEARNER), "marl_noclust": (_S + "marl.py", *_LEARNER),
           "ppo": (_S + "ppo.py", *_LEARNER)}


# the mapspace's decoding and the layer objective shape every searcher's numbers
COMMON = ("coexplore/mapspace/space.py", "coexplore/search/layer.py", "coexplore/search/base.py")


def version(searcher: str) -> str:
    """Hash of the searcher's code, the mapspace/objective code and its mapper YAML: a changed
    searcher reruns, others resume. A searcher a plugin registered: its class's code."""
    import hashlib
    import json as _json

    from coexplore.search import registry
    own = registry.searcher_code(searcher)
    yaml_file = f"mappers/{searcher}.yaml"
    base = source_version(*SOURCES.get(searcher, ()), *COMMON, *([yaml_file] if (ROOT / yaml_file).exists() else []))
    return base if not own else hashlib.sha256((base + _json.dumps(own, sort_keys=True)).encode()).hexdigest()[:12]
CHECKPOINTS = [100, 300, 1000, 3000, 10_000, 30_000, 100_000]



def _context(arch: str, layer: str):
    from coexplore.model.inputs import Context, load_context
    from coexplore.model.evaluate import level_costs
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.ert import load_ert
    from coexplore.spec.problem import DEFAULT_CNN_SHAPE, parse_problem
    adir = CORPUS / "arches" / arch
    if layer in SMALL_LAYERS:
        a = load_architecture(adir / "processed.yaml")
        inst = {**{k: 1 for k in "CMRSNPQ"}, **SMALL_LAYERS[layer]}
        prob = parse_problem({"problem": {"shape": DEFAULT_CNN_SHAPE, "version": 0.4, "instance": inst}},
                             name=layer)
        ert = load_ert(adir / "ERT.yaml")
        return Context(a, prob, ert, level_costs(a, ert))
    return load_context(adir / "processed.yaml", CORPUS / "layers" / f"{layer}.yaml", adir / "ERT.yaml")


def run_one(job):
    arch, layer, searcher, seed, budget = (job[k] for k in ("arch", "layer", "searcher", "seed", "budget"))
    from coexplore.search import registry
    from coexplore.search.layer import map_layer
    from coexplore.spec.constraints import load_constraints
    ctx = _context(arch, layer)
    cons = load_constraints(ctx.arch, CORPUS / "arches" / arch / "constraints.yaml")
    spec = registry.mapper_spec(searcher)
    t0 = time.perf_counter()
    try:
        res = map_layer(ctx, cons, spec, budget, seed)
        hist = res.history
        best = res.best["edp_J_cycle"]
        samples = res.samples
    except Exception as exc:  # a searcher that finds nothing valid is recorded, not fatal
        return {"arch": arch, "layer": layer, "searcher": searcher, "seed": seed, "error": str(exc),
                "wall_s": time.perf_counter() - t0}
    return {"arch": arch, "layer": layer, "searcher": searcher, "seed": seed, "history": hist, "best": best,
            "samples": samples, "wall_s": time.perf_counter() - t0}


def run_job(job):
    """(job, its run): what a worker process returns."""
    return job, run_one(job)


def sample_ratios(runs, searcher, seeds, ref: str = "rl") -> list[float]:
    """Per seed: samples the baseline `ref` needed to reach its final best / samples `searcher`
    needed to reach it (0 when it never does)."""
    ratios = []
    for seed in range(seeds):
        base = next((r for r in runs if r["searcher"] == ref and r["seed"] == seed), None)
        other = next((r for r in runs if r["searcher"] == searcher and r["seed"] == seed), None)
        if base and other:
            n_other = samples_to(other["history"], base["best"])
            ratios.append(samples_to(base["history"], base["best"]) / n_other if n_other else 0.0)
    return ratios


def ratio_entry(runs, ref: str, seeds: int) -> dict:
    """MARL against one single-agent baseline on one pair: per-seed ratios (samples the baseline
    needs to reach its final best / samples MARL needs), their median and what 10x asks."""
    ratios = sample_ratios(runs, "marl", seeds, ref)
    return {
        f"marl_vs_{ref}_sample_ratio_median": statistics.median(ratios) if ratios else None,
        f"marl_never_reaches_{ref}_best": sum(r == 0.0 for r in ratios),   # seeds counted as ratio 0
        f"marl_vs_{ref}_seeds": len(ratios),
        f"marl_vs_{ref}_seeds_at_10x": sum(r >= 10 for r in ratios),
        f"marl_vs_{ref}_ratios": ratios,                                    # per seed, for the bootstrap
        # what 10x asks: the baseline's own samples to its final best, per seed (MARL must need a tenth)
        f"{ref}_samples_to_best": [samples_to(r["history"], r["best"]) for r in runs
                                   if r["searcher"] == ref and r["seed"] < seeds and "history" in r]}


def marl_warmup(budget: int) -> int:
    """Samples MARL's default configuration spends on its uniform warm-up at this budget."""
    from coexplore.search import registry
    cfg = registry.mapper_spec("marl").config
    return min(int(cfg.warmup), int(cfg.warmup_fraction * budget))


def bootstrap_median_of_medians(per_pair: list[list[float]], draws: int = 4000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the median over pairs of the per-pair median ratio, the
    seeds of each pair resampled with replacement: how far the seeds' luck moves the statistic."""
    import numpy as np
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(draws):
        meds = [float(np.median(rng.choice(r, size=len(r)))) for r in per_pair]
        stats.append(float(np.median(meds)))
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return float(lo), float(hi)


def exhaustive_optimum(arch, layer):
    """(optimum EDP, number of distinct mappings) by enumerating every distinct mapping."""
    import numpy as np
    from coexplore.mapspace.enumerate import canonical_points, count_canonical
    from coexplore.mapspace.space import MapSpace
    from coexplore.search.layer import make_objective
    from coexplore.spec.constraints import load_constraints
    ctx = _context(arch, layer)
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, CORPUS / "arches" / arch / "constraints.yaml"))
    f = make_objective(ctx, ms, "edp")
    best = min(float(np.min(f(X))) for X in canonical_points(ms))
    return best, count_canonical(ms)



def _finite(x):
    """x, or None where it is not finite (JSON has no Infinity)."""
    return x if math.isfinite(x) else None

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="budget 10,000, 2 seeds, searchers random,rl,marl,ga (explicit options still win)")
    ap.add_argument("--budget", type=int, default=None,
                    help="samples per run (default: 100,000; 10,000 with --quick); "
                    f"the exhaustive small layers use at most {SMALL_BUDGET:,}")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per pair and searcher "
                    "(default: 5; 2 with --quick)")
    ap.add_argument("--searchers", default=None, help="comma-separated subset of " + ",".join(SEARCHERS)
                    + " (default: all; random,rl,marl,ga with --quick)")
    ap.add_argument("--pairs", default=None,
                    help=f"comma-separated indices into the pair list (0-{len(PAIRS) + len(SMALL) - 1}: "
                    f"the {len(PAIRS)} corpus pairs, then the {len(SMALL)} exhaustive small layers; default: all)")
    ap.add_argument("--ratio-seeds", type=int, default=None,
                    help="seeds of rl, ppo and marl on the corpus pairs for MARL's sample ratios (default: --seeds); "
                    "the extra seeds enter only that ratio, every other statistic keeps --seeds")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--plugin", action="append", default=[], metavar="MODULE|FILE.py",
                    help="a module of your own that registers searchers (as `coexplore --plugin`); its "
                    "searchers can then be named in --searchers")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "mapper_sample_efficiency.json"),
                    help="JSON summary; the run log (.partial.jsonl), the Markdown table (.md) and the "
                    "mapper_<pair>.png plots go beside it")
    args = ap.parse_args()
    from coexplore import plugins
    from coexplore.errors import CoexploreError
    from coexplore.search import registry
    try:
        plugins.load_all(args.plugin)
    except CoexploreError as exc:
        ap.error(exc.format())
    for opt in ("budget", "seeds", "ratio_seeds", "jobs"):
        if getattr(args, opt) is not None and getattr(args, opt) < 1:
            ap.error(f"--{opt.replace('_', '-')} {getattr(args, opt)}: expected an integer >= 1")
    budget = args.budget or (10_000 if args.quick else 100_000)
    seeds = args.seeds or (2 if args.quick else 5)
    searchers = [n.strip() for n in args.searchers.split(",") if n.strip()] if args.searchers else (
        ["random", "rl", "marl", "ga"] if args.quick else SEARCHERS)
    unknown = [n for n in searchers if n not in registry.SEARCHERS or n == "exhaustive"]
    if unknown or not searchers:
        ap.error(f"--searchers: unknown searcher {unknown[0] if unknown else '(none given)'!r}; expected some of "
                 + ",".join(n for n in registry.SEARCHERS if n != "exhaustive") + " (or one a --plugin registers)")
    pairs = PAIRS + SMALL
    if args.pairs:
        given = [i.strip() for i in args.pairs.split(",") if i.strip()]
        bad = [i for i in given if not i.isdigit() or int(i) >= len(pairs)]
        if bad or not given:
            ap.error(f"--pairs {args.pairs!r}: expected comma-separated indices 0-{len(pairs) - 1}")
        pairs = [pairs[int(i)] for i in given]

    def pair_budget(layer):
        return min(budget, SMALL_BUDGET) if layer in SMALL_LAYERS else budget
    ratio_seeds = max(args.ratio_seeds or seeds, seeds)
    jobs = [{"arch": a, "layer": l, "searcher": s, "seed": seed, "budget": pair_budget(l), "version": version(s)}
            for a, l, _ in pairs for s in searchers
            for seed in range(ratio_seeds if s in ("marl", *RATIO_REFS) and "marl" in searchers
                              and set(RATIO_REFS) & set(searchers) and l not in SMALL_LAYERS else seeds)]
    out_path = Path(args.out)
    log = RunLog(out_path.with_suffix(".partial.jsonl"), ("arch", "layer", "searcher", "seed", "budget"))
    todo = [j for j in jobs if j not in log]
    print(f"{len(jobs)} runs ({len(jobs) - len(todo)} already done), budget {budget:,}, {seeds} seeds"
          + (f" ({ratio_seeds} for MARL's sample ratios)" if ratio_seeds > seeds else ""), flush=True)
    from tqdm import tqdm

    from coexplore.provenance import source_digest
    from coexplore.workers.processes import in_processes
    optima = [{"arch": a, "layer": l, "searcher": "exhaustive_optimum", "seed": -1, "budget": 0,
               "version": source_digest()} for a, l, _ in pairs if l in SMALL_LAYERS]
    try:
        with log:
            for job, r in tqdm(in_processes(run_job, todo, args.jobs), total=len(todo), desc="runs"):
                log.append({**r, "budget": job["budget"], "version": job["version"]})
            for o in optima:         # enumerated once (minutes for millions of mappings), then read from the log
                if o not in log:
                    best, size = exhaustive_optimum(o["arch"], o["layer"])
                    log.append({**o, "best": best, "distinct_mappings": size})
    except KeyboardInterrupt:
        print(f"\nstopped: the finished runs are kept in {log.path}; the same command resumes", file=sys.stderr)
        raise SystemExit(130) from None
    all_runs = [log.get(j) for j in jobs]
    runs = [r for r in all_runs if r["seed"] < seeds]     # the extra ratio seeds only enter the ratio
    summary = {"budget": budget, "seeds": seeds, "ratio_seeds": ratio_seeds, "searchers": searchers, "pairs": []}
    for a, l, kind in pairs:
        pr = [r for r in runs if r["arch"] == a and r["layer"] == l and "history" in r]
        pr_all = [r for r in all_runs if r["arch"] == a and r["layer"] == l and "history" in r]
        if not pr:
            continue
        overall = min(r["best"] for r in pr)
        entry = {"arch": a, "layer": l, "kind": kind, "best_any": overall, "searchers": {}}
        if l in SMALL_LAYERS:
            known = log.get(next(o for o in optima if o["arch"] == a and o["layer"] == l))
            opt, size = known["best"], known["distinct_mappings"]
            entry["budget"] = pair_budget(l)
            entry["distinct_mappings"] = size
            entry["exhaustive_optimum"] = opt
        for s in searchers:
            rs = [r for r in pr if r["searcher"] == s]
            if not rs:
                continue
            cps = {str(c): statistics.median(best_at(r["history"], c) for r in rs) for c in CHECKPOINTS if c <= pair_budget(l)}
            to5 = [samples_to(r["history"], overall * 1.05) for r in rs]
            entry["searchers"][s] = {
                "median_best": statistics.median(r["best"] for r in rs), "best_at": cps,
                # (null when the median run never came within 5%: strict JSON has no Infinity)
                "samples_to_within_5pct": _finite(statistics.median([t if t is not None else math.inf for t in to5])),
                "wall_s_median": statistics.median(r["wall_s"] for r in rs)}
        if "marl" in entry["searchers"]:        # the speed target: one 10,000-sample MARL run
            entry["marl_wall_samples"] = min(SMALL_BUDGET, pair_budget(l))    # (10,000 unless the budget is less)
            entry["marl_10k_wall_s"] = run_one({"arch": a, "layer": l, "searcher": "marl", "seed": 0,
                                                "budget": entry["marl_wall_samples"]})["wall_s"]
        if "rl" in entry["searchers"] and "marl" in entry["searchers"] and l not in SMALL_LAYERS:
            # the same ratio for every searcher on the common seeds: is 10x reachable by any of them?
            entry["vs_rl_sample_ratio_median"] = {
                s: statistics.median(rs) for s in searchers if s != "rl" and (rs := sample_ratios(pr, s, seeds))}
        for ref in RATIO_REFS:
            if ref in entry["searchers"] and "marl" in entry["searchers"] and l not in SMALL_LAYERS:
                entry.update(ratio_entry(pr_all, ref, ratio_seeds))
        summary["pairs"].append(entry)
        plot_pair(entry, pr, searchers, out_path.parent / f"mapper_{a}_{l}.png")
    for ref in RATIO_REFS:
        per_pair = [e[f"marl_vs_{ref}_ratios"] for e in summary["pairs"]
                    if e.get(f"marl_vs_{ref}_ratios") and "exhaustive_optimum" not in e]
        if per_pair:
            summary[f"ratio_ci95_{ref}"] = bootstrap_median_of_medians(per_pair)
    out_path.write_text(json.dumps(summary, indent=1))
    print_table(summary)
    md = out_path.with_suffix(".md")
    md.write_text(markdown_table(summary))
    print(f"wrote {out_path} and {md}")


def plot_pair(entry, runs, searchers, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in searchers:
        rs = [r for r in runs if r["searcher"] == s]
        if not rs:
            continue
        xs = sorted({h[0] for r in rs for h in r["history"]})
        ys = [statistics.median(best_at(r["history"], x) for r in rs) for x in xs]
        ax.plot(xs, ys, label=s)
    if "exhaustive_optimum" in entry:
        ax.axhline(entry["exhaustive_optimum"], color="k", ls="--", lw=0.8, label="optimum")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("cost-model samples")
    ax.set_ylabel("best EDP (J x cycle), median over seeds")
    ax.set_title(f"{entry['arch']} / {entry['layer']} ({entry['kind']})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _refs(summary) -> list[str]:
    """The single-agent baselines this summary has MARL ratios against."""
    return [r for r in RATIO_REFS if any(f"marl_vs_{r}_ratios" in e for e in summary["pairs"])]


def mid_checkpoint(budget: int) -> int:
    """The checkpoint the tables compare searchers at: 10,000 samples, or the largest checkpoint
    within a smaller budget (a --budget 1000 run compares at 1,000)."""
    return max(c for c in CHECKPOINTS if c <= max(CHECKPOINTS[0], min(SMALL_BUDGET, budget)))


def _times(ratio: float) -> str:
    """A sample ratio; 0 (the median run never reached the baseline's best) said as such."""
    return "never" if ratio == 0 else f"{ratio:.1f}x"


def print_table(summary):
    searchers = summary["searchers"]
    refs = _refs(summary)
    mid = mid_checkpoint(summary["budget"])
    print(f"\nbest EDP at {mid:,} samples relative to the best any searcher found at {summary['budget']:,} "
          f"(small layers: to the exhaustive optimum; median over {summary['seeds']} seeds; 1.00 = best)")
    print(f"{'pair':<42}" + "".join(f"{s:>14}" for s in searchers)
          + "".join(f"{'MARL/' + RATIO_REFS[r] + ' x':>12}" for r in refs))
    for e in summary["pairs"]:
        ref = e.get("exhaustive_optimum", e["best_any"])
        row = f"{e['arch'] + '/' + e['layer']:<42}"
        for s in searchers:
            v = e["searchers"].get(s, {}).get("best_at", {}).get(str(mid), math.nan)
            row += f"{v / ref:>14.3f}"
        for r in refs:
            ratio = e.get(f"marl_vs_{r}_sample_ratio_median")
            row += f"{ratio:>12.1f}" if ratio is not None else f"{'-':>12}"
        print(row)
    main_pairs = [e for e in summary["pairs"] if "exhaustive_optimum" not in e and "marl" in e["searchers"]]
    small = [e for e in summary["pairs"] if "exhaustive_optimum" in e and "marl" in e["searchers"]]
    if main_pairs:
        within = sum(e["searchers"]["marl"]["best_at"].get(str(mid), math.inf) <= 1.05 * e["best_any"]
                     for e in main_pairs)
        print(f"\nMARL at {mid:,} within 5% of the best at {summary['budget']:,}: {within}/{len(main_pairs)} pairs")
        walls = [e["marl_10k_wall_s"] for e in summary["pairs"] if "marl_10k_wall_s" in e]
        n = max(e.get("marl_wall_samples", SMALL_BUDGET) for e in summary["pairs"] if "marl_10k_wall_s" in e)
        print(f"one {n:,}-sample MARL run (model included): {min(walls):.1f}-{max(walls):.1f} s per pair")
        for r in refs:
            print_ratio(summary, main_pairs, r)
        others = [s for s in searchers if s != "rl" and all(s in e.get("vs_rl_sample_ratio_median", {})
                                                              for e in main_pairs)]
        if others:
            print(f"every searcher, RL's samples to its final best / the searcher's ({summary['seeds']} seeds, median "
                  "over pairs): " + ", ".join(
                      f"{s} {_times(statistics.median(e['vs_rl_sample_ratio_median'][s] for e in main_pairs))}"
                      for s in others))
    for e in small:
        v = e["searchers"]["marl"]["best_at"].get(str(mid), math.inf) / e["exhaustive_optimum"]
        print(f"{e['arch']}/{e['layer']} ({e['distinct_mappings']:,} distinct mappings): "
              f"MARL at {mid:,} = {v:.3f} x the exhaustive optimum")


def print_ratio(summary, main_pairs, ref: str) -> None:
    """MARL's sample ratio against one baseline: median over pairs, its bootstrap interval, and
    what 10x asks (when the baseline reaches its final best)."""
    name = RATIO_REFS[ref]
    ratios = [e[f"marl_vs_{ref}_sample_ratio_median"] for e in main_pairs
              if e.get(f"marl_vs_{ref}_sample_ratio_median") is not None]
    if not ratios:
        return
    n_seeds = sum(e.get(f"marl_vs_{ref}_seeds", 0) for e in main_pairs)
    at10 = sum(e.get(f"marl_vs_{ref}_seeds_at_10x", 0) for e in main_pairs)
    print(f"MARL vs {name} samples to {name}'s final best: median over pairs {_times(statistics.median(ratios))} "
          f"(per pair: {', '.join(f'{r:.1f}' for r in ratios)}; {summary.get('ratio_seeds', summary['seeds'])} "
          f"seeds per pair; 10x or more on {at10} of {n_seeds} (pair, seed) runs)")
    ci = summary.get(f"ratio_ci95_{ref}")
    if ci:
        print(f"  95% bootstrap interval of that median (seeds resampled per pair): {ci[0]:.1f}x-{ci[1]:.1f}x")
    to_best = [e[f"{ref}_samples_to_best"] for e in main_pairs if e.get(f"{ref}_samples_to_best")]
    if to_best:
        warm = marl_warmup(summary["budget"])
        early = sum(n < 10 * warm for runs in to_best for n in runs)
        print(f"  {name} reaches its final best after (median per pair) "
              f"{', '.join(f'{statistics.median(r):,.0f}' for r in to_best)} samples; on {early} of "
              f"{sum(map(len, to_best))} runs before {10 * warm:,}, where 10x asks MARL to match it "
              f"within its {warm:,}-sample uniform warm-up")


def _ratio_cell(e: dict, seeds: int, ref: str) -> str:
    """The median MARL/baseline sample ratio; a seed on which MARL never reaches the baseline's best
    counts as 0."""
    ratio = e.get(f"marl_vs_{ref}_sample_ratio_median")
    if ratio is None:
        return "-"
    seeds = e.get(f"marl_vs_{ref}_seeds", seeds)
    never = e.get(f"marl_never_reaches_{ref}_best", 0)
    return _times(ratio) + (f" (never on {never}/{seeds} seeds)" if never else "")


def markdown_table(summary) -> str:
    """The README's table: best EDP at 10k relative to the reference, and MARL's sample ratios."""
    searchers = summary["searchers"]
    refs = _refs(summary)
    mid = str(mid_checkpoint(summary["budget"]))
    lines = ["| pair | " + " | ".join(searchers) + "".join(f" | MARL vs {RATIO_REFS[r]} samples" for r in refs) + " |",
             "|---|" + "---|" * (len(searchers) + len(refs))]
    for e in summary["pairs"]:
        ref = e.get("exhaustive_optimum", e["best_any"])
        cells = []
        for s in searchers:
            v = e["searchers"].get(s, {}).get("best_at", {}).get(mid, math.inf)
            cells.append(f"{v / ref:.3f}" if math.isfinite(v) else "-")
        cells += [_ratio_cell(e, summary["seeds"], r) for r in refs]
        name = f"{e['arch']}/{e['layer']} ({e['kind']})"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
