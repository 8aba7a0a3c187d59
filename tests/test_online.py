"""coexplore.online: served models, request streams, the event simulation (checked against hand
computations and against MAGMA's evaluator), the schedulers' rules, the learned policy, the
gymnasium environment and the training's determinism."""

import math

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.online.models import served_system
from coexplore.online.policy import FEATURES, LearnedScheduler, Policy, load_policy, pair_features
from coexplore.online.schedulers import (EDF, FCFS, HEURISTICS, LeastSlack, MagmaPlanned, Prema, RandomScheduler, Scheduler,
                                         ShortestRemaining, StaticAssignment, heuristic)
from coexplore.online.simulator import SchedulerStalled, Simulation, simulate
from coexplore.online.stream import RequestStream, Scenario, poisson_stream, request_rates
from coexplore.online.train import EvolutionStrategy, TrainSettings, train_policy
from coexplore.system.jobs import Job, JobTable


def table(rows, cores=("a", "b")):
    """rows: (dnn, layer, [lat per core], [bw per core], [energy per core])."""
    jobs = [Job(name=f"{d}.{l}", dnn=d, layer=l) for d, l, *_ in rows]
    return JobTable(jobs, list(cores), np.array([r[2] for r in rows], float), np.array([r[3] for r in rows], float),
                    np.array([r[4] for r in rows], float))


def stream(arrival, deadline, model):
    return RequestStream(np.array(arrival, float), np.array(deadline, float), np.array(model, np.int64))


class Fixed(Scheduler):
    """Each core runs the requests listed for it, in list order, as soon as they are ready."""
    name = "fixed"

    def __init__(self, queues):
        self.queues = queues

    def reset(self, sim, seed):
        self.pos = [0] * len(self.queues)

    def decide(self, sim):
        pairs = []
        for c in sim.idle_cores():
            q = self.queues[c]
            if self.pos[c] < len(q) and q[self.pos[c]] in sim.ready:
                pairs.append((q[self.pos[c]], c))
                self.pos[c] += 1
        return pairs


class Idle(Scheduler):
    name = "idle"

    def decide(self, sim):
        return []


@pytest.fixture
def small():
    """Two DNNs on a fast core `a` and a slow core `b` sharing 10 bytes/cycle."""
    return served_system(table([
        ("x", "l0", [100, 200], [4, 2], [10, 5]),
        ("x", "l1", [50, 100], [12, 6], [20, 8]),
        ("y", "l0", [300, 400], [1, 1], [30, 30]),
    ]), 10.0)


# --- served models ---------------------------------------------------------------------------

def test_models_grouped_in_table_order_with_isolated_latency(small):
    x, y = small.models
    assert (x.name, x.layers, y.name, y.layers) == ("x", ("l0", "l1"), "y", ("l0",))
    # l1 on a needs 12 > 10 bytes/cycle: alone it runs at 10/12 of its speed -> 60 cycles (b: 100)
    assert x.isolated_latency == pytest.approx(100 + 60)
    assert x.work == 150 and y.work == 300 and y.isolated_latency == 300


def test_table_without_dnn_names_is_refused():
    t = JobTable([Job(name="j0"), Job(name="j1")], ["a"], np.array([[1.0], [2.0]]), np.zeros((2, 1)))
    with pytest.raises(CoexploreError, match="which DNN"):
        served_system(t, 1.0)


# --- streams ---------------------------------------------------------------------------------

def test_request_rates_give_the_offered_load(small):
    for load, mix in ((0.5, None), (1.3, (1.0, 3.0))):
        rates = request_rates(small, Scenario(load=load, mix=mix))
        work = np.array([m.work for m in small.models])
        assert float(rates @ work) / small.num_cores == pytest.approx(load)
        if mix:
            assert rates[1] / rates[0] == pytest.approx(3.0)


def test_poisson_stream_is_seeded_sorted_and_deadlines_follow_the_slack(small):
    sc = Scenario(load=0.7, requests=4000, slack=(2.0, 3.0))
    a, b, c = poisson_stream(small, sc, 5), poisson_stream(small, sc, 5), poisson_stream(small, sc, 6)
    assert np.array_equal(a.arrival, b.arrival) and np.array_equal(a.model, b.model)
    assert not np.array_equal(a.arrival, c.arrival)
    assert np.all(np.diff(a.arrival) >= 0)
    iso = np.array([m.isolated_latency for m in small.models])[a.model]
    k = (a.deadline - a.arrival) / iso
    assert k.min() >= 2.0 and k.max() <= 3.0
    rate = request_rates(small, sc).sum()
    assert np.mean(np.diff(a.arrival)) == pytest.approx(1 / rate, rel=0.06)     # 4000 gaps: ~1.6% s.e.
    share = np.bincount(a.model, minlength=2) / len(a)
    assert share == pytest.approx([0.5, 0.5], abs=0.04)


