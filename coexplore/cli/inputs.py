"""ARCH and PROBLEM of `coexplore evaluate` and `coexplore map`: Timeloop files, or coexplore's own.

ARCH is a Timeloop architecture (v0.4 arch.yaml or a flattened processed.yaml; ERT beside it or
--ert) or a coexplore system YAML (arch/simba.yaml): then one core design is used (--core when the
system has several), with its generated architecture, constraints and built-in-estimator ERT.
PROBLEM is a Timeloop problem YAML or a coexplore workload (problems/resnet50.yaml, or just
`resnet50` for a bundled one): then one layer is used (--layer when it has several).
"""

from __future__ import annotations

import sys
from pathlib import Path

from coexplore.bundled import bundled_names, resolve
from coexplore.cli.paths import seconds
from coexplore.errors import CoexploreError, did_you_mean
from coexplore.model.evaluate import level_costs
from coexplore.energy.pricing import CLASS_SETS, builtin_ert, is_priceable
from coexplore.model.inputs import Context, find_ert, locate_ert
from coexplore.spec.problem import problem_warnings
from coexplore.model.timeloop_run import TIMEOUT_S
from coexplore.spec.architecture import load_architecture
from coexplore.spec.ert import stale_ert
from coexplore.spec.constraints import LevelConstraints, load_constraints
from coexplore.spec.problem import Problem, load_problem, parse_problem
from coexplore.spec.yamlio import load_yaml

ARCH_HELP = ("architecture: Timeloop v0.4 arch.yaml, flattened processed.yaml, or a coexplore system "
             "YAML (arch/simba.yaml, or a bundled name like simba; --core picks the core design)")
CLASSES_HELP = ("regfile/intmac as the example designs' compound classes (default) or as Aladdin primitives "
                "(default when the file says compound_components: {classes: []})")
PROBLEM_HELP = ("layer: Timeloop problem YAML, or a coexplore workload (problems/resnet50.yaml or a "
                "bundled name like resnet50; --layer picks the layer); default: the problem inside ARCH "
                "(a whole Timeloop spec, such as timeloopfe's top.yaml.jinja2)")
ERT_HELP = ("energy reference table (default: ERT.yaml beside ARCH; for a system YAML, or an architecture "
            "file with no ERT beside or inside it, the built-in estimator)")
STRIDE_HELP = ("which Timeloop's rules (also --timeloop-rules): current (Timeloop since 2025, PR #297), "
               "pre2025 (its sliding-window reuse of strided convolutions before PR #297, as in the official "
               "v0.4 exercises' outputs) or v0.3 (the Timeloop of 2020-21 that made the v0.3 exercises' outputs: "
               "that reuse rule, a read-write tensor's first fills counted, every buffer access priced at its "
               "ERT table's largest action, no leakage)")


def add_arguments(p) -> None:
    """--core and --layer, for a system YAML as ARCH and a workload as PROBLEM; --classes for an
    architecture file that coexplore prices itself."""
    p.add_argument("--core", metavar="NAME", help="core design of a system YAML ARCH (default: its only one); a copy's "
                                                 "name as schedule names it (simba_0) picks its design")
    p.add_argument("--layer", metavar="NAME", help="layer of a workload PROBLEM (default: its only one)")
    p.add_argument("--classes", choices=CLASS_SETS, default=None,
                   help="for a v0.4 node-list ARCH without an ERT, priced with the built-in estimator: "
                        + CLASSES_HELP)
    add_var_argument(p)


def add_var_argument(p) -> None:
    """--var NAME=VALUE: the names Jinja2 templates (timeloopfe's top.yaml.jinja2) are rendered with."""
    p.add_argument("--var", action="append", default=None, metavar="NAME=VALUE",
                   help="a name for Jinja2 templates among the inputs (timeloopfe's jinja_parse_data), e.g. "
                        "--var architecture=eyeriss_like for the exercises' top.yaml.jinja2; VALUE is read as "
                        "YAML (16, true, text); repeatable")


def template_names(given: list[str] | None) -> dict:
    """The --var NAME=VALUE pairs as a dict (values read as YAML scalars, as Python would pass them)."""
    from coexplore.spec.yamlio import loads_yaml
    out = {}
    for item in given or []:
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise CoexploreError(f"got {item!r}", key="--var",
                                 expected="NAME=VALUE with NAME a Python identifier, e.g. architecture=eyeriss_like")
        try:
            v = loads_yaml(value) if value.strip() else ""          # (YAML 1.2 numbers: 1e-9)
        except CoexploreError:
            v = value
        out[name.strip()] = v if isinstance(v, (str, int, float, bool)) else value
    return out


