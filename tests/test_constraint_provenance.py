"""Errors about a constraints entry name the file and key that hold it, also when several files
constrain one level: extra constraints on a v0.4 architecture's own node constraints, or several
--constraints files on a flattened architecture."""

import subprocess
import sys
from pathlib import Path

import pytest

from coexplore.errors import CoexploreError
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.spec.constraints import load_constraints

from conftest import CORPUS

SIMBA = CORPUS / "arches" / "simba_like"
LAYER = CORPUS / "layers" / "resnet50_res3a_2b.yaml"
VALID = "  - {target: GlobalBuffer, type: temporal, factors: M=2}\n"
BAD = {   # entry -> (what the error says, the key's last part)
    "{target: GlobalBuffer, type: temporal, factors: Z=2}": ("unknown dimension(s) Z", "factors"),
    "{target: inter_PE_spatial, type: spatial, factors: Z=2}": ("unknown dimension(s) Z", "factors"),
    "{target: GlobalBuffer, type: bypass, keep: [Foo]}": ("unknown dataspace(s) Foo", "keep"),
    "{target: DRAM, type: bypass, bypass: [Weights]}": ("Weights bypassed at DRAM", "bypass"),
}


def _file(path: Path, *entries: str) -> Path:
    path.write_text("mapspace_constraints:\n  targets:\n" + "".join(entries))
    return path


def _refusal(arch: Path, files: list[Path]) -> CoexploreError:
    ctx = load_context(arch, LAYER, SIMBA / "ERT.yaml")
    with pytest.raises(CoexploreError) as e:
        MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, files, ctx.problem))
    return e.value


@pytest.mark.parametrize("entry", list(BAD))
def test_an_extra_file_on_a_v04_architecture_is_named_not_the_architecture(tmp_path, entry):
    what, part = BAD[entry]
    bad = _file(tmp_path / "extra.yaml", "  - " + entry + "\n")
    err = _refusal(SIMBA / "arch.yaml", [bad])
    assert what in err.message
    assert err.file == str(bad) and err.key.endswith(f"[0].{part}")


@pytest.mark.parametrize("entry", list(BAD))
def test_the_second_of_two_files_is_named_when_it_holds_the_mistake(tmp_path, entry):
    what, part = BAD[entry]
    good = _file(tmp_path / "good.yaml", VALID)
    bad = _file(tmp_path / "bad.yaml", "  - " + entry + "\n")
    err = _refusal(SIMBA / "processed.yaml", [SIMBA / "constraints.yaml", good, bad])
    assert what in err.message
    assert err.file == str(bad) and err.key.endswith(f"[0].{part}")


def test_the_cli_names_the_file_without_a_traceback(tmp_path):
    bad = _file(tmp_path / "extra.yaml", "  - {target: GlobalBuffer, type: temporal, factors: Z=2}\n")
    r = subprocess.run([sys.executable, "-m", "coexplore", "map", str(SIMBA / "arch.yaml"), str(LAYER),
                        "--constraints", str(bad), "--budget", "50", "--no-cache", "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{bad}: key 'mapspace_constraints.targets[0].factors'" in r.stderr


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "mapspace_constraints:\n",
                                  "architecture_constraints:\nmapspace_constraints:\n"])
def test_a_file_that_says_nothing_adds_no_constraints_with_a_warning(tmp_path, text):
    """timeloop-mapper reads an empty constraints file, or empty blocks, as no constraints."""
    from coexplore.errors import CoexploreWarning
    empty = tmp_path / "empty.yaml"
    empty.write_text(text)
    ctx = load_context(SIMBA / "processed.yaml", LAYER, SIMBA / "ERT.yaml")
    base = load_constraints(ctx.arch, [SIMBA / "constraints.yaml"], ctx.problem)
    with pytest.warns(CoexploreWarning, match="no constraints in it"):
        both = load_constraints(ctx.arch, [SIMBA / "constraints.yaml", empty], ctx.problem)
    assert both == base


