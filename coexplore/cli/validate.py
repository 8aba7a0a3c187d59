"""`coexplore validate DIR [--json]`: the built-in model (or an installed timeloop-model) against a reference corpus."""

from __future__ import annotations

import json
import math
import sys

from coexplore.cli.inputs import STRIDE_HELP, add_timeout_option
from coexplore.model.nest import RULE_NOTES, STRIDE_RULES
from coexplore.model.timeloop_run import TIMEOUT_S
from coexplore.cli.paths import nonnegative, show_progress
from coexplore.errors import CoexploreError
from coexplore.model.validation import ValidateInterrupted, validate


def register(sub) -> None:
    p = sub.add_parser("validate", help="compare the model with a corpus of reference (Timeloop) results",
                       description="Evaluate every case of a corpus laid out as "
                                   "<split>/<arch>/<layer>/<id>/{mapping.yaml, expected.json} with "
                                   "arches/<arch>/ and layers/ above it (the bundled "
                                   "tests/data/timeloop_corpus) and report the error against each expected.json "
                                   "(or, in its place, the timeloop-model.stats.txt or the timeloop-model.log of a "
                                   "refused mapping that timeloop-model wrote for the case); also the folders Timeloop "
                                   "ran in (timeloopfe's output folders, the exercises' ref/: "
                                   "parsed-processed-input.yaml with the stats.txt and ERT beside it; or, as Timeloop "
                                   "v0.3 leaves them, the stats.txt, ERT and map.txt alone, the architecture and "
                                   "problem found beside or near them). "
                                   "Exit 1 if a case disagrees (with --model timeloop: or its timeloop-model run "
                                   "failed); 2 if the corpus is malformed (a case folder "
                                   "missing one of its two files, an expected.json off its schema, an arch "
                                   "without processed.yaml/arch.yaml or ERT.yaml), or timeloop-model failed on each "
                                   "of the first 5 cases.")
    p.add_argument("dir", help="corpus directory (e.g. tests/data/timeloop_corpus)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--failures", type=nonnegative, default=10,
                   help="list at most this many mismatching cases (text output; --json lists them all)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--stride-rule", "--timeloop-rules", dest="stride_rule", choices=STRIDE_RULES,
                   default="current", help=STRIDE_HELP)
    p.add_argument("--model", choices=("builtin", "timeloop"), default="builtin",
                   help="builtin (default): coexplore's model; timeloop: every case through the real timeloop-model "
                        "(on PATH, or $COEXPLORE_TIMELOOP_MODEL), e.g. to check a Timeloop build against the references")
    add_timeout_option(p)
    p.set_defaults(func=run)


def _pct(n, d):
    return f"{n}/{d} ({100.0 * n / d:.1f}%)" if d else "0/0"


def _mismatch(m: dict) -> str:
    if m["key"] == "level":          # a level only one side lists
        return f"level {m['level']} {'in the model only' if m['got'] else 'in the reference only'}"
    where = ".".join(p for p in (m["level"], m["dataspace"], m["key"]) if p)
    return f"{where} model {m['got']:.10g} vs reference {m['ref']:.10g}" \
        if isinstance(m["got"], float) or isinstance(m["ref"], float) \
        else f"{where} model {m['got']} vs reference {m['ref']}"


def _err(e: float | None) -> str:
    return "n/a" if e is None else f"{e:.2e}"      # (n/a: no case compared)


