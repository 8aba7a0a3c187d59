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
pytestmark = pytest.mark.xdist_group("ray")      # one local Ray for the module: its tests in one worker

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

    from coexplore.workers.ray_tasks import start_ray, stop_ray
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


def _lookups(path: Path) -> tuple[int, int]:
    """(hits, misses) a cache file counted."""
    from coexplore.model.cache import ResultCache
    with ResultCache(path) as c:
        stats = c.stats()
    return stats.hits, stats.misses


def test_ray_sweep_is_the_one_process_sweep(local_ray, one_process, tmp_path, capsys):
    system, want, want_cache = one_process
    rc = main(["sweep", str(system), *FAST, "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "o"),
               "--ray"])
    assert rc == 0, capsys.readouterr().err
    assert _records(tmp_path / "o") == _records(want)
    assert _files(tmp_path / "o" / "points") == _files(want / "points")     # gantt.png byte for byte
    assert _cache(tmp_path / "c.sqlite", wall=False) == _cache(want_cache, wall=False)   # written by the driver
    # the tasks' hits and misses counted: as many as processes count (their layer searches come first, as here)
    assert main(["sweep", str(system), *FAST, "--cache", str(tmp_path / "p.sqlite"), "--out", str(tmp_path / "p"),
                 "--no-plot", "--jobs", "2"]) == 0
    hits, misses = _lookups(tmp_path / "c.sqlite")
    assert (hits, misses) == _lookups(tmp_path / "p.sqlite") and misses == len(_cache(want_cache)) and hits > 0
    assert not [p for p in (tmp_path / "o" / "points").iterdir() if p.name.startswith(".")]
    assert ray.is_initialized()          # a Ray the command joined is left running
    ran = json.loads((tmp_path / "o" / "sweep.json").read_text())["executor"]
    assert ran["kind"] == "ray" and ran["ray_version"] == ray.__version__
    assert json.loads((want / "sweep.json").read_text())["executor"] == {"kind": "processes", "jobs": 1}


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
    rec, files, (added, hits, misses), error = _point_on_ray((spec, 1, "p1", values, dataclasses.replace(settings)),
                                                             _cache(want_cache))
    assert error is None and added == [] and (hits, misses) == (3, 0)   # its 3 layers read, none searched
    assert rec == {k: v for k, v in _records(want)[1].items() if k != "run"}     # (the store adds the run)
    assert files == _files(want / "points" / "p1")
    rec, _, (added, hits, misses), _ = _point_on_ray((spec, 1, "p1", values, settings), {})   # no records: it maps
    assert rec["energy_J"] == _records(want)[1]["energy_J"] and {k for k, _, _ in added} <= set(_cache(want_cache))
    assert len(added) == 3 and (hits, misses) == (0, 3)   # the 3 distinct layers on the point's one core design


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
                          ("localhost:64OO", "'64OO' is not a port number"),
                          ("http://localhost:8265", "no http:// scheme"), ("autoo", "autoo is not HOST:PORT")):
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