@pytest.mark.parametrize("rows, cores, want", [
    ([("x", "l", [1, 3], [0, 0], [0, 0])], ("a", "b"), 1 + 1 / 3),          # parallel servers: sum of 1/latency
    ([("x", "l1", [1, 4], [0, 0], [0, 0]), ("x", "l2", [1, 4], [0, 0], [0, 0])], ("a", "b"), 1 / 2 + 1 / 8),
    ([("x", "l1", [1, 2], [0, 0], [0, 0]), ("x", "l2", [2, 1], [0, 0], [0, 0])], ("a", "b"), 1.0),   # each on its own core
    ([("x", "l", [2, math.inf, 2], [0] * 3, [0] * 3)], ("a", "b", "c"), 1.0),  # a core that cannot run it adds nothing
])
def test_capacity_rate_by_hand(rows, cores, want):
    from coexplore.online.stream import capacity_rate
    system = served_system(table(rows, cores), 10.0)
    assert capacity_rate(system, [1.0]) == pytest.approx(want, rel=1e-9)
    rates = request_rates(system, Scenario(load=0.6, basis="capacity"))
    assert rates.sum() == pytest.approx(0.6 * want, rel=1e-9)


def test_capacity_basis_is_fastest_on_equal_cores_and_below_it_otherwise():
    from coexplore.online.stream import capacity_rate
    rng = np.random.default_rng(3)
    for trial in range(6):
        lat = rng.uniform(1, 50, size=(7, 1))
        equal = trial % 2 == 0
        per_core = np.repeat(lat, 3, axis=1) if equal else lat * rng.uniform(1, 4, size=(7, 3))
        rows = [("a" if i < 4 else "b", f"l{i}", list(per_core[i]), [0] * 3, [0] * 3) for i in range(7)]
        system = served_system(table(rows, ("p", "q", "r")), 10.0)
        mix = (1.0, 2.0)
        fastest = request_rates(system, Scenario(load=1.0, mix=mix))
        capacity = request_rates(system, Scenario(load=1.0, mix=mix, basis="capacity"))
        assert capacity[1] / capacity[0] == pytest.approx(2.0)
        if equal:
            assert capacity == pytest.approx(fastest, rel=1e-9)
        else:       # the fastest basis asks every core for fastest-core work: never less than capacity
            assert np.all(capacity <= fastest * (1 + 1e-9))
            assert capacity.sum() == pytest.approx(capacity_rate(system, np.array(mix) / 3), rel=1e-9)


@pytest.mark.parametrize("kw, key", [({"load": 0}, "--load"), ({"requests": 0}, "--requests"),
                                     ({"slack": (3, 1)}, "--slack"), ({"slack": (0, 1)}, "--slack"),
                                     ({"mix": (0, 0)}, "--mix"), ({"basis": "cores"}, "--load-basis")])
def test_bad_scenarios_are_refused(kw, key):
    """Named by the field given (the CLI names its option instead)."""
    with pytest.raises(CoexploreError) as exc:
        Scenario(**kw)
    assert exc.value.option == key and exc.value.key == {"--load-basis": "basis"}.get(key, key[2:])
    assert f"key '{exc.value.key}'" in str(exc.value) and f"key '{key}'" in exc.value.format(cli=True)


def test_mix_of_the_wrong_length_is_refused(small):
    with pytest.raises(CoexploreError, match="2 served models"):
        request_rates(small, Scenario(mix=(1.0, 1.0, 1.0)))


# --- the simulation, by hand ------------------------------------------------------------------

def test_one_request_runs_its_layers_in_order(small):
    r = simulate(small, stream([0.0], [1000.0], [0]), Fixed([[0, 0], []]))
    # l0 on a: 100 cycles (need 4 <= 10); l1 on a: need 12 > 10 -> 50 x 12/10 = 60 cycles
    assert r.finish[0] == pytest.approx(160.0)
    assert r.energy_pJ == 30.0 and r.met[0] and r.sla_rate == 1.0
    assert r.dram_bytes == pytest.approx(100 * 4 + 50 * 12)
    assert r.trace[:, 3].tolist() == [0.0, 100.0] and r.trace[:, 4] == pytest.approx([100.0, 160.0])


def test_bandwidth_is_shared_in_proportion():
    sys2 = served_system(table([("p", "l", [100, 100], [6, 6], [1, 1]),
                                ("q", "l", [200, 200], [6, 6], [1, 1])]), 8.0)
    r = simulate(sys2, stream([0.0, 0.0], [1e9, 1e9], [0, 1]), Fixed([[0], [1]]))
    # both need 6: 12 > 8 -> each at 2/3 speed; p ends at 150, q has 100 left at full speed -> 250
    assert r.finish == pytest.approx([150.0, 250.0])
    assert r.busy == pytest.approx([150.0, 250.0])


def test_layers_that_need_no_bandwidth_are_never_slowed():
    sys2 = served_system(table([("p", "l", [100, 100], [0, 0], [1, 1]),
                                ("q", "l", [100, 100], [20, 20], [1, 1])]), 10.0)
    r = simulate(sys2, stream([0.0, 0.0], [1e9, 1e9], [0, 1]), Fixed([[0], [1]]))
    assert r.finish == pytest.approx([100.0, 200.0])


