"""`coexplore map`: searchers on a real mapspace, determinism, written mappings, bad arguments."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coexplore.model.inputs import load_context
from coexplore.search import registry
from coexplore.search.layer import map_layer
from coexplore.spec.constraints import load_constraints

from conftest import CORPUS

ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def ctx():
    return load_context(ARCH, LAYER)


@pytest.mark.parametrize("name", ["random", "random_pruned", "linear_pruned", "ga", "sa", "rl", "ppo", "marl",
                                  "marl_noclust"])
def test_every_searcher_finds_valid_mapping_deterministically(ctx, name):
    cons = load_constraints(ctx.arch)
    a = map_layer(ctx, cons, registry.mapper_spec(name), 600, seed=3)
    b = map_layer(ctx, cons, registry.mapper_spec(name), 600, seed=3)
    assert a.best["valid"] and a.samples == 600
    assert a.best == b.best and a.x == b.x
    # history is monotone and ends at the reported best
    vals = [v for _, v in a.history]
    assert all(x >= y for x, y in zip(vals, vals[1:]))
    assert vals[-1] == pytest.approx(a.best["edp_J_cycle"], rel=1e-12)


def test_map_writes_a_mapping_that_evaluate_reproduces(tmp_path):
    out = tmp_path / "out"
    r = cli("map", ARCH, LAYER, "--searcher", "ga", "--budget", "800", "--seed", "1", "--out", out,
            "--json", "--cache", tmp_path / "c.sqlite")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["searcher"] == "ga" and res["samples"] == 800 and res["history"]
    ev = cli("evaluate", ARCH, LAYER, res["mapping_file"], "--json")
    assert ev.returncode == 0, ev.stderr
    got = json.loads(ev.stdout)
    for k in ("energy_pJ", "cycles", "edp_J_cycle"):
        assert got[k] == res["best"][k]
    assert got["levels"] == res["best"]["levels"]
    # the second identical run is served from the cache
    first_yaml = (out / "mapping.yaml").read_text()
    again = json.loads(cli("map", ARCH, LAYER, "--searcher", "ga", "--budget", "800", "--seed", "1", "--out", out,
                           "--json", "--cache", tmp_path / "c.sqlite").stdout)
    assert again["cached"] is True and again["best"] == res["best"]
    # ... and writes the same files, key order included (they diff cleanly)
    assert list(again["best"]) == list(res["best"])
    assert (out / "mapping.yaml").read_text() == first_yaml


@pytest.mark.parametrize("args,msg", [
    (["--searcher", "nosuch"], "unknown searcher 'nosuch'"),
    (["--budget", "0"], "budget"),
    (["--searcher", "missing.yaml"], "missing.yaml"),
])
def test_bad_arguments(tmp_path, args, msg):
    r = cli("map", ARCH, LAYER, *args, "--no-cache", "--out", tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert msg in r.stderr and "Traceback" not in r.stderr


def test_marl_beats_random_on_a_real_layer(ctx):
    """Property: with the same budget, MARL's best is no worse than random search's (median of seeds)."""
    cons = load_constraints(ctx.arch)
    big = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml",
                       CORPUS / "layers" / "resnet50_res3a_2b.yaml")
    cons = load_constraints(big.arch)
    m = [map_layer(big, cons, registry.mapper_spec("marl"), 3000, seed=s).best["edp_J_cycle"] for s in range(3)]
    r = [map_layer(big, cons, registry.mapper_spec("random"), 3000, seed=s).best["edp_J_cycle"] for s in range(3)]
    assert np.median(m) <= np.median(r)


def test_map_exhaustive_on_a_small_layer_is_the_optimum(tmp_path):
    from coexplore.mapspace.enumerate import canonical_points
    from coexplore.mapspace.space import MapSpace
    from coexplore.search.layer import make_objective
    layer = tmp_path / "small.yaml"
    layer.write_text(LAYER.read_text().replace(
        "instance: {C: 4, M: 8, R: 3, S: 3, N: 2, P: 6, Q: 6,", "instance: {C: 4, M: 8, R: 1, S: 1, N: 1, P: 4, Q: 1,"))
    r = cli("map", ARCH, layer, "--searcher", "exhaustive", "--budget", "10000000", "--out", tmp_path / "o",
            "--json", "--no-cache")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["exhausted"] is True
    c = load_context(ARCH, layer)
    ms = MapSpace(c.arch, c.problem, load_constraints(c.arch))
    f = make_objective(c, ms, "edp")
    losses = np.concatenate([f(X) for X in canonical_points(ms)])
    assert res["samples"] == len(losses)
    assert res["best"]["edp_J_cycle"] == pytest.approx(float(losses.min()), rel=1e-12)
    # and no random mapping beats it
    assert float(np.min(f(ms.sample(np.random.default_rng(0), 5000)))) >= res["best"]["edp_J_cycle"] * (1 - 1e-12)


ROOT = Path(__file__).resolve().parents[1]


def test_map_and_evaluate_take_a_system_core_and_a_workload_layer(tmp_path):
    """ARCH = coexplore system YAML (--core), PROBLEM = workload (--layer): same numbers as the
    generated Timeloop files (`coexplore arch generate`) and the layer written as a problem file."""
    from coexplore.spec.workload import load_workload, write_problem

    system = ROOT / "arch" / "hetero_2simba_2eyeriss.yaml"
    common = ["--searcher", "random", "--budget", "400", "--seed", "5", "--json", "--no-cache"]
    r = cli("map", system, "dlrm_mlp", "--core", "eyeriss", "--layer", "bottom_fc1", "--out", tmp_path / "a",
            *common)
    assert r.returncode == 0, r.stderr
    via_system = json.loads(r.stdout)
    gen = tmp_path / "gen"
    assert cli("arch", "generate", system, "--out", gen).returncode == 0
    layer = write_problem(load_workload(ROOT / "problems" / "dlrm_mlp.yaml").layer("bottom_fc1"),
                          tmp_path / "bottom_fc1.yaml")
    r = cli("map", gen / "eyeriss" / "processed.yaml", layer, "--out", tmp_path / "b", *common)
    assert r.returncode == 0, r.stderr
    via_files = json.loads(r.stdout)
    assert via_system["best"]["edp_J_cycle"] == via_files["best"]["edp_J_cycle"]
    assert via_system["best"]["levels"] == via_files["best"]["levels"]
    ev = cli("evaluate", system, ROOT / "problems" / "dlrm_mlp.yaml", via_system["mapping_file"],
             "--core", "eyeriss", "--layer", "bottom_fc1", "--json")
    assert ev.returncode == 0, ev.stderr
    got = json.loads(ev.stdout)
    assert got["layer"] == "bottom_fc1" and got["arch"] == "eyeriss"
    for k in ("energy_pJ", "cycles", "edp_J_cycle", "levels"):
        assert got[k] == via_system["best"][k]


@pytest.mark.parametrize("args, msg", [
    (["arch/hetero_2simba_2eyeriss.yaml", "dlrm_mlp", "--layer", "top_fc5"], "--core NAME, one of: simba, eyeriss"),
    (["arch/simba.yaml", "dlrm_mlp", "--core", "tpu", "--layer", "top_fc5"], "no core design 'tpu'"),
    (["arch/simba.yaml", "dlrm_mlp"], "--layer NAME, one of: bottom_fc1"),
    (["arch/simba.yaml", "problems/dlrm_mlp.yaml", "--layer", "fc9"], "no layer 'fc9'"),
    (["arch/simba.yaml", "nosuchnet", "--layer", "fc9"], "bundled workload"),
    ([str(ARCH), "dlrm_mlp", "--core", "simba", "--layer", "top_fc5"], "--core picks a core design"),
    ([str(ARCH), str(LAYER), "--layer", "x"], "--layer picks a layer"),
])
def test_bad_core_or_layer(args, msg):
    args = [str(ROOT / a) if a.startswith(("arch/", "problems/")) else a for a in args]
    r = cli("map", *args, "--budget", "10")
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_system_route_equals_generated_files_at_any_clock(tmp_path):
    """The in-memory core of a system YAML is priced like `arch generate`'s files, leakage (which
    depends on the cycle time) included: at 2 GHz both routes give the same numbers."""
    from coexplore.spec.workload import load_workload, write_problem
    text = (ROOT / "arch" / "simba.yaml").read_text()
    assert "clock_GHz: 1.0" in text
    system = tmp_path / "sys2.yaml"
    system.write_text(text.replace("clock_GHz: 1.0", "clock_GHz: 2.0").replace("../problems", str(ROOT / "problems"))
                      .replace("../mappers", str(ROOT / "mappers")))
    r = cli("map", system, "alexnet", "--layer", "fc8", "--budget", "300", "--no-cache", "--json",
            "--out", tmp_path / "m")
    assert r.returncode == 0, r.stderr
    mapped = json.loads(r.stdout)
    assert cli("arch", "generate", system, "--out", tmp_path / "g").returncode == 0
    layer = write_problem(load_workload(ROOT / "problems" / "alexnet.yaml").layer("fc8"), tmp_path / "fc8.yaml")
    ev = cli("evaluate", tmp_path / "g" / "simba" / "processed.yaml", layer, mapped["mapping_file"], "--json")
    assert ev.returncode == 0, ev.stderr
    got = json.loads(ev.stdout)
    assert got["energy_pJ"] == mapped["best"]["energy_pJ"] and got["levels"] == mapped["best"]["levels"]


def test_default_output_folder_keeps_other_runs(tmp_path, monkeypatch, capsys):
    """A run with other settings gets a numbered folder; the same run reuses its own."""
    from coexplore.cli.main import main
    monkeypatch.chdir(tmp_path)
    dirs = []
    for budget, seed in (("50", "0"), ("60", "0"), ("50", "0"), ("50", "1")):
        assert main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", budget, "--seed", seed,
                     "--no-cache", "--no-progress", "--json"]) == 0
        dirs.append(Path(json.loads(capsys.readouterr().out)["mapping_file"]).parent)
    assert dirs[0] == dirs[2] != dirs[1] and dirs[1].name == dirs[0].name + "-2"
    # the folder says which searcher and seed made it
    assert dirs[0].name.endswith("-random-seed0") and dirs[3].name.endswith("-random-seed1")
    runs = [json.loads((d / "result.json").read_text())["run"] for d in dirs[:2]]
    assert [r["budget"] for r in runs] == [50, 60] and runs[0]["arch"] == str(ARCH.resolve())


def test_runs_started_together_never_share_a_default_folder(tmp_path):
    """Three runs with different seeds started at once: three folders, each with its own result."""
    procs = [subprocess.Popen([sys.executable, "-m", "coexplore.cli.main", "map", str(ARCH), str(LAYER),
                               "--budget", "200", "--seed", str(s), "--no-cache", "--no-progress", "--json"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for s in (1, 2, 3)]
    outs = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    dirs = {Path(o["mapping_file"]).parent for o in outs}
    assert len(dirs) == 3
    for o in outs:
        saved = json.loads((tmp_path / Path(o["mapping_file"]).parent / "result.json").read_text())
        assert saved["seed"] == o["seed"] and saved["best"] == o["best"]


def test_an_edited_input_is_another_run(tmp_path, monkeypatch, capsys):
    """The run record holds each input file's digest: after an edit the default folder of the
    earlier result is kept and the new result goes to a numbered one."""
    from coexplore.cli.main import main
    monkeypatch.chdir(tmp_path)
    arch = tmp_path / "d" / "processed.yaml"
    arch.parent.mkdir()
    arch.write_text(ARCH.read_text())
    (arch.parent / "ERT.yaml").write_text((ARCH.parent / "ERT.yaml").read_text())
    dirs = []
    for edit in (False, True):
        if edit:
            arch.write_text(arch.read_text() + "\n# edited\n")
        assert main(["map", str(arch), str(LAYER), "--searcher", "random", "--budget", "30", "--no-cache",
                     "--no-progress", "--json"]) == 0
        dirs.append(Path(json.loads(capsys.readouterr().out)["mapping_file"]).parent)
    assert dirs[1] == dirs[0].with_name(dirs[0].name + "-2")
    digests = [json.loads((d / "result.json").read_text())["run"]["inputs_sha256"][str(arch)] for d in dirs]
    assert digests[0] != digests[1]


def test_explicit_out_is_replaced_with_a_note(tmp_path):
    out = tmp_path / "o"
    for seed, noted in (("0", False), ("0", False), ("1", True)):
        r = cli("map", ARCH, LAYER, "--searcher", "random", "--budget", "30", "--seed", seed, "--no-cache",
                "--no-progress", "--out", out)
        assert r.returncode == 0, r.stderr
        assert ("replaces it once there is one" in r.stderr) == noted
    assert json.loads((out / "result.json").read_text())["seed"] == 1


def test_no_valid_mapping_is_a_failed_run_with_its_reasons(tmp_path):
    """Every sample invalid: exit 1 (not bad input), result.json records it with the commonest
    Timeloop check that failed."""
    small = tmp_path / "processed.yaml"
    # the global buffer holds one word, where the constraints make it keep an input and an output tile
    small.write_text(ARCH.read_text().replace("depth: 16384\n        width: 64", "depth: 1\n        width: 8"))
    (tmp_path / "ERT.yaml").write_text((ARCH.parent / "ERT.yaml").read_text())
    assert small.read_text() != ARCH.read_text()
    keep = tmp_path / "keep.yaml"
    keep.write_text("constraints:\n  targets:\n  - {target: shared_glb, type: bypass, keep: [Inputs, Outputs]}\n")
    r = cli("map", small, CORPUS / "layers" / "alexnet_conv1.yaml", "--constraints", keep, "--searcher", "random",
            "--budget", "200", "--no-cache", "--no-progress", "--out", tmp_path / "o", "--json")
    assert r.returncode == 1, r.stderr
    got = json.loads(r.stdout)
    assert got["best"] is None and got["samples"] == 200 == got["invalid_samples"] and "Traceback" not in r.stderr
    assert got["invalid_reasons"] and all(n > 0 for _, n in got["invalid_reasons"])
    assert json.loads((tmp_path / "o" / "result.json").read_text())["error"] == got["error"]


def test_a_timeloop_mapper_file_is_translated(tmp_path):
    """timeloop-mapper's own mapper.yaml (exercise 06 style): algorithm -> searcher,
    [delay, energy] -> latency, max_permutations_per_if_visit kept, the rest named as unused."""
    from coexplore.cli.map import resolve_spec
    f = tmp_path / "mapper.yaml"
    f.write_text("mapper:\n  optimization-metrics: [delay, energy]\n  num-threads: 8\n  timeout: 15000\n"
                 "  victory-condition: 500\n  algorithm: linear-pruned\n  max-permutations-per-if-visit: 4\n")
    spec = resolve_spec(str(f), None, None)
    assert (spec.searcher, spec.objective) == ("linear_pruned", "latency")
    # Timeloop's linear-pruned walks every loop order: the per-IF cap is random-pruned's, said as unused
    assert all(k in spec.notes[0] for k in ("num-threads", "timeout", "victory-condition"))    # as written
    assert "max-permutations-per-if-visit is not used: algorithm linear_pruned does not read it" in spec.notes[1]
    assert len(spec.notes) == 2                                   # no misspelling among them
    f.write_text(f.read_text().replace("linear-pruned", "random-pruned"))
    assert resolve_spec(str(f), None, None).config.max_permutations_per_if_visit == 4
    f.write_text("mapper:\n  algorthm: linear-pruned\n  optimization-metrics: [delay, energy]\n  timout: 10\n")
    notes = resolve_spec(str(f), None, None).notes
    assert any("'algorthm' is not a timeloop-mapper setting; did you mean 'algorithm'" in n for n in notes)
    assert any("'timout'" in n and "'timeout'" in n for n in notes)
    assert not any("not used" in n for n in notes)               # (a misspelling is said as one, only)
    for text, objective in (("optimization_metric: [delay, energy]\n  optimization_metrics: []\n", "latency"),
                            ("optimization-metric: energy\n", "energy"), ("optimization_metrics: []\n", "edp")):
        f.write_text("mapper:\n  algorithm: random-pruned\n  " + text)     # timeloopfe dumps both keys
        assert resolve_spec(str(f), None, None).objective == objective, text
    f.write_text("mapper:\n  optimization-metrics: [delay, enrgy]\n")
    with pytest.raises(registry.CoexploreError, match="unknown metric 'enrgy'"):
        resolve_spec(str(f), None, None)
    f.write_text("mapper:\n  algorithm: simulated-annealing\n")
    with pytest.raises(registry.CoexploreError, match="algorithm"):
        resolve_spec(str(f), None, None)
    sys_mapper = Path(__file__).parents[1] / "mappers" / "magma.yaml"
    with pytest.raises(registry.CoexploreError, match="system-level mapper") as e:
        resolve_spec(str(sys_mapper), None, None)
    assert e.value.key == "searcher"
    f.write_text("searcher: sa\nbudget: 200\n")          # user study: the key said was 'searcher'
    with pytest.raises(registry.CoexploreError, match="system-level mapper") as e:
        resolve_spec(str(f), None, None)
    assert (e.value.key, e.value.file) == ("budget", str(f))


def test_map_uses_a_system_yamls_layer_mapper(tmp_path):
    import yaml
    root = Path(__file__).parents[1]
    system = yaml.safe_load((root / "arch" / "simba.yaml").read_text())
    system.setdefault("mappers", {})["layer"] = str(root / "mappers" / "random.yaml")
    f = tmp_path / "sys.yaml"
    f.write_text(yaml.safe_dump(system))
    r = cli("map", f, "resnet50", "--layer", "conv1", "--budget", "30", "--no-cache", "--no-progress",
            "--out", tmp_path / "o", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["searcher"] == "random"


def test_map_layer_takes_objective_and_batch_size(ctx):
    res = map_layer(ctx, load_constraints(ctx.arch), "random", 200, seed=0, objective="latency", batch_size=50)
    assert res.objective == "latency" and res.history[0][0] == 50
    assert res.history[-1][1] == res.best["cycles"]          # reported in whole cycles


def test_map_layer_cache_key_covers_what_changes_the_result(ctx, tmp_path):
    """Through the real pipeline: a repeated run is served from the cache; a different budget,
    energy table or constraint is not; an unseeded run is never stored or served."""
    import dataclasses
    from coexplore.model.cache import ResultCache
    cons = load_constraints(ctx.arch)
    with ResultCache(tmp_path / "c.sqlite") as cache:
        assert not map_layer(ctx, cons, "random", 100, seed=0, cache=cache).cached
        assert map_layer(ctx, cons, "random", 100, seed=0, cache=cache).cached
        assert not map_layer(ctx, cons, "random", 200, seed=0, cache=cache).cached
        ert = tmp_path / "ERT.yaml"
        ert.write_text((ARCH.parent / "ERT.yaml").read_text().replace("energy: 512.0", "energy: 600.0", 1))
        other = load_context(ARCH, LAYER, ert)
        assert other.ert.actions != ctx.ert.actions
        assert not map_layer(other, cons, "random", 100, seed=0, cache=cache).cached
        level = next(lv.name for lv in ctx.arch.levels if not lv.is_dummy)
        tighter = {**cons, level: dataclasses.replace(cons[level], temporal_max={"C": 2})}
        assert not map_layer(ctx, tighter, "random", 100, seed=0, cache=cache).cached
        legacy = dataclasses.replace(ctx, stride_rule="pre2025")      # other counts on strided layers
        assert not map_layer(legacy, cons, "random", 100, seed=0, cache=cache).cached
        assert map_layer(legacy, cons, "random", 100, seed=0, cache=cache).cached
        n = len(cache)
        for _ in range(2):
            assert not map_layer(ctx, cons, "random", 100, seed=None, cache=cache).cached
        assert len(cache) == n


def test_linear_pruned_says_when_it_walked_a_sliver(tmp_path):
    r = cli("map", ARCH, LAYER, "--searcher", "linear_pruned", "--budget", "200", "--no-cache", "--no-progress",
            "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "walks the mapspace" in r.stdout and "200 samples" in r.stdout


def test_a_cached_point_of_another_mapspace_layout_is_not_reused(ctx, tmp_path):
    """The cache stores the encoded best point: its key covers the mapspace's parameter layout, and
    a stored point of another length (a cache written by an older layout) is recomputed, not decoded."""
    from coexplore.model.cache import ResultCache, cache_key
    from coexplore.search import registry
    from coexplore.search.layer import cache_parts
    cons = load_constraints(ctx.arch)
    spec = registry.load_mapper("random")
    import copy
    from coexplore.mapspace.space import MapSpace
    from coexplore.search.space import DiscreteSpace
    ms = MapSpace(ctx.arch, ctx.problem, cons)
    parts = cache_parts(ctx, cons, spec, budget=100, seed=0, ms=ms)
    other = copy.copy(ms)            # the same inputs, another parameter layout (as after a code change)
    other.space = DiscreteSpace(ms.space.cardinalities[::-1].copy(), list(ms.space.names[::-1]))
    assert cache_key(**parts) != cache_key(**cache_parts(ctx, cons, spec, budget=100, seed=0, ms=other))
    with ResultCache(tmp_path / "c.sqlite") as cache:
        first = map_layer(ctx, cons, spec, 100, seed=0, cache=cache)
        key = cache_key(**parts)
        stale = dict(cache.get(key), x=first.x[:-3])
        cache.put(key, stale)
        again = map_layer(ctx, cons, spec, 100, seed=0, cache=cache)
        assert not again.cached and again.x == first.x and again.best == first.best


def test_a_batch_near_the_budget_is_flagged_for_learning_searchers_only(tmp_path):
    for searcher, warned in (("ga", True), ("marl", True), ("random", False)):
        r = cli("map", ARCH, LAYER, "--searcher", searcher, "--budget", "150", "--batch-size", "100",
                "--no-cache", "--no-progress", "--out", tmp_path / searcher)
        assert r.returncode == 0, r.stderr
        assert ("learns between batches" in r.stderr) == warned, (searcher, r.stderr)


def test_a_timeloop_problem_folder_is_named_by_the_problem_only(tmp_path):
    """A problem file whose stem differs from the problem's name (conv1d+oc+ic.prob.yaml): the
    default folder is <arch>-<problem>-<searcher>-seed<S>, the workload prefix is for workloads;
    a v0.4 node list without ERT is mapped too (priced by the built-in estimator)."""
    inp = ROOT / "tests" / "data" / "exercises_v4" / "v4_ex04_conv1d_oc_ic_3levelspatial_kp" / "inputs"
    r = cli("map", next(inp.glob("*.arch.yaml")), inp / "conv1d+oc+ic.prob.yaml", "--classes", "primitives",
            "--searcher", "random", "--budget", "30", "--no-cache", "--no-progress", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    folder = Path(out["mapping_file"]).parent.name
    assert folder.endswith("-random-seed0") and ".prob" not in folder, folder
    assert "no ERT given" in r.stderr and out["best"]["valid"]


def test_map_under_the_pre2025_stride_rule_is_reproduced_by_evaluate(tmp_path):
    """`map --stride-rule pre2025`: the written mapping, evaluated under the same rule, gives the
    reported numbers exactly; the rule is in the run record."""
    arch = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
    layer = CORPUS / "layers" / "resnet50_conv1.yaml"     # strided: the rules count differently
    r = cli("map", arch, layer, "--searcher", "random", "--budget", "200", "--stride-rule", "pre2025",
            "--no-cache", "--no-progress", "--json", "--out", tmp_path / "m")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    got = {}
    for rule in ("pre2025", "current"):
        ev = cli("evaluate", arch, layer, out["mapping_file"], "--stride-rule", rule, "--json")
        got[rule] = json.loads(ev.stdout)
    assert (got["pre2025"]["energy_pJ"], got["pre2025"]["cycles"]) == (out["best"]["energy_pJ"], out["best"]["cycles"])
    assert got["current"]["energy_pJ"] != out["best"]["energy_pJ"]     # the rule mattered here
    run = json.loads((tmp_path / "m" / "result.json").read_text())["run"]
    assert run["stride_rule"] == "pre2025"
    import coexplore
    assert run["coexplore_version"] == coexplore.__version__       # which coexplore made the result


def test_a_workload_layer_is_written_as_a_timeloop_problem_beside_its_mapping(tmp_path, capsys):
    """problem.yaml + mapping.yaml + the core's files from `arch generate`: the Timeloop inputs of
    the result, which `coexplore evaluate` reproduces exactly."""
    from coexplore.cli.main import main
    assert main(["map", "simba", "alexnet", "--layer", "conv2", "--budget", "200", "--no-cache", "--no-progress",
                 "--json", "--out", str(tmp_path / "m")]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert main(["arch", "generate", "simba", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "a" / "simba" / "processed.yaml"), str(tmp_path / "m" / "problem.yaml"),
                 str(tmp_path / "m" / "mapping.yaml"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["cycles"] == best["cycles"] and got["energy_pJ"] == pytest.approx(best["energy_pJ"], rel=1e-12)
    assert got["levels"] == best["levels"]


def test_map_layer_takes_a_custom_objective():
    """A function of the metrics: energy under a cycle cap. With no cap it is the energy objective
    (the same search, the same best); with a cap the best keeps it, at no less energy."""
    ctx = load_context(ARCH, LAYER)
    cons = load_constraints(ctx.arch)
    uncapped = map_layer(ctx, cons, "ga", 1500, seed=2, objective=lambda m: m["energy"])
    energy = map_layer(ctx, cons, "ga", 1500, seed=2, objective="energy")
    assert uncapped.best == energy.best and uncapped.objective == "custom"
    assert [h[1] for h in uncapped.history] == [h[1] for h in energy.history]
    cap = int(energy.best["cycles"] * 0.5)
    capped = map_layer(ctx, cons, "ga", 1500, seed=2,
                       objective=lambda m: np.where(m["cycles"] <= cap, m["energy"], np.inf))
    assert capped.best["cycles"] <= cap and capped.best["energy_pJ"] >= energy.best["energy_pJ"]
    from coexplore.errors import CoexploreError
    with pytest.raises(CoexploreError, match="losses for"):
        map_layer(ctx, cons, "ga", 200, seed=0, objective=lambda m: m["energy"][:3])


def test_a_custom_objective_sees_inf_for_invalid_mappings_and_a_refusal_is_named():
    from coexplore.search.layer import NoValidMapping
    ctx = load_context(ARCH, LAYER)
    cons = load_constraints(ctx.arch)
    seen = []

    def record(m):
        seen.append({k: np.asarray(v, float).copy() for k, v in m.items()})
        return m["energy"]
    map_layer(ctx, cons, "random", 500, seed=0, objective=record)
    invalid = np.concatenate([b["energy"] for b in seen]) == np.inf
    assert invalid.any() and not invalid.all()
    for b in seen:
        for v in b.values():
            assert not np.isnan(v).any() and np.all(np.isinf(v[b["energy"] == np.inf]))
    with pytest.raises(NoValidMapping) as e:
        map_layer(ctx, cons, "random", 200, seed=0, objective=lambda m: np.full(len(m["energy"]), np.inf))
    assert str(e.value).startswith("objective: the objective function gave no finite loss") or \
        "key 'objective': the objective function gave no finite loss" in str(e.value)
    assert "penalty" in str(e.value) and "--budget" not in str(e.value)


def test_a_missing_workload_with_layer_is_said_missing(tmp_path):
    """Not 'this is a single problem': the file is not there at all (user study)."""
    for command in (["map", ARCH, tmp_path / "wl5.yaml", "--layer", "a", "--budget", "10"],
                    ["evaluate", ARCH, tmp_path / "wl5.yaml", tmp_path / "m.yaml", "--layer", "a"]):
        r = cli(*command)
        assert r.returncode == 2 and f"{tmp_path / 'wl5.yaml'}: file not found" in r.stderr, r.stderr
        assert "single problem" not in r.stderr
    r = cli("map", ARCH, LAYER, "--layer", "a", "--budget", "10")     # a problem that exists: --layer refused
    assert r.returncode == 2 and "--layer picks a layer of a workload file; this is a single problem" in r.stderr


def test_an_in_order_walk_cut_short_says_so_when_it_found_nothing(tmp_path):
    """A walk of the mappings in order that the budget stops in an invalid stretch (linear_pruned's
    first mappings of Simba-like overflow its weight registers): the failure says that the walk was
    cut short (a user read it as a broken space)."""
    r = cli("map", CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml",
            "--searcher", "linear_pruned", "--budget", "10", "--no-cache", "--no-progress", "--out", tmp_path / "o")
    assert r.returncode == 1 and "walks the mappings in order and stopped after 10" in r.stderr
    assert "raise --budget" in r.stderr
    data = json.loads((tmp_path / "o" / "result.json").read_text())     # the keys of a run that found one
    assert data["best"] is None and data["cached"] is False and data["wall_s"] > 0
    assert data["mapspace_log10_size"] > 10


def test_a_specs_own_mapper_section_unused_without_searcher_is_said(tmp_path):
    """A timeloopfe spec with a `mapper:` section: `coexplore map SPEC` runs marl, as documented, and
    now says so (a user study took the section for applied)."""
    first = Path(__file__).resolve().parents[1] / "examples" / "first_design"
    spec = tmp_path / "spec.yaml"
    spec.write_text((first / "two_level.yaml").read_text() + "\n" + (first / "conv1d.yaml").read_text()
                    + "\nmapper: {algorithm: random-pruned, optimization-metrics: [energy]}\n")
    r = cli("map", spec, "--budget", "100", "--no-cache", "--no-progress", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "has a timeloop-mapper `mapper:` section, which is used with --searcher" in r.stderr
    assert "this run uses marl (edp)" in r.stderr
    r = cli("map", spec, "--searcher", spec, "--budget", "100", "--no-cache", "--no-progress", "--out", tmp_path / "p")
    assert r.returncode == 0 and "`mapper:` section" not in r.stderr
    assert json.loads((tmp_path / "p" / "result.json").read_text())["searcher"] == "random_pruned"


def test_an_earlier_linear_pruned_mapper_file_still_runs_and_real_log_settings_are_quiet(tmp_path):
    from coexplore.cli.map import resolve_spec
    old = tmp_path / "lp.yaml"            # the bundled mappers/linear_pruned.yaml before it became Timeloop's walk
    old.write_text("searcher: linear_pruned\nobjective: edp\nbatch_size: 100\nconfig:\n  max_permutations_per_if_visit: 16\n")
    spec = resolve_spec(str(old), None, None)
    assert spec.searcher == "linear_pruned" and any("max_permutations_per_if_visit is not used" in n for n in spec.notes)
    tl = tmp_path / "tl.yaml"             # settings timeloopfe writes: display/log only
    tl.write_text("mapper:\n  algorithm: random-pruned\n  log-interval: 1\n  log-oaves: false\n  log-oaves-mappings: false\n")
    assert resolve_spec(str(tl), None, None).notes == []


def test_timeloops_spelling_of_a_searcher_name_is_taken():
    from coexplore.cli.map import resolve_spec
    assert resolve_spec("random-pruned", None, None).searcher == "random_pruned"
    assert resolve_spec("linear-pruned", None, None).searcher == "linear_pruned"
    with pytest.raises(registry.CoexploreError, match="unknown searcher"):
        resolve_spec("no-such-searcher", None, None)


def test_a_seed_that_changes_nothing_is_said(tmp_path, capsys):
    """exhaustive and linear_pruned walk the mappings in one order: another seed is the same run."""
    from coexplore.cli.main import main as cli
    from coexplore.search import registry
    assert not registry.SEARCHERS["exhaustive"][0].seeded and not registry.SEARCHERS["linear_pruned"][0].seeded
    assert all(registry.SEARCHERS[s][0].seeded for s in ("random", "marl", "ga", "random_pruned"))
    ex = Path(__file__).resolve().parents[1] / "examples" / "first_design"
    results = {}
    for seed in ("0", "3"):
        assert cli(["map", str(ex / "two_level.yaml"), str(ex / "conv1d.yaml"), "--searcher", "exhaustive",
                    "--seed", seed, "--no-cache", "--no-progress", "--out", str(tmp_path / seed)]) == 0
        results[seed] = json.loads((tmp_path / seed / "result.json").read_text())["best"]
        said = capsys.readouterr().err
        assert ("--seed 3 changes nothing" in said) == (seed == "3")
    assert results["0"] == results["3"]


def test_a_ruby_mapspace_template_is_said_not_explored(tmp_path, capsys):
    """Timeloop's `ruby` template (imperfect factorizations) is not coexplore's mapspace: said."""
    from coexplore.cli.main import main
    ex = ROOT / "examples" / "first_design"
    spec = tmp_path / "arch.yaml"
    spec.write_text((ex / "two_level.yaml").read_text() + "\nmapspace: {version: 0.4, template: ruby}\n")
    assert main(["map", str(spec), str(ex / "conv1d.yaml"), "--budget", "30", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    assert "`ruby` mapspace template" in capsys.readouterr().err
    spec.write_text((ex / "two_level.yaml").read_text() + "\nmapspace: {version: 0.4, template: uber}\n")
    assert main(["map", str(spec), str(ex / "conv1d.yaml"), "--budget", "30", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "o2")]) == 0
    assert "mapspace template" not in capsys.readouterr().err


def test_the_history_is_strict_json_from_the_first_valid_sample_on(tmp_path):
    """User study: batches before the first valid mapping put `Infinity` in --json and result.json,
    which strict JSON parsers (JSON.parse, jq) refuse."""
    mapper = tmp_path / "ga7.yaml"
    mapper.write_text("searcher: ga\nobjective: energy\nbatch_size: 7\n")
    r = cli("map", ARCH, CORPUS / "layers" / "alexnet_conv3.yaml", "--searcher", mapper, "--budget", "700",
            "--no-cache", "--no-progress", "--json", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    strict = lambda text: json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))  # noqa: E731
    got = strict(r.stdout)
    strict((tmp_path / "o" / "result.json").read_text())
    assert got["history"] and got["history"][0][0] > 7 and got["history"][-1][1] == got["best"]["energy_pJ"]


def test_a_searcher_setting_the_search_finds_wanting_names_its_mapper_file(tmp_path):
    """User study: exhaustive's max_size error named neither the mapper file nor its key."""
    mapper = tmp_path / "ex.yaml"
    mapper.write_text("searcher: exhaustive\nconfig: {max_size: 10}\n")
    r = cli("map", ARCH, LAYER, "--searcher", mapper, "--no-cache", "--no-progress", "--out", tmp_path / "o")
    assert r.returncode == 2 and f"{mapper}: key 'config.max_size'" in r.stderr, r.stderr
    assert "the bundled file" not in r.stderr                  # (the user's own file: edit it)
    # README audit: by name, the bundled file is named, which is read for the name: copy it, not edit it
    big = ROOT / "tests" / "data" / "timeloop_corpus" / "layers" / "resnet50_res3a_2b.yaml"
    r = cli("map", ROOT / "tests" / "data" / "timeloop_corpus" / "arches" / "simba_like" / "processed.yaml", big,
            "--searcher", "exhaustive", "--no-cache", "--no-progress", "--out", tmp_path / "o2")
    assert r.returncode == 2 and "exhaustive.yaml: key 'config.max_size'" in r.stderr, r.stderr
    assert "is the bundled file a searcher's name reads: copy it" in r.stderr


