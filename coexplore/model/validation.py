"""Validation of the model against a corpus of reference results (Timeloop's): every case
evaluated (batched per architecture and layer) and compared number for number with its
`expected.json`; the summary holds per-architecture statistics and the mismatching cases."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict

from coexplore.model.compare import compare_records
from coexplore.model.corpus import discover
from coexplore.model.inputs import load_context


def validate(root, progress: bool = True, stride_rule: str = "current") -> dict:
    """Evaluate all cases (batched per (arch, layer)) and summarise the errors.

    stride_rule "pre2025" reproduces references made by Timeloop before 2025 (model.nest.analyse)."""
    cases = discover(root)
    groups = defaultdict(list)
    for c in cases:
        groups[(c.arch_file, c.ert_file, c.layer_file)].append(c)
    rows = []
    bar = None
    if progress:
        from coexplore.progress import progress_bar
        bar = progress_bar(total=len(cases), desc="validate", unit="case", leave=False)
    t0 = time.perf_counter()
    model_s = [0.0]                     # seconds in the model, kept if Ctrl-C comes
    try:
        _evaluate_groups(groups, root, rows, bar, model_s, stride_rule)
    except KeyboardInterrupt:           # Ctrl-C: the summary of the cases done so far
        if bar is not None:
            bar.close()
        s = summarise(rows, time.perf_counter() - t0, model_s[0])
        s["interrupted_after"] = f"{len(rows)} of {len(cases)} cases"
        s["stride_rule"] = stride_rule
        raise ValidateInterrupted(s) from None
    if bar is not None:
        bar.close()
    return {**summarise(rows, time.perf_counter() - t0, model_s[0]), "stride_rule": stride_rule}


class ValidateInterrupted(KeyboardInterrupt):
    """Ctrl-C during `validate`; `.summary` covers the cases evaluated so far."""

    def __init__(self, summary: dict):
        super().__init__()
        self.summary = summary


def _evaluate_groups(groups: dict, root, rows: list, bar, model_s: list, stride_rule: str) -> None:
    for (arch_file, ert_file, layer_file), group in groups.items():
        ctx = load_context(arch_file, layer_file, ert_file)
        ctx.stride_rule = stride_rule
        mappings = [ctx.load_mapping(c.path / "mapping.yaml") for c in group]
        t = time.perf_counter()
        res = ctx.evaluate_mappings(mappings)
        model_s[0] += time.perf_counter() - t
        for i, c in enumerate(group):
            ref = c.expected
            cmp = compare_records(ctx.record(res, i), ref)
            cmp.update(case=str(c.path.relative_to(root)) if c.path.is_relative_to(root) else str(c.path),
                       arch=c.arch, layer=c.layer, source=ref.get("source"))
            rows.append(cmp)
        if bar is not None:
            bar.update(len(group))


def _stats(rows: list[dict]) -> dict:
    valid = [r for r in rows if r["valid_ref"] and r["valid_got"]]
    errs = [r["energy_rel_err"] for r in valid]
    return {
        "cases": len(rows),
        "valid_cases": sum(r["valid_ref"] for r in rows),
        "invalid_cases": sum(not r["valid_ref"] for r in rows),
        "validity_agrees": sum(r["valid_agree"] for r in rows),   # cases whose valid/invalid verdict matches
        "invalid_messages_exact": sum(r.get("message_exact", False) for r in rows),   # same error text
        "cycles_exact": sum(r["cycles_exact"] for r in valid),
        "counts_exact": sum(r["counts_exact"] for r in valid),
        "energy_within_1e-4": sum(e <= 1e-4 for e in errs),
        "energy_within_1e-2": sum(e <= 1e-2 for e in errs),
        "energy_max_rel_err": max(errs) if errs else 0.0,
        "energy_median_rel_err": statistics.median(errs) if errs else 0.0,
        "cycles_max_rel_err": max((r["cycles_rel_err"] for r in valid), default=0.0),
    }


def summarise(rows: list[dict], wall_s: float, model_s: float) -> dict:
    out = _stats(rows)
    by_arch = defaultdict(list)
    for r in rows:
        by_arch[r["arch"]].append(r)
    out["per_arch"] = {a: _stats(rs) for a, rs in sorted(by_arch.items())}
    out["failures"] = [r for r in rows if not r["valid_agree"] or
                       (r["valid_ref"] and r["valid_got"] and (not r["counts_exact"] or not r["cycles_exact"]
                                                              or r["energy_rel_err"] > 1e-4))]
    out["wall_s"] = wall_s
    out["model_s"] = model_s
    out["model"] = "builtin"
    return out
