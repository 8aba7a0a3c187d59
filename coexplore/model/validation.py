"""Validation of the model against a corpus of reference results (Timeloop's): every case
evaluated (batched per architecture and layer) and compared number for number with its
`expected.json`; the summary holds per-architecture statistics and the mismatching cases."""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.model.compare import COUNT_KEYS, ENERGY_TOL, compare_records
from coexplore.model.corpus import REFERENCES, find_up, discover, find_files
from coexplore.energy.pricing import is_node_list
from coexplore.model.inputs import load_context, locate_ert
from coexplore.model.timeloop_run import TIMEOUT_S, find_timeloop_model, run_timeloop_model
from coexplore.model.timeloop_stats import energy_tolerance_pJ
from coexplore.spec.mapping import parse_mapping, read_mapping_doc, to_arrays

FIRST_FAILED = 5           # timeloop-model failing on each of the first this many cases: it cannot run here
SCHEMA = "the corpus' expected.json schema (valid, error, cycles, energy_pJ, edp_J_cycle, levels)"


def validate(root, progress: bool = True, stride_rule: str = "current", model: str = "builtin",
             timeout: float = TIMEOUT_S) -> dict:
    """Evaluate all cases (batched per (arch, layer)) and summarise the errors.

    stride_rule "pre2025" reproduces references made by Timeloop before 2025 (model.nest.analyse).
    model "timeloop": each case through the real timeloop-model instead (`timeloop_run`, each run
    stopped after `timeout` s), e.g. to check a Timeloop build against the references; a case whose
    run fails is a failing case (its `run_error`), unless the first FIRST_FAILED runs all fail (a
    timeloop-model that cannot run: an error)."""
    executable = (find_timeloop_model(), timeout) if model == "timeloop" else None
    if Path(root).is_dir():
        refuse_incomplete(root)     # first: a corpus of incomplete folders only names one of them
    skipped: list = []
    cases = discover(root, skipped)
    t0 = time.perf_counter()
    no_arch = sorted({c.arch_file.parent for c in cases if not c.arch_file.is_file()})
    if no_arch:
        raise CoexploreError("no processed.yaml or arch.yaml", file=str(no_arch[0]),
                             expected="the corpus' arches/<arch>/processed.yaml (or arch.yaml) with its ERT.yaml")
    # keyed by case folder and reference file: a run folder where both tools ran holds two cases
    refs = {(c.path, c.reference): check_expected(c.expected, c.reference) for c in cases}
    groups = defaultdict(list)
    for c in cases:
        groups[(c.arch_file, c.ert_file, c.layer_file)].append(c)
    rows = []
    bar = None
    if progress:
        from coexplore.progress import progress_bar
        bar = progress_bar(total=len(cases), desc="validate", unit="case", leave=False)
    model_s = [0.0]                     # seconds in the model, kept if Ctrl-C comes
    try:
        _evaluate_groups(groups, refs, root, rows, bar, model_s, stride_rule, executable)
    except KeyboardInterrupt:           # Ctrl-C: the summary of the cases done so far
        if bar is not None:
            bar.close()
        s = summarise(rows, time.perf_counter() - t0, model_s[0], model)
        s["interrupted_after"] = f"{len(rows)} of {len(cases)} cases"
        s["stride_rule"] = stride_rule
        raise ValidateInterrupted(s) from None
    if bar is not None:
        bar.close()
    return {**summarise(rows, time.perf_counter() - t0, model_s[0], model), "stride_rule": stride_rule,
            "skipped": [{"folder": str(p), "why": why} for p, why in skipped]}


class ValidateInterrupted(KeyboardInterrupt):
    """Ctrl-C during `validate`; `.summary` covers the cases evaluated so far."""

    def __init__(self, summary: dict):
        super().__init__()
        self.summary = summary