def test_a_mapper_file_that_is_a_list_says_so(tmp_path):
    mapper = tmp_path / "list.yaml"
    mapper.write_text("- searcher: ga\n")
    r = cli("map", ARCH, LAYER, "--searcher", mapper, "--no-cache", "--no-progress", "--out", tmp_path / "o")
    assert r.returncode == 2 and "holds a list, not a mapping of keys" in r.stderr, r.stderr


def test_a_bundled_name_and_the_path_of_its_file_are_one_run(tmp_path):
    """User study: `simba resnet50` and `simba <bundled>/problems/resnet50.yaml` gave identical results
    but counted as two runs (a numbered second folder; with --out, 'another run's result')."""
    out = tmp_path / "o"
    where = subprocess.run([sys.executable, "-c", "from coexplore.bundled import bundled_dir; "
                            "print(bundled_dir('problems'))"], capture_output=True, text=True, cwd=tmp_path)
    for problem in ("resnet50", Path(where.stdout.strip()) / "resnet50.yaml"):     # (as the command finds it)
        r = cli("map", "simba", problem, "--layer", "res3a_branch2b", "--budget", "50", "--no-progress",
                "--cache", tmp_path / "c.sqlite", "--out", out, cwd=tmp_path)   # (the coexplore this test imports)
        assert r.returncode == 0 and "another run" not in r.stderr and "an earlier run" not in r.stderr, r.stderr