def own_core_names(args):
    """The command's block for a system ARCH whose chosen core (--core, or its only design) is a
    Jinja2 template of the user's own with `var:`: its file is read with those names throughout
    (it may hold the problem too); otherwise a block that changes nothing."""
    import contextlib
    from coexplore.spec import template
    from coexplore.spec.system import load_system
    arch = resolve("arch", args.arch) if getattr(args, "arch", None) else None
    if arch is None or "system" not in top_keys(arch):
        return contextlib.nullcontext()
    cores = load_system(arch).cores
    wanted = design_name(cores, getattr(args, "core", None))
    chosen = [c for c in cores if c.name == wanted] if wanted else cores[:1] \
        if len(cores) == 1 else []
    return template.with_names(chosen[0].var) if chosen and chosen[0].var else contextlib.nullcontext()


def existing_arch(arch: str | Path) -> Path:
    """ARCH's file (a bundled system name such as `simba` resolved), refused when there is none."""
    path = resolve("arch", arch)
    if not path.exists():
        raise CoexploreError("file not found", file=str(path),
                             expected="a Timeloop architecture or system YAML file, or a bundled system "
                                      f"({bundled_names('arch')})")
    return path


def problem_in_arch(args) -> None:
    """No PROBLEM given: the `problem:` of ARCH when ARCH is a whole Timeloop spec (problem,
    architecture, mapper... in one file, as timeloopfe's top.yaml.jinja2 renders)."""
    if args.problem is not None:
        return
    arch = existing_arch(args.arch)
    if "system" in top_keys(arch) and getattr(args, "core", None):     # an own core's whole spec holds one
        from coexplore.spec.system import load_system
        cores = load_system(arch).cores
        own = next((c.arch for c in cores if c.name == design_name(cores, args.core) and c.arch is not None), None)
        if own is not None and "problem" in top_keys(own):
            args.problem = str(own)
            return
    if "problem" not in top_keys(arch):
        raise CoexploreError("no PROBLEM given and ARCH holds no problem", file=str(args.arch), key="problem",
                             expected="PROBLEM (a Timeloop problem YAML or a workload) after ARCH, or an ARCH "
                                      "with a top-level problem: key")
    args.problem = args.arch


def is_workload(path: str | Path) -> bool:
    """PROBLEM names a coexplore workload (a file with `workload:`, or a bundled name such as
    resnet50), not a single Timeloop problem."""
    p = resolve("problems", path)
    return p.is_dir() or "workload" in top_keys(p) or (not p.exists() and not p.suffix)


def top_keys(path: str | Path) -> set:
    p = Path(path)
    if not p.is_file():
        return set()
    data = load_yaml(p)
    return set(data) if isinstance(data, dict) else set()


SPEC_SIDE_KEYS = {"variables", "globals"}


def refuse_variables_file(path) -> None:
    """A file of only `variables:` (and `globals:`) given where an input file goes: timeloopfe merges
    such a file into the spec; here the variables are read from the file that uses them."""
    try:
        keys = top_keys(path) if path is not None else set()
    except CoexploreError:
        return                                   # (said where the file is read)
    if keys and keys <= SPEC_SIDE_KEYS:
        raise CoexploreError(f"this file holds only {' and '.join(sorted(keys))}: (a spec part timeloopfe merges "
                             "with the others); coexplore reads a v0.4 spec's variables from the file that uses "
                             "them", file=str(path), key="variables",
                             expected="its variables: block copied into the architecture file, or the files "
                                      "read through a template (README: `variables: {{include('"
                                      + Path(str(path)).name + "', 'variables')}}` and the others, one a line)")


def design_name(cores, wanted: str | None) -> str | None:
    """--core as a design's name: a copy's name as `schedule` names it (simba_0, simba_1_0) is its
    design's (every copy is that design)."""
    if wanted is None or any(c.name == wanted for c in cores):
        return wanted
    return next((c.name for c in cores if wanted in c.instance_names()), wanted)