def test_a_broken_ray_install_is_said_as_such(tmp_path, capsys, monkeypatch):
    """A Ray whose import fails with another error (a broken install) is a usage error naming it,
    not an internal error of coexplore."""
    system = _system(tmp_path)
    fake = tmp_path / "shim" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise RuntimeError('half-installed wheel')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "shim"))
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    rc = main(["sweep", str(system), *FAST, "--no-cache", "--out", str(tmp_path / "o"), "--ray"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot be imported" in err and "half-installed wheel" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


def test_a_bad_ray_address_from_the_environment_names_the_variable(tmp_path, capsys, monkeypatch):
    system = _system(tmp_path)
    monkeypatch.setenv("RAY_ADDRESS", "junk")
    rc = main(["sweep", str(system), *FAST, "--no-cache", "--out", str(tmp_path / "o"), "--ray"])
    err = capsys.readouterr().err
    assert rc == 2 and "$RAY_ADDRESS" in err and "unset" in err and "Traceback" not in err, err


def test_on_ray_results_errors_and_other_versions(local_ray, monkeypatch):
    from coexplore.errors import CoexploreError
    from coexplore.workers import ray_tasks
    from coexplore.workers.processes import WorkerDied
    got = dict(ray_tasks.on_ray(abs, [-3, 4, -5], limit=1))
    assert got == {0: 3, 1: 4, 2: 5}
    assert dict(ray_tasks.on_ray(divmod, [7, 9], shared=4)) == {0: (1, 3), 1: (2, 1)}   # fn(task, shared)
    with pytest.raises(ValueError):                          # the task's own error, as raised here
        list(ray_tasks.on_ray(int, ["7", "x"]))
    with pytest.raises(WorkerDied, match="Ray task was lost twice"):
        list(ray_tasks.on_ray(os._exit, [3]))                # the worker process dies (twice: one retry)
    real = ray_tasks._versions()
    for key in ("coexplore", "source", "numpy", "scipy", "python"):     # the driver's, not the nodes'
        monkeypatch.setattr(ray_tasks, "_versions", lambda: {**real, key: "0.0.0"})
        with pytest.raises(CoexploreError, match=f"other versions than this machine: {key} ") as err:
            list(ray_tasks.on_ray(abs, [1]))
        assert "the same coexplore" in str(err.value)


def _interval(seconds: float) -> tuple:
    import time
    start = time.time()
    time.sleep(seconds)
    return start, time.time()


def test_at_most_limit_tasks_run_at_once(local_ray):
    from ray import cloudpickle

    from coexplore.workers.ray_tasks import on_ray
    cloudpickle.register_pickle_by_value(sys.modules[__name__])     # (this module is not on the nodes' path)
    spans = sorted(dict(on_ray(_interval, [0.3] * 4, limit=1)).values())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))      # one after the other


def _nap(task):
    import time
    seconds, path = task
    time.sleep(seconds)
    Path(path).write_text("ended")
    return seconds


def _die_once(marker: str) -> str:
    if not Path(marker).exists():
        Path(marker).write_text("died")
        os._exit(3)
    return "retried"


def _no_module(task):
    import coexplore_not_installed_on_the_node  # noqa: F401
    return task


def _by_value():
    from ray import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])     # (this module is not on the nodes' path)


def test_a_task_whose_worker_dies_once_is_retried(local_ray, tmp_path):
    from coexplore.workers.ray_tasks import on_ray
    _by_value()
    assert dict(on_ray(_die_once, [str(tmp_path / "m")])) == {0: "retried"}


def _meet(task: tuple) -> bool:
    """Say this task runs, then wait (up to a minute) until the other one says so too: True when
    both ran at once (a timing-free test of concurrency on a loaded machine)."""
    import time
    folder, me, other = task
    (Path(folder) / me).write_text("here")
    end = time.time() + 60
    while time.time() < end:
        if (Path(folder) / other).exists():
            return True
        time.sleep(0.05)
    return False


def test_without_a_limit_the_cluster_cpus_run_at_once(local_ray, tmp_path):
    from coexplore.workers.ray_tasks import on_ray
    _by_value()
    met = dict(on_ray(_meet, [(str(tmp_path), "a", "b"), (str(tmp_path), "b", "a")]))
    assert met == {0: True, 1: True}             # 2 CPUs: each task saw the other running


def test_leaving_the_loop_cancels_the_tasks_not_ended(local_ray, tmp_path):
    import time

    from coexplore.workers.ray_tasks import on_ray
    _by_value()
    ended = on_ray(_nap, [(0.0, str(tmp_path / "a")), (15.0, str(tmp_path / "b"))], limit=2)
    assert next(ended) == (0, 0.0)
    ended.close()                                  # (a stop or an error in the caller's loop)
    # b's nap is long: a loaded machine kills its worker late (a 6 s nap was outlived once in CI, beside
    # the other test worker)
    time.sleep(16.5)
    assert not (tmp_path / "b").exists()


