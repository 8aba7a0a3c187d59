"""Fidelity of the built-in energy/area estimator against real Accelergy (the reference grid).

Prints the relative error per class and action (median / p95 / max) on the full grid and on
held-out rows, checks the acceptance targets (per class and action: median <= 5%; per class:
p95 <= 20%), and writes results/bench/energy_fidelity.json.

Held-out: the only fitted part is the CACTI-SRAM surface (SRAM and the storage of
smartbuffer_SRAM). Components are grouped by the CACTI run they need (same node, rounded
width, depth, banks); each group is held out in turn (--folds 0, default) or in k folds, the
surface is refitted without it (same hyper-parameters) and the group's components priced.
The other classes use exact plug-in constants and no fitted numbers, so their held-out
errors equal the full-grid ones.

    python bench/energy_fidelity.py [--grid ../shared/accelergy-ert-grid/ert_grid.csv]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from coexplore.energy import (build_tables, components_from_processed,  # noqa: E402
                              read_art, read_ert)
from coexplore.energy.check import CheckResult, check_rows, format_table, rel_err  # noqa: E402
from coexplore.energy.components import estimate_component  # noqa: E402
from coexplore.spec.ert import parse_ert  # noqa: E402
from coexplore.energy.fit import (build_sram_dataset, fit_model, packaged_hypers,  # noqa: E402
                                  point_key)
from coexplore.energy.grid import read_grid  # noqa: E402
from shared_data import HelpFormatter, non_negative, require  # noqa: E402

MEDIAN_TARGET, P95_TARGET = 0.05, 0.20
SHARED = "project reference data in ../shared; not in a clone"



def acceptance(summary: dict) -> dict:
    out = {}
    for cls, entry in summary["classes"].items():
        medians = {a: s["median_rel_err"] for a, s in entry["actions"].items() if a != "area"}
        area = entry["actions"].get("area", {}).get("median_rel_err")
        out[cls] = {"median_ok": all(m is not None and m <= MEDIAN_TARGET for m in medians.values()),
                    "p95_ok": entry["p95_rel_err"] is not None and entry["p95_rel_err"] <= P95_TARGET,
                    "area_median_within_5pct": area is not None and area <= MEDIAN_TARGET}
    return out


def held_out(grid, folds: int, seed: int) -> CheckResult:
    rows_by_comp = defaultdict(list)
    for r in grid:
        rows_by_comp[r.component_id].append(r)
    points = build_sram_dataset(grid)
    key_of = {}
    for cid, rows in rows_by_comp.items():
        pts = build_sram_dataset(rows)
        if pts:
            key_of[cid] = point_key(pts[0])
    keys = sorted(set(key_of.values()))
    order = np.random.default_rng(seed).permutation(len(keys))
    k = len(keys) if folds <= 0 else folds
    hypers = packaged_hypers()
    result = CheckResult("coexplore-builtin (held-out CACTI points)")
    # classes without fitted numbers: held-out == full grid
    fixed = [r for r in grid if r.component_id not in key_of]
    part = check_rows(fixed)
    result.rows += part.rows
    result.unsupported += part.unsupported
    result.reference_failed += part.reference_failed
    for f in tqdm(range(k), desc="held-out folds", file=sys.stderr):
        test_keys = {keys[i] for i in order[f::k]}
        model = fit_model([p for p in points if point_key(p) not in test_keys], hypers)
        test_rows = [r for r in grid if key_of.get(r.component_id) in test_keys]

        def est(cls, attrs, classes, _m=model):
            return estimate_component(cls, attrs, classes=classes, sram_model=_m)
        part = check_rows(test_rows, est)
        result.rows += part.rows
        result.unsupported += part.unsupported
        result.reference_failed += part.reference_failed
    return result


def level_name(table_name: str) -> str:
    return re.sub(r"\[\d+\.\.\d+\]$", "", table_name).split(".")[-1]


def live_designs(corpus: Path) -> dict:
    """build_tables on the corpus designs whose ERT/ART were generated live by the same
    Accelergy setup: relative error per (design, level, action) and area."""
    out = {}
    if not corpus.is_dir():
        return out
    for arch_dir in sorted(p for p in corpus.iterdir() if (p / "processed.yaml").is_file()):
        head = (arch_dir / "arch.yaml").read_text()[:400] if (arch_dir / "arch.yaml").is_file() else ""
        if "live by Accelergy" not in head.replace("\n# ", " "):
            continue
        arch = yaml.safe_load((arch_dir / "processed.yaml").read_text())
        ert, art = build_tables(components_from_processed(arch))
        ours, ref = parse_ert(ert).actions, parse_ert(read_ert(arch_dir / "ERT.yaml")).actions
        errs = {f"{lv}.{a}": rel_err(ours.get(lv, {}).get(a, float("nan")), v)
                for lv, acts in ref.items() for a, v in acts.items()}
        ref_area = {t["name"]: t["area"] for t in read_art(arch_dir / "ART.yaml")["ART"]["tables"]}
        our_area = {t["name"]: t["area"] for t in art["ART"]["tables"]}
        errs.update({level_name(n) + ".area": rel_err(our_area.get(n, float("nan")), a)
                     for n, a in ref_area.items()})
        out[arch_dir.name] = errs
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--grid", default=str(ROOT.parent / "shared/accelergy-ert-grid/ert_grid.csv"),
                    help=f"Accelergy ERT/ART reference grid CSV; {SHARED}")
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared/timeloop-corpus/arches"),
                    help="the corpus' arches folder (designs with live-Accelergy ERT/ART are "
                    f"checked too); {SHARED}")
    ap.add_argument("--folds", type=non_negative, default=0,
                    help="held-out folds over the CACTI-SRAM groups; 0 = leave one CACTI point out")
    ap.add_argument("--seed", type=int, default=0, help="seed of the fold assignment")
    ap.add_argument("--out", default=str(ROOT / "results/bench/energy_fidelity.json"),
                    help="JSON file for the full-grid and held-out summaries")
    args = ap.parse_args(argv)
    require(args.grid, "--grid", "the Accelergy ERT grid CSV")
    require(args.corpus, "--corpus", "the corpus' arches folder")
    grid = read_grid(args.grid)
    t0 = time.perf_counter()
    full = check_rows(grid).to_json()
    t_full = time.perf_counter() - t0
    held = held_out(grid, args.folds, args.seed).to_json()
    for title, summary in (("FULL GRID", full), ("HELD-OUT", held)):
        print(f"== {title} ==")
        print(format_table(summary))
        acc = acceptance(summary)
        print("acceptance (ERT actions: median<=5% per action, p95<=20% per class): " + ", ".join(
            f"{c}:{'ok' if a['median_ok'] and a['p95_ok'] else 'FAIL'}" for c, a in acc.items()))
        print("area median <= 5% (not an ERT action, reported alongside): " + ", ".join(
            f"{c}:{'yes' if a['area_median_within_5pct'] else 'NO'}" for c, a in acc.items()))
        summary["acceptance"] = acc
        print()
    live = live_designs(Path(args.corpus))
    if live:
        print("== CORPUS DESIGNS WITH LIVE-ACCELERGY ERT/ART (build_tables on processed.yaml) ==")
        for design, errs in live.items():
            worst = sorted(errs.items(), key=lambda kv: -kv[1])[:3]
            print(f"{design:34s} entries {len(errs):3d}  median {100 * np.median(list(errs.values())):5.2f}%  "
                  f"max {100 * max(errs.values()):5.2f}%  worst: " +
                  ", ".join(f"{k} {100 * v:.1f}%" for k, v in worst))
        print()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"grid": str(args.grid), "grid_rows": len(grid),
                               "folds": args.folds or "leave-one-CACTI-point-out",
                               "seconds_full_grid": round(t_full, 3),
                               "full_grid": full, "held_out": held,
                               "live_corpus_designs": live}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