def _choose(names: list[str], wanted: str | None, what: str, file: str, key: str) -> str:
    shown = ", ".join(names)
    if wanted is None:
        if len(names) == 1:
            return names[0]
        also = " (with coexplore map, or --all-layers for every one)" if what == "layer" else ""
        raise CoexploreError(f"it has {len(names)} {what}s; choose one", file=file, key=key,
                             expected=f"{key} NAME, one of: {shown}{also}")
    if wanted not in names:
        raise CoexploreError(f"no {what} {wanted!r}{did_you_mean(wanted, names)}", file=file, key=key,
                             expected=f"one of: {shown}")
    return wanted


def load_problem_arg(path: str | Path, layer: str | None) -> Problem:
    """A Timeloop problem file, or one layer of a workload file / bundled workload name."""
    from coexplore.spec.workload import find_workload, layer_problem, load_workload

    p = Path(path)
    if not is_workload(p):
        if layer is not None and not resolve("problems", p).is_file():      # (not a problem either)
            raise CoexploreError("file not found", file=str(p), expected="a workload YAML (or a bundled workload name)")
        if layer is not None:
            raise CoexploreError("--layer picks a layer of a workload file; this is a single problem",
                                 file=str(p), key="--layer", expected="no --layer, or a workload YAML")
        from coexplore.spec import template
        chosen = template.data().get("problem")       # a template's problem picked with --var problem=FILE
        if isinstance(chosen, str) and chosen and template.is_template(p, ""):
            from coexplore.spec.yamlio import name_from_path
            return parse_problem(load_yaml(p), str(p), name=name_from_path(chosen, "problem"))
        return load_problem(p)
    wl = load_workload(find_workload(p))
    name = _choose([lay.name for lay in wl.layers], layer, "layer", str(wl.path), "--layer")
    return parse_problem(layer_problem(wl.layer(name)), str(wl.path), name=name)


def layer_count(path: str | Path | None, layer: str) -> tuple[str, int] | None:
    """(workload name, how often it runs `layer`) when PROBLEM is a workload, else None."""
    from coexplore.spec.workload import find_workload, load_workload
    if path is None or not is_workload(Path(path)):
        return None
    wl = load_workload(find_workload(path))
    return wl.name, wl.layer(layer).count


def load_inputs(args, with_constraints: bool = False
                ) -> tuple[Context, dict[str, LevelConstraints] | None]:
    """(context, constraints) from args.arch/problem/ert/core/layer (and args.constraints if asked).

    Constraints: --constraints, else a system core's generated ones, else those found beside a
    Timeloop ARCH (constraints.yaml) or in its v0.4 nodes.
    """
    args.arch = str(existing_arch(args.arch))
    for f in (args.arch, args.problem):
        refuse_variables_file(f)
    if args.problem is not None and Path(args.arch).is_file() and Path(args.problem).is_file():
        a, p = top_keys(args.arch), top_keys(args.problem)
        if "problem" in a and "architecture" not in a and "architecture" in p and "problem" not in p:
            raise CoexploreError("ARCH and PROBLEM are swapped: the first file holds the problem, the second the "
                                 "architecture", file=args.arch, key="ARCH",
                                 expected="ARCH (architecture) first, then PROBLEM, then MAPPING")
    held = top_keys(args.problem) if args.problem is not None and Path(args.problem).is_file() else set()
    if held & {"architecture", "system"} and not held & {"problem", "workload"}:
        what = "an architecture (architecture:)" if "architecture" in held else "a system (system:)"
        raise CoexploreError(f"this file holds {what}, not a problem", file=str(args.problem), key="PROBLEM",
                             expected="a Timeloop problem (problem:) or a workload (workload:) as PROBLEM, after ARCH")
    problem = load_problem_arg(args.problem, args.layer)
    for w in problem_warnings(problem, args.problem):
        print(f"coexplore: warning: {w}", file=sys.stderr)
    cons_path = getattr(args, "constraints", None) if with_constraints else None
    if "system" not in top_keys(args.arch):
        if args.core is not None:
            raise CoexploreError("--core picks a core design of a system YAML; this is a Timeloop architecture",
                                 file=str(args.arch), key="--core", expected="no --core, or a system YAML")
        arch = load_architecture(args.arch)
        for w in arch.warnings:
            print(f"coexplore: warning: {args.arch}: {w}", file=sys.stderr)
        ert = None if args.ert is not None else locate_ert(args.arch)
        if ert is None and args.ert is None and is_priceable(args.arch):
            ert = builtin_ert(Path(args.arch), args.classes)   # as timeloop-model would (it runs Accelergy)
        elif args.classes is not None:
            raise _classes_unused(args.arch, "an energy table is given (--ert)" if args.ert else
                                  "an energy table was found" if ert is not None else
                                  "the architecture is not one the built-in estimator prices (give --ert ERT.yaml)")
        elif ert is None:
            ert = find_ert(args.arch, args.ert)
        if (stale := stale_ert(ert, args.arch)) is not None:
            print(f"coexplore: warning: {stale}", file=sys.stderr)
        ctx = _context(arch, problem, ert, getattr(args, "stride_rule", "current"))
        return ctx, _warn_ignored(load_constraints(arch, cons_path, problem)) if with_constraints else None
    from coexplore.arch.system import load_system_arch
    from coexplore.system.from_system import core_model

    if args.classes is not None:
        raise _classes_unused(args.arch, "a system YAML's cores are priced from its own settings")
    if getattr(args, "var", None) and not (args.problem and _is_template_file(args.problem)):
        # (a system's own core is rendered with its entry's `var:`: --var would not reach it)
        raise CoexploreError("--var with a system YAML: its cores' templates take their names from the system "
                             "file", file=str(args.arch), key="--var",
                             expected="the names under the core's entry, system.cores[i].var (a copy of the system "
                                      "file per design), or the core's architecture file given as ARCH with --var")
    system = load_system_arch(args.arch)
    name = _choose(list(system.cores), design_name(system.spec.cores, args.core), "core design", str(args.arch),
                   "--core")
    cm = core_model(system, name, ert=args.ert)     # with --ert the core is not priced
    for w in cm.warnings:
        if not w.startswith(f"{cm.ert.source}: "):     # what the ERT leaves out: said by _context
            print(f"coexplore: warning: {args.arch} core {name}: {w}", file=sys.stderr)
    ctx = _context(cm.context_arch, problem, cm.ert, getattr(args, "stride_rule", "current"))
    if not with_constraints:
        return ctx, None
    return ctx, _warn_ignored(load_constraints(ctx.arch, cons_path, problem) if cons_path
                              else cm.constraints_for(problem))