@pytest.mark.parametrize("text, got", [("- {target: DRAM, type: temporal, factors: M=2}\n- {target: DRAM}\n",
                                        "a list of 2 at the top"),
                                       ("mapping:\n- {target: DRAM, type: temporal}\n", "keys mapping")])
def test_a_file_of_something_else_is_refused_saying_what_it_holds(tmp_path, text, got):
    f = tmp_path / "wrong.yaml"
    f.write_text(text)
    err = _refusal(SIMBA / "processed.yaml", [f])
    assert f"no constraint targets: got {got}" in err.message and err.file == str(f)


def test_a_dimension_twice_in_a_permutation_is_warned_of_and_read_at_its_first_place(tmp_path):
    from coexplore.errors import CoexploreWarning
    f = _file(tmp_path / "twice.yaml", "  - {target: GlobalBuffer, type: temporal, permutation: MMC}\n")
    ctx = load_context(SIMBA / "processed.yaml", LAYER, SIMBA / "ERT.yaml")
    with pytest.warns(CoexploreWarning, match=r"targets\[0\].permutation: M listed twice .* \(MMC\)"):
        ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, [f], ctx.problem))
    import numpy as np
    m = ms.decode(ms.sample(np.random.default_rng(0), 50))
    glb = [lv.name for lv in reversed(ctx.arch.levels)].index("GlobalBuffer")
    dims = ctx.problem.dims
    assert all(list(m.perm[b, glb][:2]) == [dims.index("M"), dims.index("C")] for b in range(len(m)))


def test_a_spatial_constraint_where_nothing_fans_out_is_refused_as_timeloop_refuses_it(tmp_path):
    """User study: `{target: DRAM, type: spatial, split: 1}` was accepted silently (and the run served
    from the cache as the unconstrained one); Timeloop's FindTargetTilingLevel stops on it."""
    bad = _file(tmp_path / "extra.yaml", "  - {target: DRAM, type: spatial, split: 1}\n")
    err = _refusal(SIMBA / "processed.yaml", [SIMBA / "constraints.yaml", bad])
    assert "cannot find spatial tiling level associated with storage level DRAM" in err.message
    assert err.file == str(bad) and err.key.endswith("[0].target")


@pytest.mark.parametrize("entries", [
    ["{target: GLB, type: spatial, factors: P=4}", "{target: GLB, type: spatial, split: 0}"],   # P=4 on Y: 1 high
    ["{target: GLB, type: spatial, factors: K=1 R=1 P=1}", "{target: RF, type: utilization, min: 1.0}"]])
def test_constraints_no_mapping_meets_are_refused_before_the_search_naming_the_file(tmp_path, entries):
    """User study: these left an empty mapspace; exhaustive then blamed itself ("proposed no
    candidates"), random ran its whole budget for "no valid mapping"."""
    from coexplore.search.layer import map_layer
    small = Path(__file__).parent / "data" / "mapspace_small"
    ctx = load_context(small / "arch.yaml", small / "conv1d_oc.yaml")
    cons_file = tmp_path / "c.yaml"
    cons_file.write_text("mapspace_constraints:\n" + "".join(f"- {e}\n" for e in entries))
    cons = load_constraints(ctx.arch, [cons_file], ctx.problem)
    for searcher in ("exhaustive", "random"):
        with pytest.raises(CoexploreError) as err:
            map_layer(ctx, cons, searcher, 300, seed=0)
        assert "the constraints leave no mapping" in err.value.message and str(cons_file) in str(err.value.file)


def test_a_quoted_split_is_its_number_and_a_missing_min_is_said_missing():
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.constraints import constraints_from_targets
    a = load_architecture(Path(__file__).parent / "data" / "mapspace_small" / "arch.yaml")
    assert constraints_from_targets([{"target": "GLB", "type": "spatial", "split": "1"}], a)["GLB"].split == 1
    with pytest.raises(CoexploreError) as err:
        constraints_from_targets([{"target": "RF", "type": "utilization"}], a)
    assert err.value.message == "missing" and err.value.key == "targets[0].min"
