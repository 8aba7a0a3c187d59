"""`coexplore sweep --ray`: the layer searches and the points as tasks on a Ray cluster (a local one
here, started once for the module) give the records, point files and cache entries of one process;
what a task needs travels with it (the cache as records, the point's files back as bytes); a stop
resumes; bad addresses, a missing Ray, another coexplore on a node and a lost task are said."""

import json
import os
import sys
from pathlib import Path

import pytest

from coexplore.cli.main import main

ray = pytest.importorskip("ray")

DATA = Path(__file__).parent / "data" / "sweep"
FAST = ["--layer-budget", "60", "--budget", "60", "--no-progress"]


def _system(tmp_path) -> Path:
    import shutil
    for f in DATA.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / "tiny_sweep.yaml"


@pytest.fixture(scope="module")
def local_ray():
    """One Ray instance on this machine (2 CPUs) for the module: the commands join it."""
    import signal

    from coexplore.system.ray_tasks import start_ray, stop_ray
    before = signal.getsignal(signal.SIGTERM)
    assert start_ray(None, cpus=2)
    assert signal.getsignal(signal.SIGTERM) is before     # not Ray's: a stop is still handled as Ctrl-C
    assert ray.cluster_resources()["CPU"] == 2
    yield
    stop_ray()


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The tiny sweep in one process, with a cache: what every Ray run must reproduce."""
    tmp = tmp_path_factory.mktemp("one")
    system = _system(tmp)
    assert main(["sweep", str(system), *FAST, "--cache", str(tmp / "c.sqlite"), "--out", str(tmp / "o")]) == 0
    return system, tmp / "o", tmp / "c.sqlite"


def _records(out: Path) -> list:
    return json.loads((out / "sweep.json").read_text())["records"]


def _files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cache(path: Path, wall: bool = True) -> dict:
    """The records of a cache file (without their search seconds, `wall_s`, unless `wall`)."""
    from coexplore.model.cache import ResultCache
    with ResultCache(path) as c:
        return {k: {f: v for f, v in c.get(k, count=False).items() if wall or f != "wall_s"} for k in c.keys()}


def test_ray_sweep_is_the_one_process_sweep(local_ray, one_process, tmp_path, capsys):
    system, want, want_cache = one_process
    rc = main(["sweep", str(system), *FAST, "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "o"),
               "--ray"])
    assert rc == 0, capsys.readouterr().err
    assert _records(tmp_path / "o") == _records(want)
    assert _files(tmp_path / "o" / "points") == _files(want / "points")     # gantt.png byte for byte
    assert _cache(tmp_path / "c.sqlite", wall=False) == _cache(want_cache, wall=False)   # written by the driver
    assert not [p for p in (tmp_path / "o" / "points").iterdir() if p.name.startswith(".")]
    assert ray.is_initialized()          # a Ray the command joined is left running


def test_ray_without_a_cache_maps_in_the_point_tasks(local_ray, one_process, tmp_path, capsys):
    system, want, _ = one_process
    rc = main(["sweep", str(system), *FAST, "--no-cache", "--no-plot", "--out", str(tmp_path / "o"),
               "--ray", "--jobs", "1"])
    assert rc == 0, capsys.readouterr().err
    assert _records(tmp_path / "o") == _records(want)


def test_a_stopped_ray_sweep_resumes(local_ray, one_process, tmp_path):
    from coexplore.model.cache import ResultCache
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    system, want, _ = one_process
    spec = load_system(system)
    settings = SweepSettings(layer_budget=60, budget=60, workers=1, ray=True)
    store = SweepStore(tmp_path / "o", "k")

    def stop(rec):
        raise KeyboardInterrupt
    with ResultCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(KeyboardInterrupt):
            run_sweep(spec, settings, store, cache=cache, on_point=stop)
        assert len(store.records) == 1
        recs = run_sweep(spec, settings, SweepStore(tmp_path / "o", "k"), cache=cache)
    for got, rec in zip(recs, _records(want), strict=True):
        assert {k: v for k, v in got.items() if k != "run"} == {k: v for k, v in rec.items() if k != "run"}


def test_a_point_task_carries_what_it_needs(one_process, tmp_path):
    """Run without Ray, as a node would: the cache records given, no search is made (nothing added)
    and the point's files come back as bytes, those of the one-process run."""
    import dataclasses

    from coexplore.report.gantt import draw_gantt
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, _point_on_ray
    system, want, want_cache = one_process
    spec = load_system(system)
    settings = SweepSettings(layer_budget=60, budget=60, gantt=draw_gantt)
    values = spec.sweep_points()[1]
    rec, files, added, error = _point_on_ray((spec, 1, "p1", values, dataclasses.replace(settings)),
                                             _cache(want_cache))
    assert error is None and added == []
    assert rec == {k: v for k, v in _records(want)[1].items() if k != "run"}     # (the store adds the run)
    assert files == _files(want / "points" / "p1")
    rec, _, added, _ = _point_on_ray((spec, 1, "p1", values, settings), {})   # no records: it maps
    assert rec["energy_J"] == _records(want)[1]["energy_J"] and {k for k, _, _ in added} <= set(_cache(want_cache))
    assert len(added) == 3                       # the 3 distinct layers on the point's one core design


