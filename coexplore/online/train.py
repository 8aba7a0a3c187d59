"""Training the learned scheduler's weights on simulated request streams.

The return of a policy is its SLA satisfaction rate over a few streams drawn from the scenario;
the weights are searched with an evolution strategy (OpenAI-ES: antithetic Gaussian perturbations
of the mean, centred ranks, Adam), a policy-search method for RL problems whose return is only
known at the end of an episode (Salimans et al. 2017, arXiv 1703.03864). Every generation draws
fresh training streams (seeds of their own, never the evaluation seeds) and scores all its
candidates on the same ones, so their ranks compare the policies, not the streams' luck. The
strategy keeps its whole state (mean, Adam moments, random generator) in a JSON-ready dict, so an
interrupted training resumes exactly where it stopped.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.online.models import ServedSystem
from coexplore.online.policy import LearnedScheduler, Policy
from coexplore.online.simulator import simulate
from coexplore.online.stream import Scenario, poisson_stream
from coexplore.ranks import rankdata
from coexplore.seeds import check_seed

TRAIN_SEED_BASE = 1_000_000      # training streams' seeds start here (evaluation uses 0, 1, ...)


class EvolutionStrategy:
    """ask() -> candidates [2 x pairs, dim]; tell(candidates, returns) moves the mean uphill."""

    def __init__(self, x0, sigma: float = 0.3, lr: float = 0.1, pairs: int = 6, seed: int = 0,
                 decay: float = 0.005):
        self.mean = np.asarray(x0, dtype=float).copy()
        self.sigma, self.lr, self.pairs, self.decay = float(sigma), float(lr), int(pairs), float(decay)
        self.rng = np.random.default_rng([seed, 0xE5])
        self.m = np.zeros_like(self.mean)
        self.v = np.zeros_like(self.mean)
        self.generation = 0
        self._eps = None

    def ask(self) -> np.ndarray:
        self._eps = self.rng.standard_normal((self.pairs, self.mean.size))
        return np.vstack([self.mean + self.sigma * self._eps, self.mean - self.sigma * self._eps])

    def tell(self, candidates: np.ndarray, returns) -> None:
        returns = np.asarray(returns, dtype=float)
        if self._eps is None or returns.shape != (2 * self.pairs,):
            raise ValueError("tell() takes the returns of the candidates of the last ask()")
        ranks = (rankdata(returns) - 1) / max(1, len(returns) - 1) - 0.5       # centred, ties shared
        grad = (ranks[:self.pairs] - ranks[self.pairs:]) @ self._eps / (2 * self.pairs * self.sigma)
        grad -= self.decay * self.mean
        self.generation += 1
        b1, b2 = 0.9, 0.999
        self.m = b1 * self.m + (1 - b1) * grad
        self.v = b2 * self.v + (1 - b2) * grad * grad
        mh = self.m / (1 - b1 ** self.generation)
        vh = self.v / (1 - b2 ** self.generation)
        self.mean = self.mean + self.lr * mh / (np.sqrt(vh) + 1e-8)
        self._eps = None

    def state(self) -> dict:
        return {"mean": self.mean.tolist(), "m": self.m.tolist(), "v": self.v.tolist(),
                "generation": self.generation, "rng": self.rng.bit_generator.state,
                "sigma": self.sigma, "lr": self.lr, "pairs": self.pairs, "decay": self.decay}

    @classmethod
    def from_state(cls, state: dict) -> "EvolutionStrategy":
        es = cls(state["mean"], state["sigma"], state["lr"], state["pairs"], 0, state["decay"])
        es.m, es.v = np.array(state["m"], dtype=float), np.array(state["v"], dtype=float)
        es.generation = int(state["generation"])
        es.rng.bit_generator.state = state["rng"]
        return es


def _finite(value) -> bool:
    """A finite number (numpy's too), not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and bool(np.isfinite(value))


@dataclass(frozen=True)
class TrainSettings:
    """Generations of the strategy, training streams per generation, perturbation pairs, step sizes."""

    generations: int = 25
    streams: int = 3
    pairs: int = 6
    sigma: float = 0.3
    lr: float = 0.1
    seed: int = 0

    def __post_init__(self):
        for key, value, low in (("generations", self.generations, 0), ("streams", self.streams, 1),
                                ("pairs", self.pairs, 1)):
            if not _finite(value) or int(value) != value or value < low:
                raise CoexploreError(f"{key} {value!r}", key=key, option=f"--train-{key}",
                                     expected=f"an integer >= {low}")
            object.__setattr__(self, key, int(value))
        object.__setattr__(self, "seed", check_seed(self.seed, none=False))
        for key in ("sigma", "lr"):
            value = getattr(self, key)
            if not (_finite(value) and value > 0):
                raise CoexploreError(f"{key} {value!r}", key=key, expected="a finite number > 0")


def policy_return(system: ServedSystem, scenario: Scenario, weights, seeds, drop_late: bool = True) -> float:
    """Mean SLA satisfaction rate of the policy with `weights` over the streams of `seeds`."""
    sched = LearnedScheduler(Policy(weights))
    return float(np.mean([simulate(system, poisson_stream(system, scenario, s), sched, drop_late).sla_rate
                          for s in seeds]))


def train_seeds(settings: TrainSettings, generation: int) -> list[int]:
    """The training streams of one generation."""
    base = TRAIN_SEED_BASE + settings.seed * 100_003 + generation * settings.streams
    return list(range(base, base + settings.streams))


def _candidate_return(task) -> float:
    """policy_return of one candidate, in a worker process."""
    return policy_return(*task)


def train_policy(system: ServedSystem, scenario: Scenario, settings: TrainSettings = TrainSettings(),
                 drop_late: bool = True, state: dict | None = None, on_generation=None, progress: bool = False,
                 workers: int = 1):
    """Train from `Policy.initial()` (or resume from a `state` saved by `on_generation`); returns
    (policy, state). `on_generation(state)` after each generation (to save it: a stop loses at most
    the generation under way). state["history"]: per generation the candidates' mean and best return.
    `workers` > 1 scores a generation's candidates in that many processes (the same policy)."""
    from coexplore.workers.processes import WorkerPool
    if state is None:
        es = EvolutionStrategy(Policy.initial().weights, settings.sigma, settings.lr, settings.pairs, settings.seed)
        history: list = []
    else:
        es, history = EvolutionStrategy.from_state(state["strategy"]), list(state["history"])
    bar = None
    if progress and es.generation < settings.generations:
        from coexplore.progress import progress_bar
        bar = progress_bar(total=settings.generations, initial=es.generation, desc="train relmas", unit="gen",
                           leave=False)
    try:
        with WorkerPool(workers) if workers > 1 else contextlib.nullcontext() as pool:   # (a stop ends the workers)
            while es.generation < settings.generations:
                seeds = train_seeds(settings, es.generation)
                cands = es.ask()
                tasks = [(system, scenario, x, seeds, drop_late) for x in cands]
                returns = pool.map(_candidate_return, tasks) if pool else [_candidate_return(t) for t in tasks]
                es.tell(cands, returns)
                history.append([float(np.mean(returns)), float(np.max(returns))])
                if bar is not None:
                    bar.set_postfix_str(f"SLA {np.mean(returns):.3f}", refresh=False)
                    bar.update(1)
                if on_generation is not None:
                    on_generation({"strategy": es.state(), "history": history})
    finally:
        if bar is not None:
            bar.close()
    return Policy(es.mean.copy()), {"strategy": es.state(), "history": history}
