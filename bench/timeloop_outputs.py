"""Reading real Timeloop's outputs: every case of the reference corpus read back from what
timeloop-model wrote (its `timeloop-model.stats.txt`, or for a refused mapping its log) by
`coexplore.model.timeloop_stats`, as `coexplore evaluate --model timeloop` and `coexplore validate
--model timeloop` read them, and compared with the case's expected.json (full precision): validity,
Timeloop's message word for word, cycles, computes and every per-level count exactly, energy within
stats.txt's printing (0.005 pJ per printed value). Prints a table per architecture and writes
results/bench/timeloop_outputs.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.model.compare import compare_records  # noqa: E402
from coexplore.model.timeloop_stats import energy_tolerance_pJ, failed_run, parse_stats  # noqa: E402
from shared_data import HelpFormatter, require  # noqa: E402


def check_case(case: Path) -> dict:
    exp = json.loads((case / "expected.json").read_text())
    if not exp["valid"]:
        got = failed_run((case / "timeloop-model.log").read_text())
        return {"valid": False, "ok": got["error"] == exp["error"]}
    got = parse_stats((case / "timeloop-model.stats.txt").read_text(), list(exp["levels"]))
    cmp = compare_records(got, exp)
    energy_ok = abs(got["energy_pJ"] - exp["energy_pJ"]) <= energy_tolerance_pJ(got)
    return {"valid": True, "ok": cmp["cycles_exact"] and cmp["counts_exact"] and energy_ok
            and got["computes"] == exp["computes"], "energy_rel_err": cmp["energy_rel_err"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "timeloop-corpus"),
                    help="the reference corpus (its cases keep timeloop-model.stats.txt / .log)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "timeloop_outputs.json"))
    args = ap.parse_args()
    corpus = require(args.corpus, "--corpus", "the Timeloop reference corpus")
    t0 = time.perf_counter()
    per_arch: dict[str, list] = defaultdict(list)
    for exp in sorted(corpus.glob("*/*/*/*/expected.json")):
        case = exp.parent
        per_arch[case.parent.parent.name].append(check_case(case))
    rows = []
    for arch, res in sorted(per_arch.items()):
        valid = [r for r in res if r["valid"]]
        rows.append({"arch": arch, "valid": len(valid), "valid_read_exactly": sum(r["ok"] for r in valid),
                     "invalid": len(res) - len(valid),
                     "messages_exact": sum(r["ok"] for r in res if not r["valid"]),
                     "energy_max_rel_err": max((r["energy_rel_err"] for r in valid), default=0.0)})
    total = {k: sum(r[k] for r in rows) for k in ("valid", "valid_read_exactly", "invalid", "messages_exact")}
    total["energy_max_rel_err"] = max((r["energy_max_rel_err"] for r in rows), default=0.0)
    print(f"{'architecture':<34}{'valid':>7}{'read exactly':>14}{'invalid':>9}{'message exact':>15}{'E err max':>11}")
    for r in rows + [{"arch": "all", **total}]:
        print(f"{r['arch']:<34}{r['valid']:>7}{r['valid_read_exactly']:>14}{r['invalid']:>9}"
              f"{r['messages_exact']:>15}{r['energy_max_rel_err']:>11.1e}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"per_arch": rows, "all": total}, indent=1))
    return 0 if total["valid"] == total["valid_read_exactly"] and total["invalid"] == total["messages_exact"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