def refuse_incomplete(root) -> None:
    """A case folder with a mapping.yaml but no reference results (expected.json, or timeloop-model's
    stats.txt / log), or the reverse, is an error, not a case quietly left out: a CI gate must not
    pass on fewer cases than the corpus holds (Timeloop's outputs under arches/ or layers/ are not
    cases: a run made beside an architecture)."""
    root = Path(root)
    have = defaultdict(set)
    for name in ("mapping.yaml", *REFERENCES):
        for f in find_files(root, name):
            have[f.parent].add(name)

    def case_folder(d: Path) -> bool:             # <split>/<arch>/<layer>/<id> with arches/<arch> above it
        return len(d.parts) >= 3 and not {"arches", "layers"} & set(d.relative_to(root).parts) and \
            find_up(d, f"arches/{d.parts[-3]}", root) is not None
    bad = sorted((d, "mapping.yaml" if "mapping.yaml" not in names else "expected.json")
                 for d, names in have.items()
                 if ("mapping.yaml" not in names or len(names) == 1) and case_folder(d))
    if bad:
        (first, missing), more = bad[0], bad[1:]
        other = next(iter(sorted(have[first]))) if missing == "mapping.yaml" else "mapping.yaml"
        extra = (f"; {len(more)} more incomplete case folder{'s' if len(more) > 1 else ''}: "
                 + ", ".join(f"{d} (no {m})" for d, m in more[:3]) + (", ..." if len(more) > 3 else "")) if more else ""
        raise CoexploreError(f"case folder has {other} but no {missing}{extra}", file=str(first),
                             expected="mapping.yaml and expected.json (or timeloop-model.stats.txt / .log as "
                                      "timeloop-model wrote them) in every case folder <split>/<arch>/<layer>/<id>/ "
                                      "(complete or remove the folder)")


def _fail(file, key, value, expected) -> CoexploreError:
    return CoexploreError(f"bad value {value!r}", file=str(file), key=key, expected=expected)


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def check_expected(ref: dict, file) -> dict:
    """The types of one expected.json (beyond corpus.Case's JSON and key checks): `valid` a boolean,
    `error` text or null; a valid case's cycles a count, energy_pJ / edp_J_cycle non-negative numbers
    and `levels` the per-level counts (every count key of every kept dataspace, at least one level
    keeping something), so a case without counts can never pass as "counts exact"."""
    if not isinstance(ref["valid"], bool):
        raise _fail(file, "valid", ref["valid"], "true or false")
    if ref.get("error") is not None and not isinstance(ref["error"], str):
        raise _fail(file, "error", ref["error"], "Timeloop's error text, or null")
    if not ref["valid"]:
        return ref
    if not _is_count(ref["cycles"]):
        raise _fail(file, "cycles", ref["cycles"], "a whole number of cycles >= 0")
    for key in ("energy_pJ", "edp_J_cycle"):
        if not _is_number(ref[key]):
            raise _fail(file, key, ref[key], "a finite number >= 0")
    if ref.get("computes") is not None and not _is_count(ref["computes"]):
        raise _fail(file, "computes", ref["computes"], "a whole number of computes >= 0, or null")
    if ref.get("utilization") is not None and not _is_number(ref["utilization"]):
        raise _fail(file, "utilization", ref["utilization"], "a finite number >= 0, or null")
    levels = ref.get("levels")
    if levels is None:
        raise CoexploreError("missing key (a valid case needs its per-level counts)", file=str(file), key="levels",
                             expected=SCHEMA)
    if not isinstance(levels, dict) or not levels:
        raise CoexploreError(f"no per-level counts: {levels!r}", file=str(file), key="levels",
                             expected="a mapping level name -> {dataspaces: {<dataspace>: {"
                                      + ", ".join(COUNT_KEYS) + "}}}")
    kept = 0
    for name, level in levels.items():
        where = f"levels.{name}"
        if not isinstance(level, dict) or not isinstance(level.get("dataspaces"), dict):
            what = level.get("dataspaces") if isinstance(level, dict) else level
            key = f"{where}.dataspaces" if isinstance(level, dict) else where
            raise CoexploreError(f"got {what!r}", file=str(file), key=key,
                                 expected="a mapping with 'dataspaces' (the dataspaces this level keeps, "
                                          "{} for none)")
        for key in ("energy_pJ", "leakage_pJ"):
            if level.get(key) is not None and not _is_number(level[key]):
                raise _fail(file, f"{where}.{key}", level[key], "a finite number >= 0, or null")
        for ds, counts in level["dataspaces"].items():
            if not isinstance(counts, dict):
                raise _fail(file, f"{where}.dataspaces.{ds}", counts, "a mapping of " + ", ".join(COUNT_KEYS))
            if counts.get("energy_pJ") is not None and not _is_number(counts["energy_pJ"]):
                raise _fail(file, f"{where}.dataspaces.{ds}.energy_pJ", counts["energy_pJ"],
                            "a finite number >= 0, or null")
            for k in COUNT_KEYS:
                if k not in counts:
                    raise CoexploreError("missing key", file=str(file), key=f"{where}.dataspaces.{ds}.{k}",
                                         expected="every count: " + ", ".join(COUNT_KEYS))
                if not _is_count(counts[k]):
                    raise _fail(file, f"{where}.dataspaces.{ds}.{k}", counts[k], "a whole number >= 0")
            kept += 1
    if not kept:
        raise CoexploreError("no level keeps any dataspace: nothing to compare", file=str(file), key="levels",
                             expected="the counts of every level's kept dataspaces (the outermost level keeps "
                                      "all of them)")
    return ref