def test_memory_cache_keeps_what_the_file_would(tmp_path):
    from coexplore.model.cache import MemoryCache, ResultCache
    import numpy as np
    mem = MemoryCache({"a": {"x": [1, 2]}})
    assert mem.get("a") == {"x": [1, 2]} and mem.get("b") is None and (mem.hits, mem.misses) == (1, 1)
    mem.put("b", {"v": np.float64(1.5), "n": np.arange(2)}, {"backend": "builtin"})
    assert mem.get("b", count=False) == {"v": 1.5, "n": [0, 1]} and "b" in mem and "c" not in mem
    with pytest.raises(TypeError):
        mem.put("", {"v": 1})
    with ResultCache(tmp_path / "c.sqlite") as c:
        assert c.put_many(mem.added) == 1
        assert c.get("b") == mem.get("b") and c.get("a") is None


def test_bad_addresses_are_said_before_the_result_folder(tmp_path, capsys):
    system = _system(tmp_path)
    for address, said in (("127.0.0.1:1", "nothing answers at 127.0.0.1:1"),
                          ("localhost:port", "has no port number")):
        rc = main(["sweep", str(system), *FAST, "--no-cache", "--out", str(tmp_path / "o"), "--ray", address])
        err = capsys.readouterr().err
        assert rc == 2 and "--ray" in err and said in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


def test_without_ray_installed_the_install_is_said(tmp_path, capsys, monkeypatch):
    system = _system(tmp_path)
    monkeypatch.setitem(sys.modules, "ray", None)          # import ray fails
    rc = main(["sweep", str(system), *FAST, "--no-cache", "--out", str(tmp_path / "o"), "--ray"])
    err = capsys.readouterr().err
    assert rc == 2 and "Ray is not installed" in err and "coexplore[ray]" in err, err
    assert not (tmp_path / "o").exists()


def test_on_ray_results_errors_and_other_versions(local_ray, monkeypatch):
    from coexplore.errors import CoexploreError
    from coexplore.system import ray_tasks
    from coexplore.system.parallel import WorkerDied
    got = dict(ray_tasks.on_ray(abs, [-3, 4, -5], limit=1))
    assert got == {0: 3, 1: 4, 2: 5}
    assert dict(ray_tasks.on_ray(divmod, [7, 9], shared=4)) == {0: (1, 3), 1: (2, 1)}   # fn(task, shared)
    with pytest.raises(ValueError):                          # the task's own error, as raised here
        list(ray_tasks.on_ray(int, ["7", "x"]))
    with pytest.raises(WorkerDied, match="Ray task was lost"):
        list(ray_tasks.on_ray(os._exit, [3]))                # the worker process dies (twice: one retry)
    monkeypatch.setattr(ray_tasks, "_versions", lambda: {"coexplore": "0.0.0"})
    with pytest.raises(CoexploreError, match="the same coexplore installed on every node"):
        list(ray_tasks.on_ray(abs, [1]))


def _interval(seconds: float) -> tuple:
    import time
    start = time.time()
    time.sleep(seconds)
    return start, time.time()


def test_at_most_limit_tasks_run_at_once(local_ray):
    from ray import cloudpickle

    from coexplore.system.ray_tasks import on_ray
    cloudpickle.register_pickle_by_value(sys.modules[__name__])     # (this module is not on the nodes' path)
    spans = sorted(dict(on_ray(_interval, [0.3] * 4, limit=1)).values())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))      # one after the other
