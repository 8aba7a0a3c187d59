"""The model against the dense v0.4 reference outputs of the Timeloop/Accelergy exercises.

Every dense `v4_*` case of ../shared/timeloop-exercises (example designs, exercises 00-06, the
Eyeriss tutorial designs, the DSE tutorial) is evaluated from its `ref/parsed-processed-input.yaml`
(the flattened architecture and problem Timeloop consumed), the reference ERT beside it, and its
mapping (`ref/timeloop-mapper.map.yaml` for mapper cases, the `mapping:` key of the processed input
for timeloop-model cases), as `coexplore.model.reference.load_reference_run` loads them. Per-instance
reads/fills/updates, utilized instances and access energy of every (level, dataspace) are compared with the full-precision values from the reference
`map+stats.xml` (`_all_summaries.json`, key `xml_levels`), and cycles and total energy with the
reference summary. Prints a table and writes results/bench/exercises.json.

The 2024 references predate Timeloop's stride-rule fix (PR #297, "Translation fix", 2025). The model
follows current Timeloop by default (it matches the 2025 corpus); every case is therefore also
evaluated with `stride_rule="pre2025"` (a zero translation resets sliding-window reuse too), and a
case whose differences all vanish under that rule is reported as such.

The dense example designs are also run as a timeloopfe user runs them, from their
`inputs/top.yaml.jinja2` (rendered by `coexplore.spec.template`), with the reference mapping and ERT.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coexplore.errors import CoexploreError  # noqa: E402
from coexplore.model.evaluate import evaluate_batch  # noqa: E402
from coexplore.model.reference import load_reference_run  # noqa: E402
from shared_data import HelpFormatter, require  # noqa: E402

SHARED = "project reference data in ../shared; not in a clone"



def classify(diffs: list[dict], legacy_diffs: list[dict]) -> str:
    """Why a case differs, where the reason is known."""
    if not diffs:
        return "exact"
    if not legacy_diffs:
        fields = sorted({f"{d['level']} {d['dataspace']} {d['field']}" for d in diffs})
        return "exact under the pre-2025 stride rule (refs predate Timeloop PR #297); differs: " + ", ".join(fields)
    return "differs (unexplained)"


def compare(case: str, case_dir: Path, summary: dict) -> dict:
    run = load_reference_run(case_dir / "ref")
    arch, problem, costs = run.context.arch, run.context.problem, run.context.costs
    arrays = run.arrays()
    out = {}
    for rule in ("current", "pre2025"):
        out[rule] = _compare(arch, problem, costs, arrays, summary, rule)
    row = out["current"]
    row.update({"case": case, "pre2025": {k: out["pre2025"][k] for k in
                                          ("counts_exact", "diffs", "energy_rel_err", "cycles_exact")}})
    row["verdict"] = classify(row["diffs"], out["pre2025"]["diffs"])
    return row


def _compare(arch, problem, costs, arrays, summary: dict, rule: str) -> dict:
    res = evaluate_batch(arch, problem, costs, arrays, stride_rule=rule)
    n = res.nest
    L = len(arch.levels)
    names = [lv.name for lv in arch.levels]
    dsn = [ds.name for ds in problem.dataspaces]
    diffs, checked = [], 0
    e_err = []
    for xl in summary["xml_levels"]:
        if xl.get("reads") is None:
            continue
        if xl["level"] not in names:
            diffs.append({"level": xl["level"], "dataspace": "-", "field": "level missing", "model": None, "ref": None})
            continue
        li = L - 1 - names.index(xl["level"])
        for s, ds in enumerate(dsn):
            kept = bool(n.size[0, li, s])
            for field in ("reads", "fills", "updates"):
                ref = xl[field][s]
                got = int(getattr(n, field)[0, li, s]) if kept else 0
                checked += 1
                if abs(got - ref) > 1e-6 * max(1.0, abs(ref)):
                    diffs.append({"level": xl["level"], "dataspace": ds, "field": field, "model": got, "ref": ref})
            ui = xl["utilized_instances"][s]
            if kept and ui and int(n.instances[0, li]) != int(round(ui)):
                diffs.append({"level": xl["level"], "dataspace": ds, "field": "utilized_instances",
                              "model": int(n.instances[0, li]), "ref": ui})
            ref_e = xl["energy"][s] * (ui or 0.0)
            got_e = float(res.ds_energy[0, li, s]) if kept else 0.0
            if ref_e > 0:
                e_err.append(abs(got_e - ref_e) / ref_e)
    ref_energy = summary["summary"].get("energy_pJ_from_per_compute")
    ref_cycles = summary["summary"].get("cycles")
    energy = float(res.energy_pJ[0])
    cycles = int(res.cycles[0]) if res.valid[0] else None
    return {
        "valid": bool(res.valid[0]), "error": res.validity.message(0, arch, problem),
        "counts_checked": checked, "counts_exact": checked - sum(d["field"] in ("reads", "fills", "updates")
                                                                 for d in diffs),
        "diffs": diffs, "cycles": cycles, "ref_cycles": ref_cycles, "cycles_exact": cycles == ref_cycles,
        "energy_pJ": energy, "ref_energy_pJ": ref_energy,
        "energy_rel_err": abs(energy - ref_energy) / ref_energy if ref_energy else None,
        "max_ds_access_energy_rel_err": max(e_err) if e_err else None,
    }


def from_template(case_dir: Path, summary: dict) -> dict:
    """The case as a timeloopfe user runs it: its `inputs/top.yaml.jinja2` rendered with
    `architecture=arch_dir` (the mirror's name for the design folder), the reference mapping and
    ERT evaluated on it (pre-2025 stride rule, as the references were made)."""
    import warnings
    from coexplore.model.inputs import load_context
    from coexplore.spec import template
    top = case_dir / "inputs" / "top.yaml.jinja2"
    template.set_data({"architecture": "arch_dir"})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctx = load_context(top, top, case_dir / "ref" / "timeloop-mapper.ERT.yaml")
            ctx.stride_rule = "pre2025"
            res = ctx.evaluate_mappings([ctx.load_mapping(case_dir / "ref" / "timeloop-mapper.map.yaml")])
    except CoexploreError as err:
        return {"rendered": False, "error": str(err)}
    finally:
        template.set_data({})
    ref_e, ref_c = summary["summary"].get("energy_pJ_from_per_compute"), summary["summary"].get("cycles")
    energy, cycles = float(res.energy_pJ[0]), int(res.cycles[0]) if res.valid[0] else None
    return {"rendered": True, "cycles": cycles, "ref_cycles": ref_c, "cycles_exact": cycles == ref_c,
            "energy_rel_err": abs(energy - ref_e) / ref_e if ref_e else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--exercises", default=str(ROOT.parent / "shared" / "timeloop-exercises"),
                    help="Timeloop/Accelergy exercise references (v4_* case folders, _index.csv, "
                    f"_all_summaries.json); {SHARED}")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "exercises.json"),
                    help="JSON file for the per-case comparison")
    args = ap.parse_args()
    root = require(args.exercises, "--exercises", "the Timeloop/Accelergy exercise references "
                   "(with _index.csv and _all_summaries.json)")
    require(root / "_index.csv", "--exercises", "the exercises' _index.csv")
    index = list(csv.DictReader(open(root / "_index.csv")))
    summaries = json.loads((root / "_all_summaries.json").read_text())
    rows = []
    for r in index:
        case = r["case"]
        if not case.startswith("v4_") or r["sparse"] == "True" or r["kind"] == "accelergy":
            continue
        try:
            rows.append(compare(case, root / case, summaries[case]))
        except CoexploreError as err:
            rows.append({"case": case, "valid": False, "error": f"input not readable: {err}", "diffs": [],
                         "verdict": "parse failure"})
    print(f"{'case':<44}{'counts':>9}{'cycles':>8}{'energy err':>11}{'pre2025':>9}{'energy err':>11}  verdict")
    for row in rows:
        if "counts_checked" not in row:
            print(f"{row['case']:<44}{'-':>9}{'-':>8}{'-':>12}  {row['verdict']}: {row['error']}")
            continue
        cnt = f"{row['counts_exact']}/{row['counts_checked']}"
        cyc = "exact" if row["cycles_exact"] else f"{row['cycles']}!={row['ref_cycles']}"
        err = row["energy_rel_err"]
        old = row["pre2025"]
        cnt2 = f"{old['counts_exact']}/{row['counts_checked']}"
        print(f"{row['case']:<44}{cnt:>9}{cyc:>8}{err:>11.1e}{cnt2:>9}{old['energy_rel_err']:>11.1e}  "
              f"{row['verdict'].split(';')[0]}")
        for d in row["diffs"]:
            print(f"{'':<8}{d['level']:<16}{d['dataspace']:<10}{d['field']:<10} model {d['model']}  ref {d['ref']}")
    exact = sum(1 for r in rows if r.get("verdict") == "exact")
    legacy = sum(1 for r in rows if "pre2025" in r and not r["pre2025"]["diffs"])
    print(f"\n{len(rows)} dense v4 cases: {exact} exact in every count with current Timeloop's rule, "
          f"{legacy} with the pre-2025 stride rule; cycles exact in {sum(1 for r in rows if r.get('cycles_exact'))}")
    templates = {}
    for r in index:
        case = r["case"]
        if (root / case / "inputs" / "top.yaml.jinja2").is_file() and r["sparse"] != "True":
            templates[case] = from_template(root / case, summaries[case])
    print(f"\n{'from inputs/top.yaml.jinja2 (dense)':<44}{'cycles':>8}{'energy err':>11}")
    for case, t in templates.items():
        if not t["rendered"]:
            print(f"{case:<44}  not readable: {t['error']}")
            continue
        print(f"{case:<44}{'exact' if t['cycles_exact'] else str(t['cycles']):>8}{t['energy_rel_err']:>11.1e}")
    same = sum(1 for t in templates.values() if t.get("cycles_exact") and t["energy_rel_err"] < 1e-4)
    print(f"{same} of {len(templates)} dense example designs reproduce Timeloop's cycles and energy from their template")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cases": rows, "templates": templates}, indent=1, default=float))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
