"""The model against the v0.3 reference outputs of the Timeloop/Accelergy exercises.

Every `v3_*` case of ../shared/timeloop-exercises is evaluated as its user would: its inputs/
architecture and problem, the reference run's ERT, and the mapping as that run printed it
(`ref/timeloop-model.map.txt`, or `timeloop-mapper.map.txt` for mapper runs: a v0.3 mapper leaves
no mapping YAML), under the rules of the Timeloop that made these references
(`stride_rule="v0.3"`) and under today's. Cycles, total energy and every (level, dataspace) count
are compared with the reference stats.txt. Prints a table and writes results/bench/exercises_v3.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.model.inputs import load_context  # noqa: E402
from coexplore.model.timeloop_stats import parse_stats  # noqa: E402
from shared_data import HelpFormatter, require  # noqa: E402


def case_files(case: Path) -> tuple[Path, Path, str] | None:
    """(architecture, problem, tool) of a v0.3 case, as its inputs/ name them."""
    inp = case / "inputs"
    arch = next(iter(sorted(inp.glob("*.arch.yaml")) + sorted(inp.glob("arch/*.yaml"))
                     + sorted(inp.glob("eyeriss_like*.yaml"))), None)
    prob = next(iter(sorted(inp.glob("*.prob.yaml")) + sorted(inp.glob("prob.yaml"))
                     + sorted(p for p in inp.glob("*.yaml") if "layer" in p.name)), None)
    tool = "timeloop-model" if (case / "ref" / "timeloop-model.map.txt").is_file() else "timeloop-mapper"
    if arch is None or prob is None or not (case / "ref" / f"{tool}.map.txt").is_file():
        return None
    return arch, prob, tool


def check(case: Path, rule: str) -> dict:
    arch, prob, tool = case_files(case)
    ref = case / "ref"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = load_context(arch, prob, ref / f"{tool}.ERT.yaml")
    ctx.stride_rule = rule
    rec = ctx.record(ctx.evaluate_mappings(ref / f"{tool}.map.txt"))
    want = parse_stats((ref / f"{tool}.stats.txt").read_text())
    counts = all((rec["levels"][lv]["dataspaces"][ds][k] == v[k])
                 for lv, d in want["levels"].items() for ds, v in d.get("dataspaces", {}).items()
                 for k in ("reads", "fills", "updates"))
    return {"case": case.name, "rule": rule, "tool": tool, "cycles": rec["cycles"], "ref_cycles": want["cycles"],
            "energy_pJ": rec["energy_pJ"], "ref_energy_pJ": want["energy_pJ"], "counts_exact": counts,
            "energy_rel_err": abs(rec["energy_pJ"] / want["energy_pJ"] - 1),
            # stats.txt prints energies to 0.01 pJ, and its ERT rounds each action to 0.001 pJ
            "energy_as_printed": abs(rec["energy_pJ"] - want["energy_pJ"]) <= 0.015
            or abs(rec["energy_pJ"] / want["energy_pJ"] - 1) < 1e-6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--exercises", default=str(ROOT.parent / "shared" / "timeloop-exercises"),
                    help="the exercises' folder (v3_* cases with inputs/ and ref/)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "exercises_v3.json"), help="JSON summary")
    args = ap.parse_args()
    root = require(args.exercises, "--exercises", "the Timeloop/Accelergy exercise references")
    cases = [c for c in sorted(root.glob("v3_*")) if case_files(c) is not None]
    rows = [check(c, rule) for c in cases for rule in ("v0.3", "current")]
    print(f"{'case':48s} {'rule':8s} {'cycles':>10s} {'counts':>7s} {'energy err':>11s}")
    for r in rows:
        print(f"{r['case']:48s} {r['rule']:8s} {'exact' if r['cycles'] == r['ref_cycles'] else 'DIFF':>10s} "
              f"{'exact' if r['counts_exact'] else 'differ':>7s} {r['energy_rel_err']:11.2e}")
    for rule in ("v0.3", "current"):
        sub = [r for r in rows if r["rule"] == rule]
        print(f"{rule}: {len(sub)} cases, cycles exact {sum(r['cycles'] == r['ref_cycles'] for r in sub)}, "
              f"counts exact {sum(r['counts_exact'] for r in sub)}, energy as printed (0.01 pJ or 1e-6) "
              f"{sum(r['energy_as_printed'] for r in sub)}, "
              f"max energy error {max(r['energy_rel_err'] for r in sub):.2e}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