def test_late_requests_are_dropped_or_kept():
    sys1 = served_system(table([("p", "l", [100], [0], [1])], cores=("a",)), 1.0)
    s = stream([0.0, 0.0, 0.0], [100.0, 90.0, 150.0], [0, 0, 0])
    dropped = simulate(sys1, s, FCFS())
    # r1's deadline passes while it waits (t = 90): dropped; r2 starts at 100, before its deadline, and
    # a started layer runs to its end: it ends late at 200
    assert dropped.finish[0] == 100.0 and math.isnan(dropped.finish[1]) and dropped.finish[2] == 200.0
    assert dropped.met.tolist() == [True, False, False] and dropped.summary()["dropped"] == 1
    kept = simulate(sys1, s, FCFS(), drop_late=False)
    assert kept.finish.tolist() == [100.0, 200.0, 300.0] and kept.met.tolist() == [True, False, False]
    assert kept.energy_pJ == 3.0 and dropped.energy_pJ == 2.0


def test_a_scheduler_that_never_starts_is_stopped_or_drops_everything(small):
    s = stream([0.0, 5.0], [50.0, 60.0], [0, 1])
    with pytest.raises(SchedulerStalled):
        simulate(small, s, Idle(), drop_late=False)
    r = simulate(small, s, Idle())
    assert r.sla_rate == 0.0 and np.isnan(r.finish).all() and r.energy_pJ == 0.0


def test_bad_decisions_are_refused(small):
    sim = Simulation(small, stream([0.0, 0.0], [1e9, 1e9], [0, 1]))
    assert sim.next_decision()
    sim.start(0, 0)
    with pytest.raises(CoexploreError, match="busy"):
        sim.start(1, 0)
    with pytest.raises(CoexploreError, match="not waiting"):
        sim.start(0, 1)
    inf = served_system(table([("p", "l", [100, math.inf], [0, 0], [1, 1])]), 1.0)
    sim = Simulation(inf, stream([0.0], [1e9], [0]))
    sim.next_decision()
    with pytest.raises(CoexploreError, match="cannot run"):
        sim.start(0, 1)


def test_batch_at_time_zero_matches_magmas_evaluator():
    """One-layer DNNs all arriving at 0, each core running its list back to back: the makespan is what
    coexplore.system.evaluator (a separate implementation of the same contention model) computes."""
    from coexplore.system.evaluator import evaluate
    rng = np.random.default_rng(3)
    J, N = 14, 3
    lat = rng.integers(50, 500, size=(J, N)).astype(float)
    bw = rng.uniform(0, 8, size=(J, N)) * (rng.random((J, N)) > 0.2)
    t = JobTable([Job(name=f"j{j}", dnn=f"d{j}", layer="l") for j in range(J)], ["a", "b", "c"], lat, bw,
                 np.ones((J, N)))
    sysj = served_system(t, 10.0)
    for trial in range(5):
        core = rng.integers(0, N, size=J)
        prio = rng.permutation(J).astype(float)
        queues = [[j for j in np.argsort(prio, kind="stable") if core[j] == c] for c in range(N)]
        r = simulate(sysj, stream(np.zeros(J), np.full(J, 1e12), np.arange(J)), Fixed(queues))
        ev = evaluate(lat, bw, 10.0, core[None], prio[None])
        assert r.end == pytest.approx(float(ev.makespan[0]), rel=1e-9)
        assert r.busy == pytest.approx(ev.busy[0], rel=1e-9)


# --- the heuristics' rules --------------------------------------------------------------------

def one_core_choice(sched, arrival, deadline, model, served):
    """Which waiting request the scheduler starts first when the only core frees at t = 10."""
    s = stream([0.0, *arrival], [1e9, *deadline], [0, *model])
    r = simulate(served, s, sched)
    starts = sorted((row[3], int(row[0])) for row in r.trace if row[0] != 0)
    return starts[0][1]


@pytest.fixture
def lone():
    """One core; DNN 0 is 10 cycles, DNN 1 one layer of 100, DNN 2 two layers of 30."""
    return served_system(table([("s", "l", [10], [0], [1]), ("m", "l", [100], [0], [1]),
                                ("t", "l0", [30], [0], [1]), ("t", "l1", [30], [0], [1])], cores=("a",)), 1.0)


def test_fcfs_edf_lsf_sjf_choose_by_their_keys(lone):
    # while request 0 runs (t 0-10): r1 DNN m (100 left, deadline 500), r2 DNN t (60 left, deadline 400),
    # r3 DNN m (deadline 300): arrival order 1,2,3; deadlines favour 3; slack 300-10-100=190 < 400-10-60
    args = ([1.0, 2.0, 3.0], [500.0, 400.0, 300.0], [1, 2, 1], lone)
    assert one_core_choice(FCFS(), *args) == 1
    assert one_core_choice(EDF(), *args) == 3
    assert one_core_choice(LeastSlack(), *args) == 3
    assert one_core_choice(ShortestRemaining(), *args) == 2
    # least slack differs from EDF when the earlier deadline has more slack: r2 (t, 60 left) due 205,
    # slack 135; r1 (m, 100 left) due 210, slack 100
    assert one_core_choice(LeastSlack(), [1.0, 2.0], [210.0, 205.0], [1, 2], lone) == 1
    assert one_core_choice(EDF(), [1.0, 2.0], [210.0, 205.0], [1, 2], lone) == 2