def test_a_node_that_cannot_load_the_code_is_said(local_ray):
    from coexplore.errors import CoexploreError
    from coexplore.workers.ray_tasks import on_ray
    _by_value()
    with pytest.raises(CoexploreError, match="cannot run coexplore's tasks"):
        list(on_ray(_no_module, [1]))


def test_with_ray_the_driver_searches_and_runs_no_point(local_ray, one_process, tmp_path, capsys, monkeypatch):
    """The layer searches and the points run in the Ray tasks (other processes), not in the driver."""
    import coexplore.sweep.run as sweep_run
    import coexplore.system.from_system as from_system

    def not_here(*args, **kwargs):
        raise AssertionError("run in the driver")
    monkeypatch.setattr(from_system, "map_layer", not_here)
    monkeypatch.setattr(sweep_run, "run_point", not_here)
    system, want, _ = one_process
    rc = main(["sweep", str(system), *FAST, "--cache", str(tmp_path / "c.sqlite"), "--no-plot",
               "--out", str(tmp_path / "o"), "--ray"])
    assert rc == 0, capsys.readouterr().err
    assert _records(tmp_path / "o") == _records(want)


def test_each_cache_entry_is_searched_and_stored_once(local_ray, one_process, tmp_path):
    """The point tasks get the layers' records (they search nothing, add nothing): every entry is
    written to the driver's cache once, by the layer-search phase."""
    from coexplore.model.cache import ResultCache
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    system, want, want_cache = one_process
    stored = []

    class Counting(ResultCache):
        def put_many(self, items):
            items = list(items)
            stored.extend(k for k, _, _ in items)
            return super().put_many(items)
    with Counting(tmp_path / "c.sqlite") as cache:
        recs = run_sweep(load_system(system), SweepSettings(layer_budget=60, budget=60, workers=0, ray=True),
                         SweepStore(tmp_path / "o", "k"), cache=cache)
    assert sorted(stored) == sorted(_cache(want_cache))          # 6 pairs, each once
    assert [r["energy_J"] for r in recs] == [r["energy_J"] for r in _records(want)]


def test_ray_tasks_in_flight_follow_jobs_else_the_cluster(local_ray, one_process, tmp_path, capsys, monkeypatch):
    from coexplore.workers import ray_tasks
    real, limits = ray_tasks.on_ray, []

    def spy(fn, tasks, shared=None, limit=None):
        limits.append(limit)
        return real(fn, tasks, shared=shared, limit=limit)
    monkeypatch.setattr(ray_tasks, "on_ray", spy)
    system, _, _ = one_process
    for jobs, want in (([], None), (["--jobs", "1"], 1)):
        limits.clear()
        rc = main(["sweep", str(system), *FAST, "--cache", str(tmp_path / f"c{len(jobs)}.sqlite"), "--no-plot",
                   "--out", str(tmp_path / f"o{len(jobs)}"), "--ray", *jobs])
        assert rc == 0, capsys.readouterr().err
        assert len(limits) == 2 and set(limits) == {want}           # the layer searches, then the points


