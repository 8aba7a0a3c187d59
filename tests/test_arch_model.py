"""Generated architectures give the built-in model the same results as the corpus files.

`coexplore arch generate arch/{simba,eyeriss}.yaml --ert-from <corpus tables>` is evaluated on
a few corpus mappings (tests/data/arches/cases: every mapping source, valid and invalid) through
both written forms (processed.yaml and the v0.4 arch.yaml); the results must equal those of the
corpus' own processed.yaml record for record, and validity must agree with Timeloop's.
The full public corpus is checked by bench/arch_corpus_equivalence.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import coexplore.cli.main as cli_main
from coexplore.model.evaluate import evaluate_batch, level_costs, result_record
from coexplore.spec.architecture import load_architecture
from coexplore.spec.ert import load_ert
from coexplore.spec.mapping import load_mapping, to_arrays
from coexplore.spec.problem import load_problem

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "arches"


def _evaluate(arch_file: Path, ert_file: Path, cases: list[Path]) -> list[dict]:
    arch = load_architecture(arch_file)
    costs = level_costs(arch, load_ert(ert_file))
    out = []
    for case in cases:
        problem = load_problem(DATA / "layers" / f"{case.parent.name}.yaml")
        mapping = load_mapping(case / "mapping.yaml", arch, problem)
        res = evaluate_batch(arch, problem, costs, to_arrays([mapping], arch, problem))
        out.append(result_record(arch, problem, res, 0))
    return out


@pytest.mark.parametrize("system,ref", [("simba.yaml", "simba_like"), ("eyeriss.yaml", "eyeriss_like")])
def test_generated_core_evaluates_like_corpus_arch(tmp_path, monkeypatch, system, ref):
    monkeypatch.setattr(cli_main, "COMMANDS", ("arch",))
    assert cli_main.main(["arch", "generate", str(ROOT / "arch" / system), "--out", str(tmp_path),
                          "--ert-from", str(DATA / ref)]) == 0
    core_dir = tmp_path / ref.split("_")[0]
    cases = sorted(p for p in (DATA / "cases" / ref).glob("*/*") if p.is_dir())
    assert len(cases) >= 6
    expected = _evaluate(DATA / ref / "processed.yaml", DATA / ref / "ERT.yaml", cases)
    from_processed = _evaluate(core_dir / "processed.yaml", core_dir / "ERT.yaml", cases)
    from_v04 = _evaluate(core_dir / "arch.yaml", core_dir / "ERT.yaml", cases)
    assert from_processed == expected
    assert from_v04 == expected
    timeloop = [json.loads((c / "expected.json").read_text()) for c in cases]
    assert [r["valid"] for r in from_processed] == [t["valid"] for t in timeloop]
    assert any(not t["valid"] for t in timeloop) and any(t["valid"] for t in timeloop)
