"""Model throughput: valid mappings evaluated per second on one core, batches of 1 / 1,000 / 100,000.

Random mappings (coexplore.mapspace.sampling) of corpus (architecture, layer) pairs, with the
keep/bypass of a corpus mapping of that pair. Prints a table and writes
results/bench/model_throughput.json. `--quick` runs small batches only (under a minute).
Reference point (../shared/timeloop-corpus/README.md): Timeloop's own mapper, random search on one
thread, tried 131-2,104 mappings/s on these machines, 4.9-198 of them valid.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.mapspace.sampling import random_mappings  # noqa: E402
from coexplore.model.inputs import load_context  # noqa: E402
from coexplore.spec.mapping import to_arrays  # noqa: E402
from shared_data import HelpFormatter, require  # noqa: E402

PAIRS = [("simba_like", "resnet50_res3a_2b"), ("simba_like", "bert_qkv"),
         ("eyeriss_like", "resnet50_res3a_2b"), ("eyeriss_like", "bert_qkv"),
         ("simba_like_pe8_glb4k", "mobilenetv2_pw")]



def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT / "tests" / "data" / "timeloop_corpus"),
                    help="Timeloop corpus holding the benchmark's (architecture, layer) pairs; "
                    "the default is the repository's own test copy")
    ap.add_argument("--quick", action="store_true", help="batches 1 and 1,000 only, fewer repeats")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "model_throughput.json"),
                    help="JSON file for the per-pair rates")
    args = ap.parse_args()
    print(f"{'arch':<26}{'layer':<20}{'batch':>8}{'total/s':>14}{'valid/s':>14}{'valid':>8}{'RSS MiB':>10}")
    corpus = require(Path(args.corpus) / "arches", "--corpus", "a Timeloop corpus (arches/, layers/, public/)").parent
    batches = [1, 1000] if args.quick else [1, 1000, 100_000]
    rng = np.random.default_rng(0)
    rows = []
    for arch, layer in PAIRS:
        adir = corpus / "arches" / arch
        ctx = load_context(adir / "processed.yaml", corpus / "layers" / f"{layer}.yaml", adir / "ERT.yaml")
        case = next(p for p in sorted((corpus / "public" / arch / layer).iterdir()))
        keep = to_arrays([ctx.load_mapping(case / "mapping.yaml")], ctx.arch, ctx.problem).keep[0]
        for batch in batches:
            reps = 300 if batch == 1 else (5 if batch == 1000 else 3)
            if args.quick and batch == 1:
                reps = 100
            maps = random_mappings(ctx.arch, ctx.problem, batch * reps, rng, keep)
            ctx.evaluate(maps.take(slice(0, min(batch, 10))))           # warm-up
            valid = 0
            rates = []
            for r in range(reps):
                part = maps.take(slice(r * batch, (r + 1) * batch))
                t0 = time.perf_counter()
                res = ctx.evaluate(part)
                rates.append(time.perf_counter() - t0)
                valid += int(res.valid.sum())
            # batches of 1: total time; larger batches: the median batch (the machine is shared)
            dt = sum(rates) if batch == 1 else statistics.median(rates) * reps
            rows.append({"arch": arch, "layer": layer, "batch": batch, "valid_fraction": valid / (batch * reps),
                         "valid_per_s": valid / dt, "total_per_s": batch * reps / dt,
                         "peak_rss_MiB": peak_rss_mib()})
            r = rows[-1]
            print(f"{arch:<26}{layer:<20}{batch:>8}{r['total_per_s']:>14,.0f}{r['valid_per_s']:>14,.0f}"
                  f"{r['valid_fraction']:>8.3f}{r['peak_rss_MiB']:>10,.0f}", flush=True)
    top = max(batches)
    med = statistics.median(r["total_per_s"] for r in rows if r["batch"] == top)
    print(f"\nmedian over pairs at batch {top:,}: {med:,.0f} mappings/s "
          f"({med / 2104:,.0f}x Timeloop's fastest random mapper rate, 2,104/s)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "median_total_per_s_at_max_batch": med, "max_batch": top}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