def test_prema_prefers_the_short_among_those_that_waited_long(lone):
    # at t = 10: r1 (m, waited 9.5 of its 100: 0.095 tokens), r2 (t, waited 9 of 60: 0.15): with a
    # threshold of 0.12 only r2 qualifies; with 1.0 neither, so all compete and the shorter (t) wins too;
    # with 0.09 both qualify and the shorter (t, 60 left) wins
    args = ([0.5, 1.0], [1e9, 1e9], [1, 2], lone)
    assert one_core_choice(Prema(0.12), *args) == 2
    # r1 DNN t (60 left, waited 9.5/60 = 0.158), r2 DNN s (10 left, waited 9/10 = 0.9): threshold 0.5 -> r2;
    # r1 alone above 0.1 when r2 is DNN m (waited 9/100 = 0.09)
    assert one_core_choice(Prema(0.5), [0.5, 1.0], [1e9, 1e9], [2, 0], lone) == 2
    assert one_core_choice(Prema(0.1), [0.5, 1.0], [1e9, 1e9], [2, 1], lone) == 1
    assert one_core_choice(ShortestRemaining(), [0.5, 1.0], [1e9, 1e9], [2, 1], lone) == 1


def test_greedy_heuristics_take_the_fastest_idle_core(small):
    for name in ("fcfs", "edf", "lsf", "sjf", "prema"):
        r = simulate(small, stream([0.0], [1e9], [1]), heuristic(name))
        assert r.trace[0][2] == 0 and r.finish[0] == 300.0       # y on a: 300 cycles (b: 400)


