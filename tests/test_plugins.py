"""`coexplore --plugin` / $COEXPLORE_PLUGINS: a module of the user's own registers a layer searcher, a
system scheduler and an online policy, and every command (and its worker processes) finds them."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from coexplore.cli.main import main
from conftest import CORPUS

ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
TABLE = CORPUS.parent / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"

# the README's example plugin (a layer mapper "hill", a scheduler "uniform", an online policy "patient")
PLUGIN = (Path(__file__).resolve().parents[1] / "examples" / "my_searchers.py").read_text()


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "my_plugin.py"
    path.write_text(PLUGIN)
    yield path
    from coexplore import plugins                     # (this process imported it: forget its names)
    from coexplore.online import schedulers
    from coexplore.search import registry
    from coexplore.system import schedule
    registry.SEARCHERS.pop("hill", None)
    schedule.CUSTOM.pop("uniform", None)
    schedulers.HEURISTICS.pop("patient", None)
    plugins._LOADED.clear()


def test_a_plugin_searcher_maps_a_layer_and_evaluate_reproduces_it(tmp_path, plugin, capsys):
    assert main(["map", str(ARCH), str(LAYER), "--searcher", "hill", "--budget", "300", "--no-cache"]) == 2
    assert "unknown searcher 'hill'" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["--plugin", str(plugin), "map", str(ARCH), str(LAYER), "--searcher", "hill", "--budget", "300",
                 "--seed", "1", "--out", str(out), "--json", "--cache", str(tmp_path / "c.sqlite")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["searcher"] == "hill" and got["samples"] == 300 and got["best"]["valid"]
    assert "COEXPLORE_PLUGINS" not in os.environ            # (main leaves the caller's environment as it was)
    assert main(["evaluate", str(ARCH), str(LAYER), got["mapping_file"], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["energy_pJ"] == got["best"]["energy_pJ"] and again["cycles"] == got["best"]["cycles"]
    # a mapper YAML naming it, with its config
    (tmp_path / "hill.yaml").write_text("searcher: hill\nconfig: {moves: 2}\n")
    assert main(["--plugin", str(plugin), "map", str(ARCH), str(LAYER), "--searcher", str(tmp_path / "hill.yaml"),
                 "--budget", "200", "--no-cache", "--json", "--out", str(tmp_path / "o2")]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two["samples"] == 200
    # the option does something (a user study found the example's `moves` read by nothing)
    assert main(["--plugin", str(plugin), "map", str(ARCH), str(LAYER), "--searcher", "hill",
                 "--budget", "1000", "--no-cache", "--json", "--out", str(tmp_path / "o1")]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(["--plugin", str(plugin), "map", str(ARCH), str(LAYER), "--searcher", str(tmp_path / "hill.yaml"),
                 "--budget", "1000", "--no-cache", "--json", "--out", str(tmp_path / "o3")]) == 0
    assert json.loads(capsys.readouterr().out)["history"] != one["history"]


def test_worker_processes_import_the_plugin_too(tmp_path, plugin, capsys):
    """`--jobs 2` runs the layers in spawned processes, which import the plugin from $COEXPLORE_PLUGINS."""
    assert main(["--plugin", str(plugin), "map", "simba", "dlrm_mlp", "--all-layers", "--searcher", "hill",
                 "--budget", "100", "--jobs", "2", "--no-cache", "--no-progress", "--json",
                 "--out", str(tmp_path / "w")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["complete"]


def test_a_plugin_scheduler_and_online_policy_run_by_name(tmp_path, plugin, capsys):
    """The registered system searcher is a uniform random search: same seed, same schedule as `random`;
    the online policy is FCFS under another name: the same service."""
    runs = {}
    for name in ("uniform", "random"):
        assert main(["--plugin", str(plugin), "schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher",
                     name, "--budget", "300", "--seed", "4", "--json", "--out", str(tmp_path / name)]) == 0
        runs[name] = json.loads(capsys.readouterr().out)
    assert runs["uniform"]["searcher"] == "uniform" and runs["uniform"]["samples"] == 300
    assert runs["uniform"]["makespan"] == runs["random"]["makespan"]
    assert runs["uniform"]["core"] == runs["random"]["core"]
    import hashlib
    digest = hashlib.sha256(plugin.read_bytes()).hexdigest()   # an edited plugin is another run, not resumed
    run = json.loads((tmp_path / "uniform" / "schedule.json").read_text())["run"]
    assert list(run["plugins_sha256"].values()) == [digest]
    import numpy as np
    from coexplore.system.jobs import Job, JobTable
    from coexplore.system.tables import save_table
    table = tmp_path / "jobs.csv"
    save_table(JobTable([Job(name=f"cnn.l{i}", dnn="cnn", layer=f"l{i}") for i in range(3)], ["a", "b"],
                        np.array([[400.0, 900], [300, 500], [100, 120]]), np.array([[3.0, 1], [9, 4], [12, 10]]),
                        np.array([[50.0, 40], [40, 30], [10, 9]])), table)
    assert main(["--plugin", str(plugin), "online", "--table", str(table), "--bandwidth", "16", "--load", "1.0",
                 "--requests", "30", "--seeds", "2", "--schedulers", "fcfs,patient", "--no-progress", "--no-plot",
                 "--out", str(tmp_path / "on"), "--json"]) == 0
    online = json.loads((tmp_path / "on" / "online.json").read_text())
    assert list(online["run"]["plugins_sha256"].values()) == [digest]
    by = online["schedulers"]
    timing = ("decision_us",)                      # (wall time per decision: not a property of the schedule)
    assert {k: v for k, v in by["patient"].items() if k not in timing} == \
        {k: v for k, v in by["fcfs"].items() if k not in timing}


def test_an_edited_plugin_module_is_searched_again_not_read_from_the_cache(tmp_path, capsys):
    """The cache key holds the plugin module's bytes: a changed module-level helper (not a method)
    gives a fresh search, not the cached result of the old code."""
    from coexplore import plugins
    from coexplore.search import registry
    path = tmp_path / "edited.py"
    runs = []
    helper = "\n\ndef first(space, rng, n):\n    return space.sample(rng, n)\n"
    for body in ("space.sample(rng, n)", "space.sample(rng, n)[::-1]"):       # the helper alone changes
        text = PLUGIN.replace('"hill"', '"hill_e"') + helper.replace("space.sample(rng, n)\n", body + "\n")
        path.write_text(text.replace("return self.space.sample(self.rng, n)", "return first(self.space, self.rng, n)"))
        plugins._LOADED.clear()
        registry.SEARCHERS.pop("hill_e", None)
        assert main(["--plugin", str(path), "map", str(ARCH), str(LAYER), "--searcher", "hill_e", "--budget", "100",
                     "--json", "--out", str(tmp_path / f"o{len(runs)}"), "--cache", str(tmp_path / "c.sqlite")]) == 0
        runs.append(json.loads(capsys.readouterr().out)["cached"])
    registry.SEARCHERS.pop("hill_e", None)
    plugins._LOADED.clear()
    assert runs == [False, False]


def test_a_plugin_named_like_a_module_prints_to_stderr_and_exits_cleanly(tmp_path, capsys):
    """A plugin file called random.py does not replace the random module; what it prints while
    importing goes to stderr (stdout carries --json); SystemExit in it is a one-line error."""
    from coexplore import plugins
    (tmp_path / "random.py").write_text('print("hello from the plugin")\n')
    try:
        assert main(["--plugin", str(tmp_path / "random.py"), "map", str(ARCH), str(LAYER), "--searcher", "random",
                     "--budget", "50", "--no-cache", "--json", "--out", str(tmp_path / "o")]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["samples"] == 50 and "hello from the plugin" in err
        (tmp_path / "leave.py").write_text("raise SystemExit(0)\n")
        assert main(["--plugin", str(tmp_path / "leave.py"), "map", str(ARCH), str(LAYER), "--no-cache"]) == 2
        assert "failed to import: SystemExit" in capsys.readouterr().err
    finally:
        plugins._LOADED.clear()


def test_a_plugin_that_takes_a_built_in_name_is_refused(tmp_path, capsys):
    """User study: replacing a built-in layer searcher ran the plugin's class with the bundled mapper
    file's options (refused as unknown options), while a system scheduler under a built-in name was
    said not to run. Both are refused up front (exit 2, one line), the registries left as they were."""
    from coexplore import plugins
    from coexplore.search import registry
    from coexplore.system import schedule
    saved = dict(registry.SEARCHERS)
    (tmp_path / "shadow.py").write_text(
        "from coexplore.search import registry\n"
        "cls, cfg = registry.SEARCHERS['ga']\n"
        "registry.SEARCHERS['ga'] = (type('Mine', (cls,), {}), cfg)\n")
    (tmp_path / "shadow2.py").write_text(
        "from coexplore.system import schedule\nschedule.CUSTOM['MAGMA'] = lambda space, table, budget, seed: None\n")
    try:
        assert main(["--plugin", str(tmp_path / "shadow.py"), "map", str(ARCH), str(LAYER), "--searcher", "ga",
                     "--budget", "50", "--no-cache", "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "a plugin registers the layer searcher 'ga', a built-in name" in err and "Traceback" not in err
        assert registry.SEARCHERS == saved and not (tmp_path / "o").exists()
        plugins._LOADED.clear()
        assert main(["--plugin", str(tmp_path / "shadow2.py"), "schedule", "--table", str(TABLE), "--bandwidth",
                     "16", "--budget", "50", "--out", str(tmp_path / "s")]) == 2
        assert "system scheduler 'MAGMA', a built-in name (names are read case-blind)" in capsys.readouterr().err
        assert "MAGMA" not in schedule.CUSTOM
    finally:
        registry.SEARCHERS.clear()
        registry.SEARCHERS.update(saved)
        schedule.CUSTOM.pop("MAGMA", None)
        plugins._LOADED.clear()


def test_a_file_plugin_imports_its_sibling_modules(tmp_path, capsys):
    """A plugin file's folder is searched (after everything else) for the modules it imports, also
    when it imports them late, inside a method."""
    from coexplore import plugins
    from coexplore.search import registry
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "sibling_picks_xyz.py").write_text("def pick(space, rng, n):\n    return space.sample(rng, n)\n")
    (folder / "late.py").write_text(PLUGIN.replace('"hill"', '"hill_late"').replace(
        "return self.space.sample(self.rng, n)",
        "import sibling_picks_xyz\n            return sibling_picks_xyz.pick(self.space, self.rng, n)"))
    try:
        assert main(["--plugin", str(folder / "late.py"), "map", str(ARCH), str(LAYER), "--searcher", "hill_late",
                     "--budget", "60", "--no-cache", "--json", "--out", str(tmp_path / "o")]) == 0
        assert json.loads(capsys.readouterr().out)["samples"] == 60
    finally:
        registry.SEARCHERS.pop("hill_late", None)
        plugins._LOADED.clear()


@pytest.mark.parametrize("given, says", [
    ("no_such_module_here", "no module named 'no_such_module_here'"),
    ("missing.py", "no such file"),
    ("broken.py", "failed to import: ZeroDivisionError"),
])
def test_a_bad_plugin_is_one_line(tmp_path, capsys, given, says):
    (tmp_path / "broken.py").write_text("x = 1 / 0\n")
    name = str(tmp_path / given) if given.endswith(".py") else given
    assert main(["--plugin", name, "map", str(ARCH), str(LAYER), "--budget", "10", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "--plugin" in err


SCHEDULER_PLUGIN = '''
import numpy as np
from coexplore.search.base import Searcher
from coexplore.system import schedule

class Sampler(Searcher):
    name = "NAME"
    def __init__(self, space, seed, how):
        super().__init__(seed)
        self.space, self.how = space, how
        self.keep = lambda x: x                      # an attribute pickle cannot save
    def ask(self, n):
        if self.how == "raise":
            raise ValueError("my own bug")
        print("asking", n)                           # a plugin's print: not into --json
        return self.space.sample(self.rng, n)
    def tell(self, batch, losses):
        losses = super().tell(batch, losses)
        if self.how == "liar":                       # says its worst candidate is its best
            self.best_x = np.array(batch[int(np.argmax(losses))])
        return losses

def make(space, table, budget, seed):
    print("made")
    return Sampler(space, seed, "HOW")

schedule.CUSTOM["NAME"] = make
'''


def _scheduler_plugin(tmp_path, name: str, how: str) -> Path:
    path = tmp_path / f"{how}_plugin.py"
    path.write_text(SCHEDULER_PLUGIN.replace("NAME", name).replace("HOW", how))
    return path


@pytest.fixture
def forget():
    yield
    from coexplore import plugins
    from coexplore.system import schedule
    for k in [k for k in schedule.CUSTOM if k.lower() in ("uniformish", "liar", "boom", "lambdas")]:
        schedule.CUSTOM.pop(k)
    plugins._LOADED.clear()


def test_the_schedule_is_the_best_the_driver_saw_not_the_plugins_idea_of_it(tmp_path, capsys, forget):
    """User study: a plugin keeping another best_x got that schedule reported (12x the makespan its
    history reached)."""
    rc = main(["--plugin", str(_scheduler_plugin(tmp_path, "liar", "liar")), "schedule", "--table", str(TABLE),
               "--bandwidth", "1", "--budget", "300", "--searcher", "liar", "--no-plot", "--json",
               "--out", str(tmp_path / "o")])
    got = json.loads(capsys.readouterr().out)
    assert rc == 0 and got["makespan"] == pytest.approx(min(v for _, v in got["history"]), rel=1e-12)


def test_a_plugins_exception_is_said_as_the_plugins_not_as_a_coexplore_bug(tmp_path, capsys, forget):
    rc = main(["--plugin", str(_scheduler_plugin(tmp_path, "boom", "raise")), "schedule", "--table", str(TABLE),
               "--bandwidth", "1", "--budget", "300", "--searcher", "boom", "--no-plot", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "a plugin's code) raised ValueError in ask: my own bug" in err, err


def test_a_searcher_state_pickle_cannot_save_is_said_and_the_search_goes_on(tmp_path):
    """User study: a plugin scheduler holding a lambda died at its first periodic save (30 s in, or
    at a Ctrl-C): a traceback, no result at all."""
    from coexplore.search.base import run_search
    from coexplore.search.checkpoint import Checkpoint
    from coexplore.search.space import DiscreteSpace
    from coexplore.search.random_search import RandomSearch
    said = []
    s = RandomSearch(DiscreteSpace([4, 4], ["a", "b"]), seed=0)
    s.keep = lambda x: x
    ck = Checkpoint(tmp_path / "ck.pkl", "k", every_s=0.0, say=said.append)
    res = run_search(s, lambda x: np.asarray(x, float).sum(axis=1) + 1, budget=12, batch_size=4, checkpoint=ck)
    assert res.samples == 12 and res.best_loss == 1.0
    assert len(said) == 1 and "cannot be saved" in said[0] and not (tmp_path / "ck.pkl").exists()
    # said at the start, not only at a save (a run shorter than the 30 s between saves learnt it at a stop)
    said.clear()
    s = RandomSearch(DiscreteSpace([4, 4], ["a", "b"]), seed=0)
    s.keep = lambda x: x
    ck = Checkpoint(tmp_path / "ck2.pkl", "k", every_s=3600.0, say=said.append)
    run_search(s, lambda x: np.asarray(x, float).sum(axis=1) + 1, budget=12, batch_size=4, checkpoint=ck)
    assert len(said) == 1 and "cannot be saved" in said[0] and "RandomSearch" in said[0]


def test_plugin_names_options_and_registering_nothing(tmp_path, capsys, forget):
    """A scheduler name with capitals is found (names are read case-blind); a name that is no
    name (a path) is refused; --plugin after the command works; a plugin that registers nothing is said."""
    path = _scheduler_plugin(tmp_path, "UniformIsh", "sample")
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "1", "--budget", "200", "--searcher", "UniformIsh",
               "--no-plot", "--json", "--out", str(tmp_path / "o"), "--plugin", str(path)])
    assert rc == 0 and json.loads(capsys.readouterr().out)["samples"] == 200
    bad = _scheduler_plugin(tmp_path, "../../escape", "bad")
    assert main(["--plugin", str(bad), "schedule", "--table", str(TABLE), "--bandwidth", "1", "--budget", "10",
                 "--out", str(tmp_path / "b")]) == 2
    assert "registers the system scheduler name '../../escape'" in capsys.readouterr().err
    from coexplore.system import schedule
    schedule.CUSTOM.pop("../../escape", None)
    (tmp_path / "nothing.py").write_text("x = 1\n")
    assert main(["--plugin", str(tmp_path / "nothing.py"), "schedule", "--table", str(TABLE), "--bandwidth", "1",
                 "--budget", "50", "--no-plot", "--out", str(tmp_path / "n")]) == 0
    assert "registered no searcher or scheduler" in capsys.readouterr().err


CHATTY_PLUGIN = '''
from dataclasses import dataclass
from coexplore.online import schedulers
from coexplore.search import registry
from coexplore.search.random_search import RandomSearch

@dataclass
class ChattyConfig:
    pass

class Chatty(RandomSearch):
    name = "chatty"
    def __init__(self, space, config=None, seed=0):
        print("making a chatty searcher")
        super().__init__(space, None, seed)

class Talker(schedulers.FCFS):
    name = "talker"
    def reset(self, sim, seed):
        print("resetting")
        return super().reset(sim, seed)
    def decide(self, sim):
        print("deciding")
        return super().decide(sim)

registry.SEARCHERS["chatty"] = (Chatty, ChattyConfig)
schedulers.HEURISTICS["talker"] = Talker
'''


def test_what_a_plugin_prints_in_init_and_decide_stays_out_of_json(tmp_path, capsys):
    """User study: a plugin searcher's __init__ and an online policy's decide printed into stdout,
    so `--json` output did not parse."""
    from coexplore import plugins
    from coexplore.online import schedulers
    from coexplore.search import registry
    path = tmp_path / "chatty.py"
    path.write_text(CHATTY_PLUGIN)
    try:
        assert main(["--plugin", str(path), "map", str(ARCH), str(LAYER), "--searcher", "chatty", "--budget", "60",
                     "--no-cache", "--json", "--out", str(tmp_path / "m")]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["samples"] == 60 and "making a chatty searcher" in err
        from coexplore.system.jobs import Job, JobTable
        from coexplore.system.tables import save_table
        csv = tmp_path / "jobs.csv"
        save_table(JobTable([Job(name=f"cnn.l{i}", dnn="cnn", layer=f"l{i}") for i in range(2)], ["a", "b"],
                            np.array([[400.0, 900], [300, 500]]), np.array([[3.0, 1], [9, 4]]),
                            np.array([[50.0, 40], [40, 30]])), csv)
        assert main(["--plugin", str(path), "online", "--table", str(csv), "--bandwidth", "16", "--load", "0.5",
                     "--requests", "20", "--seeds", "1", "--schedulers", "talker", "--no-progress", "--no-plot",
                     "--out", str(tmp_path / "on"), "--json"]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["schedulers"]["talker"] and "resetting" in err and "deciding" in err
    finally:
        registry.SEARCHERS.pop("chatty", None)
        schedulers.HEURISTICS.pop("talker", None)
        plugins._LOADED.clear()


def test_a_plugin_list_naming_none_says_nothing(tmp_path, capsys, monkeypatch):
    """User study: COEXPLORE_PLUGINS="," warned that "the plugin  registered no searcher"."""
    monkeypatch.setenv("COEXPLORE_PLUGINS", ",")
    assert main(["cache", "stats", "--cache", str(tmp_path / "c.sqlite")]) == 0
    assert "plugin" not in capsys.readouterr().err


def test_every_commands_help_lists_plugin(capsys):
    """User study: `--plugin` may come after the command, but no command's --help listed it."""
    for command in ("map", "schedule", "sweep", "online", "evaluate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--plugin MODULE|FILE.py" in capsys.readouterr().out


BROKEN = '''
from dataclasses import dataclass
from coexplore.online import schedulers
from coexplore.search import registry
from coexplore.search.base import Searcher


@dataclass
class Needs:
    k: int


@dataclass
class Empty:
    pass


class Fine(Searcher):
    def __init__(self, space, config=None, seed=0):
        super().__init__(seed)
        self.space = space

    def ask(self, n):
        return self.space.sample(self.rng, n)


class Boom(Fine):
    def __init__(self, space, config=None, seed=0):
        raise RuntimeError("init boom")


class TwoArgs(Fine):
    def __init__(self, space, seed=0):
        super().__init__(space, None, seed)


class Raises(schedulers.Scheduler):
    def reset(self, sim, seed):
        pass

    def decide(self, sim):
        raise ValueError("decide boom")


class Nothing(Raises):
    def decide(self, sim):
        return None


class NoStart(Raises):
    def __init__(self):
        raise ZeroDivisionError("ctor boom")


class Twice(Raises):
    def decide(self, sim):
        return [(r, 0) for r in sim.ready[:2]] if len(sim.ready) > 1 and 0 in sim.idle_cores() else []


registry.SEARCHERS.update(bx_init=(Boom, Empty), bx_args=(TwoArgs, Empty), bx_cfg=(Fine, Needs))
schedulers.HEURISTICS.update(bx_raises=Raises, bx_none=Nothing, bx_ctor=NoStart, bx_twice=Twice)
'''


@pytest.mark.parametrize("searcher,says", [
    ("bx_init", "broken.py's Boom (a plugin's code) raised RuntimeError in __init__: init boom"),
    ("bx_args", "broken.py's TwoArgs (a plugin's code) raised TypeError in __init__"),
    ("bx_cfg", "broken.py's Needs (a plugin's code) raised TypeError in config")])
def test_a_plugin_searcher_that_cannot_be_built_is_the_plugins_error(tmp_path, capsys, searcher, says):
    """User study: these were tracebacks and 'internal error (a bug in coexplore)', exit 3."""
    from coexplore import plugins
    from coexplore.search import registry
    (tmp_path / "broken.py").write_text(BROKEN)
    try:
        rc = main(["--plugin", str(tmp_path / "broken.py"), "map", str(ARCH), str(LAYER), "--searcher", searcher,
                   "--budget", "50", "--no-cache", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err and says in err, err
    finally:
        for k in ("bx_init", "bx_args", "bx_cfg"):
            registry.SEARCHERS.pop(k, None)
        plugins._LOADED.clear()


def test_a_plugin_online_policy_that_raises_or_answers_nothing_is_the_plugins_error(tmp_path):
    from coexplore import plugins
    from coexplore.errors import CoexploreError
    from coexplore.online import schedulers
    from coexplore.online.models import served_system
    from coexplore.online.simulator import simulate
    from coexplore.online.stream import Scenario, poisson_stream
    (tmp_path / "broken.py").write_text(BROKEN)
    try:
        plugins.load(str(tmp_path / "broken.py"))
        from coexplore.system.jobs import Job, JobTable
        lat = np.array([[100.0, 150.0], [80.0, 60.0]])
        system = served_system(JobTable([Job(name=f"d{i}.l", dnn=f"d{i}", layer="l") for i in range(2)], ["a", "b"],
                                        lat, np.ones_like(lat), np.ones_like(lat)), 16.0)
        stream = poisson_stream(system, Scenario(requests=10), 0)
        with pytest.raises(CoexploreError, match="broken.py's Raises .a plugin's code. raised ValueError in decide"):
            simulate(system, stream, "bx_raises")
        with pytest.raises(CoexploreError, match="broken.py's Nothing answered decide.sim. with NoneType"):
            simulate(system, stream, "bx_none")
        with pytest.raises(CoexploreError, match="broken.py's NoStart .a plugin's code. raised ZeroDivisionError in __init__"):
            simulate(system, stream, "bx_ctor")
        # (a study: "core a is busy" did not say whose decision it was)
        with pytest.raises(CoexploreError, match=r"broken.py's Twice answered decide\(sim\) with \(\d+, 0\): core a is busy"):
            simulate(system, poisson_stream(system, Scenario(load=3.0, requests=30), 0), "bx_twice")
    finally:
        for k in ("bx_raises", "bx_none", "bx_ctor", "bx_twice"):
            schedulers.HEURISTICS.pop(k, None)
        plugins._LOADED.clear()


def test_a_plugins_own_options_follow_their_annotations_not_the_builtin_rules(monkeypatch):
    """User study: a plugin's config was checked by the built-in searchers' rules (the type of the
    default, no negatives, `*_rate` a fraction, `layers` at most 32, SA's t_start >= t_end even with
    no YAML). A plugin's option follows its annotation only; a built-in option keeps its rules."""
    from dataclasses import dataclass
    from coexplore.errors import CoexploreError
    from coexplore.search import registry
    from coexplore.search.random_search import RandomSearch

    @dataclass
    class OddConfig:
        sigma: float = 1
        shift: float = 0.0
        mode: str | None = None
        widths: tuple = (32, 32)
        layers: int = 2
        growth_rate: float = 1.5
        t_start: float = 1.0
        t_end: float = 2.0

    monkeypatch.setitem(registry.SEARCHERS, "odd", (RandomSearch, OddConfig))
    assert registry.mapper_spec("odd").config == OddConfig()                 # defaults as written
    got = registry.mapper_spec("odd", {"sigma": 0.5, "shift": -1.0, "mode": "fast", "widths": [16, 16],
                                       "layers": 64, "growth_rate": 2.0}).config
    assert got == OddConfig(sigma=0.5, shift=-1.0, mode="fast", widths=(16, 16), layers=64, growth_rate=2.0)
    assert isinstance(got.sigma, float) and isinstance(got.widths, tuple)
    for key, bad in (("layers", 2.5), ("mode", 3), ("widths", 5), ("sigma", "x"), ("layers", True)):
        with pytest.raises(CoexploreError, match=f"config.{key}'.*bad value"):
            registry.mapper_spec("odd", {key: bad})
    with pytest.raises(CoexploreError, match="between 0 and 1"):          # a built-in option keeps its rule
        registry.mapper_spec("ga", {"mutation_rate": 2.0})


def test_a_scheduler_plugin_whose_factory_takes_config_gets_the_mapper_files(tmp_path, capsys):
    """User study: a system mapper YAML's `config:` was refused for every plugin ("takes no config"),
    so a scheduler's settings could only come from the environment. A factory with a `config`
    parameter gets the file's mapping (recorded in schedule.json); one without is refused as before."""
    from coexplore import plugins
    from coexplore.system import schedule
    (tmp_path / "cfg_plugin.py").write_text(
        "from coexplore.system import schedule\n"
        "from coexplore.system.baselines import RandomSearcher\n"
        "SEEN = []\n"
        "def tuned(space, table, budget, seed, config=None):\n"
        "    SEEN.append(config)\n"
        "    return RandomSearcher(space, seed=seed + int((config or {}).get('offset', 0)))\n"
        "def plain(space, table, budget, seed):\n"
        "    return RandomSearcher(space, seed=seed)\n"
        "schedule.CUSTOM['tuned'] = tuned\nschedule.CUSTOM['plain'] = plain\n")
    (tmp_path / "tuned.yaml").write_text("searcher: tuned\nconfig: {offset: 3}\n")
    (tmp_path / "plain.yaml").write_text("searcher: plain\nconfig: {offset: 3}\n")
    base = ["--plugin", str(tmp_path / "cfg_plugin.py"), "schedule", "--table", str(TABLE), "--bandwidth", "16",
            "--budget", "200", "--seed", "1", "--no-plot", "--json"]
    try:
        assert main([*base, "--searcher", str(tmp_path / "tuned.yaml"), "--out", str(tmp_path / "t")]) == 0
        tuned = json.loads(capsys.readouterr().out)
        assert tuned["run"]["config"] == {"offset": 3}
        assert main([*base, "--searcher", "random", "--seed", "4", "--out", str(tmp_path / "r")]) == 0
        assert json.loads(capsys.readouterr().out)["makespan"] == tuned["makespan"]    # seed 1 + offset 3
        assert main([*base, "--searcher", str(tmp_path / "plain.yaml"), "--out", str(tmp_path / "p")]) == 2
        assert "'plain' takes no config" in capsys.readouterr().err
    finally:
        for k in ("tuned", "plain"):
            schedule.CUSTOM.pop(k, None)
        plugins._LOADED.clear()
