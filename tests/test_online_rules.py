"""coexplore.online: rules and boundaries pinned one by one (each test was written against a mutant of the
code that the other online tests let pass), with expected values worked out by hand."""

import math

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.online.compare import gains
from coexplore.online.models import served_system
from coexplore.online.policy import FEATURES, LearnedScheduler, Policy, pair_features
from coexplore.online.schedulers import FCFS, Prema, RandomScheduler, StaticAssignment
from coexplore.online.simulator import Simulation, simulate
from coexplore.online.stream import RequestStream, Scenario, request_rates
from coexplore.online.train import EvolutionStrategy, TrainSettings, train_policy
from coexplore.system.jobs import Job, JobTable


def test_partly_named_table_is_refused():
    jobs = [Job("x.l1", dnn="x", layer="l1"), Job("l2")]
    t = JobTable(jobs, ["a"], np.array([[10.0], [20.0]]), np.array([[1.0], [1.0]]))
    with pytest.raises(CoexploreError) as e:
        served_system(t, 10.0)
    assert e.value.key == "dnn"


def test_unknown_energy_is_nan_not_zero():
    t = JobTable([Job("x.l1", dnn="x", layer="l1")], ["a"], np.array([[10.0]]), np.array([[1.0]]))  # energy NaN
    s = served_system(t, 10.0)
    assert not s.energy_known
    r = simulate(s, RequestStream(np.array([0.0]), np.array([100.0]), np.array([0])), FCFS())
    assert math.isnan(r.energy_pJ) and math.isnan(r.summary()["energy_per_met_pJ"]) and r.sla_rate == 1.0


def test_an_arrival_just_before_a_layer_end_does_not_end_it_early():
    # the layer ends at 1e6; a request arrives 5e-4 earlier, and the first request's deadline falls in between:
    # it must be missed (ended at 1e6), not met by ending the layer at the arrival
    s = one_layer([1e6], [0.0])
    r = simulate(s, RequestStream(np.array([0.0, 1e6 - 5e-4]), np.array([1e6 - 2e-4, 1e9]), np.array([0, 0])), FCFS())
    assert r.trace[0][4] == 1e6 and r.met.tolist() == [False, True]


def test_a_zero_mix_weight_is_allowed():
    jobs = [Job("x.l", dnn="x", layer="l"), Job("y.l", dnn="y", layer="l")]
    t = JobTable(jobs, ["a", "b"], np.array([[100.0, 200.0], [50.0, 60.0]]), np.zeros((2, 2)))
    s = served_system(t, 10.0)
    rates = request_rates(s, Scenario(load=0.5, mix=(1.0, 0.0)))
    # rho = lambda_x * W_x / cores  ->  lambda_x = 0.5 * 2 / 100
    assert rates.tolist() == [pytest.approx(0.01), 0.0]


def one_layer(lat, bw, bandwidth=10.0):
    t = JobTable([Job("x.l", dnn="x", layer="l")], [f"c{i}" for i in range(len(lat))],
                 np.array([lat], float), np.array([bw], float))
    return served_system(t, bandwidth)


def test_sim_hits_count_a_finish_exactly_at_the_deadline():
    s = one_layer([100.0], [0.0])
    sim = Simulation(s, RequestStream(np.array([0.0]), np.array([100.0]), np.array([0])))
    assert sim.next_decision()
    sim.start(0, 0)
    assert not sim.next_decision()
    assert (sim.hits, sim.misses) == (1, 0)


def test_ties_between_cores_go_to_the_lowest_numbered():
    s = one_layer([100.0, 100.0], [0.0, 0.0])
    r = simulate(s, RequestStream(np.array([0.0]), np.array([1e6]), np.array([0])), FCFS())
    assert int(r.trace[0][2]) == 0


def test_static_counts_the_layers_own_cost_on_each_core():
    jobs = [Job("x.l1", dnn="x", layer="l1"), Job("x.l2", dnn="x", layer="l2")]
    t = JobTable(jobs, ["a", "b"], np.array([[100.0, 1000.0], [100.0, 1000.0]]), np.zeros((2, 2)))
    s = served_system(t, 10.0)
    sim = Simulation(s, RequestStream(np.array([0.0]), np.array([1e6]), np.array([0])))
    st = StaticAssignment()
    st.reset(sim, 0)
    # both on a: a's load 200 < 1000, the cost of putting one on b
    assert st.owner == [[0, 0]]


def test_zero_score_holds_back():
    s = one_layer([100.0], [0.0])
    r = simulate(s, RequestStream(np.array([0.0]), np.array([500.0]), np.array([0])),
                 LearnedScheduler(Policy(np.zeros(len(FEATURES)))))
    assert r.sla_rate == 0.0 and math.isnan(r.finish[0])      # doc: starts only pairs scoring > 0