def test_a_ray_started_here_is_new_and_gets_jobs_cpus(tmp_path, capsys, monkeypatch):
    system = _system(tmp_path)
    got = {}

    def init(**kwargs):
        got.update(kwargs)
        raise ConnectionError("(the spy's)")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    rc = main(["sweep", str(system), *FAST, "--no-cache", "--out", str(tmp_path / "o"), "--ray", "--jobs", "3"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot start Ray on this machine" in err, err
    assert got["num_cpus"] == 3 and got["address"] == "local"      # never a cluster already running here


def test_points_on_ray_gives_tasks_one_process_settings_and_stores_what_they_add(one_process, tmp_path,
                                                                                 monkeypatch):
    """Ray's part done here (in order): each task runs its point alone (1 process, not Ray), the
    cap given is --jobs, the entries a task made reach the driver's cache, an error is raised as such."""
    from coexplore.errors import CoexploreError
    from coexplore.model.cache import ResultCache
    from coexplore.report.gantt import draw_gantt
    from coexplore.spec.system import load_system
    from coexplore.sweep import run as sweep_run
    from coexplore.sweep.run import SweepSettings, _points_on_ray, point_ids
    from coexplore.workers import ray_tasks
    system, want, want_cache = one_process
    spec = load_system(system)
    seen = {}

    def here(fn, tasks, shared=None, limit=None):
        seen.update(limit=limit, settings=[t[4] for t in tasks])
        for i, t in enumerate(tasks):
            yield i, (fn(t) if shared is None else fn(t, shared))
    monkeypatch.setattr(ray_tasks, "on_ray", here)
    points = spec.sweep_points()
    todo = [(i, pid, points[i]) for i, pid in enumerate(point_ids(len(points)))][:2]
    settings = SweepSettings(layer_budget=60, budget=60, workers=3, ray=True, gantt=draw_gantt)
    done = []
    with ResultCache(tmp_path / "c.sqlite") as cache:
        _points_on_ray(spec, todo, settings, tmp_path / "o", cache, {}, done.append)
        keys = set(cache.keys())
    assert seen["limit"] == 3 and all(s.workers == 1 and not s.ray for s in seen["settings"])
    assert [r["point"] for r in done] == ["p0", "p1"]
    assert _files(tmp_path / "o" / "points" / "p1") == _files(want / "points" / "p1")
    assert keys and keys <= set(_cache(want_cache))       # what the tasks searched, stored by the driver

    def fails(*args, **kwargs):
        raise CoexploreError("made to fail", key="k.x", expected="y")
    monkeypatch.setattr(sweep_run, "run_point", fails)
    with pytest.raises(CoexploreError, match="made to fail") as err:
        _points_on_ray(spec, todo[:1], settings, tmp_path / "o2", None, {}, done.append)
    assert err.value.key == "k.x" and not (tmp_path / "o2" / "points" / "p0").exists()


def test_put_files_replaces_a_folder_whole(tmp_path):
    from coexplore.sweep.run import _put_files
    folder = tmp_path / "points" / "p1"
    (folder / "old").mkdir(parents=True)
    (folder / "old" / "x.txt").write_text("an earlier run's")
    (tmp_path / "points" / ".p1.part").mkdir()
    (tmp_path / "points" / ".p1.part" / "junk").write_text("left by a stop")
    _put_files(folder, {"a.json": b"1", "cores/c/ERT.yaml": b"2"})
    assert _files(folder) == {"a.json": b"1", "cores/c/ERT.yaml": b"2"}
    assert [p.name for p in folder.parent.iterdir()] == ["p1"]
    _put_files(folder, {})                           # a point that failed before writing: no folder
    assert list(folder.parent.iterdir()) == []


def test_failed_points_leave_the_folders_one_process_leaves(local_ray, tmp_path):
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    system = _system(tmp_path)
    system.write_text(system.read_text().replace("pe_mesh_x: [4, 14]", "pe_mesh_x: [4, 0]"))
    spec = load_system(system)
    runs = {}
    for name, ray_on in (("one", False), ("ray", True)):
        runs[name] = run_sweep(spec, SweepSettings(layer_budget=30, budget=30, ray=ray_on, workers=0 if ray_on else 1),
                               SweepStore(tmp_path / name, "k"))
        assert [r["status"] for r in runs[name]] == ["ok", "ok", "failed", "failed"]
    assert runs["one"] == runs["ray"]
    assert _files(tmp_path / "one" / "points") == _files(tmp_path / "ray" / "points")
    assert sorted(p.name for p in (tmp_path / "ray" / "points").iterdir()) == ["p0", "p1"]


def test_memory_cache_counts_and_keeps_meta():
    from coexplore.model.cache import MemoryCache
    mem = MemoryCache({"a": {"x": 1}})
    mem.get("a"), mem.get("a"), mem.get("b")
    assert (mem.hits, mem.misses) == (2, 1)
    mem.put("b", {"v": 1}, {"backend": "builtin"})
    assert mem.added == [("b", {"v": 1}, {"backend": "builtin"})]


def test_ray_prints_go_to_stderr(capfd):
    from coexplore.workers.ray_tasks import stdout_to_stderr
    with stdout_to_stderr():
        print("from python")
        os.write(1, b"from a descriptor\n")
    print("after")
    out, err = capfd.readouterr()
    assert out == "after\n" and "from python" in err and "from a descriptor" in err


def test_an_address_that_is_not_ray_is_said_within_the_timeout(tmp_path):
    """Something answers at the port (here a plain TCP server), but not as Ray: refused after the
    probe's time limit instead of Ray's endless retries."""
    import socket
    import threading
    import time

    from coexplore.errors import CoexploreError
    from coexplore.workers.ray_tasks import start_ray
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                pass
    threading.Thread(target=accept, daemon=True).start()
    t0 = time.time()
    try:
        with pytest.raises(CoexploreError) as err:
            start_ray(f"127.0.0.1:{server.getsockname()[1]}", timeout=8)
    finally:
        stop.set()
        server.close()
    assert time.time() - t0 < 30 and (err.value.key, err.value.option) == ("ray", "--ray")
    assert "no Ray cluster answered" in str(err.value) or "cannot connect" in str(err.value)


def test_a_two_node_cluster_by_address(one_process, tmp_path):
    """A cluster of two 1-CPU nodes (two raylets on this machine), joined by address by the command in
    a process of its own: the tasks and their results cross between nodes, the records are those of
    one process, and Ray's reports stay off standard output (--json)."""
    import subprocess

    from ray.cluster_utils import Cluster
    system, want, _ = one_process
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        done = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "sweep", str(system), *FAST, "--no-cache",
                               "--out", str(tmp_path / "o"), "--ray", cluster.address, "--json"],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
    finally:
        cluster.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]

    def unkeyed(records):          # (the run key digests the bundled mapper file by its path: an installed
        return [{k: v for k, v in r.items() if k != "run"} for r in records]    # copy's or a checkout's)
    assert unkeyed(json.loads(done.stdout)["records"]) == unkeyed(_records(want))


