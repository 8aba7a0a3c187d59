"""`coexplore map ARCH WORKLOAD --all-layers`: every distinct layer mapped, the network's totals."""

import argparse
import csv
import json

import pytest

from coexplore.cli import map as map_cli
from coexplore.cli.main import main
from coexplore.cli.map_workload import run_all_layers
from coexplore.spec.workload import find_workload, load_workload

ARGS = ["map", "simba", "dlrm_mlp", "--budget", "200"]


def _results(out, names):
    return {n: json.loads((out / n / "result.json").read_text()) for n in names}


def test_every_distinct_layer_is_mapped_and_counted(tmp_path, capsys):
    out = tmp_path / "w"
    rc = main([*ARGS, "--all-layers", "--out", str(out), "--json", "--cache", str(tmp_path / "c.sqlite")])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    wl = load_workload(find_workload("dlrm_mlp"))
    distinct = wl.unique_layers()
    names = [layer.name for layer, _ in distinct]
    assert len(distinct) < len(wl.layers)          # the bundled MLP repeats a layer shape: mapped once
    assert summary["complete"] and summary["distinct_layers"] == len(distinct)
    assert summary["layers_run"] == sum(layer.count for layer in wl.layers)
    assert summary["macs"] == wl.total_macs
    res = _results(out, names)
    counts = dict((layer.name, n) for layer, n in distinct)
    assert summary["cycles"] == sum(counts[n] * r["best"]["cycles"] for n, r in res.items())
    energy_pj = sum(counts[n] * r["best"]["energy_pJ"] for n, r in res.items())
    assert summary["energy_uJ"] == pytest.approx(energy_pj / 1e6, rel=1e-12)
    assert summary["edp_J_cycle"] == pytest.approx(energy_pj * 1e-12 * summary["cycles"], rel=1e-12)
    with open(out / "layers.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["layer"] for r in rows] == names
    assert [int(r["cycles"]) for r in rows] == [res[n]["best"]["cycles"] for n in names]
    # mapping files named from the table's folder: they stay found when it moves
    moved_to = tmp_path / "moved"
    out.rename(moved_to)
    for r, s in zip(rows, summary["layers"]):
        assert r["mapping_file"] == s["mapping_file"] == f"{r['layer']}/mapping.yaml"
        assert (moved_to / r["mapping_file"]).is_file()
    moved_to.rename(out)
    # dram_bytes: the DRAM level's reads + fills + updates of 8-bit words (bundled simba: datawidth 8)
    moved = {n: sum(d["reads"] + d["fills"] + d["updates"] for d in r["best"]["levels"]["DRAM"]["dataspaces"].values())
             for n, r in res.items()}
    assert [float(r["dram_bytes"]) for r in rows] == [float(moved[n]) for n in names]
    assert summary["dram_bytes"] == sum(counts[n] * moved[n] for n in names)
    for layer, _ in distinct:                       # every weight comes from DRAM at least once
        dims = layer.instance
        assert moved[layer.name] >= dims["C"] * dims["M"] * dims.get("R", 1) * dims.get("S", 1)
    # a layer's folder holds what `coexplore map --layer NAME` gives on its own
    one = tmp_path / "one"
    assert main([*ARGS, "--layer", names[1], "--out", str(one), "--json", "--no-cache"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert single["best"] == res[names[1]]["best"]
    assert (one / "mapping.yaml").read_text() == (out / names[1] / "mapping.yaml").read_text()


def test_an_interrupted_network_keeps_its_layers_and_resumes(tmp_path, capsys):
    """A stop at the third layer writes the table of the layers done (exit 130); the same command
    again finishes the network, and the layers done are unchanged."""
    parser = argparse.ArgumentParser()
    map_cli.register(parser.add_subparsers())
    cache = str(tmp_path / "c.sqlite")
    args = parser.parse_args([*ARGS, "--all-layers", "--out", str(tmp_path / "w"), "--cache", cache,
                              "--no-progress"])
    calls = []

    def stopping(sub):
        calls.append(sub.layer)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return map_cli.run(sub)

    assert run_all_layers(args, stopping) == 130
    first = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert first["mapped"] == 2 and not first["complete"]
    done = _results(tmp_path / "w", calls[:2])
    assert run_all_layers(args, map_cli.run) == 0
    second = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert second["complete"] and second["layers"][:2] == first["layers"]
    again = _results(tmp_path / "w", calls[:2])
    assert all(again[n]["best"] == done[n]["best"] and again[n]["cached"] for n in calls[:2])


def test_a_rerun_stopped_sooner_keeps_the_layers_an_earlier_run_did(tmp_path, capsys):
    """The table of a rerun stopped at its first layer still lists the layers the first run
    finished (same settings); a run of other settings in the same --out does not inherit them."""
    cache = str(tmp_path / "c.sqlite")
    argv = [*ARGS, "--all-layers", "--out", str(tmp_path / "w"), "--cache", cache, "--no-progress"]
    calls = []

    def stop_at(k):
        def stopping(sub):
            calls.append(sub.layer)
            if len(calls) == k:
                raise KeyboardInterrupt
            return map_cli.run(sub)
        return stopping

    assert run_all_layers(_parsed(argv), stop_at(3)) == 130
    first = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert [r["layer"] for r in first["layers"]] == calls[:2]
    calls.clear()
    assert run_all_layers(_parsed(argv), stop_at(1)) == 130          # stopped before any layer
    again = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert again["layers"] == first["layers"] and again["mapped"] == 2 and not again["complete"]
    with open(tmp_path / "w" / "layers.csv", newline="") as f:
        assert [r["layer"] for r in csv.DictReader(f)] == [r["layer"] for r in first["layers"]]
    calls.clear()
    other = [a if a != "200" else "150" for a in argv]                  # another budget: another run
    assert run_all_layers(_parsed(other), stop_at(1)) == 130
    assert json.loads((tmp_path / "w" / "summary.json").read_text())["mapped"] == 0


def test_a_layer_completed_before_a_stop_at_once_is_in_the_table(tmp_path, capsys):
    """A second Ctrl-C while a layer's result is written still writes it whole (exit 130): the
    network's table lists that layer; one whose search was cut short (interrupted) is not."""
    args = _parsed([*ARGS, "--all-layers", "--out", str(tmp_path / "w"), "--no-cache", "--no-progress"])
    calls = []

    def stopped_at_once_after_writing(sub):
        calls.append(sub.layer)
        assert map_cli.run(sub) == 0
        return 130                              # what `map` returns for a stop-at-once while writing

    assert run_all_layers(args, stopped_at_once_after_writing) == 130
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert [r["layer"] for r in summary["layers"]] == calls[:1] and summary["mapped"] == 1
    res = tmp_path / "w" / calls[0] / "result.json"
    res.write_text(json.dumps({**json.loads(res.read_text()), "interrupted": True}))
    (tmp_path / "w" / "summary.json").unlink()
    assert run_all_layers(args, lambda sub: 130) == 130       # stopped during the first layer's search
    assert json.loads((tmp_path / "w" / "summary.json").read_text())["mapped"] == 0


def test_rows_say_whether_the_layer_is_the_optimum(tmp_path, capsys):
    """`exhausted` in layers.csv: True when exhaustive search saw every mapping of the layer, False
    when its budget ended first, empty for a searcher that cannot tell."""
    from conftest import CORPUS
    wl = tmp_path / "tiny.yaml"
    wl.write_text("workload:\n  layers:\n"
                  "  - {name: a, instance: {C: 2, M: 2, P: 2, Q: 1, R: 1, S: 1, N: 1}}\n"
                  "  - {name: b, instance: {C: 4, M: 2, P: 3, Q: 1, R: 1, S: 1, N: 1}}\n")
    arch = str(CORPUS / "arches" / "eyeriss_like" / "processed.yaml")

    def flags(searcher, budget):
        out = tmp_path / f"{searcher}{budget}"
        assert main(["map", arch, str(wl), "--all-layers", "--searcher", searcher, "--budget", budget,
                     "--out", str(out), "--no-cache", "--no-progress"]) == 0
        with open(out / "layers.csv", newline="") as f:
            return [r["exhausted"] for r in csv.DictReader(f)]

    assert flags("exhaustive", "1000000") == ["True", "True"]
    assert flags("exhaustive", "3") == ["False", "False"]
    assert flags("random", "3") == ["", ""]


@pytest.mark.parametrize("extra, says", [
    (["--layer", "fc1"], "--layer"),
    (None, "workload"),
])
def test_all_layers_needs_a_workload_and_no_layer(tmp_path, capsys, extra, says):
    from conftest import CORPUS
    argv = [*ARGS, "--all-layers", "--out", str(tmp_path / "w")] + (extra or [])
    if extra is None:        # a single Timeloop problem is not a network
        argv = ["map", str(CORPUS / "arches" / "simba_like" / "processed.yaml"),
                str(CORPUS / "layers" / "tiny_conv.yaml"), "--all-layers", "--out", str(tmp_path / "w")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def _parsed(argv):
    parser = argparse.ArgumentParser()
    map_cli.register(parser.add_subparsers())
    return parser.parse_args(argv)


def test_a_stop_after_a_layer_stops_the_network(tmp_path, capsys):
    """A stop request (Ctrl-C, SIGTERM) that lands after a layer's search has finished still stops
    the network after that layer (exit 130), with the layers done in its table."""
    from coexplore.stops import request_stop
    args = _parsed([*ARGS, "--all-layers", "--out", str(tmp_path / "w"), "--no-cache", "--no-progress"])
    calls = []

    def then_stop(sub):
        rc = map_cli.run(sub)
        calls.append(sub.layer)
        if len(calls) == 2:
            assert request_stop("SIGTERM")
        return rc

    assert run_all_layers(args, then_stop) == 130
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert len(calls) == 2 and summary["mapped"] == 2 and not summary["complete"]


def test_bad_input_only_a_later_layer_meets_names_that_layer(tmp_path):
    from coexplore.errors import CoexploreError
    args = _parsed([*ARGS, "--all-layers", "--out", str(tmp_path / "w"), "--no-cache", "--no-progress"])
    calls = []

    def refusing_the_third(sub):
        calls.append(sub.layer)
        if len(calls) == 3:
            raise CoexploreError("constraint P=5 does not divide 27", file="c.yaml", key="pe_spad.temporal.factors")
        return map_cli.run(sub)

    with pytest.raises(CoexploreError) as e:
        run_all_layers(args, refusing_the_third)
    assert e.value.message.startswith(f"mapping layer {calls[2]}: constraint P=5") and "c.yaml" in str(e.value)
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["mapped"] == 2 and not summary["complete"]      # the layers done are kept


def test_an_edited_input_is_another_run_with_its_own_default_folder(tmp_path, monkeypatch, capsys):
    from pathlib import Path
    monkeypatch.chdir(tmp_path)
    arch = tmp_path / "mine.yaml"
    arch.write_text((Path(map_cli.__file__).parents[2] / "arch" / "simba.yaml").read_text())
    argv = ["map", str(arch), "dlrm_mlp", "--all-layers", "--budget", "150", "--no-cache", "--no-progress"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("more than half the budget") == 1          # a note said once, not once per layer
    arch.write_text(arch.read_text() + "\n# edited\n")
    assert main(argv) == 0
    folders = sorted(p.name for p in (tmp_path / "results" / "map").iterdir())
    assert len(folders) == 2 and folders[1] == folders[0] + "-2"
    assert "replaces it once there is one" not in capsys.readouterr().err


def test_bad_input_of_the_whole_network_leaves_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "badc.yaml"
    bad.write_text("architecture_constraints:\n  targets:\n  - type: temporal\n    target: NoSuchLevel\n"
                   "    factors: M=1\n")
    assert main(["map", "simba", "dlrm_mlp", "--all-layers", "--budget", "100", "--no-cache",
                 "--constraints", str(bad)]) == 2
    assert "NoSuchLevel" in capsys.readouterr().err
    assert not (tmp_path / "results" / "map").exists() or not any((tmp_path / "results" / "map").iterdir())


def test_an_edited_energy_table_beside_the_architecture_is_another_run(tmp_path, monkeypatch, capsys):
    """The ERT found beside ARCH is part of what the result depends on, as for one layer."""
    import shutil
    from conftest import CORPUS
    monkeypatch.chdir(tmp_path)
    design = tmp_path / "design"
    shutil.copytree(CORPUS / "arches" / "simba_like", design)
    argv = ["map", str(design / "processed.yaml"), "dlrm_mlp", "--all-layers", "--budget", "100", "--no-cache",
            "--no-progress"]
    assert main(argv) == 0
    ert = design / "ERT.yaml"
    text = ert.read_text()
    i = text.index("energy:")
    ert.write_text(text[:i] + "energy: 1" + text[text.index("\n", i):])       # one action's energy changed
    assert main(argv) == 0
    assert len(list((tmp_path / "results" / "map").iterdir())) == 2
    assert "replaces it once there is one" not in capsys.readouterr().err


def test_layers_mapped_in_worker_processes_give_the_same_network(tmp_path, capsys):
    runs = []
    for jobs in ("1", "2"):
        assert main([*ARGS, "--all-layers", "--jobs", jobs, "--out", str(tmp_path / jobs), "--json",
                     "--no-cache"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    one, two = runs
    for key in ("cycles", "energy_uJ", "edp_J_cycle", "macs", "layers_run"):
        assert one[key] == two[key]
    strip = [{k: v for k, v in r.items() if k != "mapping_file"} for r in one["layers"]]
    assert strip == [{k: v for k, v in r.items() if k != "mapping_file"} for r in two["layers"]]
    assert main([*ARGS, "--layer", "bottom_fc1", "--jobs", "2", "--out", str(tmp_path / "x")]) == 2
    assert "--all-layers" in capsys.readouterr().err


def test_earlier_rows_fill_in_only_what_this_run_did_not_do(tmp_path):
    """A stopped run's table: its own rows and failures win over the earlier run's; the earlier
    run's rows fill in the layers this one did not reach; no layer is both a row and a failure."""
    from coexplore.cli.map_workload import _with_earlier
    record = {"run": "same"}
    earlier = {"run": record, "layers": [{"layer": "a", "v": 1}, {"layer": "b", "v": 1}, {"layer": "c", "v": 1}],
               "failed": ["d", "e"]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(earlier))
    rows, failed = _with_earlier(path, record, {"a": {"layer": "a", "v": 2}, "e": {"layer": "e", "v": 2}}, ["b"])
    assert rows == {"a": {"layer": "a", "v": 2}, "c": {"layer": "c", "v": 1}, "e": {"layer": "e", "v": 2}}
    assert sorted(failed) == ["b", "d"] and not set(rows) & set(failed)
    assert _with_earlier(path, {"run": "other"}, {}, []) == ({}, [])


DW3 = ("workload:\n  layers:\n  - {name: first, instance: {C: 16, M: 16, R: 3, S: 3, P: 8, Q: 8}}\n"
       "  - {name: dw1, count: 32, instance: {C: 1, M: 1, R: 3, S: 3, P: 8, Q: 8}}\n"
       "  - {name: dw2, count: 64, instance: {C: 1, M: 1, R: 3, S: 3, P: 4, Q: 4}}\n")


def test_the_first_layers_note_is_said_in_one_process_too(tmp_path, capsys):
    """User study: with --jobs 1 only 'the note on layer dw1 above holds for ... dw2' was printed,
    with no note above (the layer's own printer had counted it as said)."""
    (tmp_path / "dw3.yaml").write_text(DW3)
    assert main(["map", "simba", str(tmp_path / "dw3.yaml"), "--all-layers", "--budget", "50", "--no-cache",
                 "--no-progress", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    idles = [ln for ln in err.splitlines() if "idles for layer dw1" in ln]
    refs = [ln for ln in err.splitlines() if "on layer dw1 above hold" in ln]
    assert idles and refs, err
    for ln in idles:                   # each note said above is named where it is summed up
        subject = ln[len("coexplore: note: "):ln.index(" for layer dw1")]
        assert sum(f'"{subject}"' in r for r in refs) == 1, err


@pytest.mark.parametrize("write, key, says", [
    (lambda d: d.joinpath("w.yaml").write_text(
        "workload:\n  layers:\n  - {name: layers.csv, instance: {C: 16, M: 16, P: 8, Q: 8}}\n"),
     "workload.layers[0].name", "the name of a file `map --all-layers` writes"),
    (lambda d: d.joinpath("w.yaml").write_text(
        "workload:\n  layers:\n  - {name: a, count: 1" + "0" * 400 + ", instance: {C: 16, M: 16, P: 8, Q: 8}}\n"),
     "workload.layers[0].count", "too large"),
])
def test_a_layer_name_or_count_no_network_result_can_hold_is_refused_before_any_search(tmp_path, capsys, write,
                                                                                        key, says):
    """User study: 'layers.csv' was mapped and then the table could not be written; a count of
    10^400 crashed the summary (OverflowError) after the search."""
    write(tmp_path)
    rc = main(["map", "simba", str(tmp_path / "w.yaml"), "--all-layers", "--budget", "50", "--no-cache",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and f"key '{key}'" in err and says in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


def test_a_problem_file_whose_name_is_no_layer_name_is_refused(tmp_path, capsys):
    """User study: a file '...yaml' in a problem folder made a layer '..', whose results went to the
    parent of --out, replacing another run's."""
    from conftest import CORPUS
    folder = tmp_path / "net"
    folder.mkdir()
    (folder / "...yaml").write_text((CORPUS / "layers" / "tiny_conv.yaml").read_text())
    rc = main(["map", "simba", str(folder), "--all-layers", "--budget", "50", "--no-cache",
               "--out", str(tmp_path / "out" / "net")])
    err = capsys.readouterr().err
    assert rc == 2 and "problem file '...yaml'" in err and not (tmp_path / "out").exists(), err


def test_a_network_with_no_layer_mapped_has_no_totals(tmp_path, capsys):
    """User study: summary.json and --json said cycles 0, energy 0 (a network that costs nothing)."""
    (tmp_path / "dw3.yaml").write_text(DW3)
    rc = main(["map", "simba", str(tmp_path / "dw3.yaml"), "--all-layers", "--budget", "50", "--no-cache",
               "--no-progress", "--objective", "energy if cycles <= 1 else inf", "--json", "--out", str(tmp_path / "o")])
    got = json.loads(capsys.readouterr().out)
    assert rc == 1 and got["mapped"] == 0 and len(got["failed"]) == 3
    assert all(got[k] is None for k in ("macs", "cycles", "energy_uJ", "edp_J_cycle", "pJ_per_mac", "dram_bytes"))
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["cycles"] is None


def test_a_mistyped_layer_or_core_gets_a_close_match(capsys):
    assert main(["map", "simba", "resnet50", "--layer", "res3a_brnach2b", "--budget", "10", "--no-cache"]) == 2
    assert "(did you mean 'res3a_branch2b'?)" in capsys.readouterr().err
    assert main(["map", "hetero_2simba_2eyeriss", "resnet50", "--layer", "conv1", "--core", "eyriss", "--budget", "10",
                 "--no-cache"]) == 2
    assert "(did you mean 'eyeriss'?)" in capsys.readouterr().err
    with pytest.raises(KeyError, match="did you mean 'conv1'"):
        load_workload(find_workload("resnet50")).layer("conv_1")


@pytest.mark.parametrize("text, says", [("workloads:\n  layers: []\n", "top keys workloads (did you mean 'workload'?)"),
                                        ("", "no mapping of keys"), ("- a\n", "no mapping of keys")])
def test_all_layers_of_a_file_that_is_no_workload_says_what_it_holds(tmp_path, capsys, text, says):
    """User study: these were 'not a single problem', which they are not either."""
    (tmp_path / "w.yaml").write_text(text)
    assert main(["map", "simba", str(tmp_path / "w.yaml"), "--all-layers", "--budget", "10", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert says in err and "neither a workload" in err and "Traceback" not in err, err


def test_the_console_table_widens_to_its_values(tmp_path, capsys):
    """User study: a row of 10^13 cycles ran its columns together."""
    from coexplore.cli.map_workload import _print
    rows = [{"layer": "a_layer_name_longer_than_twenty_eight", "count": 1234567, "cycles": 11_152_000_008_064,
             "energy_uJ": 420_395_174.066, "pJ_per_mac": 1.5, "utilization": 0.5},
            {"layer": "b", "count": 1, "cycles": 10, "energy_uJ": 1.0, "pJ_per_mac": 2.0, "utilization": 1.0}]
    _print({"workload": "w", "arch": "a", "mapped": 2, "distinct_layers": 2, "failed": [], "complete": True,
            "cycles": 1, "energy_uJ": 1.0, "edp_J_cycle": 1.0, "pJ_per_mac": 1.0}, rows, tmp_path)
    lines = capsys.readouterr().out.splitlines()[1:4]
    assert all(len(ln.split()) == 6 for ln in lines[1:]), lines      # every cell apart from its neighbours
    assert len({len(ln) for ln in lines}) == 1                        # and the columns aligned


def test_another_runs_saved_layer_state_is_refused_before_any_layer_is_mapped(tmp_path, capsys):
    """User study: a run with another seed into a folder whose third layer holds the interrupted
    run's saved search state replaced the first two layers' results, the table and the summary,
    then refused at the third layer (exit 2, the folder mixed)."""
    out, cache = tmp_path / "w", str(tmp_path / "c.sqlite")
    assert main([*ARGS, "--all-layers", "--out", str(out), "--cache", cache, "--no-progress"]) == 0
    names = [layer.name for layer, _ in load_workload(find_workload("dlrm_mlp")).unique_layers()]
    (out / names[2] / ".checkpoint.pkl").write_bytes(b"the interrupted run's state")
    before = {f: f.read_bytes() for f in out.rglob("*") if f.is_file()}
    capsys.readouterr()
    assert main([*ARGS, "--all-layers", "--out", str(out), "--cache", cache, "--no-progress", "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert f"layer {names[2]}'s .checkpoint.pkl" in err and "seed" in err
    assert {f: f.read_bytes() for f in out.rglob("*") if f.is_file()} == before       # nothing touched


def test_a_stop_leaves_no_empty_folder_for_a_layer_not_mapped(tmp_path, capsys):
    """User study: a Ctrl-C between two layers left the next layer's empty folder behind."""
    from pathlib import Path
    parser = argparse.ArgumentParser()
    map_cli.register(parser.add_subparsers())
    args = parser.parse_args([*ARGS, "--all-layers", "--out", str(tmp_path / "w"), "--cache",
                              str(tmp_path / "c.sqlite"), "--no-progress"])
    calls = []

    def stopping(sub):
        calls.append(sub.layer)
        if len(calls) == 2:
            Path(sub.out).mkdir(parents=True)     # (the folder made for the search, then the stop)
            raise KeyboardInterrupt
        return map_cli.run(sub)

    assert run_all_layers(args, stopping) == 130
    assert (tmp_path / "w" / calls[0]).is_dir() and not (tmp_path / "w" / calls[1]).exists()
