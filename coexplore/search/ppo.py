"""Single-agent PPO with an MLP policy: the baseline of the MARL paper (arXiv 2507.16249).

The paper compares its agents with "standard single-agent RL": ArchGym's Acme PPO, an MLP
policy (32, 32, 32) emitting every mapping parameter at once (the paper's public code, ArchGym
`sims/gamma/src/GAMMA/train_single_agent_maestro.py`). This is that learner on coexplore's
discrete spaces, so the paper's comparison can be made here; `rl` is the stronger single agent
the project's target is measured against (docs/readme_search.md, "The paper's baseline").

- Policy: an MLP (tanh hidden layers) from the observation to one categorical head per parameter
  (MultiDiscrete). Each sample is one decision with nothing to observe (a bandit; ArchGym feeds
  back the last step's metrics, which do not depend on the next action), so the observation is a
  constant and the MLP is a parametrisation of the heads' logits.
- Update after each batch (one rollout): PPO's clipped surrogate (Schulman et al., 2017) over
  `epochs` passes of `minibatches` shuffled minibatches, an entropy bonus, the global gradient
  norm clipped, Adam. The reward is -log(loss) (invalid: the worst seen minus a margin, as for
  the other learners); advantages are the rewards standardised within the rollout (a value
  baseline of a constant observation is one number, and advantage normalisation removes it).
- Repeats are answered from memory, as for every learner here (the paper's environment paid a
  sample for each), so this baseline is, if anything, stronger than the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.losses import LossTransform
from coexplore.search.rl import PolicySearcher, Adam
from coexplore.search.space import DiscreteSpace


@dataclass
class PPOConfig:
    """Settings of `ppo`, the MARL paper's single-agent baseline (an MLP policy, clipped updates)."""

    hidden: int = 32               # units per hidden layer (the paper's MLP: 32, 32, 32)
    layers: int = 3                # hidden layers
    lr: float = 3e-4               # Adam step size (the paper's range: 2e-5 to 3e-4)
    clip: float = 0.2              # PPO's clipping of the probability ratio
    entropy: float = 0.05          # entropy bonus (the paper's range: 0.01 to 0.1)
    epochs: int = 4                # passes over each rollout
    minibatches: int = 4           # minibatches per pass
    max_grad_norm: float = 0.5     # global gradient norm clip (0 = off)
    max_draw_factor: int = 4       # draw up to this many x n policy samples looking for new points
    log_loss: bool = True          # learn on log(loss)
    invalid_margin: float = 0.5    # invalid = worst seen + margin x spread of seen values