def test_bandwidth_in_use_is_updated_after_each_start():
    s = one_layer([100.0, 100.0], [6.0, 6.0])                 # each needs 0.6 B
    w = np.zeros(len(FEATURES)); w[0] = 1.0; w[FEATURES.index("overload")] = -10.0
    sim = Simulation(s, RequestStream(np.array([0.0, 0.0]), np.array([1e6, 1e6]), np.array([0, 0])))
    sched = LearnedScheduler(Policy(w)); sched.reset(sim, 0)
    assert sim.next_decision()
    # first: 1 - 10*max(0, 0.6-1) = 1 > 0; second: 1 - 10*(1.2-1) = -1 <= 0 -> held back
    assert sched.decide(sim) == [(0, 0)]


def test_adam_second_step_by_hand():
    es = EvolutionStrategy([0.0], sigma=1.0, lr=0.1, pairs=1, seed=0, decay=0.0)
    b1, b2, m, v, x = 0.9, 0.999, 0.0, 0.0, 0.0
    for t, rets in ((1, [1.0, 0.0]), (2, [0.0, 1.0])):
        cands = es.ask(); eps = (cands[0, 0] - x) / 1.0
        ranks = [0.5, -0.5] if rets[0] > rets[1] else [-0.5, 0.5]
        g = (ranks[0] - ranks[1]) * eps / 2.0
        m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g
        x = x + 0.1 * (m / (1 - b1 ** t)) / (math.sqrt(v / (1 - b2 ** t)) + 1e-8)
        es.tell(cands, rets)
        assert es.mean[0] == pytest.approx(x, rel=1e-12)


def test_zero_generations_is_the_untrained_policy():
    s = one_layer([100.0], [0.0])
    pol, state = train_policy(s, Scenario(requests=5), TrainSettings(generations=0))
    assert pol.weights.tolist() == [1.0] + [0.0] * (len(FEATURES) - 1) and state["history"] == []


def test_env_wait_is_always_allowed_and_listed_pairs_are_never_empty_midway():
    from coexplore.online.env import OnlineSchedulingEnv
    jobs = [Job("cnn.c1", dnn="cnn", layer="c1"), Job("gemm.g1", dnn="gemm", layer="g1")]
    t = JobTable(jobs, ["fast", "slow"], np.array([[400.0, 900.0], [600.0, 700.0]]), np.array([[3.0, 1.0], [2.0, 2.0]]))
    env = OnlineSchedulingEnv(served_system(t, 10.0), Scenario(load=1.2, requests=50))
    obs, info = env.reset(seed=3)
    done = False
    while not done:
        assert obs["mask"][-1] == 1                         # the wait action
        assert obs["mask"][0] == 1                          # finite latencies: a decision point lists a pair
        obs, reward, done, _, info = env.step(0)


def test_scheduler_colours_distinct_for_unknown_names():
    from coexplore.report.online_plot import COLOURS, scheduler_colours
    c = scheduler_colours(["mine", "yours", "fcfs"])
    assert c["mine"] != c["yours"] and c["fcfs"] == COLOURS["fcfs"]
    assert not {c["mine"], c["yours"]} & set(COLOURS.values())


def test_chart_bars_best_first(monkeypatch, tmp_path):
    import matplotlib.axes
    from coexplore.report.online_plot import draw_sla
    seen = []
    orig = matplotlib.axes.Axes.set_xticks
    def spy(self, ticks, labels=None, **kw):
        seen.append(list(labels) if labels is not None else None)
        return orig(self, ticks, labels, **kw)
    monkeypatch.setattr(matplotlib.axes.Axes, "set_xticks", spy)
    data = {"models": [{"name": "x"}], "schedulers": {
        "fcfs": {"sla_rate": 0.5, "sla_rate_per_seed": [0.5], "per_model_sla_rate": {"x": 0.5}},
        "edf": {"sla_rate": 0.9, "sla_rate_per_seed": [0.9], "per_model_sla_rate": {"x": 0.9}}}}
    draw_sla(data, tmp_path / "s.png")
    assert seen[0] == ["edf", "fcfs"]


def test_prema_shortest_first_among_the_rich():
    jobs = [Job("x.l", dnn="x", layer="l"), Job("y.l", dnn="y", layer="l"), Job("z.l", dnn="z", layer="l")]
    t = JobTable(jobs, ["a"], np.array([[1000.0], [100.0], [5000.0]]), np.zeros((3, 1)))
    s = served_system(t, 10.0)
    # z blocks the core 0-5000; x (1000) and y (100) wait ~5 and ~50 isolated latencies: both rich
    r = simulate(s, RequestStream(np.array([0.0, 1.0, 2.0]), np.full(3, 1e9), np.array([2, 0, 1])), Prema())
    assert r.finish.tolist() == [5000.0, 6100.0, 5100.0]


