"""A student's mistakes on the first design (a user study of a course lab): each said with what to
write instead."""

from pathlib import Path

import pytest

from coexplore.cli.main import main

HERE = Path(__file__).resolve().parents[1] / "examples" / "first_design"
ARCH, PROB, MAP = HERE / "two_level.yaml", HERE / "conv1d.yaml", HERE / "k_outer.yaml"


def _evaluate(capsys, arch=ARCH, prob=PROB, mapping=MAP):
    code = main(["evaluate", str(arch), str(prob), str(mapping)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_dimension_left_out_of_the_instance_is_named_as_the_cause(tmp_path, capsys):
    prob = tmp_path / "p.yaml"
    prob.write_text(PROB.read_text().replace("instance: {K: 4, R: 3, P: 8}", "instance: {K: 4, R: 3}"))
    code, out, err = _evaluate(capsys, prob=prob)        # (Timeloop asserts a bound for each dimension)
    assert code == 2 and "key 'problem.instance': no bound for P" in err and "Traceback" not in err


def test_a_permutation_leaving_out_a_looping_dimension_is_said(tmp_path, capsys):
    m = tmp_path / "m.yaml"
    m.write_text(MAP.read_text().replace("permutation: [P, K, R]}", "permutation: [K, R]}"))
    code, _, err = _evaluate(capsys, mapping=m)
    assert code == 0 and "DRAM's permutation KR leaves out P (factor 8)" in err
    code, _, err = _evaluate(capsys)                        # the full order: nothing said
    assert code == 0 and "leaves out" not in err


def test_a_spatial_directive_above_a_container_names_the_container(tmp_path, capsys):
    arch = tmp_path / "a.yaml"
    arch.write_text(ARCH.read_text().replace("  - !Component\n    name: MAC",
                                             "  - !Container\n    name: PE\n    spatial: {meshX: 4}\n"
                                             "  - !Component\n    name: MAC"))
    m = tmp_path / "m.yaml"
    m.write_text("mapping:\n- {target: Buffer, type: spatial, factors: [K=4, R=1, P=1]}\n"
                 "- {target: Buffer, type: temporal, factors: [K=1, R=3, P=8]}\n")
    code, _, err = _evaluate(capsys, arch=arch, mapping=m)
    assert code == 2 and "target: PE" in err
    m.write_text(m.read_text().replace("target: Buffer, type: spatial", "target: PE, type: spatial"))
    code, out, _ = _evaluate(capsys, arch=arch, mapping=m)
    assert code == 0 and "Cycles        : 24" in out              # 96 MACs on 4 PEs


@pytest.mark.parametrize("change, says", [
    (("    name: conv1d\n", "    name: conv1d\n     oops: 1\n"), "indentation"),
    (("depth: 256", "depth: 64KB"), "without units"),
])
def test_yaml_indentation_and_units_are_said(tmp_path, capsys, change, says):
    target = PROB if "conv1d" in change[0] else ARCH
    f = tmp_path / target.name
    f.write_text(target.read_text().replace(*change))
    code, _, err = _evaluate(capsys, **({"prob": f} if target is PROB else {"arch": f}))
    assert code == 2 and says in err and "Traceback" not in err


def test_arch_and_problem_swapped_and_an_empty_mapping_are_said(tmp_path, capsys):
    code, _, err = _evaluate(capsys, arch=PROB, prob=ARCH)
    assert code == 2 and "swapped" in err
    m = tmp_path / "m.yaml"
    m.write_text("# nothing yet\n")
    code, _, err = _evaluate(capsys, mapping=m)
    assert code == 2 and "is empty" in err


def test_an_architecture_or_system_given_as_problem_is_named(capsys):
    """User study: `map simba arch/simba.yaml` said only "key 'problem': missing key"."""
    code, _, err = _evaluate(capsys, prob=ARCH)
    assert code == 2 and f"{ARCH}: key 'PROBLEM': this file holds an architecture (architecture:), not a problem" in err
    root = Path(__file__).resolve().parents[1]
    assert main(["map", "simba", str(root / "arch" / "simba.yaml"), "--budget", "10"]) == 2
    assert "this file holds a system (system:), not a problem" in capsys.readouterr().err


@pytest.mark.parametrize("attrs, missing", [("{}", ["'multiplier_width'", "'adder_width'"]),
                                            ("{multiplier_width: 8}", ["'adder_width'"])])
def test_a_mac_missing_attributes_names_them_all_under_its_own_name(tmp_path, capsys, attrs, missing):
    arch = tmp_path / "a.yaml"
    arch.write_text(ARCH.read_text().replace("attributes: {datawidth: 8, multiplier_width: 8, adder_width: 16}",
                                             f"attributes: {attrs}"))
    code, out, err = _evaluate(capsys, arch=arch)
    assert code == 2 and "key 'MAC.attributes" in err and "[1..1]" not in err
    assert all(m in err for m in missing) and ("'multiplier_width'" in err) == (len(missing) == 2)


def test_a_budget_past_the_machines_memory_is_warned_and_a_small_space_still_stops(tmp_path, capsys):
    """User study: `--budget 100000000000000` started without a word; searchers remember every mapping
    they evaluate, so such a budget runs until memory runs out (unless the layer has fewer mappings)."""
    import os
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    args = ["map", str(ARCH), str(PROB), "--searcher", "exhaustive", "--no-progress", "--no-cache"]
    assert main([*args, "--budget", str(total), "--out", str(tmp_path / "a")]) == 0      # 500 bytes x total
    assert "a search remembers every mapping it evaluates" in capsys.readouterr().err
    assert main([*args, "--budget", "1000", "--out", str(tmp_path / "b")]) == 0
    assert "remembers every mapping" not in capsys.readouterr().err