def format_table(s: dict, max_failures: int = 10) -> str:
    w = max([34, *(len(a) + 2 for a in s["per_arch"])])
    hdr = (f"{'architecture (or run)':<{w}}{'cases':>6}{'valid':>6}{'validity agrees':>17}{'cycles exact':>14}"
           f"{'counts exact':>14}{'E err median':>14}{'E err max':>12}")
    lines = [hdr, "-" * len(hdr)]

    def row(name, st):
        v = st["valid_cases"]
        return (f"{name:<{w}}{st['cases']:>6}{v:>6}{st['validity_agrees']:>17}{st['cycles_exact']:>14}"
                f"{st['counts_exact']:>14}{_err(st['energy_median_rel_err']):>14}{_err(st['energy_max_rel_err']):>12}")

    for a, st in s["per_arch"].items():
        lines.append(row(a, st))
    lines.append("-" * len(hdr))
    lines.append(row("all", s))
    v = s["valid_cases"]
    lines += ["",
              f"validity agrees : {_pct(s['validity_agrees'], s['cases'])}",
              f"error messages  : {_pct(s['invalid_messages_exact'], s['invalid_cases'])} of invalid cases "
              "word for word",
              f"cycles exact    : {_pct(s['cycles_exact'], v)} of valid cases",
              f"counts exact    : {_pct(s['counts_exact'], v)} (every per-level read/fill/update/capacity/instances)",
              f"others agree    : {_pct(s['others_agree'], v)} (computes, utilization, EDP, each level's energy "
              "and leakage, each dataspace's energy)",
              f"energy <= 0.01% : {_pct(s['energy_within_1e-4'], v)};  <= 1%: {_pct(s['energy_within_1e-2'], v)}"]
    if s.get("energy_tolerance_from_stats"):
        lines.append(f"energy in tol.  : {_pct(s['energy_within_tolerance'], v)} (0.01%, or for the "
                     f"{s['energy_tolerance_from_stats']} stats.txt references the precision of their printed "
                     "energies)")
    if s.get("runs_failed"):
        lines.append(f"runs failed     : {s['runs_failed']} timeloop-model run{'s' if s['runs_failed'] > 1 else ''} "
                     "(crashed, timed out or unreadable; failing cases, each with its reason)")
    lines.append(f"time            : {s['wall_s']:.2f} s in all, {s['model_s']:.2f} s in the model")
    if s.get("model", "builtin") != "builtin":
        lines.append("model           : the real timeloop-model (energies as its stats.txt prints them, to 0.01 pJ)")
    why: dict = {}
    for item in s.get("skipped") or ():
        why.setdefault(item["why"], []).append(item["folder"])
    for reason, folders in why.items():
        lines.append(f"skipped         : {len(folders)} folder{'s' if len(folders) > 1 else ''}: {reason}, e.g. "
                     f"{folders[0]}")
    if s.get("stride_rule", "current") != "current":
        lines.append(f"stride rule     : {s['stride_rule']} ({RULE_NOTES[s['stride_rule']]})")
    v03 = s.get("timeloop_v03_runs")
    if v03 and v03["failing"] and s.get("stride_rule") != "v0.3":
        lines.append(f"v0.3 runs       : {v03['failing']} of the {v03['cases']} Timeloop v0.3 run folders (a v0.3 "
                     "stats.txt, no input copy) disagree: a Timeloop of 2020-21 counted and priced by other rules; "
                     "--timeloop-rules v0.3 applies them")
    if s["failures"]:
        lines += ["", f"mismatching cases ({len(s['failures'])}, first {min(max_failures, len(s['failures']))}):"]
        for r in s["failures"][:max_failures]:
            if r.get("run_error"):
                lines.append(f"  {r['case']}: {r['run_error']}")
                continue
            if not r["valid_agree"]:
                said = f"; {r['error_got'] or r['error_ref']}" if r.get("error_got") or r.get("error_ref") else ""
                lines.append(f"  {r['case']}: validity differs (model {r['valid_got']}, reference "
                             f"{r['valid_ref']}){said}")
                continue
            if not r.get("message_exact", True):
                lines.append(f"  {r['case']}: both refuse it, for other reasons: model {r['error_got']!r}, "
                             f"reference {r['error_ref']!r}")
                continue
            every = [*r["mismatches"], *r.get("others", [])]
            what = ", ".join(_mismatch(m) for m in every[:3]) + (f" and {len(every) - 3} more (--json lists "
                                                                  "them)" if len(every) > 3 else "")
            cycles = "exact" if r["cycles_exact"] else f"model {r['cycles_got']} vs reference {r['cycles_ref']}"
            lines.append(f"  {r['case']}: energy err {r['energy_rel_err']:.2e}, cycles {cycles}"
                         + (f"; {what}" if every else ""))
    return "\n".join(lines)


def run(args) -> int:
    code = 0
    if args.model == "timeloop" and args.stride_rule != "current":
        raise CoexploreError("--stride-rule applies to the built-in model only", key="--stride-rule",
                             expected="--model builtin (timeloop-model follows its own build)")
    if args.timeloop_timeout is not None and args.model != "timeloop":
        raise CoexploreError("--timeloop-timeout without timeloop-model runs", key="--timeloop-timeout",
                             expected="--model timeloop")
    try:
        s = validate(args.dir, progress=show_progress(args), stride_rule=args.stride_rule,
                     model=args.model, timeout=args.timeloop_timeout or TIMEOUT_S)
    except ValidateInterrupted as exc:
        s, code = exc.summary, 130
        print(f"coexplore validate: interrupted after {s['interrupted_after']}; the summary covers those",
              file=sys.stderr)
    if args.json:
        def clean(o):
            if isinstance(o, float) and (math.isinf(o) or math.isnan(o)):
                return str(o)
            if isinstance(o, dict):
                return {k: clean(v) for k, v in o.items()}
            if isinstance(o, list):
                return [clean(v) for v in o]
            return o
        print(json.dumps(clean(s), indent=1))
    else:
        print(format_table(s, args.failures))
    if code == 0 and s["failures"]:
        code = 1           # a disagreement with the references fails the run (usable as a CI gate)
    return code
