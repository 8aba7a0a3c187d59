"""`coexplore evaluate ARCH PROBLEM MAPPING [--ert ERT.yaml] [--core C] [--layer L] [--json]`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coexplore.cli.inputs import (ARCH_HELP, ERT_HELP, PROBLEM_HELP, STRIDE_HELP, add_arguments, add_timeout_option,
                                  existing_arch,
                                  layer_count, load_inputs, own_core_names, problem_in_arch, top_keys)
from coexplore.errors import CoexploreError
from coexplore.mapspace.sampling import fanout_overflow
from coexplore.model.compare import compare_records
from coexplore.model.nest import RULE_NOTES, STRIDE_RULES
from coexplore.model.timeloop_run import TIMEOUT_S, find_timeloop_model, run_timeloop_model
from coexplore.model.timeloop_stats import energy_tolerance_pJ
from coexplore.spec.mapping import to_arrays


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate one mapping with the Timeloop-compatible model",
                       description="Evaluate one Timeloop mapping of one layer on one architecture. Exit code 0: valid mapping; 1: the mapping is invalid on this architecture (the reason is printed, and --json has valid: false); 2: bad input.")
    p.add_argument("arch", help=ARCH_HELP)
    p.add_argument("problem", nargs="?", default=None, help=PROBLEM_HELP)
    p.add_argument("mapping", nargs="?", default=None,
                   help="Timeloop mapping YAML, or Timeloop's printout of one (a map.txt); left out when ARCH is a "
                        "whole spec with its mapping: inside (architecture, problem and mapping in one file)")
    p.add_argument("--ert", help=ERT_HELP)
    add_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (schema of the corpus expected.json)")
    p.add_argument("--constraints", action="append", default=None,
                   help="also check the mapping against these mapspace constraints (repeatable; "
                        "timeloop-model does not check them, timeloop-mapper only proposes mappings that keep them)")
    p.add_argument("--check-constraints", action="store_true",
                   help="check the mapping against the constraints `coexplore map` would use for ARCH")
    p.add_argument("--stride-rule", "--timeloop-rules", dest="stride_rule", choices=STRIDE_RULES,
                   default="current", help=STRIDE_HELP)
    p.add_argument("--model", choices=MODELS, default="builtin",
                   help="builtin (default): coexplore's Timeloop-compatible model; timeloop: the real timeloop-model "
                        "(on PATH, or $COEXPLORE_TIMELOOP_MODEL) run on the same inputs; both: the two side by side, "
                        "exit code 1 where they disagree")
    p.add_argument("--timeloop-dir", metavar="DIR",
                   help="with --model timeloop/both: leave the files timeloop-model read and wrote in DIR")
    add_timeout_option(p)
    p.set_defaults(func=run)


MODELS = ("builtin", "timeloop", "both")



def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"


def _uj(pj: float) -> str:
    """Energy in uJ, readable from a few pJ to astronomical values."""
    uj = pj / 1e6
    return f"{uj:,.3f}" if 1 <= abs(uj) < 1e12 else f"{uj:.4g}"


def _say_partial_orders(mapping, file) -> None:
    """A level whose permutation leaves out a dimension it loops over (factor > 1): the loop runs
    outside the listed ones, which a hand-written order rarely means; said, not refused."""
    for name, lm in mapping.levels.items():
        left = [f"{d} (factor {n})" for d, n in lm.temporal.items() if n > 1 and lm.permutation
                and d not in lm.permutation]
        if left:
            order = ("" if all(len(d) == 1 for d in lm.permutation) else " ").join(lm.permutation)
            print(f"coexplore evaluate: note: {file}: {name}'s permutation {order} "
                  f"leaves out {', '.join(left)}: it runs outside the listed loops (list every looping dimension to "
                  "choose its place)",
                  file=sys.stderr)


def format_summary(rec: dict, arch_name: str, layer_name: str, ert: str | None = None,
                   stride_rule: str = "current", model: str = "built-in Timeloop-compatible model") -> str:
    lines = [f"coexplore evaluate: {layer_name} on {arch_name} ({model})"]
    if ert:
        lines.append(f"energy table: {ert}")
    if stride_rule != "current":
        lines.append(f"stride rule: {stride_rule} ({RULE_NOTES[stride_rule]})")
    if not rec["valid"]:
        lines.append(f"INVALID mapping: {rec['error']}")
        return "\n".join(lines)
    rows = []                           # level, dataspace, reads, fills, updates, capacity, inst, energy
    for lv, d in rec["levels"].items():
        if not d["dataspaces"]:
            rows.append([lv, "-", "", "", "", "", "", _fmt(d["energy_pJ"])])
            continue
        for i, (ds, v) in enumerate(d["dataspaces"].items()):
            rows.append([lv if i == 0 else "", ds, f"{v['reads']:,}", f"{v['fills']:,}", f"{v['updates']:,}",
                         f"{v['utilized_capacity']:,}", str(v["utilized_instances"]), _fmt(v["energy_pJ"])])
        if d.get("leakage_pJ"):
            rows.append(["", "leakage", "", "", "", "", "", _fmt(d["leakage_pJ"])])
    head = ["level", "dataspace", "reads", "fills", "updates", "capacity", "inst", "energy pJ"]
    # the widths of the usual layout, wider where a number needs it (columns never run together)
    widths = [max(w, *(len(r[i]) + (i > 1) for r in rows)) for i, w in enumerate((36, 10, 16, 16, 16, 10, 6, 18))]

    def line(r):
        return "".join(f"{c:<{w}}" if i < 2 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(r, widths)))
    hdr = line(head)
    lines += ["", hdr, "-" * len(hdr), *map(line, rows),
              "(reads, fills, updates, energy: totals over the utilized instances (inst); capacity: words "
              "per instance. Timeloop's stats.txt gives the counts per instance.)"]
    lines += ["", f"Computes      : {rec['computes']:,}", f"Cycles        : {rec['cycles']:,}",
              f"Utilization   : {rec['utilization']:.4f}",
              f"Energy        : {_uj(rec['energy_pJ'])} uJ  ({rec['energy_pJ'] / rec['computes']:.4f} pJ/MAC)",
              f"EDP (J*cycle) : {rec['edp_J_cycle']:.6g}"]
    return "\n".join(lines)


def run(args) -> int:
    with own_core_names(args):           # (a system's own template core: its var: names)
        return _run(args)


def _positionals(args) -> None:
    """ARCH [PROBLEM] [MAPPING]: two given are ARCH MAPPING; one given is a whole spec holding its
    problem and mapping (timeloopfe's single file), read for all three."""
    if args.mapping is None and args.problem is not None:
        args.mapping, args.problem = args.problem, None
    if args.mapping is None:
        keys = top_keys(existing_arch(args.arch))
        if "mapping" not in keys:
            raise CoexploreError("no MAPPING given, and ARCH holds no mapping", file=str(args.arch), key="mapping",
                                 expected="coexplore evaluate ARCH [PROBLEM] MAPPING, or an ARCH that is a whole spec "
                                          "with top-level problem: and mapping: keys")
        args.mapping = args.arch


def _run(args) -> int:
    _positionals(args)
    keys = top_keys(args.mapping)
    if "mapping" not in keys and keys & {"problem", "architecture", "workload"}:
        what = ("a whole spec (architecture and problem)" if {"architecture", "problem"} <= keys else
                "a problem" if "problem" in keys else "a workload" if "workload" in keys else "an architecture")
        raise CoexploreError(f"MAPPING is {what} file, not a mapping", file=str(args.mapping), key="mapping",
                             expected="coexplore evaluate ARCH [PROBLEM] MAPPING: the mapping last")
    if args.problem is None and _names_a_workload(args.mapping):
        raise CoexploreError(f"no MAPPING given: {args.mapping} is a workload (or a problem), read as MAPPING",
                             key="mapping", expected="coexplore evaluate ARCH PROBLEM MAPPING: a Timeloop mapping YAML "
                                                     "last (`coexplore map` writes one)")
    problem_in_arch(args)
    check = bool(args.constraints) or args.check_constraints
    ctx, constraints = load_inputs(args, with_constraints=check)
    ctx.stride_rule = args.stride_rule
    runs = layer_count(args.problem, ctx.problem.name)
    if runs is not None and runs[1] > 1:
        print(f"coexplore: note: {runs[0]} runs layer {ctx.problem.name} {runs[1]} times (its count); "
              "the numbers below are for one run", file=sys.stderr)
    mapping = ctx.load_mapping(args.mapping)
    _say_partial_orders(mapping, args.mapping)
    for w in mapping.warnings:
        print(f"coexplore: warning: {args.mapping}: {w}", file=sys.stderr)
    if args.model == "timeloop" and args.stride_rule != "current":
        raise CoexploreError("--stride-rule applies to the built-in model only", key="--stride-rule",
                             expected="--model builtin or both (timeloop-model follows its own build)")
    for option, given in (("--timeloop-dir", args.timeloop_dir), ("--timeloop-timeout", args.timeloop_timeout)):
        if given is not None and args.model == "builtin":
            raise CoexploreError(f"{option} without a timeloop-model run", key=option,
                                 expected="--model timeloop or both")
    arrays = to_arrays([mapping], ctx.arch, ctx.problem)
    real = exe = None
    if args.model != "builtin":
        exe = find_timeloop_model()
        real = run_timeloop_model(ctx, arrays, 0, exe, keep=args.timeloop_dir,
                                  timeout=args.timeloop_timeout or TIMEOUT_S)
    rec = real if args.model == "timeloop" else ctx.record(ctx.evaluate(arrays), 0)
    over = fanout_overflow(ctx.arch, arrays, 0, ctx.problem.dims) if rec["valid"] else None
    if over:
        print(f"coexplore evaluate: note: {args.mapping}: the mapping {over[2]}: timeloop-model accepts it (it checks "
              "the product across levels against each mesh, as here), timeloop-mapper would not propose it "
              f"(\"mapped fanout{over[0]} exceeds hardware fanout{over[0]}\"), nor does `coexplore map`", file=sys.stderr)
    # the levels that constrain something (a file without constraints gives every level an empty entry)
    constraints = {k: c for k, c in (constraints or {}).items() if c != type(c)(source=c.source)}
    if check and not constraints:
        print(f"coexplore evaluate: note: {args.arch}: no mapspace constraints found (none beside it or in its "
              "nodes): nothing to check; give them with --constraints F", file=sys.stderr)
    broken = _breaks_constraints(ctx, constraints, mapping) if check and constraints else None
    if broken:
        print(f"coexplore evaluate: warning: {args.mapping}: {broken}", file=sys.stderr)
    agree = None
    if args.model == "both":
        agree = compare_records(rec, real, printed=True)
        if "energy_rel_err" in agree:
            agree["energy_close"] = abs(rec["energy_pJ"] - real["energy_pJ"]) <= energy_tolerance_pJ(real)
    if args.json:
        out = {"arch": ctx.arch.name, "layer": ctx.problem.name, **rec,
               "model": "timeloop-model" if args.model == "timeloop" else "builtin", "ert": ctx.ert.source,
               "stride_rule": ctx.stride_rule}
        if exe:
            out["timeloop_model"] = exe
        if agree is not None:
            out["timeloop"] = real
            out["agreement"] = {**{k: agree[k] for k in AGREEMENT_KEYS if k in agree}, "agree": agrees(agree)}
        if check:
            kept = (broken is None, broken) if constraints else (None, None)     # None: nothing to check
            out["constraints_kept"], out["constraints_error"] = kept
        print(json.dumps(out, indent=1))
    else:
        model = f"real timeloop-model: {exe}" if args.model == "timeloop" else "built-in Timeloop-compatible model"
        print(format_summary(rec, ctx.arch.name, ctx.problem.name, ctx.ert.source, ctx.stride_rule, model))
        if agree is not None:
            print("\n" + format_agreement(agree, exe))
        if check and constraints:
            print("Constraints   : kept (the mapping lies in the mapspace the constraints allow)" if broken is None
                  else f"Constraints   : broken ({broken})")
    if agree is not None and not agrees(agree):
        return 1
    return 0 if rec["valid"] else 1   # like timeloop-model: an invalid mapping is a failed run


AGREEMENT_KEYS = ("valid_agree", "message_exact", "error_got", "error_ref", "cycles_exact", "counts_exact",
                  "energy_rel_err", "energy_close", "mismatches", "others")


def agrees(cmp: dict) -> bool:
    """The built-in model and timeloop-model agree: validity, Timeloop's message where both refuse,
    cycles and every count exactly, energy within what stats.txt's printing to 0.01 pJ allows."""
    if not cmp["valid_agree"]:
        return False
    if "message_exact" in cmp:
        return cmp["message_exact"]
    if "cycles_exact" not in cmp:
        return True
    return cmp["cycles_exact"] and cmp["counts_exact"] and cmp["energy_close"] and not cmp["others"]


def format_agreement(cmp: dict, exe: str) -> str:
    """What the comparison with the real timeloop-model found, a line each."""
    lines = [f"against the real timeloop-model ({exe}):"]
    if not cmp["valid_agree"]:
        lines.append(f"  validity DIFFERS: built-in {'valid' if cmp['valid_got'] else 'invalid'}, "
                     f"timeloop-model {'valid' if cmp['valid_ref'] else 'invalid'}: "
                     f"{cmp.get('error_got') or cmp.get('error_ref')}")
    elif "message_exact" in cmp:
        lines.append("  both refuse the mapping, " + ("with the same message" if cmp["message_exact"] else
                     f"with DIFFERENT messages: built-in {cmp['error_got']!r}, timeloop-model {cmp['error_ref']!r}"))
    else:
        lines.append(f"  cycles {'equal' if cmp['cycles_exact'] else 'DIFFER'}: built-in {cmp['cycles_got']:,}, "
                     f"timeloop-model {cmp['cycles_ref']:,}")
        bad = cmp["mismatches"]
        lines.append("  counts: every per-level read/fill/update/capacity/instances equal" if not bad else
                     f"  counts: {len(bad)} DIFFER, e.g. " + "; ".join(
                         f"{m['level']} {m['dataspace']} {m['key']} {m['got']} vs {m['ref']}" for m in bad[:3]))
        lines.append(f"  energy: relative difference {cmp['energy_rel_err']:.2e} "
                     f"({'within' if cmp['energy_close'] else 'BEYOND'} what stats.txt's printing to 0.01 pJ allows)")
        other = cmp["others"]
        lines.append("  computes, utilization, EDP and each level's and dataspace's energy agree" if not other else
                     f"  others: {len(other)} DIFFER, e.g. " + "; ".join(
                         f"{'.'.join(p for p in (m['level'], m['dataspace'], m['key']) if p)} {m['got']} vs {m['ref']}"
                         for m in other[:3]))
    lines.append("  agree" if agrees(cmp) else "  DISAGREE")
    return "\n".join(lines)


def _names_a_workload(name: str) -> bool:
    """MAPPING is the name of a bundled workload (resnet50): PROBLEM was given as MAPPING, and the
    mapping left out (a file given so is said where the mapping is read)."""
    from coexplore.bundled import resolve
    return not Path(name).exists() and resolve("problems", name).is_file()


def _breaks_constraints(ctx, constraints, mapping) -> str | None:
    """None if the mapping lies in the constrained mapspace, else what it breaks (the mapspace's
    encode names the level and the factor, order, keep/bypass or bound)."""
    from coexplore.errors import CoexploreError
    from coexplore.mapspace.space import MapSpace
    from coexplore.spec.mapping import to_arrays
    ms = MapSpace(ctx.arch, ctx.problem, constraints)
    innermost = ctx.arch.levels[-1].name
    if ms.canonical_innermost and constraints.get(innermost) and constraints[innermost].temporal_permutation:
        print(f"coexplore evaluate: note: the permutation constraint at {innermost} is not checked: "
              "timeloop-mapper does not apply it (the innermost level keeps the dimension order)", file=sys.stderr)
    try:
        ms.encode(to_arrays([mapping], ctx.arch, ctx.problem))
    except CoexploreError as exc:
        return exc.message
    return None