def test_an_objective_refusing_valid_mappings_is_said_with_its_remedy_and_not_counted_invalid(tmp_path, capsys):
    """User study: `--objective 'energy if cycles <= 1 else inf'` failed saying only "no finite loss"
    (the README promises a proposed penalty), and counted its 200 valid mappings as invalid_samples."""
    from coexplore.cli.main import main
    ex = Path(__file__).resolve().parent.parent / "examples" / "first_design"
    rc = main(["map", str(ex / "two_level.yaml"), str(ex / "conv1d.yaml"), "--budget", "200", "--objective",
               "energy if cycles <= 1 else inf", "--json", "--no-cache", "--no-progress", "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert rc == 1 and "max(1, cycles / CAP) ** 8" in err and "max(1, cycles / CAP) ** 8" in got["expected"]
    assert got["invalid_samples"] == 0 and got["samples"] == 200     # every mapping of conv1d fits two_level
    assert json.loads((tmp_path / "o" / "result.json").read_text())["invalid_samples"] == 0


def test_invalid_samples_mean_the_models_refusals_whatever_the_objective(tmp_path, capsys):
    """User study: the same 1,000 random mappings gave invalid_samples 952 with --objective energy and
    999 with an expression refusing slow ones (its refusals counted). Random search asks the same
    points whatever the losses: the count is the model's, the same for both."""
    from coexplore.cli.main import main
    counts = []
    for i, objective in enumerate(("energy", "energy if cycles < 1000000 else inf")):
        assert main(["map", "simba", "resnet50", "--layer", "res3a_branch2b", "--searcher", "random", "--budget",
                     "600", "--seed", "3", "--objective", objective, "--json", "--no-cache", "--no-progress",
                     "--out", str(tmp_path / f"o{i}")]) == 0
        got = json.loads(capsys.readouterr().out)
        counts.append(got["invalid_samples"])
    assert counts[0] == counts[1] and 0 < counts[0] < 600


def test_the_recorded_command_runs_again_in_the_recorded_folder(tmp_path, monkeypatch, capsys):
    """User study: `command` holds the paths as typed (relative), so it failed from another folder.
    The record has `cwd`: the command, split and run there, gives the same result."""
    import shlex
    import shutil
    from coexplore.cli.main import main
    ex = Path(__file__).resolve().parent.parent / "examples" / "first_design"
    work = tmp_path / "work"
    shutil.copytree(ex, work / "fd")
    monkeypatch.chdir(work)
    assert main(["map", "fd/two_level.yaml", "fd/conv1d.yaml", "--budget", "100", "--no-cache", "--no-progress",
                 "--out", "m1"]) == 0
    rec = json.loads((work / "m1" / "result.json").read_text())
    assert rec["cwd"] == str(work) and "fd/two_level.yaml" in rec["command"]
    monkeypatch.chdir(tmp_path)                                   # elsewhere: run it where it ran
    monkeypatch.chdir(rec["cwd"])
    argv = shlex.split(rec["command"])[1:]
    argv[argv.index("m1")] = "m2"
    assert main(argv) == 0
    again = json.loads((work / "m2" / "result.json").read_text())
    assert again["best"] == rec["best"] and again["history"] == rec["history"]


def test_the_run_record_holds_the_class_set_that_priced_the_architecture(tmp_path, capsys):
    """User study: `--classes primitives` changes the result (and the cache key) but only `command`
    said so; `run` has it, and without it has no such key."""
    from coexplore.cli.main import main
    ex = Path(__file__).resolve().parent.parent / "examples" / "first_design"
    args = ["map", str(ex / "two_level.yaml"), str(ex / "conv1d.yaml"), "--budget", "50", "--no-cache", "--no-progress"]
    assert main([*args, "--classes", "primitives", "--out", str(tmp_path / "p")]) == 0
    assert main([*args, "--out", str(tmp_path / "d")]) == 0
    prim = json.loads((tmp_path / "p" / "result.json").read_text())["run"]
    default = json.loads((tmp_path / "d" / "result.json").read_text())["run"]
    assert prim["classes"] == "primitives" and "classes" not in default
    assert prim["content_key"] != default["content_key"]


def test_the_summary_says_how_many_samples_were_invalid(tmp_path, capsys):
    """Own-core study: at a small budget a constrained core gave a poor mapping with no hint why; the
    summary line says how many samples were invalid mappings (result.json's invalid_samples)."""
    from coexplore.cli.main import main
    args = ["map", str(ROOT / "tests" / "data" / "timeloop_corpus" / "arches" / "simba_like" / "processed.yaml"),
            str(ROOT / "tests" / "data" / "timeloop_corpus" / "layers" / "resnet50_res3a_2b.yaml"), "--searcher",
            "random", "--budget", "300", "--no-cache", "--no-progress", "--out", str(tmp_path / "o")]
    assert main(args) == 0
    line = capsys.readouterr().out.splitlines()[0]
    bad = json.loads((tmp_path / "o" / "result.json").read_text())["invalid_samples"]
    assert 0 < bad < 300 and f"300 samples ({bad:,} invalid)," in line


def test_a_timeloop_mapper_file_says_which_searcher_to_try_and_checks_its_counts(tmp_path, capsys):
    """Timeloop-mapper study: a mapper YAML ran coexplore's copy of Timeloop's algorithm, often worse
    than real timeloop-mapper, with no hint that marl/ga do better; timeout: -1 and victory-condition:
    abc (which Timeloop's reader refuses) were noted as unused and accepted."""
    from coexplore.cli.main import main
    f = tmp_path / "mapper.yaml"
    f.write_text("mapper:\n  algorithm: random-pruned\n  optimization-metrics: [delay, energy]\n  timeout: 1000\n")
    args = ["map", str(ARCH), str(LAYER), "--budget", "50", "--no-cache", "--no-progress"]
    assert main([*args, "--searcher", str(f), "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "runs as coexplore's copy of it" in err and "--searcher marl (or ga) --objective latency" in err
    assert "valid or not" in err                               # the budget is --budget's, not timeout's
    for bad in ("timeout: -1", "victory-condition: abc", "num-threads: 0", "search-size: 2.5"):
        f.write_text(f"mapper:\n  algorithm: random-pruned\n  {bad}\n")
        assert main([*args, "--searcher", str(f), "--out", str(tmp_path / "x")]) == 2
        key = bad.split(":")[0]
        assert f"key 'mapper.{key}': bad value" in capsys.readouterr().err, bad
    f.write_text("mapper:\n  algorithm: exhaustive\n")
    assert main([*args, "--searcher", str(f), "--out", str(tmp_path / "e")]) in (0, 2)
    assert "runs as coexplore's copy" not in capsys.readouterr().err      # exhaustive is the optimum