def _level_mismatches(got: dict, ref: dict) -> list[dict]:
    """Levels the model has and the reference lacks (or the reverse): compare_records walks the
    reference's levels only, so an omitted level would otherwise pass unchecked."""
    mine, theirs = set(got.get("levels") or {}), set(ref["levels"])
    return ([{"level": lv, "dataspace": "-", "key": "level", "got": True, "ref": False} for lv in sorted(mine - theirs)]
            + [{"level": lv, "dataspace": "-", "key": "level", "got": False, "ref": True}
               for lv in sorted(theirs - mine)])


def _evaluate_groups(groups: dict, refs: dict, root, rows: list, bar, model_s: list, stride_rule: str,
                     executable: tuple[str, float] | None) -> None:
    for (arch_file, ert_file, layer_file), group in groups.items():
        # the references were made with an energy table: one priced here instead would not match them
        # (a v0.4 node list is priced as timeloop-model prices it, running Accelergy)
        if ert_file is None and locate_ert(arch_file) is None and not is_node_list(arch_file):
            raise CoexploreError("no energy table for this architecture", file=str(arch_file.parent),
                                 expected=f"ERT.yaml (the energy table the references were made with) beside "
                                          f"{arch_file.name} in the corpus' arches/{arch_file.parent.name}/, "
                                          f"or an 'ERT:' key in {arch_file.name}")
        ctx = load_context(arch_file, layer_file, ert_file)
        ctx.stride_rule = stride_rule
        mappings = [_load_case_mapping(ctx, c.mapping) for c in group]
        if executable is None:              # the built-in model: the group in one batch
            read = [i for i, m in enumerate(mappings) if not isinstance(m, dict)]
            t = time.perf_counter()
            res = ctx.evaluate_mappings([mappings[i] for i in read]) if read else None
            model_s[0] += time.perf_counter() - t
            got = {i: ctx.record(res, j) for j, i in enumerate(read)}
            rows.extend(_row(c, got.get(i, mappings[i]), refs, root) for i, c in enumerate(group))
            if bar is not None:
                bar.update(len(group))
            continue
        for m, c in zip(mappings, group):   # timeloop-model: case by case, each row kept as it ends (Ctrl-C)
            t = time.perf_counter()
            got = m if isinstance(m, dict) else _through_timeloop(ctx, m, c, *executable)
            model_s[0] += time.perf_counter() - t
            rows.append(_row(c, got, refs, root, printed=True))
            if bar is not None:
                bar.update(1)
            if len(rows) == FIRST_FAILED and all(r.get("run_error") for r in rows):
                raise CoexploreError(f"timeloop-model failed on each of the first {FIRST_FAILED} cases; the first: "
                                     f"{rows[0]['case']}: {rows[0]['run_error']}", key="model", option="--model",
                                     expected="a timeloop-model that runs these cases (coexplore evaluate ... --model "
                                              "timeloop --timeloop-dir DIR on one of them keeps its inputs and outputs "
                                              "to look at)")


def _load_case_mapping(ctx, path):
    """A case's mapping, or, where it is one Timeloop's parser refuses too (a spatial directive at a
    level without a fan-out, factors that do not multiply to the layer), the record of a refused
    mapping with that reason: one such case is a verdict on that case, not the end of the run. A
    file that is no mapping at all (malformed YAML, not UTF-8, empty, no `mapping:` list) is a
    malformed corpus: raised, naming the file, not counted against the model."""
    doc = read_mapping_doc(path, ctx.problem)
    if not isinstance(doc, list) and not (isinstance(doc, dict) and isinstance(doc.get("mapping"), (list, dict))):
        raise CoexploreError("empty file" if doc is None else "holds no 'mapping:' list", file=str(path),
                             key="mapping", expected="a Timeloop mapping file: mapping: [{target: ..., type: ...}, "
                                                     "...] (or a timeloop-mapper map.txt)")
    try:
        return parse_mapping(doc, ctx.arch, ctx.problem, str(path))
    except CoexploreError as exc:
        return {"valid": False, "error": f"ERROR: {exc.message}"}


