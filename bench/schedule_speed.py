"""Wall time of 10,000-sample schedule searches (100 jobs, 4/8/16 cores) on one process.

    python bench/schedule_speed.py [--magma-dir ../shared/magma] [--budget 10000] [--repeat 3]
Prints a table (with the median samples MAGMA took: it stops early at a schedule as long as its
longest job alone, which is optimal; the LP bound, solved to ~1e-9, ends no search) and writes results/bench/schedule_speed.json. Target: < 5 s per MAGMA run
(the original code needs about 10-17 s for 100 generations x 100).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.system.encoding import MakespanObjective  # noqa: E402
from coexplore.system.schedule import search_schedule  # noqa: E402
from coexplore.system.tables import load_table  # noqa: E402
from shared_data import HelpFormatter, positive, require  # noqa: E402

CASES = [("batch_mix", 2, "S1", 1), ("batch_mix", 4, "S4", 1), ("batch_mix", 6, "S6", 1),
         ("batch_conv", 6, "S6", 16)]
SHARED = "project reference data in ../shared; not in a clone"



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--magma-dir", default=str(ROOT.parent / "shared" / "magma"),
                    help=f"MAGMA's data (its job tables/); {SHARED}")
    ap.add_argument("--budget", type=positive, default=10_000, help="samples per schedule search")
    ap.add_argument("--repeat", type=positive, default=3, help="runs per case (the median is reported)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "schedule_speed.json"), help="JSON summary")
    a = ap.parse_args(argv)
    require(Path(a.magma_dir) / "tables", "--magma-dir", "MAGMA's job tables")
    rows = []
    print(f"{'table':<22}{'cores':>6}{'BW':>5}{'magma s':>9}{'samples':>9}{'random s':>9}{'eval-only s':>12}")
    for batch, idx, label, bw in CASES:
        t = load_table(Path(a.magma_dir) / "tables" / batch / f"S{idx}" / "insts0.csv")
        times, samples = {}, {}
        for m in ("magma", "random"):
            ts, ns = [], []
            for r in range(a.repeat):
                t0 = time.perf_counter()
                ns.append(search_schedule(t, bw, m, a.budget, seed=r).samples)  # (fewer: the longest job reached)
                ts.append(time.perf_counter() - t0)
            times[m] = float(np.median(ts))
            samples[m] = int(np.median(ns))
        obj = MakespanObjective(t, bw)
        x = obj.space.random(np.random.default_rng(0), a.budget)
        t0 = time.perf_counter()
        for i in range(0, a.budget, 100):
            obj(x[i:i + 100])
        times["evaluate"] = time.perf_counter() - t0
        rows.append({"table": f"{batch}/{label}", "cores": t.num_cores, "bandwidth": bw, **times,
                     "samples": samples})
        print(f"{batch + '/' + label:<22}{t.num_cores:>6}{bw:>5}{times['magma']:>9.2f}{samples['magma']:>9}"
              f"{times['random']:>9.2f}{times['evaluate']:>12.2f}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"budget": a.budget, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