def test_a_bad_cache_is_said_before_ray_starts(tmp_path, capsys, monkeypatch):
    from coexplore.workers import ray_tasks

    def not_now(*args, **kwargs):
        raise AssertionError("Ray started before the cache was checked")
    monkeypatch.setattr(ray_tasks, "start_ray", not_now)
    system = _system(tmp_path)
    (tmp_path / "a_folder").mkdir()
    rc = main(["sweep", str(system), *FAST, "--cache", str(tmp_path / "a_folder"), "--out", str(tmp_path / "o"),
               "--ray"])
    err = capsys.readouterr().err
    assert rc == 2 and "cache" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


def test_a_task_scratch_folder_is_removed_and_gone_workers_folders_with_it(tmp_path, monkeypatch):
    """The folders of processes that ended (a cancelled task's) go when the next task starts; a live
    process's folder and other names stay; a task's own folder goes when it ends, error or not."""
    import subprocess
    import tempfile

    from coexplore.workers.ray_tasks import SCRATCH_PREFIX, scratch_folder
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name in (f"{SCRATCH_PREFIX}{gone}-abc", f"{SCRATCH_PREFIX}{live.pid}-abc", f"{SCRATCH_PREFIX}x-abc",
                     f"other-{gone}-abc"):
            (tmp_path / name / "points").mkdir(parents=True)
        with scratch_folder() as tmp:
            (Path(tmp) / "f").write_text("x")
            left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted([Path(tmp).name, f"{SCRATCH_PREFIX}{live.pid}-abc", f"{SCRATCH_PREFIX}x-abc",
                               f"other-{gone}-abc"])
        with pytest.raises(RuntimeError), scratch_folder() as tmp:
            raise RuntimeError
        assert not Path(tmp).exists() and len(list(tmp_path.iterdir())) == 3
    finally:
        live.kill()
        live.wait()