def test_random_never_picks_a_core_that_cannot_run_the_layer():
    s = one_layer([100.0, math.inf], [0.0, 0.0])
    n = 30
    r = simulate(s, RequestStream(np.arange(n) * 10.0, np.full(n, 1e9), np.zeros(n, np.int64)), RandomScheduler())
    assert set(r.trace[:, 2].tolist()) == {0.0} and np.isfinite(r.finish).all()


def test_slack_feature_is_capped_at_four():
    s = one_layer([100.0], [0.0])
    sim = Simulation(s, RequestStream(np.array([0.0]), np.array([1100.0]), np.array([0])))
    sim.next_decision()
    f = pair_features(sim, 0, 0, math.log(100.0), 0.0)
    assert f[FEATURES.index("slack")] == 4.0                  # (1100 - 0 - 100) / 100 = 10 -> 4


def test_streams_equal_is_counted():
    means = {"relmas": {"sla_rate": 0.5, "energy_pJ": 1.0, "sla_rate_per_seed": [0.5, 0.6, 0.3]},
             "edf": {"sla_rate": 0.5, "energy_pJ": 1.0, "sla_rate_per_seed": [0.5, 0.4, 0.4]}}
    g = gains(means, "relmas")["edf"]
    assert (g["streams_better"], g["streams_equal"], g["streams"]) == (1, 1, 3)


def test_env_lists_only_pairs_that_can_run():
    from coexplore.online.env import OnlineSchedulingEnv
    jobs = [Job("x.l", dnn="x", layer="l")]
    t = JobTable(jobs, ["a", "b"], np.array([[math.inf, 100.0]]), np.zeros((1, 2)))
    env = OnlineSchedulingEnv(served_system(t, 10.0), Scenario(load=0.5, requests=10))
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        assert all(c == 1 for _, c in info["pairs"])
        obs, _, done, _, info = env.step(0)


def test_per_model_rates_keep_the_table_order():
    from coexplore.online.compare import mean_summary
    jobs = [Job("z.l", dnn="z", layer="l"), Job("a.l", dnn="a", layer="l")]
    t = JobTable(jobs, ["c"], np.array([[100.0], [100.0]]), np.zeros((2, 1)))
    s = served_system(t, 10.0)
    r = simulate(s, RequestStream(np.array([0.0, 1.0]), np.array([1e6, 1e6]), np.array([0, 1])), FCFS())
    assert list(mean_summary([r])["per_model_sla_rate"]) == ["z", "a"]


def test_training_shows_a_progress_bar(monkeypatch):
    import coexplore.progress
    made = []
    class Bar:
        def __init__(self, **kw): made.append(kw)
        def set_postfix_str(self, *a, **k): pass
        def update(self, n): pass
        def close(self): pass
    monkeypatch.setattr(coexplore.progress, "progress_bar", lambda **kw: Bar(**kw))
    s = one_layer([100.0], [0.0])
    train_policy(s, Scenario(requests=5), TrainSettings(generations=1, streams=1, pairs=1), progress=True)
    assert made and made[0]["total"] == 1


@pytest.mark.parametrize("scheduler", ["fcfs", "edf", "sjf", "lsf", "prema", "static"])
def test_the_fastest_core_counts_the_bandwidth_stretch_as_the_deadline_does(scheduler):
    """User study: a layer of 100 no-stall cycles needing 30 B/cycle on a 10 B/cycle system takes 300
    alone; the heuristics chose that core over one taking 150 (1 B/cycle) and missed a deadline of
    slack 1.5 on an idle system. By hand: alone 300 vs 150, so the lean core; the request ends at 150."""
    from coexplore.online.schedulers import heuristic
    t = JobTable([Job("net.l1", dnn="net", layer="l1")], ["fast", "lean"], np.array([[100.0, 150.0]]),
                 np.array([[30.0, 1.0]]))
    s = served_system(t, 10.0)
    assert s.models[0].isolated_latency == 150.0
    r = simulate(s, RequestStream(np.array([0.0]), np.array([225.0]), np.array([0])), heuristic(scheduler))
    assert r.sla_rate == 1.0 and r.finish[0] == 150.0


def test_heuristic_names_are_read_case_blind_as_the_system_schedulers():
    from coexplore.online.schedulers import heuristic
    assert heuristic("EDF").name == "edf"
    with pytest.raises(CoexploreError, match="learned policy"):
        heuristic("RELMAS")
