"""Mapping files read as timeloop-model reads them, where it is well defined, and refused where its
numbers would not mean anything (a dataspace bypassed at the backing store)."""

import json
import subprocess
import sys

import pytest

from coexplore.errors import CoexploreError
from coexplore.spec.architecture import load_architecture
from coexplore.spec.mapping import parse_mapping
from coexplore.spec.problem import load_problem
from coexplore.spec.yamlio import load_yaml

from conftest import CORPUS

SIMBA = CORPUS / "arches" / "simba_like"
CASE = CORPUS / "public" / "simba_like" / "alexnet_conv3" / "003"
LAYER = CORPUS / "layers" / "alexnet_conv3.yaml"


def _directives():
    return load_yaml(CASE / "mapping.yaml")["mapping"]


def _parse(directives, arch="processed.yaml"):
    return parse_mapping({"mapping": directives}, load_architecture(SIMBA / arch), load_problem(LAYER), "m.yaml")


@pytest.mark.parametrize("arch", ["processed.yaml", "arch.yaml"])
def test_a_dataspace_bypassed_at_the_backing_store_is_refused(arch):
    """timeloop-model's counts wrap around for it (NVlabs/timeloop#218); the model here would have
    the weights come from nowhere."""
    d = _directives()
    i = next(i for i, e in enumerate(d) if e["target"] == "DRAM" and e["type"] == "datatype")
    d[i] = {"target": "DRAM", "type": "datatype", "keep": ["Inputs", "Outputs"], "bypass": ["Weights"]}
    with pytest.raises(CoexploreError, match="Weights bypassed at DRAM, the backing store, but kept at") as e:
        _parse(d, arch)
    assert e.value.key == f"mapping[{i}].bypass" and e.value.file == "m.yaml"


def test_a_container_s_name_targets_its_level_only_in_a_v04_architecture():
    """timeloopfe names a v0.4 container's fan-out level inter_<name>_spatial and accepts the
    container's name; a flattened architecture has no level PE, and Timeloop stops on it."""
    d = [dict(e, target="PE") if e["target"] == "inter_PE_spatial" else e for e in _directives()]
    assert _parse(d, "arch.yaml").levels["inter_PE_spatial"].spatial == {"C": 2, "M": 2, "R": 1, "S": 1, "N": 1,
                                                                         "P": 1, "Q": 1}
    with pytest.raises(CoexploreError, match="unknown level 'PE'"):
        _parse(d, "processed.yaml")


def test_a_residual_equal_to_its_factor_is_a_perfect_split():
    d = [dict(e, factors=e["factors"].replace("Q13", "Q13,13")) if e["target"] == "PEWeightRegs"
         and e["type"] == "temporal" else e for e in _directives()]
    assert _parse(d).levels["PEWeightRegs"].temporal["Q"] == 13
    d = [dict(e, factors=e["factors"].replace("Q13", "Q13,12")) if e["target"] == "PEWeightRegs"
         and e["type"] == "temporal" else e for e in _directives()]
    with pytest.raises(CoexploreError, match="residual factor"):
        _parse(d)