class Checked(Scheduler):
    """Wraps a scheduler and checks that it never leaves a core idle that a ready request could use."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.lazy = 0

    def reset(self, sim, seed):
        self.inner.reset(sim, seed)

    def decide(self, sim):
        pairs = self.inner.decide(sim)
        if len(pairs) < min(len(sim.ready), len(sim.idle_cores())):
            self.lazy += 1
        return pairs


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_every_heuristic_serves_every_request_once(name, small):
    s = poisson_stream(small, Scenario(load=0.9, requests=150), 1)
    checked = Checked(heuristic(name))
    r = simulate(small, s, checked)
    done = np.isfinite(r.finish)
    assert r.met.sum() + (~r.met).sum() == 150
    # each finished request ran each of its layers exactly once, in order, without overlap
    for q in np.flatnonzero(done):
        rows = r.trace[r.trace[:, 0] == q]
        assert rows[:, 1].tolist() == list(range(len(small.models[s.model[q]].layers)))
        assert np.all(rows[1:, 3] >= rows[:-1, 4] - 1e-9)
        assert rows[-1, 4] == pytest.approx(r.finish[q])
    if name not in ("static", "magma"):      # the work-conserving ones never leave a usable core idle
        assert checked.lazy == 0


def test_static_assignment_keeps_each_layer_on_its_core(small):
    s = poisson_stream(small, Scenario(load=0.6, requests=80), 2)
    r = simulate(small, s, StaticAssignment())
    owner = {}
    for q, l, c, *_ in r.trace:
        owner.setdefault((int(s.model[int(q)]), int(l)), set()).add(int(c))
    assert all(len(cs) == 1 for cs in owner.values())


def test_random_scheduler_is_seeded(small):
    s = poisson_stream(small, Scenario(load=0.9, requests=100), 0)
    a, b, c = (simulate(small, s, RandomScheduler(), seed=k) for k in (4, 4, 5))
    assert np.array_equal(a.trace, b.trace) and not np.array_equal(a.trace, c.trace)


def test_unknown_scheduler_name():
    with pytest.raises(CoexploreError, match="unknown scheduler 'edff'"):
        heuristic("edff")


# --- the learned policy ------------------------------------------------------------------------

def test_policy_that_gives_up_on_hopeless_requests(lone):
    # r1 (DNN m, 100 cycles) is due at 50: hopeless from the start; r2 (DNN s) is not
    w = Policy.initial().weights.copy()
    w[FEATURES.index("hopeless")] = -5.0
    s = stream([0.0, 0.0], [50.0, 1000.0], [1, 0])
    r = simulate(lone, s, LearnedScheduler(Policy(w)))
    assert math.isnan(r.finish[0]) and r.finish[1] == 10.0
    plain = simulate(lone, s, LearnedScheduler(Policy.initial()))
    assert plain.finish[0] == 100.0 and plain.finish[1] == 110.0     # started in ready order, r0 first


def test_policy_features_by_hand(small):
    sim = Simulation(small, stream([0.0], [500.0], [0]))
    sim.next_decision()
    f = dict(zip(FEATURES, pair_features(sim, 0, 1, 0.0, 0.5)))
    iso = 160.0
    assert f["slack"] == pytest.approx((500 - 160) / iso) and f["hopeless"] == 0.0
    assert f["core_penalty"] == pytest.approx((200 - 100) / iso)
    assert f["remaining"] == pytest.approx(1.0) and f["need"] == pytest.approx(0.2)
    assert f["overload"] == 0.0 and f["layer_size"] == pytest.approx(200 / iso)
    assert f["dnn_size"] == pytest.approx(math.log(iso))
    # log_mean_iso 0: the scale is 1 cycle, so the absolute figures are in cycles
    assert f["log_remaining"] == pytest.approx(math.log(160.0)) and f["abs_slack"] == 8.0    # 340 clipped to 8
    g = dict(zip(FEATURES, pair_features(sim, 0, 1, math.log(100.0), 0.5)))
    assert g["log_remaining"] == pytest.approx(math.log(1.6)) and g["abs_slack"] == pytest.approx(3.4)
    assert g["dnn_size"] == pytest.approx(math.log(1.6)) and g["slack"] == f["slack"]
    assert dict(zip(FEATURES, pair_features(sim, 0, 1, 0.0, 0.9)))["overload"] == pytest.approx(0.1)


def test_policy_file_round_trip_and_bad_files(tmp_path):
    p = Policy(np.arange(len(FEATURES), dtype=float), {"run": "k"})
    p.save(tmp_path / "p.json")
    q = load_policy(tmp_path / "p.json")
    assert np.array_equal(q.weights, p.weights) and q.meta["run"] == "k"
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CoexploreError, match="not JSON"):
        load_policy(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text('{"features": ["bias"], "weights": [1]}')
    with pytest.raises(CoexploreError) as exc:
        load_policy(tmp_path / "old.json")
    assert exc.value.key == "features"
    (tmp_path / "short.json").write_text('{"features": %s, "weights": [1, 2]}' % str(list(FEATURES)).replace("'", '"'))
    with pytest.raises(CoexploreError) as exc:
        load_policy(tmp_path / "short.json")
    assert exc.value.key == "weights" and "short.json" in str(exc.value)


# --- the gymnasium environment ------------------------------------------------------------------

def test_environment_passes_gymnasiums_checker(small):
    from gymnasium.utils.env_checker import check_env
    from coexplore.online.env import OnlineSchedulingEnv
    check_env(OnlineSchedulingEnv(small, Scenario(load=0.8, requests=30)), skip_render_check=True)


def test_environment_rollout_of_the_linear_policy_equals_the_scheduler(small):
    """Driving the env with the policy's own rule (best listed pair while its score > 0) serves the
    stream exactly as LearnedScheduler does, and the rewards add up to met - missed."""
    from coexplore.online.env import OnlineSchedulingEnv
    rng = np.random.default_rng(0)
    sc = Scenario(load=1.1, requests=60)
    for trial in range(3):
        w = rng.normal(size=len(FEATURES))
        w[0] = 1.0
        env = OnlineSchedulingEnv(small, sc, max_pairs=200)
        obs, info = env.reset(seed=11 + trial)
        total, done = 0.0, False
        while not done:
            n = int(obs["mask"][:-1].sum())
            scores = obs["pairs"][:n] @ w
            a = int(np.argmax(scores)) if n and scores.max() > 0 else env.max_pairs
            obs, rew, done, trunc, info = env.step(a)
            total += rew
        ref = simulate(small, poisson_stream(small, sc, 11 + trial), LearnedScheduler(Policy(w)))
        assert np.allclose(np.array(env.sim.finish), ref.finish, equal_nan=True)
        assert total == info["met"] - info["missed"] == 2 * ref.met.sum() - 60


# --- training -----------------------------------------------------------------------------------

def test_evolution_strategy_climbs_and_resumes_exactly():
    target = np.array([1.0, -2.0, 0.5])
    es = EvolutionStrategy(np.zeros(3), sigma=0.2, lr=0.05, pairs=8, seed=1)
    for _ in range(150):
        x = es.ask()
        es.tell(x, -((x - target) ** 2).sum(axis=1))
    assert np.abs(es.mean - target).max() < 0.15
    a = EvolutionStrategy.from_state(es.state())
    xa, xb = a.ask(), es.ask()
    assert np.array_equal(xa, xb)
    with pytest.raises(ValueError):
        a.tell(xa, [1.0])


def test_training_is_seeded_and_resumes_where_it_stopped(small):
    sc = Scenario(load=1.2, requests=40)
    full, st = train_policy(small, sc, TrainSettings(generations=3, streams=2, pairs=3, seed=4))
    again, _ = train_policy(small, sc, TrainSettings(generations=3, streams=2, pairs=3, seed=4))
    assert np.array_equal(full.weights, again.weights) and len(st["history"]) == 3
    saved = []
    train_policy(small, sc, TrainSettings(generations=1, streams=2, pairs=3, seed=4), on_generation=saved.append)
    resumed, st2 = train_policy(small, sc, TrainSettings(generations=3, streams=2, pairs=3, seed=4), state=saved[-1])
    assert np.array_equal(resumed.weights, full.weights) and st2["history"] == st["history"]
    other, _ = train_policy(small, sc, TrainSettings(generations=3, streams=2, pairs=3, seed=5))
    assert not np.array_equal(other.weights, full.weights)


def test_training_in_two_processes_gives_the_same_policy(small):
    sc = Scenario(load=1.2, requests=40)
    settings = TrainSettings(generations=2, streams=2, pairs=3, seed=4)
    one, _ = train_policy(small, sc, settings)
    two, _ = train_policy(small, sc, settings, workers=2)
    assert np.array_equal(one.weights, two.weights)


# --- boundaries and measures (each pinned by a hand computation) ---------------------------------

def one_core(lat=100.0, energy=7.0):
    return served_system(table([("p", "l", [lat], [0], [energy])], cores=("a",)), 1.0)


def test_a_layer_ends_at_its_own_end_when_an_arrival_comes_just_before():
    r = simulate(one_core(1000.0), stream([0.0, 999.5], [1e9, 1e9], [0, 0]), FCFS())
    assert r.trace[0][4] == 1000.0 and r.trace[1][3] == 1000.0 and r.finish.tolist() == [1000.0, 2000.0]


def test_finishing_exactly_at_the_deadline_meets_it():
    r = simulate(one_core(), stream([0.0], [100.0], [0]), FCFS())
    assert r.met.tolist() == [True] and r.sla_rate == 1.0


def test_utilisation_counts_from_the_first_arrival():
    two = served_system(table([("p", "l", [100, 100], [0, 0], [1, 1])]), 1.0)
    r = simulate(two, stream([5.0], [1e9], [0]), FCFS())
    assert r.summary()["utilization"] == pytest.approx(0.5)


def test_latency_statistics_and_energy_per_met_request():
    r = simulate(one_core(), stream([0.0] * 5, [100.0, 1e9, 1e9, 1e9, 1e9], [0] * 5), FCFS(), drop_late=False)
    s = r.summary()
    assert s["latency_mean_cycles"] == 300.0 and s["latency_p95_cycles"] == pytest.approx(480.0)  # 100..500
    assert s["energy_pJ"] == 35.0 and s["met"] == 5 and s["energy_per_met_pJ"] == 7.0
    late = simulate(one_core(), stream([0.0, 0.0], [100.0, 150.0], [0, 0]), FCFS(), drop_late=False).summary()
    assert late["met"] == 1 and late["energy_per_met_pJ"] == 14.0
    none = simulate(one_core(), stream([0.0], [50.0], [0]), FCFS()).summary()
    assert none["met"] == 0 and math.isnan(none["energy_per_met_pJ"])


def test_energy_is_the_core_the_layer_ran_on():
    sys2 = served_system(table([("p", "l", [math.inf, 100], [0, 0], [7, 9])]), 1.0)
    assert simulate(sys2, stream([0.0], [1e9], [0]), FCFS()).energy_pJ == 9.0


def test_decisions_only_when_a_core_is_idle_and_a_request_ready():
    r = simulate(one_core(), stream([0.0, 10.0], [1e9, 1e9], [0, 0]), FCFS())
    assert r.decisions == 2        # t = 0 (r0 starts) and t = 100 (r1 starts); not at r1's arrival (busy)


def test_core_index_out_of_range_is_refused(small):
    sim = Simulation(small, stream([0.0], [1e9], [0]))
    sim.next_decision()
    for bad in (-1, 2):
        with pytest.raises(CoexploreError, match="no core"):
            sim.start(0, bad)


def test_equal_slack_bounds_give_that_slack():
    ss = served_system(table([("p", "l", [100], [0], [1])], cores=("a",)), 1.0)
    s = poisson_stream(ss, Scenario(slack=(2.0, 2.0), requests=20), 0)
    assert np.allclose(s.deadline - s.arrival, 200.0)


def test_prema_counts_a_request_at_the_threshold_as_rich(lone):
    # r0 and r1 (DNN m, 100 cycles) arrive at 0: r0 runs 0-100. At t = 100 r1 holds 100/100 = 1.0 token,
    # exactly the threshold; r2 (DNN s, 10 cycles) arrived at 95 holds 0.5. r1 is the only rich one and
    # starts first, although r2 is shorter (were r1 not rich, shortest first would start r2)
    r = simulate(lone, stream([0.0, 0.0, 95.0], [1e9] * 3, [1, 1, 0]), Prema(1.0))
    starts = {int(q): s for q, _, _, s, _ in r.trace}
    assert starts == {0: 0.0, 1: 100.0, 2: 200.0}


def test_static_placement_plans_for_the_request_rates():
    # DNN A: one layer [100, 150]; DNN B: one layer [100, 300]. A gets 9x B's rate: A's layer (load 900
    # on a) is placed first, on a; B's then costs 900 + 100 on a against 300 on b -> b
    ss = served_system(table([("A", "l", [100, 150], [0, 0], [1, 1]), ("B", "l", [100, 300], [0, 0], [1, 1])]), 1.0)
    sched = StaticAssignment([9.0, 1.0])
    sched.reset(Simulation(ss, stream([0.0], [1e9], [0])), 0)
    assert sched.owner == [[0], [1]]
    equal = StaticAssignment()
    equal.reset(Simulation(ss, stream([0.0], [1e9], [0])), 0)
    assert equal.owner == [[0], [1]] or equal.owner == [[1], [0]]      # equal loads: one per core
    assert heuristic("static", [9.0, 1.0]).rates == [9.0, 1.0]


def test_static_placement_serves_its_core_first_come_first_served():
    r = simulate(one_core(), stream([0.0, 1.0, 2.0], [1e9] * 3, [0, 0, 0]), StaticAssignment())
    assert {int(q): s for q, _, _, s, _ in r.trace} == {0: 0.0, 1: 100.0, 2: 200.0}
    with pytest.raises(CoexploreError, match="before request 1"):     # a stream is in arrival order
        stream([0.0, 2.0, 1.0], [1e9] * 3, [0, 0, 0])


def test_waited_is_capped_at_four_and_hopeless_needs_negative_slack(lone):
    sim = Simulation(lone, stream([0.0, 0.0], [1e9, 30.0], [0, 2]))
    sim.next_decision()
    sim.start(0, 0)
    sim.t = 30.0                       # (advanced by hand: r1 has waited 3 of DNN s's isolated latency)
    sim.ready = [1]
    f = dict(zip(FEATURES, pair_features(sim, 1, 0, 0.0, 0.0)))
    assert f["waited"] == pytest.approx(0.5) and f["hopeless"] == 1.0
    sim.deadline[1] = 30.0 + 60.0       # slack exactly 0: not hopeless
    assert dict(zip(FEATURES, pair_features(sim, 1, 0, 0.0, 0.0)))["hopeless"] == 0.0
    sim.arrival[1] = -150.0             # waited 180 = 3 x 60
    assert dict(zip(FEATURES, pair_features(sim, 1, 0, 0.0, 0.0)))["waited"] == pytest.approx(3.0)
    sim.arrival[1] = -1000.0
    assert dict(zip(FEATURES, pair_features(sim, 1, 0, 0.0, 0.0)))["waited"] == 4.0


def test_weight_decay_shrinks_the_mean_without_signal():
    es = EvolutionStrategy(np.ones(4), sigma=0.1, lr=0.05, pairs=3, seed=0, decay=0.5)
    x = es.ask()
    es.tell(x, np.zeros(6))
    assert np.linalg.norm(es.mean) < 2.0


def test_training_streams_are_disjoint_per_generation():
    from coexplore.online.train import TRAIN_SEED_BASE, train_seeds
    s = TrainSettings(streams=3)
    assert train_seeds(s, 0) == [TRAIN_SEED_BASE, TRAIN_SEED_BASE + 1, TRAIN_SEED_BASE + 2]
    assert train_seeds(s, 1) == [TRAIN_SEED_BASE + 3, TRAIN_SEED_BASE + 4, TRAIN_SEED_BASE + 5]


def test_gains_and_per_model_means():
    from coexplore.online.compare import gains, mean_summary
    g = gains({"a": {"sla_rate": 0.5, "energy_pJ": 200.0}, "b": {"sla_rate": 0.25, "energy_pJ": 100.0}}, "a")
    assert g == {"b": {"sla_gain": 1.0, "energy_overhead": 1.0}}
    ss = one_core()
    met = simulate(ss, stream([0.0], [1e9], [0]), FCFS())
    missed = simulate(ss, stream([0.0], [50.0], [0]), FCFS())
    m = mean_summary([met, missed])
    assert m["per_model_sla_rate"] == {"p": 0.5} and m["sla_rate_per_seed"] == [1.0, 0.0] and m["sla_rate"] == 0.5


def test_environment_refuses_misuse(small):
    from coexplore.online.env import OnlineSchedulingEnv
    env = OnlineSchedulingEnv(small, Scenario(load=0.8, requests=5), max_pairs=4)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    for bad in (-1, 5, 10**6, 1.5, True, np.bool_(False)):    # (a bool was read as action 1 / 0)
        with pytest.raises(ValueError):
            env.step(bad)
    done = False
    while not done:
        _, _, done, _, _ = env.step(4)              # wait every time: all dropped at their deadlines
    with pytest.raises(RuntimeError, match="ended"):
        env.step(4)
    assert env.sim.hits == 0 and env.sim.misses == 5


def test_an_episode_over_at_reset_ends_with_its_reward_at_the_first_step(small):
    """User study: a trace whose every deadline is its arrival is over at reset; its -2 never came
    (the first step raised 'the episode has ended') and no step returned terminated."""
    from coexplore.online.env import OnlineSchedulingEnv
    env = OnlineSchedulingEnv(small, Scenario(load=0.8, requests=5), max_pairs=4)
    stream = RequestStream(np.array([0.0, 5.0]), np.array([0.0, 5.0]), np.array([0, 1]))
    env.reset(options={"stream": stream})
    _, reward, terminated, truncated, info = env.step(env.max_pairs)
    assert (reward, terminated, truncated) == (-2.0, True, False) and env.sim.misses == 2
    with pytest.raises(RuntimeError, match="ended"):
        env.step(env.max_pairs)


def test_policy_file_that_is_not_a_policy(tmp_path):
    for text in ("{}", "[1, 2]", '{"weights": [1]}'):
        (tmp_path / "p.json").write_text(text)
        with pytest.raises(CoexploreError, match="not a policy file"):
            load_policy(tmp_path / "p.json")


def test_magma_plan_keeps_each_layer_on_one_core_and_respects_what_cannot_run():
    # DNN A's layer runs only on core b; B's two layers anywhere: the plan must put A's on b
    ss = served_system(table([("A", "l", [math.inf, 100], [1, 1], [1, 1]),
                              ("B", "l0", [50, 60], [1, 1], [1, 1]), ("B", "l1", [70, 40], [1, 1], [1, 1])]), 10.0)
    sched = MagmaPlanned(budget=200)
    s = poisson_stream(ss, Scenario(load=0.7, requests=60), 0)
    r = simulate(ss, s, sched)
    assert sched.owner[0] == [1]
    plan = sched.owner
    for q, l, c, *_ in r.trace:
        assert c == plan[int(s.model[int(q)])][int(l)]
    simulate(ss, poisson_stream(ss, Scenario(load=0.7, requests=60), 1), sched)
    assert sched.owner is plan                          # planned once per served system


def test_environment_masks_a_wait_that_would_stall(small):
    """Without drop_late, a wait with every core idle and nothing left to happen stalls the
    simulation: the mask leaves it out, so a policy sampling only masked-in actions never stalls
    (the mask's wait entry is 1 whenever something is left to happen)."""
    from coexplore.online.env import OnlineSchedulingEnv
    from coexplore.online.simulator import SchedulerStalled
    env = OnlineSchedulingEnv(small, Scenario(load=1.2, requests=20), drop_late=False)
    rng = np.random.default_rng(0)
    masked_out = 0
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            legal = np.flatnonzero(obs["mask"])
            if obs["mask"][-1] == 0:
                masked_out += 1
                if masked_out == 1:               # the wait it leaves out would indeed stall
                    with pytest.raises(SchedulerStalled):
                        env.step(env.max_pairs)
            obs, _, done, _, _ = env.step(int(rng.choice(legal)))
            assert env.observation_space.contains(obs)
    assert masked_out > 0                       # the situation arose and was masked
    with pytest.raises(CoexploreError, match="max_pairs"):
        OnlineSchedulingEnv(small, max_pairs=-3)


def test_environment_for_rl_libraries(small):
    """gymnasium.make by id, a mask for maskable policies, a recorded stream replayed, numpy seeds,
    and a long queue listed so that every ready request shows before second choices of cores."""
    import gymnasium
    from coexplore.online.env import ENV_ID, OnlineSchedulingEnv
    sc = Scenario(load=3.0, requests=40)
    env = gymnasium.make(ENV_ID, system=small, scenario=sc, max_pairs=3, drop_late=False)
    obs, info = env.reset(seed=np.int64(5))
    direct = OnlineSchedulingEnv(small, sc, max_pairs=3, drop_late=False)
    obs2, _ = direct.reset(seed=5)
    assert np.array_equal(obs["pairs"], obs2["pairs"])
    assert np.array_equal(env.unwrapped.action_masks(), obs["mask"].astype(bool))
    stream = poisson_stream(small, sc, 5)
    obs3, _ = direct.reset(options={"stream": stream})
    assert np.array_equal(obs3["pairs"], obs2["pairs"])
    for bad in ({"load": 2}, ["stream"], {"stream": "trace.csv"}):
        with pytest.raises(CoexploreError, match="options"):
            direct.reset(options=bad)
    sample = env.observation_space.sample()                 # (what libraries draw dummy inputs from)
    assert env.observation_space.contains(sample)
    with pytest.raises(RuntimeError, match="reset"):
        OnlineSchedulingEnv(small, sc).action_masks()
    seen_all = 0
    for _ in range(300):                          # under a backlog, the listed requests are distinct first
        pairs = direct._info()["pairs"]
        ready = direct.sim.ready
        if len(ready) >= 2 and len(pairs) >= 2:
            listed = [r for r, _ in pairs]
            k = min(3, len(ready))
            assert set(listed) == set(ready[:k]) and listed == sorted(listed, key=list(ready).index)
            seen_all += 1
        _, _, done, _, _ = direct.step(len(pairs) if direct._mask[-1] else 0)     # wait while it may
        if done:
            break
    assert seen_all


def test_environment_breaks_ties_as_the_learned_scheduler_does():
    """Equal scores across requests (hand-set weights): driven by argmax, the env starts what
    LearnedScheduler starts, as its pairs are listed request by request (found by a review)."""
    from coexplore.online.env import OnlineSchedulingEnv
    inf = math.inf
    s = served_system(table([("x", "l0", [200, 100, inf], [1, 1, 1], [1, 1, 1]),
                             ("y", "l0", [inf, 100, 200], [1, 1, 1], [1, 1, 1])], cores=("c1", "c2", "c3")), 100.0)
    st = stream([0, 0], [1000, 1000], [0, 1])
    w = np.zeros(len(FEATURES))
    w[0], w[FEATURES.index("core_penalty")] = 1.0, -0.5
    env = OnlineSchedulingEnv(s, max_pairs=8)
    obs, info = env.reset(options={"stream": st})
    done = False
    while not done:
        n = int(obs["mask"][:-1].sum())
        scores = obs["pairs"][:n] @ w
        a = int(np.argmax(scores)) if n and scores.max() > 0 else env.max_pairs
        obs, _, done, _, info = env.step(a)
    assert list(env.sim.finish) == list(simulate(s, st, LearnedScheduler(Policy(w))).finish)