class PPOLearner:
    """The MLP policy and its PPO update; `sample` / `observe` / `update` as `TeamLearner`."""

    def __init__(self, space: DiscreteSpace, config: PPOConfig, rng: np.random.Generator):
        self.space = space
        self.config = config
        self.cards = space.cardinalities
        self.off = np.concatenate([[0], np.cumsum(self.cards)]).astype(np.int64)
        self.seg = np.repeat(np.arange(space.n_params), self.cards)
        sizes = [1] + [config.hidden] * config.layers + [int(self.off[-1])]
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            # scaled normal init (gain sqrt 2 for tanh layers); the output layer small, so the first
            # policy is near uniform
            gain = 0.01 if i == len(sizes) - 2 else np.sqrt(2.0)
            self.weights.append(rng.normal(0.0, gain / np.sqrt(max(a, 1)), (a, b)))
            self.biases.append(np.zeros(b))
        self.opt = [Adam(p.shape, config.lr) for p in self.weights + self.biases]
        self.obs = np.ones((1, 1))
        self.rng = rng                 # the searcher's generator (minibatch shuffles): same seed, same run

    def _forward(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """Logits [size] and the activations of each layer (for the backward pass)."""
        acts = [self.obs]
        h = self.obs
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w + b
            if i < len(self.weights) - 1:
                h = np.tanh(h)
            acts.append(h)
        return h[0], acts

    def _probs(self, z: np.ndarray) -> np.ndarray:
        starts = self.off[:-1]
        e = np.exp(z - np.maximum.reduceat(z, starts)[self.seg])
        return e / np.add.reduceat(e, starts)[self.seg]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        p = self._probs(self._forward()[0])
        u = rng.random((n, self.space.n_params))
        x = np.empty((n, self.space.n_params), dtype=np.int64)
        for j in range(self.space.n_params):
            cs = np.cumsum(p[self.off[j]:self.off[j + 1]])
            x[:, j] = np.minimum(np.searchsorted(cs, u[:, j] * cs[-1], side="right"), self.cards[j] - 1)
        return x

    def observe(self, x: np.ndarray, raw_losses: np.ndarray) -> None:
        """Nothing to keep between rollouts (no archive, no critic)."""

    def _logp(self, z: np.ndarray, x: np.ndarray) -> np.ndarray:
        logp = np.log(self._probs(z) + 1e-300)
        return logp[self.off[:-1] + x].sum(axis=1)

    def update(self, x: np.ndarray, raw_losses: np.ndarray, transform: LossTransform) -> None:
        n = len(x)
        if n < 2:
            return
        cfg = self.config
        r = -transform(raw_losses)
        sd = r.std()
        adv = (r - r.mean()) / (sd if sd > 0 else 1.0)
        logp_old = self._logp(self._forward()[0], x)
        cols = self.off[:-1] + x                                        # [n, d] chosen flat entries
        for _ in range(cfg.epochs):
            order = self.rng.permutation(n)
            for mb in np.array_split(order, min(cfg.minibatches, n)):
                self._step(cols[mb], adv[mb], logp_old[mb])

    def _step(self, cols: np.ndarray, adv: np.ndarray, logp_old: np.ndarray) -> None:
        grads = self.gradients(cols, adv, logp_old)
        cfg = self.config
        if cfg.max_grad_norm > 0:
            norm = np.sqrt(sum(float((g * g).sum()) for g in grads))
            if norm > cfg.max_grad_norm:
                grads = [g * (cfg.max_grad_norm / norm) for g in grads]
        for param, g, opt in zip(self.weights + self.biases, grads, self.opt):
            opt.step(param, -g)                                        # Adam ascends: descend on the loss

    def gradients(self, cols: np.ndarray, adv: np.ndarray, logp_old: np.ndarray) -> list[np.ndarray]:
        """Gradient of PPO's loss -mean(min(ratio A, clip(ratio) A)) - entropy x H(policy) with
        respect to the weights, then the biases; cols: the chosen flat logit entries [n, d]."""
        cfg = self.config
        z, acts = self._forward()
        p = self._probs(z)
        logp_all = np.log(p + 1e-300)
        ratio = np.exp(logp_all[cols].sum(axis=1) - logp_old)
        # d/dlogp of min(ratio*A, clip(ratio)*A): ratio*A where the unclipped term is the smaller one
        live = np.where(adv >= 0, ratio <= 1 + cfg.clip, ratio >= 1 - cfg.clip)
        coef = np.where(live, adv * ratio, 0.0) / len(adv)
        # dlogp_i/dz = onehot_i - p (within each head)
        gz = coef.sum() * p
        np.add.at(gz, cols.reshape(-1), -np.repeat(coef, cols.shape[1]))
        h_seg = -np.add.reduceat(p * logp_all, self.off[:-1])[self.seg]
        gz += cfg.entropy * p * (logp_all + h_seg)
        grads_w, grads_b = self._backward(gz, acts)
        return grads_w + grads_b

    def _backward(self, gz: np.ndarray, acts: list[np.ndarray]) -> tuple[list, list]:
        g = gz[None, :]
        gw: list[np.ndarray] = [None] * len(self.weights)
        gb: list[np.ndarray] = [None] * len(self.biases)
        for i in range(len(self.weights) - 1, -1, -1):
            gw[i] = acts[i].T @ g
            gb[i] = g[0].copy()
            if i > 0:
                g = (g @ self.weights[i].T) * (1.0 - acts[i] ** 2)    # through tanh
        return gw, gb


class PPO(PolicySearcher):
    """Single-agent PPO (MLP policy over every parameter): the MARL paper's baseline."""

    name = "ppo"

    @classmethod
    def default_config(cls) -> PPOConfig:
        return PPOConfig()

    def _ensure_learner(self) -> None:
        if self.learner is None:
            self.learner = PPOLearner(self.space, self.config, self.rng)
