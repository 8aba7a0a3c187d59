"""Energy, cycles, validity and result records on top of the batched nest analysis.

`evaluate_batch` is the model's one entry point: a batch of mappings of one (architecture,
problem, ERT) in, per-mapping metrics out as numpy arrays; `result_record` turns one row into the
`expected.json` schema of the reference corpus (and of `coexplore evaluate --json`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from coexplore.energy import timeloop_pat
from coexplore.errors import CoexploreError
from coexplore.model.nest import NestResult, analyse, take_rows, tile_extents, tile_sizes
from coexplore.model.validity import Validity, check
from coexplore.spec.architecture import Architecture
from coexplore.spec.ert import OPERATIONS, EnergyTable
from coexplore.spec.mapping import MappingArrays
from coexplore.spec.problem import Problem


@dataclass
class LevelCosts:
    """Per-level per-op energies (pJ per vector access) in model order (innermost = 0)."""

    read: np.ndarray      # [L]
    fill: np.ndarray
    update: np.ndarray
    leak: np.ndarray
    block: np.ndarray     # words per vector access
    clusters: np.ndarray  # instances / cluster_size: energy is charged per utilized cluster
    compute: float
    notes: tuple[str, ...] = ()   # what the ERT did not price and Timeloop's estimate stands in for
    largest: np.ndarray | None = None     # [L] each level's largest ERT action / its cluster size (NaN: no table)
    compute_largest: float | None = None  # the compute unit's largest ERT action (None: no table)
    gaps: tuple[str, ...] = ()    # the notes on tables that price some ops only (moot under as_v03)
    pooled: bool = False          # a tensor's reads, fills and updates in one count of vectors (2020-21)

    def as_v03(self) -> "LevelCosts":
        """The energies as the Timeloop of 2020-21 read an ERT: every access of a buffer priced at its
        table's largest action over its cluster size (its "vector access energy"; an old table with an
        `access` action only prices reads, fills and updates), charged per vector of a tensor's reads,
        fills and updates together (today's Timeloop rounds each up to whole vectors apart), the compute
        unit at its largest, and no leakage (that Timeloop reported none). Levels without a table keep
        Timeloop's estimate."""
        if self.largest is None:
            return replace(self, leak=np.zeros_like(self.leak), pooled=True)
        has = ~np.isnan(self.largest)
        return replace(self, read=np.where(has, self.largest, self.read), fill=np.where(has, self.largest, self.fill),
                       update=np.where(has, self.largest, self.update), leak=np.zeros_like(self.leak),
                       compute=self.compute if self.compute_largest is None else self.compute_largest,
                       notes=tuple(n for n in self.notes if n not in self.gaps), gaps=(), pooled=True)



def level_costs(arch: Architecture, ert: EnergyTable) -> LevelCosts:
    """Look up every level's action energies in the ERT. What the ERT does not price, a buffer's
    read, fill or update (a table with an `access` action only, or no table for the buffer) or the
    compute unit's compute, gets Timeloop's own estimate, as timeloop-model does: it replaces only
    the energies of the levels its ERT names (Topology::Specs::ParseAccelergyERT), the others keep
    their `pat` estimates (said in `notes`). An ERT that names none of the levels is refused: it
    is another architecture's."""
    notes, gaps = [], []
    L = len(arch.levels)
    arrays = {op: np.zeros(L) for op in ("read", "fill", "update", "leak")}
    block = np.ones(L)
    clusters = np.ones(L)
    largest = np.full(L, np.nan)
    for li, lv in enumerate(reversed(arch.levels)):
        block[li] = lv.block_size
        # Timeloop's utilized clusters: min(utilized instances, instances / cluster_size), an integer
        # division: a cluster wider than the level's instances makes 0 clusters and its accesses cost nothing
        clusters[li] = lv.instances // max(1, lv.cluster_size)
        if lv.is_dummy:
            continue
        if clusters[li] == 0:
            notes.append(f"{lv.name}: its cluster size {lv.cluster_size} (width / (block size x word bits), or as "
                        f"given) exceeds its {lv.instances} instance{'s' if lv.instances > 1 else ''}: Timeloop counts "
                        "0 clusters (instances / cluster size, rounded down) and charges its reads, fills and updates "
                        "no energy; so does coexplore (a width meant as the block size x word bits?)")
        if ert.actions.get(lv.name):
            largest[li] = max(ert.actions[lv.name].values()) / max(1, lv.cluster_size)
        estimated = []
        user = timeloop_pat.user_access_energy(lv)
        if user is not None and ert.has_level(lv.name):
            # Timeloop (UpdateOpEnergyViaERT): a level's own vector_access_energy is not replaced by
            # its ERT table: it prices reads, fills and updates, and there is no leakage
            notes.append(f"{lv.name}: its vector_access_energy, {user:.6g} pJ per access, prices it, not the "
                         "ERT's table (as in timeloop-model)")
            for op in arrays:
                arrays[op][li] = 0.0 if op == "leak" else user
            continue
        for op in arrays:
            e = ert.energy(lv.name, op)
            if e is None and op == "leak":
                e = 0.0          # Accelergy 0.3 tables have no leak action: no leakage, as Timeloop then
            if e is None and (e := timeloop_pat.vector_access_energy(lv)) is not None:
                estimated.append(op)
            if e is None and not ert.has_level(lv.name):
                raise CoexploreError(f"no energy table for level '{lv.name}', and no size for Timeloop's estimate",
                                     file=ert.source, key="ERT.tables",
                                     expected=f"a table named like '...{lv.name}[1..{lv.instances}]'")
            if e is None:
                raise CoexploreError(f"no action that prices its {op}s for level '{lv.name}'", file=ert.source,
                                     key=f"ERT.tables[{lv.name}].actions",
                                     expected=f"one of the actions {', '.join(OPERATIONS[op])} (Timeloop's names)")
            arrays[op][li] = e
        if estimated and not ert.has_level(lv.name):
            notes.append(f"{lv.name}: the ERT has no table for it: Timeloop's built-in estimate, "
                         f"{timeloop_pat.vector_access_energy(lv):.6g} pJ per access, stands in, as in timeloop-model")
        elif estimated:
            gaps.append(f"{lv.name}: the ERT prices no {', '.join(estimated)} (no action named "
                         f"{' / '.join(sorted({n for op in estimated for n in OPERATIONS[op]}))}): Timeloop's built-in "
                         f"estimate, {timeloop_pat.vector_access_energy(lv):.6g} pJ per access, stands in, as in timeloop-model"
                         + (" today (the Timeloop of 2020-21 priced every access at the table's largest action, "
                            "its `access`: --timeloop-rules v0.3)" if "access" in ert.actions[lv.name] else ""))
            notes.append(gaps[-1])
    for lv in arch.all_levels:         # Timeloop keys tables by name alone: a table of another size is said
        sizes = ert.instances.get(lv.name)
        if not lv.is_dummy and sizes and lv.instances not in sizes:
            counts = " or ".join(map(str, sorted(sizes)))
            notes.append(f"{lv.name}: the ERT's table is named for {counts} instances, the architecture has "
                         f"{lv.instances}: a table made for another design or array size? (its energies are used, "
                         "as Timeloop uses them)")
    parts = [lv.name for lv in arch.levels if not lv.is_dummy] + [arch.compute.name]
    named = [n for n in parts if ert.has_level(n)]
    if not named:
        raise CoexploreError("the ERT has a table for none of the architecture's levels (another architecture's?)",
                             file=ert.source, key="ERT.tables",
                             expected=f"tables named like '...{arch.compute.name}[1..{arch.compute.instances}]'")
    if 2 * len(named) < len(parts):
        notes.append(f"the ERT has tables for only {len(named)} of the architecture's {len(parts)} levels and "
                     f"compute unit ({', '.join(named)}): a table made for another architecture? (Timeloop's "
                     "estimates stand in for the others, as in timeloop-model)")
    ce = ert.energy(arch.compute.name, "compute")
    if ce is None:       # no table, or a table without a compute action: Timeloop's estimate
        ce = timeloop_pat.compute_energy(arch.compute)
        why = ("has no table for it" if not ert.has_level(arch.compute.name) else
               f"prices no compute (no action named {' / '.join(OPERATIONS['compute'])})")
        notes.append(f"{arch.compute.name}: the ERT {why}: Timeloop's built-in estimate, {ce:.6g} pJ per compute, "
                     "stands in, as in timeloop-model")
        if ert.has_level(arch.compute.name):
            gaps.append(notes[-1])
    acts = ert.actions.get(arch.compute.name)
    return LevelCosts(arrays["read"], arrays["fill"], arrays["update"], arrays["leak"], block, clusters, ce,
                      tuple(notes), largest, max(acts.values()) if acts else None, tuple(gaps))


@dataclass
class BatchResult:
    """Metrics for a batch; per-level arrays are in model order (innermost = 0)."""

    valid: np.ndarray          # [B] bool
    validity: Validity         # which check failed first, where (messages: `validity.message(b, arch, problem)`,
                               # or ctx.record(result, b)["error"])
    energy_pJ: np.ndarray      # [B] (nan if invalid)
    cycles: np.ndarray         # [B]
    computes: int
    utilization: np.ndarray
    edp: np.ndarray
    nest: NestResult
    level_energy: np.ndarray   # [B, L]
    ds_energy: np.ndarray      # [B, L, DS]
    leakage: np.ndarray        # [B, L]
    compute_energy: np.ndarray  # [B]
    level_cycles: np.ndarray   # [B, L]


def link_mesh(arch: Architecture) -> tuple[np.ndarray, np.ndarray]:
    """Physical X/Y fan-out below each level (model order): inner mesh / own mesh, as Timeloop's
    ArchProperties derives it; it lays out a fan-out's children for link transfers."""
    inner = list(reversed(arch.levels))
    mx = np.ones(len(inner), np.int64)
    my = np.ones(len(inner), np.int64)
    for li, lv in enumerate(inner):
        below = arch.compute if li == 0 else inner[li - 1]
        mx[li] = max(1, below.mesh_x // max(1, lv.mesh_x))
        my[li] = max(1, below.mesh_y // max(1, lv.mesh_y))
    return mx, my


def evaluate_batch(arch: Architecture, problem: Problem, costs: LevelCosts, m: MappingArrays,
                   stride_rule: str = "current") -> BatchResult:
    """Evaluate a batch of mappings: validity, per-level counts, energy, cycles, EDP.

    stride_rule: "current" Timeloop (default), "pre2025" (to reproduce 2024 reference outputs, see
    `coexplore.model.nest.analyse`) or "v0.3" (the Timeloop of 2020-21: its counts, and the ERT read
    as it read it, `LevelCosts.as_v03`)."""
    built_here = bool(m.trusted) and m.trusted == m._ids()   # (decoded or read: their factor products fit int64)
    m = m.checked(len(arch.levels), len(problem.dims), len(problem.dataspaces))
    B, L, D = m.temporal.shape
    # Timeloop's checks first (cheap): only valid mappings go through the access analysis
    E = tile_extents(m.temporal, m.spatial_x, m.spatial_y)
    sizes = tile_sizes(problem, E, m.keep)
    exact = None
    if not built_here:                       # arrays built by hand: their factors checked in floats too
        with np.errstate(over="ignore"):
            exact = np.prod(m.temporal.astype(np.float64) * m.spatial_x * m.spatial_y, axis=1)     # [B, D]
    validity = check(arch, problem, E, m.spatial_x, m.spatial_y, sizes, exact)
    valid = validity.valid
    mesh_x, mesh_y = link_mesh(arch)
    idx = np.nonzero(valid)[0]
    sub = m if len(idx) == B else m.take(idx)
    nest = analyse(problem, sub.temporal, sub.spatial_x, sub.spatial_y, sub.perm, sub.keep, mesh_x, mesh_y,
                   sub.spatial_perm, stride_rule=stride_rule)
    met = _metrics(arch, problem, costs.as_v03() if stride_rule == "v0.3" else costs, nest)
    if len(idx) != B:                       # scatter back; invalid rows: NaN metrics, zero counts
        nest = take_rows(nest, idx, B)
        met = {k: _scatter(v, idx, B, np.nan if k in ("energy", "cycles", "util", "edp") else 0.0)
               for k, v in met.items()}
    nest.size = sizes
    return BatchResult(valid, validity, met["energy"], met["cycles"], problem.macs, met["util"], met["edp"],
                       nest, met["level_energy"], met["ds_energy"], met["leakage"], met["compute_energy"],
                       met["level_cycles"])


def _scatter(a: np.ndarray, idx: np.ndarray, B: int, fill: float) -> np.ndarray:
    out = np.full((B,) + a.shape[1:], fill, dtype=np.float64)
    out[idx] = a
    return out


def _metrics(arch: Architecture, problem: Problem, costs: LevelCosts, nest: NestResult) -> dict:
    """Energy, cycles, utilization and EDP of analysed (valid) mappings."""
    inst = nest.instances.astype(np.float64)                             # [B, L]
    blk = costs.block[None, :, None]
    if costs.pooled:      # (one energy per access under as_v03: the vectors of all of a tensor's words)
        ds_energy = np.ceil((nest.reads + nest.fills + nest.updates) / blk) * costs.read[None, :, None]
    else:
        ds_energy = (np.ceil(nest.reads / blk) * costs.read[None, :, None]
                     + np.ceil(nest.fills / blk) * costs.fill[None, :, None]
                     + np.ceil(nest.updates / blk) * costs.update[None, :, None])
    ds_energy = ds_energy \
        * np.minimum(inst, costs.clusters[None, :])[:, :, None]
    # bandwidth throttling per level (words / cycle / instance)
    cc = nest.compute_cycles.astype(np.float64)
    levels_inner = list(reversed(arch.levels))
    rbw = np.array([lv.read_bandwidth for lv in levels_inner])
    wbw = np.array([lv.write_bandwidth for lv in levels_inner])
    sbw = np.array([lv.shared_bandwidth for lv in levels_inner])
    # Timeloop's float order: per-dataspace demand, summed in dataspace order
    rd = np.zeros_like(nest.reads[:, :, 0], dtype=np.float64)
    wd = np.zeros_like(rd)
    for s in range(nest.reads.shape[2]):
        rd = rd + nest.reads[:, :, s] / cc[:, None]
        wd = wd + (nest.updates[:, :, s] + nest.fills[:, :, s]) / cc[:, None]
    slow = np.ones_like(rd)
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(rbw < rd, np.minimum(slow, rbw / rd), slow)
        slow = np.where(wbw < wd, np.minimum(slow, wbw / wd), slow)
        slow = np.where(sbw < rd + wd, np.minimum(slow, sbw / (rd + wd)), slow)
    level_cycles = np.ceil(cc[:, None] / slow)
    cycles = np.maximum(cc, level_cycles.max(axis=1)) if len(cc) else cc
    # every storage level leaks, also one that keeps nothing (dummy levels have no leak energy)
    with np.errstate(over="ignore"):    # a vanishing bandwidth (1e-300 words/cycle) overflows to inf, as it should
        leakage = costs.leak[None, :] * cycles[:, None] * inst
        level_energy = ds_energy.sum(axis=2) + leakage
        compute_energy = np.full(len(cc), problem.macs * costs.compute)
        energy = level_energy.sum(axis=1) + compute_energy
        return {"energy": energy, "cycles": cycles, "util": problem.macs / (arch.compute.instances * cycles),
                "edp": energy * 1e-12 * cycles, "level_energy": level_energy, "ds_energy": ds_energy,
                "leakage": leakage, "compute_energy": compute_energy, "level_cycles": level_cycles}


def result_record(arch: Architecture, problem: Problem, res: BatchResult, b: int = 0) -> dict:
    """One mapping's result in the corpus `expected.json` schema."""
    if not res.valid[b]:
        return {"valid": False, "error": f"ERROR: {res.validity.message(b, arch, problem)}", "energy_pJ": None, "cycles": None,
                "computes": None, "utilization": None, "edp_J_cycle": None, "levels": {}}
    L = len(arch.levels)
    levels = {}
    n = res.nest
    for i, lv in enumerate(arch.levels):
        li = L - 1 - i
        dss = {}
        for s, ds in enumerate(problem.dataspaces):
            if n.size[b, li, s] == 0:
                continue
            ui = int(n.instances[b, li])
            dss[ds.name] = {"reads": int(n.reads[b, li, s]) * ui, "fills": int(n.fills[b, li, s]) * ui,
                            "updates": int(n.updates[b, li, s]) * ui,
                            "utilized_capacity": int(n.size[b, li, s]), "utilized_instances": ui,
                            "energy_pJ": float(res.ds_energy[b, li, s])}
        levels[lv.name] = {"energy_pJ": float(res.level_energy[b, li]), "leakage_pJ": float(res.leakage[b, li]),
                           "dataspaces": dss}
    levels[arch.compute.name] = {"energy_pJ": float(res.compute_energy[b]), "dataspaces": {}}
    return {"valid": True, "error": None, "energy_pJ": float(res.energy_pJ[b]), "cycles": int(res.cycles[b]),
            "computes": int(res.computes), "utilization": float(res.utilization[b]),
            "edp_J_cycle": float(res.edp[b]), "levels": levels}


def dram_bytes(record: dict, arch) -> float:
    """Bytes a mapping moves at the backing store (its outermost level: reads + fills + updates x
    word size), from its expected.json-schema record: the off-chip traffic a shared DRAM sees."""
    top = arch.levels[0]
    word = top.word_bits / 8.0
    lv = record["levels"].get(top.name, {})
    return sum((d["reads"] + d["fills"] + d["updates"]) * word for d in lv.get("dataspaces", {}).values())