def test_a_node_importing_coexplore_elsewhere_is_told_where():
    """A Ray worker started in a clone imports the clone's coexplore/, not the installed package: the
    refusal says where each side imports it from and what to do."""
    from coexplore.workers import ray_tasks
    here = ray_tasks._package_folder()
    assert ray_tasks._imported_from(here) == ""
    msg = ray_tasks._imported_from("/elsewhere/coexplore")
    assert "/elsewhere/coexplore there" in msg and f"{here} here" in msg and "pip install -e ." in msg


def test_a_plugin_file_reaches_the_ray_tasks(local_ray, tmp_path, capsys):
    """User study: a plugin given as a .py file failed every --ray task ('No module named
    _coexplore_plugin_...', blamed on the node's versions): Ray loaded the task's arguments, which hold
    the plugin's searcher class, before the task imported the plugin. The same points as --jobs 1."""
    from coexplore import plugins
    from coexplore.online import schedulers
    from coexplore.search import registry
    from coexplore.system import schedule
    plug = tmp_path / "plug.py"
    plug.write_text((Path(__file__).resolve().parents[1] / "examples" / "my_searchers.py").read_text())
    system = _system(tmp_path)
    runs = {}
    try:
        for how in (["--ray"], ["--jobs", "1"]):
            out = tmp_path / how[0].strip("-")
            rc = main(["--plugin", str(plug), "sweep", str(system), *FAST, "--layer-searcher", "hill", "--searcher",
                       "uniform", "--no-cache", "--no-plot", "--out", str(out), *how])
            assert rc == 0, capsys.readouterr().err
            runs[how[0]] = (out / "points.csv").read_text()
    finally:
        registry.SEARCHERS.pop("hill", None)
        schedule.CUSTOM.pop("uniform", None)
        schedulers.HEURISTICS.pop("patient", None)
        plugins._LOADED.clear()
    assert runs["--ray"] == runs["--jobs"]


def test_an_empty_address_is_refused_not_read_as_a_local_ray(tmp_path, capsys):
    """User study: `--ray "$HEAD"` with HEAD unset started a local Ray without a word."""
    with pytest.raises(SystemExit):
        main(["sweep", str(_system(tmp_path)), "--ray=", "--out", str(tmp_path / "o")])
    assert "--ray: an empty address" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_auto_is_said_by_the_address_it_finds_and_refused_at_once_without_one(tmp_path, capsys, monkeypatch):
    """User study: with the cluster `ray start` began gone, `--ray auto` waited Ray's 60 s and named
    no address; with none started, Ray's own error. Both are said at once, the stale one by address."""
    import socket
    import time

    from ray._private import services
    system = _system(tmp_path)
    with socket.socket() as s:                       # a port nothing listens on (its socket closed below)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def none(addr, temp_dir):
        raise ConnectionError("Could not find any running Ray instance.")
    for found, said in ((lambda addr, temp_dir: f"127.0.0.1:{port}", f"nothing answers at auto (127.0.0.1:{port})"),
                        (none, "no Ray cluster was started on this machine")):
        monkeypatch.setattr(services, "get_ray_address_from_environment", found)
        start = time.monotonic()
        rc = main(["sweep", str(system), *FAST, "--no-cache", "--out", str(tmp_path / "o"), "--ray", "auto"])
        err = capsys.readouterr().err
        assert rc == 2 and said in err and "Traceback" not in err, err
        assert time.monotonic() - start < 30
    assert not (tmp_path / "o").exists()


def test_a_system_file_after_ray_is_not_taken_for_an_address(tmp_path, capsys):
    """User study: `coexplore sweep --ray small.yaml` said "the following arguments are required:
    SYSTEM.yaml" (small.yaml had become the Ray address)."""
    with pytest.raises(SystemExit):
        main(["sweep", "--ray", str(_system(tmp_path)), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "is a YAML file, not a Ray address" in err and "--ray" in err