def _context(arch, problem, ert, rule: str = "current") -> Context:
    """The evaluation context under Timeloop's `rule`s; what the ERT does not price and Timeloop's
    estimate stands in for (by those rules) is said on stderr."""
    ctx = Context(arch, problem, ert, level_costs(arch, ert), stride_rule=rule)
    for w in (ctx.costs.as_v03() if rule == "v0.3" else ctx.costs).notes:
        print(f"coexplore: warning: {ert.source}: {w}", file=sys.stderr)
    if rule != "v0.3" and isinstance(ert.raw, dict) and str(ert.raw.get("version")) == "0.3":
        print(f"coexplore: note: {ert.source} is an Accelergy 0.3 table: priced as today's timeloop-model prices "
              "it; the Timeloop of 2020-21 that used such tables (the v0.3 exercises' outputs) priced every buffer "
              "access at the table's largest action: --timeloop-rules v0.3 applies its rules", file=sys.stderr)
    return ctx


def _is_template_file(path) -> bool:
    from coexplore.spec.template import is_template
    from coexplore.spec.yamlio import read_text
    p = Path(path)
    return p.is_file() and is_template(p, read_text(p))


def _classes_unused(arch: str, why: str) -> CoexploreError:
    return CoexploreError(f"--classes prices an architecture file without an energy table; here {why}",
                          file=str(arch), key="--classes", expected="no --classes")


def _warn_ignored(constraints: dict[str, LevelConstraints]) -> dict[str, LevelConstraints]:
    """Constraint keys coexplore's mapspace does not apply: the search may return mappings that
    timeloop-mapper would not consider."""
    ignored = [k for c in constraints.values() for k in c.ignored]
    if ignored:
        print(f"coexplore: warning: constraints not applied by the mapspace: {', '.join(ignored)}",
              file=sys.stderr)
    return constraints


def add_timeout_option(p) -> None:
    """--timeloop-timeout (evaluate, validate): how long one timeloop-model run may take."""
    p.add_argument("--timeloop-timeout", type=seconds, metavar="SECONDS",
                   help=f"with --model timeloop (or both, in evaluate): a timeloop-model run taking longer is "
                        f"stopped and counts as failed (default {TIMEOUT_S:g} s)")