def _row(c, got: dict | str, refs: dict, root, printed: bool = False) -> dict:
    """One case's row: the model's (or timeloop-model's) record against its reference; `got` as
    text: why timeloop-model's run failed. `printed`: `got` holds energies printed to 0.01 pJ
    (timeloop-model's stats.txt), as a stats.txt reference does."""
    ref = refs[(c.path, c.reference)]
    if isinstance(got, str):
        return _run_failed(c, ref, got, root)
    cmp = compare_records(got, ref, printed=printed or c.reference.name.endswith(".stats.txt"))
    if cmp.get("counts_exact") is not None:
        extra = _level_mismatches(got, ref)
        if extra:
            cmp["mismatches"] = extra + cmp["mismatches"]
            cmp["counts_exact"] = False
            cmp["count_max_rel_err"] = math.inf
    cmp.update(case=_case_name(c, root), arch=c.arch, layer=c.layer, source=ref.get("source"))
    if c.rules:
        cmp["rules"] = c.rules
    if c.reference.name.endswith(".stats.txt") and ref["valid"] and ref["energy_pJ"]:
        cmp["energy_tol"] = max(ENERGY_TOL, energy_tolerance_pJ(ref) / ref["energy_pJ"])   # printed to 0.01 pJ
    return cmp


def _case_name(c, root) -> str:
    here = str(c.path.relative_to(root)) if c.path.is_relative_to(root) else str(c.path)
    return (here if here != "." else str(c.path)) + (" (mapper)" if c.arch.endswith("(mapper)") else "")


def _through_timeloop(ctx, mapping, case, executable: str, timeout: float) -> dict | str:
    """One case through the real timeloop-model: its record, or why the run failed (text). Inputs
    that cannot be written (a full disk) stop validate: no run of timeloop-model failed."""
    try:
        return run_timeloop_model(ctx, to_arrays([mapping], ctx.arch, ctx.problem), 0, executable, timeout=timeout)
    except CoexploreError as exc:
        if exc.key == "timeloop_dir":
            raise
        return exc.message


def _run_failed(c, ref: dict, why: str, root) -> dict:
    """The row of a case whose timeloop-model run failed: a failing case with nothing compared."""
    return {"case": _case_name(c, root), "arch": c.arch, "layer": c.layer, "source": ref.get("source"),
            "run_error": why, "valid_ref": ref["valid"], "valid_got": None, "valid_agree": False,
            "message_exact": False, "error_ref": ref.get("error"), "error_got": None,
            "mismatches": [], "others": [], "cycles_exact": None, "counts_exact": None, "energy_rel_err": None}


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
        # computes, utilization, EDP, each level's energy and leakage, each dataspace's energy
        "others_agree": sum(not r.get("others") for r in valid),
        "energy_within_1e-4": sum(e <= 1e-4 for e in errs),
        "energy_within_1e-2": sum(e <= 1e-2 for e in errs),
        # within each case's tolerance: 1e-4, or a stats.txt reference's printing (`energy_tol`)
        "energy_within_tolerance": sum(r["energy_rel_err"] <= r.get("energy_tol", ENERGY_TOL) for r in valid),
        "energy_tolerance_from_stats": sum("energy_tol" in r for r in valid),
        # (None, not 0, when no case was compared: a script checking the error then sees nothing passed)
        "energy_max_rel_err": max(errs) if errs else None,
        "energy_median_rel_err": statistics.median(errs) if errs else None,
        "cycles_max_rel_err": max((r["cycles_rel_err"] for r in valid), default=None),
        "runs_failed": sum(bool(r.get("run_error")) for r in rows),     # timeloop-model runs that failed
    }


def summarise(rows: list[dict], wall_s: float, model_s: float, model: str = "builtin") -> dict:
    out = _stats(rows)
    by_arch = defaultdict(list)
    for r in rows:
        by_arch[r["arch"]].append(r)
    out["per_arch"] = {a: _stats(rs) for a, rs in sorted(by_arch.items())}
    out["failures"] = [r for r in rows if not r["valid_agree"] or not r.get("message_exact", True) or
                       (r["valid_ref"] and r["valid_got"] and (
                           not r["counts_exact"] or not r["cycles_exact"] or r.get("others")
                           or r["energy_rel_err"] > r.get("energy_tol", ENERGY_TOL)))]
    v03 = [r for r in rows if r.get("rules") == "v0.3"]
    if v03:                 # Timeloop v0.3 run folders: how many the current rules leave disagreeing
        failing = {id(f) for f in out["failures"]}
        out["timeloop_v03_runs"] = {"cases": len(v03), "failing": sum(id(r) in failing for r in v03)}
    out["wall_s"] = wall_s
    out["model_s"] = model_s
    out["model"] = model
    return out
