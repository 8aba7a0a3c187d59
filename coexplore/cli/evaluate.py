"""`coexplore evaluate ARCH PROBLEM MAPPING [--ert ERT.yaml] [--core C] [--layer L] [--json]`."""

from __future__ import annotations

import json
import sys

from coexplore.cli.inputs import ARCH_HELP, PROBLEM_HELP, add_arguments, load_inputs


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate one mapping with the Timeloop-compatible model",
                       description="Evaluate one Timeloop mapping of one layer on one architecture. Exit code 0: valid mapping; 1: the mapping is invalid on this architecture (the reason is printed, and --json has valid: false); 2: bad input.")
    p.add_argument("arch", help=ARCH_HELP)
    p.add_argument("problem", help=PROBLEM_HELP)
    p.add_argument("mapping", help="Timeloop mapping YAML")
    p.add_argument("--ert", help="energy reference table (default: ERT.yaml beside ARCH; a system's "
                                 "built-in estimator)")
    add_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (schema of the corpus expected.json)")
    p.set_defaults(func=run)


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"


def format_summary(rec: dict, arch_name: str, layer_name: str) -> str:
    lines = [f"coexplore evaluate: {layer_name} on {arch_name} (built-in Timeloop-compatible model)"]
    if not rec["valid"]:
        lines.append(f"INVALID mapping: {rec['error']}")
        return "\n".join(lines)
    hdr = f"{'level':<36}{'dataspace':<10}{'reads':>16}{'fills':>16}{'updates':>16}{'capacity':>10}{'inst':>6}{'energy pJ':>18}"
    lines += ["", hdr, "-" * len(hdr)]
    for lv, d in rec["levels"].items():
        if not d["dataspaces"]:
            lines.append(f"{lv:<36}{'-':<10}{'':>16}{'':>16}{'':>16}{'':>10}{'':>6}{_fmt(d['energy_pJ']):>18}")
            continue
        first = True
        for ds, v in d["dataspaces"].items():
            lines.append(f"{(lv if first else ''):<36}{ds:<10}{v['reads']:>16,}{v['fills']:>16,}{v['updates']:>16,}"
                         f"{v['utilized_capacity']:>10,}{v['utilized_instances']:>6}{_fmt(v['energy_pJ']):>18}")
            first = False
        if d.get("leakage_pJ"):
            lines.append(f"{'':<36}{'leakage':<10}{'':>16}{'':>16}{'':>16}{'':>10}{'':>6}{_fmt(d['leakage_pJ']):>18}")
    lines += ["", f"Computes      : {rec['computes']:,}", f"Cycles        : {rec['cycles']:,}",
              f"Utilization   : {rec['utilization']:.4f}",
              f"Energy        : {rec['energy_pJ'] / 1e6:,.3f} uJ  ({rec['energy_pJ'] / rec['computes']:.4f} pJ/MAC)",
              f"EDP (J*cycle) : {rec['edp_J_cycle']:.6g}"]
    return "\n".join(lines)


def run(args) -> int:
    ctx, _ = load_inputs(args)
    mapping = ctx.load_mapping(args.mapping)
    for w in mapping.warnings:
        print(f"coexplore: warning: {args.mapping}: {w}", file=sys.stderr)
    res = ctx.evaluate_mappings([mapping])
    rec = ctx.record(res, 0)
    if args.json:
        out = {"arch": ctx.arch.name, "layer": ctx.problem.name, **rec, "model": "builtin"}
        print(json.dumps(out, indent=1))
    else:
        print(format_summary(rec, ctx.arch.name, ctx.problem.name))
    return 0 if rec["valid"] else 1   # like timeloop-model: an invalid mapping is a failed run
