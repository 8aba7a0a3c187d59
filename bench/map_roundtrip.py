"""`coexplore map` then `coexplore evaluate` on many (core, layer) pairs: the written mapping must
reproduce the reported numbers exactly.

Runs the two commands as a user does (subprocesses, the mapping YAML on disk in between) on
- the bundled single-core systems (`arch/simba.yaml`, `arch/eyeriss.yaml`) x a spread of layers of
  every bundled workload (`problems/*.yaml`, `--layers` per workload, evenly spaced), and
- every architecture of the Timeloop reference corpus (with the `constraints.yaml` beside it, as
  `coexplore map` picks it up) x every corpus layer; the copy in `tests/data/timeloop_corpus` when
  `../shared` is absent,
for each searcher of `--searchers`. A run either writes a mapping (then energy, cycles, EDP and
every level's record from `evaluate --json` must equal the `map --json` best) or ends with "no
valid mapping" (exit 1 and a result.json with the reasons; a small budget on a tight architecture
may do that, and the count is reported). Anything else (a crash, a bad exit code, a difference)
is a failure. Prints a table per source and searcher and writes results/bench/map_roundtrip.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.spec.workload import bundled_workloads, load_workload  # noqa: E402
from shared_data import HelpFormatter, comma_list, positive  # noqa: E402

COMPARED = ("energy_pJ", "cycles", "edp_J_cycle", "levels")


def bundled_pairs(layers_per_workload: int) -> list[tuple[str, str, list[str]]]:
    """(arch, problem, extra CLI args) for the bundled single-core systems x spread layers."""
    pairs = []
    for core in ("arch/simba.yaml", "arch/eyeriss.yaml"):
        for wl in bundled_workloads():
            names = [lay.name for lay in load_workload(wl).layers]
            k = min(layers_per_workload, len(names))
            picked = sorted({names[round(i * (len(names) - 1) / max(k - 1, 1))] for i in range(k)}, key=names.index)
            pairs += [(core, str(wl), ["--layer", name]) for name in picked]
    return pairs


def corpus_pairs(corpus: Path) -> list[tuple[str, str, list[str]]]:
    return [(str(a / "arch.yaml"), str(lay), []) for a in sorted((corpus / "arches").iterdir()) if (a / "arch.yaml").exists()
            for lay in sorted((corpus / "layers").glob("*.yaml"))]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=3600)


def one(job: dict, budget: int, seed: int, tmp: Path) -> dict:
    """Map, then evaluate the written mapping; the run's outcome."""
    out = tmp / f"run{job['id']}"
    t0 = time.perf_counter()
    m = cli("map", job["arch"], job["problem"], *job["extra"], "--searcher", job["searcher"], "--budget",
            str(budget), "--seed", str(seed), "--json", "--no-cache", "--no-progress", "--out", str(out))
    rec = {**job, "map_s": round(time.perf_counter() - t0, 2)}
    if m.returncode == 1 and (out / "result.json").exists() and \
            json.loads((out / "result.json").read_text()).get("best") is None:
        return {**rec, "outcome": "no valid mapping", "detail": m.stderr.strip().splitlines()[-2:]}
    if m.returncode != 0:
        return {**rec, "outcome": "failure", "detail": f"map exit {m.returncode}: {m.stderr.strip()[-500:]}"}
    res = json.loads(m.stdout)
    e = cli("evaluate", job["arch"], job["problem"], res["mapping_file"], *job["extra"], "--json")
    if e.returncode != 0:
        return {**rec, "outcome": "failure", "detail": f"evaluate exit {e.returncode}: {e.stderr.strip()[-500:]}"}
    got = json.loads(e.stdout)
    diff = [k for k in COMPARED if got.get(k) != res["best"].get(k)]
    return {**rec, "edp_J_cycle": res["best"]["edp_J_cycle"],
            "outcome": "failure" if diff else "reproduced", "detail": f"differs: {', '.join(diff)}" if diff else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "timeloop-corpus"),
                    help="Timeloop reference corpus (arches/*/arch.yaml, layers/*.yaml); the copy in "
                         "tests/data/timeloop_corpus when this is absent")
    ap.add_argument("--searchers", default="marl,ga,rl,sa,random_pruned,linear_pruned",
                    help="comma-separated searcher names")
    ap.add_argument("--budget", type=positive, default=1000, help="samples per run")
    ap.add_argument("--seed", type=int, default=0, help="seed of every run")
    ap.add_argument("--layers", type=positive, default=6, help="layers per bundled workload (evenly spaced)")
    ap.add_argument("--jobs", type=positive, default=2, help="runs at once")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "map_roundtrip.json"), help="JSON file")
    args = ap.parse_args()
    from coexplore.search.registry import SEARCHERS
    searchers = comma_list(ap, args.searchers, sorted(SEARCHERS), "--searchers")   # (a typo: before 88 runs fail)
    corpus = Path(args.corpus)
    if not (corpus / "arches").is_dir():
        corpus = ROOT / "tests" / "data" / "timeloop_corpus"
    sources = {"bundled": bundled_pairs(args.layers), "corpus": corpus_pairs(corpus)}
    jobs = [{"source": src, "arch": a, "problem": p, "extra": x, "searcher": s}
            for s in searchers for src, pairs in sources.items() for a, p, x in pairs]
    for i, job in enumerate(jobs):
        job["id"] = i
    print(f"{len(jobs)} runs ({args.budget} samples each, {args.jobs} at once)", flush=True)
    t0 = time.perf_counter()
    records = []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as ex:
        for i, rec in enumerate(ex.map(lambda j: one(j, args.budget, args.seed, Path(tmp)), jobs), 1):
            records.append(rec)
            if rec["outcome"] == "failure":
                print(f"FAILURE {rec['arch']} {rec['problem']} {' '.join(rec['extra'])} {rec['searcher']}: "
                      f"{rec['detail']}", flush=True)
            if i % 50 == 0:
                print(f"  {i}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    print("\n| source | searcher | runs | mapping written, evaluate reproduces it | no valid mapping | failures |")
    print("|---|---|---|---|---|---|")
    for src in sources:
        for s in searchers:
            rs = [r for r in records if r["source"] == src and r["searcher"] == s]
            n = {o: sum(r["outcome"] == o for r in rs) for o in ("reproduced", "no valid mapping", "failure")}
            rows.append({"source": src, "searcher": s, "runs": len(rs), **n})
            print(f"| {src} | {s} | {len(rs)} | {n['reproduced']} | {n['no valid mapping']} | {n['failure']} |")
    failures = sum(r["outcome"] == "failure" for r in records)
    print(f"\n{len(records)} runs in {time.perf_counter() - t0:.0f} s; failures: {failures}; corpus: {corpus}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"budget": args.budget, "seed": args.seed, "corpus": str(corpus), "table": rows,
                               "runs": records}, indent=1))
    print(f"wrote {out}")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