def test_the_case_still_gives_timeloop_s_numbers(tmp_path):
    r = subprocess.run([sys.executable, "-m", "coexplore", "evaluate", str(SIMBA / "processed.yaml"), str(LAYER),
                        str(CASE / "mapping.yaml"), "--ert", str(SIMBA / "ERT.yaml"), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got, want = json.loads(r.stdout), json.loads((CASE / "expected.json").read_text())
    assert got["cycles"] == want["cycles"]
    assert got["energy_pJ"] == pytest.approx(want["energy_pJ"], rel=1e-12)


def test_a_mapping_key_holding_one_directive_not_a_list_says_so():
    with pytest.raises(CoexploreError, match="got a mapping of target, type, not a list") as e:
        parse_mapping({"mapping": {"target": "DRAM", "type": "temporal"}}, load_architecture(SIMBA / "processed.yaml"),
                      load_problem(LAYER), "m.yaml")
    assert e.value.key == "mapping"


def test_a_key_its_directive_type_does_not_read_is_warned_of():
    d = [dict(e, factors="C2") if e["type"] == "datatype" and e["target"] == "DRAM" else e for e in _directives()]
    m = _parse(d)
    assert any("key 'factors' is not read by a datatype directive" in w for w in m.warnings)
    assert not any("is not read" in w for w in _parse(_directives()).warnings)


def test_an_unknown_letter_in_a_permutation_is_named():
    d = [dict(e, permutation="CQSPRNX") if e["target"] == "DRAM" and e["type"] == "temporal" else e
         for e in _directives()]
    with pytest.raises(CoexploreError, match="unknown dimension 'X'"):
        _parse(d)


@pytest.mark.parametrize("kind", [["temporal"], {"a": 1}, 3])
def test_a_type_that_is_no_name_is_refused_naming_the_key(kind):
    d = _directives()
    d[0] = dict(d[0], type=kind)
    with pytest.raises(CoexploreError) as e:
        _parse(d)
    assert e.value.key == "mapping[0].type"


def test_a_level_without_a_temporal_directive_gets_factors_of_1_with_a_note():
    d = [e for e in _directives() if not (e["target"] == "PEAccuBuffer" and e["type"] == "temporal")]
    m = _parse(d)
    assert m.levels["PEAccuBuffer"].temporal == {}
    assert any("no temporal directive for level(s) PEAccuBuffer" in w for w in m.warnings)
    assert not any("no temporal directive" in w for w in _parse(_directives()).warnings)


def test_yaml_scalars_as_timeloops_reader_takes_them():
    """User study: a quoted `split: '2'` was refused (yaml-cpp's as<unsigned> reads it), a single
    `bypass: Weights` accepted (Timeloop's lookupArrayValue asserts a list), `type: skew` called
    unknown (Timeloop's ParseUserSkew reads it; not modelled here)."""
    d = _directives()
    i = next(i for i, e in enumerate(d) if e["type"] == "spatial")
    quoted = [dict(e) for e in d]
    quoted[i]["split"] = str(d[i].get("split", 0))
    assert _parse(quoted).levels[d[i]["target"]].split == int(quoted[i]["split"])
    j = next(j for j, e in enumerate(d) if e["type"] == "datatype" and e["target"] != "DRAM")
    single = [dict(e) for e in d]
    single[j] = {"target": d[j]["target"], "type": "datatype", "bypass": "Weights"}
    with pytest.raises(CoexploreError) as e:
        _parse(single)
    assert e.value.key == f"mapping[{j}].bypass" and "bypass: [Weights]" in e.value.expected
    with pytest.raises(CoexploreError, match="skew directive .* not modelled"):
        _parse([*d, {"target": "DRAM", "type": "skew"}])


def test_a_second_directive_for_a_level_replaces_the_first_whole_with_a_note():
    """Timeloop's mapping parser: a later temporal/spatial directive of a level replaces the earlier
    one whole (factors, permutation; a spatial one's split, all-X when not given); keep and bypass of
    one dataspace in one directive end bypassed (keep is applied first). Both read silently before;
    now noted."""
    d = _directives()
    first = next(e for e in d if e["target"] == "DRAM" and e["type"] == "temporal")
    m0 = _parse(d)
    assert any(v > 1 for v in m0.levels["DRAM"].temporal.values())
    m = _parse([*d, {"target": "DRAM", "type": "temporal", "permutation": first["permutation"]}])
    assert m.levels["DRAM"].temporal == {} and m.levels["DRAM"].permutation == m0.levels["DRAM"].permutation
    assert any(f"mapping[{len(d)}]: a second temporal directive for DRAM" in w and "replaces the first whole" in w
               for w in m.warnings)
    assert not any("second" in w for w in m0.warnings)
    m = _parse([*d, {"target": "GlobalBuffer", "type": "datatype", "keep": ["Weights"], "bypass": ["Weights"]}])
    assert "Weights" in (m.levels["GlobalBuffer"].bypass or []) and "Weights" not in (m.levels["GlobalBuffer"].keep or [])
    assert any("Weights both kept and bypassed at GlobalBuffer" in w for w in m.warnings)
