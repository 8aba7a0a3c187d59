"""The online scheduling problem as a gymnasium environment, for any RL library.

One step is one choice at a decision point: start one of the listed (ready request, idle core)
pairs, or wait (the last action; also any index past the pairs listed). After a start the same
decision point goes on while pairs remain (the bandwidth in use updated); a wait, or a decision
point with nothing left to start, lets time run to the next one. Observation: `pairs`, the
features of up to `max_pairs` pairs (`policy.FEATURES`, zero rows past the last; chosen by rounds,
every ready request with its first able idle core, then with its second, ..., and listed request by
request), and `mask`, 1
for the actions that start a listed pair and for the wait (0 for the wait only where it would stall:
every core idle and nothing left to happen, with `drop_late` off; the step then refuses it, raising
`SchedulerStalled`). Reward: +1 per request that ends by its
deadline, -1 per request that ends late or is dropped, as they happen. An episode is one stream of
the scenario (`reset(seed=...)` draws it; the same seed, the same stream), or a stream given
(`reset(options={"stream": s})`). `gymnasium.make(ENV_ID, system=..., scenario=...)` makes one too.
"""

from __future__ import annotations

import numbers

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from coexplore.errors import CoexploreError
from coexplore.online.models import ServedSystem
from coexplore.online.policy import FEATURES, pair_features
from coexplore.online.simulator import Simulation
from coexplore.online.stream import RequestStream, Scenario, poisson_stream
from coexplore.seeds import check_seed

ENV_ID = "coexplore/OnlineScheduling-v0"     # gymnasium.make(ENV_ID, system=..., scenario=...)


class OnlineSchedulingEnv(gym.Env):
    """Multi-tenant online scheduling of `system` under `scenario`'s request streams, one
    decision per step (the module's docstring says the observation, actions and reward)."""

    metadata = {"render_modes": []}

    def __init__(self, system: ServedSystem, scenario: Scenario = Scenario(), max_pairs: int = 64,
                 drop_late: bool = True, render_mode: str | None = None):
        if render_mode is not None:
            raise CoexploreError(f"render mode {render_mode!r}", key="render_mode", expected="None (nothing to render)")
        self.render_mode = None
        if isinstance(max_pairs, bool) or not isinstance(max_pairs, numbers.Integral) or max_pairs < 1:
            raise CoexploreError(f"got {max_pairs!r}", key="max_pairs",
                                 expected="an integer >= 1 (pairs listed per step)")
        self.system, self.scenario, self.max_pairs, self.drop_late = system, scenario, int(max_pairs), drop_late
        big = np.finfo(np.float64).max / 4      # (a pair's bandwidth need has no ceiling; a range sample() can draw)
        self.observation_space = spaces.Dict({
            "pairs": spaces.Box(-big, big, (self.max_pairs, len(FEATURES)), np.float64),
            "mask": spaces.MultiBinary(self.max_pairs + 1)})
        self.action_space = spaces.Discrete(self.max_pairs + 1)
        self.sim: Simulation | None = None
        self._over = False                   # the step that ended the episode was taken
        self._pairs: list[tuple[int, int]] = []
        self._mask = np.zeros(self.max_pairs + 1, dtype=np.int8)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A new episode: the scenario's stream of `seed` (as `poisson_stream`), or the
        `RequestStream` given as `options={"stream": s}` (a recorded trace, `online.trace`)."""
        seed = check_seed(seed)              # (numpy's integers too; gymnasium takes only Python's)
        if options is not None and not isinstance(options, dict):
            raise CoexploreError(f"got {options!r}"[:120], key="options", expected="{'stream': a RequestStream} or None")
        stream = (options or {}).get("stream")
        unknown = set(options or {}) - {"stream"}
        if unknown or (stream is not None and not isinstance(stream, RequestStream)):
            raise CoexploreError(f"options {sorted(unknown) or 'stream=' + type(stream).__name__}", key="options",
                                 expected="{'stream': a RequestStream} or None")
        super().reset(seed=seed)
        self.sim = None                      # (a stream the system refuses leaves no episode running)
        if stream is None:
            stream = poisson_stream(self.system, self.scenario,
                                    int(self.np_random.integers(2**31)) if seed is None else seed)
        self.sim = Simulation(self.system, stream, self.drop_late)
        self._log_mean_iso = float(np.mean(np.log(self.sim.isolated)))
        self._scored, self._over = 0, False
        self.sim.next_decision()
        return self._observe(), self._info()

    def step(self, action):
        sim = self.sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        if isinstance(action, (bool, np.bool_)) or (
                not self.action_space.contains(action)
                and not (isinstance(action, (int, np.integer)) and 0 <= action <= self.max_pairs)):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        if self._over:
            raise RuntimeError("the episode has ended: call reset()")
        k = int(action)
        if not sim.finished:     # (a stream over at reset, every deadline at its arrival: this step ends it)
            if k < len(self._pairs):
                sim.start(*self._pairs[k])
            if k >= len(self._pairs) or not self._list_pairs():
                sim.next_decision()
        reward = sim.hits - sim.misses - self._scored
        self._scored = sim.hits - sim.misses
        self._over = sim.finished
        return self._observe(), float(reward), sim.finished, False, self._info()

    def _list_pairs(self) -> list[tuple[int, int]]:
        """The (ready request, idle core) pairs, chosen by rounds: each ready request (in the order
        they became ready) with its first idle core able to run it, then each with its second, ...; cut
        at `max_pairs`, so a long queue shows every request (up to max_pairs) before second choices."""
        sim = self.sim
        idle = sim.idle_cores()
        per = [[c for c in idle if np.isfinite(sim.lat[sim.model[r]][sim.layer[r]][c])] for r in sim.ready]
        rounds = max(map(len, per), default=0)
        chosen = [(k, i) for k in range(rounds) for i, cores in enumerate(per) if k < len(cores)][:self.max_pairs]
        # listed request by request (as LearnedScheduler weighs them, so a tie goes the same way)
        self._pairs = [(sim.ready[i], per[i][k]) for k, i in sorted(chosen, key=lambda ki: (ki[1], ki[0]))]
        return self._pairs

    def _observe(self) -> dict:
        sim = self.sim
        pairs = self._list_pairs() if not sim.finished else []
        self._pairs = pairs
        obs = np.zeros((self.max_pairs, len(FEATURES)))
        demand = sim.demand / sim.bandwidth
        for i, (r, c) in enumerate(pairs):
            obs[i] = pair_features(sim, r, c, self._log_mean_iso, demand)
        mask = np.zeros(self.max_pairs + 1, dtype=np.int8)
        mask[:len(pairs)] = 1
        mask[-1] = 1 if not pairs or sim.finished or sim.can_wait() else 0
        self._mask = mask
        return {"pairs": obs, "mask": mask}

    def action_masks(self) -> np.ndarray:
        """The current observation's mask as booleans (what maskable-policy libraries ask for)."""
        if self.sim is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask.astype(bool)

    def _info(self) -> dict:
        sim = self.sim
        return {"time": sim.t, "met": sim.hits, "missed": sim.misses, "pairs": list(self._pairs)}


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="coexplore.online.env:OnlineSchedulingEnv")
