"""Acceptance check of the core generators: generated architectures give the corpus' results.

For every corpus design a template reproduces (simba_like, eyeriss_like and the four parametric
variants), generate the core (`coexplore arch generate` with `--ert-from` the corpus' ERT/ART),
then evaluate every public case's mapping with the built-in model three times: on the corpus'
processed.yaml, on the generated processed.yaml and on the generated v0.4 arch.yaml. Prints a
table (cases, identical results, validity agreement with Timeloop, max relative energy/cycle
error vs Timeloop) and writes results/bench/arch_corpus_equivalence.json.

    python bench/arch_corpus_equivalence.py [--corpus ../shared/timeloop-corpus]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coexplore.arch.core import build_core  # noqa: E402
from coexplore.arch.tables import find_given_tables  # noqa: E402
from coexplore.model.evaluate import evaluate_batch, level_costs, result_record  # noqa: E402
from coexplore.spec.architecture import load_architecture  # noqa: E402
from coexplore.spec.ert import load_ert  # noqa: E402
from coexplore.spec.mapping import load_mapping, to_arrays  # noqa: E402
from coexplore.spec.problem import load_problem  # noqa: E402
from coexplore.arch.params import CORPUS_DESIGNS  # noqa: E402
from shared_data import HelpFormatter, require  # noqa: E402

DESIGNS = CORPUS_DESIGNS
SHARED = "project reference data in ../shared; not in a clone"



def evaluate_cases(arch_path: Path, ert_path: Path, cases: list[Path], layers: Path) -> list[dict]:
    arch = load_architecture(arch_path)
    costs = level_costs(arch, load_ert(ert_path))
    out = []
    by_layer: dict[str, list[Path]] = {}
    for case in cases:
        by_layer.setdefault(case.parent.name, []).append(case)
    for layer, group in sorted(by_layer.items()):
        problem = load_problem(layers / f"{layer}.yaml")
        mappings = [load_mapping(c / "mapping.yaml", arch, problem) for c in group]
        res = evaluate_batch(arch, problem, costs, to_arrays(mappings, arch, problem))
        for b, case in enumerate(group):
            rec = result_record(arch, problem, res, b)
            rec["case"] = str(case)
            out.append(rec)
    return out


def rel(a, b) -> float:
    return abs(a - b) / max(abs(b), 1e-30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "timeloop-corpus"),
                    help=f"full Timeloop reference corpus (arches/, layers/, public/); {SHARED}")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "arch_corpus_equivalence.json"),
                    help="JSON file for the per-design results")
    args = ap.parse_args(argv)
    corpus = require(args.corpus, "--corpus", "the full Timeloop reference corpus")
    rows = []
    print(f"{'design':<32} {'cases':>5} {'identical':>9} {'v0.4 same':>9} {'valid=TL':>8} "
          f"{'max dE':>9} {'max dcyc':>9} {'s':>5}")
    for ref, template, params in DESIGNS:
        t0 = time.perf_counter()
        cases = sorted(p for p in (corpus / "public" / ref).glob("*/*") if (p / "mapping.yaml").is_file())
        with tempfile.TemporaryDirectory() as tmp:
            core = build_core(template, params, name=template)
            core_dir = Path(tmp) / template
            core.write(core_dir)
            ert, art = find_given_tables(core, corpus / "arches" / ref)     # as --ert-from does
            shutil.copyfile(ert, core_dir / "ERT.yaml")
            shutil.copyfile(art, core_dir / "ART.yaml")
            ref_res = evaluate_cases(corpus / "arches" / ref / "processed.yaml",
                                     corpus / "arches" / ref / "ERT.yaml", cases, corpus / "layers")
            gen_res = evaluate_cases(core_dir / "processed.yaml", core_dir / "ERT.yaml", cases,
                                     corpus / "layers")
            v04_res = evaluate_cases(core_dir / "arch.yaml", core_dir / "ERT.yaml", cases,
                                     corpus / "layers")
        strip = lambda r: {k: v for k, v in r.items() if k != "case"}
        identical = sum(strip(a) == strip(b) for a, b in zip(gen_res, ref_res))
        v04_same = sum(strip(a) == strip(b) for a, b in zip(v04_res, ref_res))
        agree, de, dc = 0, 0.0, 0.0
        for rec, case in zip(gen_res, cases):
            exp = json.loads((case / "expected.json").read_text())
            agree += rec["valid"] == exp["valid"]
            if rec["valid"] and exp["valid"]:
                de = max(de, rel(rec["energy_pJ"], exp["energy_pJ"]))
                dc = max(dc, rel(rec["cycles"], exp["cycles"]))
        secs = time.perf_counter() - t0
        rows.append({"design": ref, "template": template, "params": params, "cases": len(cases),
                     "identical_to_corpus_arch": identical, "v04_identical": v04_same,
                     "validity_agrees_with_timeloop": agree, "max_rel_energy_err_vs_timeloop": de,
                     "max_rel_cycles_err_vs_timeloop": dc, "seconds": secs})
        print(f"{ref:<32} {len(cases):>5} {identical:>9} {v04_same:>9} {agree:>8} "
              f"{de:>9.2e} {dc:>9.2e} {secs:>5.1f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out}")
    return 0 if all(r["identical_to_corpus_arch"] == r["cases"] == r["v04_identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
