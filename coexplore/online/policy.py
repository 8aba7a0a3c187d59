"""The learned scheduler: a scoring policy over (ready request, idle core) pairs.

RELMAS (arXiv 2404.08950) learns, from the per-layer latency and bandwidth tables and the state of
the queue, which request to run on which sub-accelerator and when to hold back; its network (an
LSTM trained with DDPG) is not public (RELMAS_NOTES.md). Ours sees the same state, pair by pair
(`FEATURES`): of the request, its slack to the deadline (in its DNN's isolated latencies and in
the DNNs' mean one), whether it is hopeless (negative slack), the work left (fraction, and its log
in mean isolated latencies), the time waited, the DNN's size; of the core for its next layer, the
cycles lost against the layer's fastest core, the layer's size and bandwidth need; of the system,
the bandwidth over-subscription starting it would cause and the queue length. The policy scores every pair with a
linear function of these features; at a decision it starts the best pair while its score is > 0,
updating the bandwidth in use, so it can also hold a request back (wait for a better core, for
bandwidth, or give up on a deadline it cannot meet). The weights are trained on simulated streams
(`train.py`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.online.schedulers import Scheduler
from coexplore.online.simulator import Simulation

FEATURES = ("bias", "slack", "hopeless", "core_penalty", "remaining", "waited", "overload", "need",
            "queue", "dnn_size", "layer_size", "log_remaining", "abs_slack")
OVERLOAD = FEATURES.index("overload")
NEED = FEATURES.index("need")
QUEUE = FEATURES.index("queue")


def pair_features(sim: Simulation, r: int, c: int, log_mean_iso: float, demand: float) -> list[float]:
    """The features (`FEATURES`) of starting request r's next layer on core c now, the running layers
    needing `demand` x the system bandwidth; `log_mean_iso`: the mean log isolated latency of the DNNs."""
    m, l = sim.model[r], sim.layer[r]
    iso = sim.isolated[m]
    row = sim.lat[m][l]
    rem = sim.remaining[m][l]
    slack = (sim.deadline[r] - sim.t - rem) / iso
    need = sim.bw[m][l][c] / sim.bandwidth
    scale = math.exp(log_mean_iso)            # the DNNs' geometric mean isolated latency
    return [1.0, min(max(slack, -1.0), 4.0), 1.0 if slack < 0 else 0.0, (row[c] - min(row)) / iso, rem / iso,
            min((sim.t - sim.arrival[r]) / iso, 4.0), max(0.0, demand + need - 1.0), need, len(sim.ready) / sim.num_cores,
            math.log(iso) - log_mean_iso, row[c] / iso, math.log(max(rem, 1e-6 * scale) / scale),
            min(max(slack * iso / scale, -2.0), 8.0)]


@dataclass
class Policy:
    """Weights of the linear scoring function, one per feature of `FEATURES`."""

    weights: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.weights = np.asarray(self.weights, dtype=float)
        if self.weights.shape != (len(FEATURES),):
            raise CoexploreError(f"policy weights of shape {self.weights.shape}", key="weights",
                                 expected=f"{len(FEATURES)} finite numbers ({', '.join(FEATURES)})")
        bad = np.flatnonzero(~np.isfinite(self.weights))
        if len(bad):
            raise CoexploreError(f"weight {FEATURES[bad[0]]!r} is {self.weights[bad[0]]}", key="weights",
                                 expected=f"{len(FEATURES)} finite numbers ({', '.join(FEATURES)})")

    @classmethod
    def initial(cls) -> "Policy":
        """Start every pair, in the order the requests became ready (first come, first served)."""
        w = np.zeros(len(FEATURES))
        w[0] = 1.0
        return cls(w)

    def to_json(self) -> dict:
        return {"features": list(FEATURES), "weights": self.weights.tolist(), **self.meta}

    def save(self, path: str | Path) -> None:
        from coexplore.spec.yamlio import write_text
        write_text(path, json.dumps(self.to_json(), indent=1) + "\n")


def load_policy(path: str | Path) -> Policy:
    """A policy file written by `Policy.save` (`coexplore online` writes policy.json)."""
    from coexplore.spec.yamlio import read_text
    if not isinstance(path, (str, Path)):
        raise CoexploreError(f"got {path!r:.60}", key="path", expected="a policy.json file's path")
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise CoexploreError(f"not JSON ({exc})", file=path, expected="a policy.json written by coexplore online") from None
    if not isinstance(data, dict) or "features" not in data or "weights" not in data:
        raise CoexploreError("not a policy file (no features and weights)", file=path,
                             expected="a policy.json an earlier coexplore online run wrote")
    if data["features"] != list(FEATURES):
        raise CoexploreError("the policy's features are not this version's", file=path, key="features",
                             expected=f"[{', '.join(FEATURES)}]")
    try:
        return Policy(data["weights"], {k: v for k, v in data.items() if k not in ("features", "weights")})
    except (KeyError, TypeError, ValueError) as exc:
        raise CoexploreError(f"bad weights ({exc})", file=path, key="weights",
                             expected=f"{len(FEATURES)} numbers") from None
    except CoexploreError as exc:
        raise exc.with_file(path) from None


class LearnedScheduler(Scheduler):
    """Starts the best-scoring (request, core) pair while its score is > 0, pair by pair."""

    name = "relmas"

    def __init__(self, policy: Policy):
        if isinstance(policy, (str, Path)):        # a policy.json's path
            policy = load_policy(policy)
        if not isinstance(policy, Policy):
            raise CoexploreError(f"got {policy!r:.60}", key="policy",
                                 expected="a Policy (train_policy, load_policy) or a policy.json path")
        self.policy = policy
        # scored with weights beyond 1 scaled by a power of two to a largest |w| in [0.5, 1): the same
        # decisions bit for bit (only the sign and order of scores count, and a power of two rounds
        # nothing), but weights of 1e308 no longer overflow the scores into inf - inf = NaN
        top = float(np.max(np.abs(policy.weights))) if len(policy.weights) else 0.0
        scale = 2.0 ** -math.frexp(top)[1] if top >= 1 else 1.0
        self.w = (np.asarray(policy.weights, dtype=float) * scale).tolist()

    def reset(self, sim, seed):
        self.log_mean_iso = float(np.mean(np.log(sim.isolated)))

    def decide(self, sim):
        w, wo, wq = self.w, self.w[OVERLOAD], self.w[QUEUE] / sim.num_cores
        demand = sim.demand / sim.bandwidth
        idle = sim.idle_cores()
        cands = []                     # (score without the overload term, need, request, core)
        for r in sim.ready:
            row = sim.lat[sim.model[r]][sim.layer[r]]
            for c in idle:
                if math.isfinite(row[c]):
                    f = pair_features(sim, r, c, self.log_mean_iso, demand)
                    cands.append((sum(wi * fi for wi, fi in zip(w, f)) - wo * f[OVERLOAD], f[NEED], r, c))
        pairs = []
        while cands:
            best, pick = -math.inf, None
            for cand in cands:
                s = cand[0] + wo * max(0.0, demand + cand[1] - 1.0) - wq * len(pairs)   # (started leave the queue)
                if s > best:
                    best, pick = s, cand
            if best <= 0 and (pairs or any(x >= 0 for x in sim.running) or sim.drop_late):
                break
            pairs.append((pick[2], pick[3]))
            demand += pick[1]
            cands = [x for x in cands if x[2] != pick[2] and x[3] != pick[3]]
        return pairs
