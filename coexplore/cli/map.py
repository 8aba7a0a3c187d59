"""`coexplore map ARCH PROBLEM [--searcher marl] [--budget N] [--seed S] [--objective edp] [--out DIR] [--json]`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coexplore.bundled import record_name, resolve
from coexplore.errors import CoexploreError
from coexplore.provenance import run_header
from coexplore.spec import template
from coexplore.cli.inputs import (ARCH_HELP, ERT_HELP, PROBLEM_HELP, STRIDE_HELP, add_arguments, is_workload,
                                  load_inputs, own_core_names, problem_in_arch, top_keys)
from coexplore.cli.paths import (show_progress, add_cache_option, add_restart_option, chosen_dir, command_record, count,
                                 default_run_dir, digests, interrupted_note, keeps_earlier, open_cache, processes,
                                 run_checkpoint, seed)
from coexplore.search import registry
from coexplore.model.cache import cache_key
from coexplore.model.nest import STRIDE_RULES
from coexplore.stops import finishing, holding_stops
from coexplore.search.layer import MapInterrupted, NoValidMapping, cache_parts, map_layer
from coexplore.spec.loopnest import format_loop_nest
from coexplore.spec.mapping import parse_mapping, to_arrays
from coexplore.spec.yamlio import write_text, write_texts, yaml_text


def register(sub) -> None:
    p = sub.add_parser("map", help="search the best mapping of one layer on one core",
                       description="Search the mapspace of one layer on one architecture (under the "
                                   "architecture's constraints) and write the best Timeloop mapping.")
    p.add_argument("arch", help=ARCH_HELP)
    p.add_argument("problem", nargs="?", default=None, help=PROBLEM_HELP)
    p.add_argument("--ert", help=ERT_HELP)
    add_arguments(p)
    p.add_argument("--constraints", action="append", default=None,
                   help="mapspace constraints file; repeat it for several (e.g. architecture and mapspace "
                        "constraints), combined with the architecture_constraints inside ARCH as "
                        "timeloop-mapper combines them, or added to a v0.4 node list's own constraints "
                        "(default: those inside ARCH, else constraints.yaml beside ARCH, else the v0.4 "
                        "nodes' constraints)")
    p.add_argument("--searcher", default=None,
                   help=f"searcher name, mapper YAML (mappers/<name>.yaml) or a timeloop-mapper YAML (its mapper: "
                        f"section); default: a system YAML's mappers.layer, else marl. "
                        f"Names: {', '.join(sorted(registry.SEARCHERS))}")
    p.add_argument("--budget", type=count, default=10_000, help="cost-model samples (default 10000)")
    p.add_argument("--seed", type=seed, default=0, help="random seed (default 0); same seed, same result")
    p.add_argument("--objective", default=None, metavar="OBJ",
                   help="edp, energy or latency, or an expression of energy (pJ), cycles, edp (J x cycles) and "
                        "utilization, e.g. 'energy * cycles**2' or 'energy if cycles <= 3e5 else inf' (README: "
                        "Objectives; one starting with a minus: --objective=-...); default: the mapper's (edp for the bundled mappers); latency is "
                        "in cycles and ranks equal cycle counts by energy, as timeloop-mapper's [delay, energy]")
    p.add_argument("--batch-size", type=int, default=None,
                   help="candidates per ask/tell round (default: the mapper's, 100)")
    p.add_argument("--out", help="directory for mapping.yaml and result.json (default results/map/<arch>-<layer>-<searcher>-seed<S>, "
                                 "<layer> being <workload>-<layer> for a workload's layer; with --all-layers "
                                 "results/map/<arch>-<workload>-<searcher>-seed<S>, a sub-folder per layer; numbered -2, -3, "
                                 "... when it holds another run's result)")
    add_cache_option(p, no_cache=True)
    p.add_argument("--stride-rule", "--timeloop-rules", dest="stride_rule", choices=STRIDE_RULES,
                   default="current", help=STRIDE_HELP)
    p.add_argument("--all-layers", action="store_true",
                   help="map every distinct layer of the workload PROBLEM (each in its own sub-folder of the "
                        "result folder) and write the network's table layers.csv and totals summary.json")
    p.add_argument("--jobs", type=processes, default=1,
                   help="with --all-layers: map that many layers at once, in worker processes (default 1; "
                        "the same results)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_restart_option(p)
    p.set_defaults(func=run)


def _failed_run(args, out: Path, spec: registry.MapperSpec, run_desc: dict, exc: NoValidMapping) -> int:
    """result.json of a search without a valid sample (with the commonest reasons); exit 1."""
    for stale in ("mapping.yaml", "map.txt"):              # an earlier run's mapping is not this run's
        (out / stale).unlink(missing_ok=True)
    payload = {"searcher": spec.searcher, "samples": exc.samples, "invalid_samples": exc.invalid_samples,
               "best": None, "mapping_file": None,
               "error": exc.message, "expected": exc.expected, "invalid_reasons": [[r, n] for r, n in exc.reasons],
               "objective": spec.objective, "seed": args.seed, "cached": False, "wall_s": exc.wall_s,
               "mapspace_log10_size": exc.mapspace_log10, "mapspace_size": exc.mapspace_size, "run": run_desc,
               **command_of(args)}
    write_text(out / "result.json", json.dumps(payload, indent=1))
    if args.json:
        print(json.dumps(payload, indent=1))
    print(f"coexplore map: {exc.message} (what helps: {exc.expected})", file=sys.stderr)
    print(f"coexplore map: wrote {out / 'result.json'}", file=sys.stderr)
    return 1


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"




def resolve_spec(name: str | None, objective: str | None, batch: int | None) -> registry.MapperSpec:
    return resolve_spec_overrides(registry.load_mapper(name) if name else registry.default_mapper(), objective, batch)


def resolve_spec_overrides(spec: registry.MapperSpec, objective: str | None, batch: int | None
                           ) -> registry.MapperSpec:
    """--objective and --batch-size win over the mapper file's."""
    if objective is not None:
        spec.objective = registry.checked_objective(objective, option="--objective")
        spec.objective_file = None          # (an error about it names --objective, not the mapper file)
    if batch is not None:
        if not 1 <= batch <= registry.MAX_BATCH:
            raise CoexploreError(f"bad batch size {batch}", key="--batch-size",
                                 expected=f"an integer in 1..{registry.MAX_BATCH:,} (a batch holds ~5 kB per mapping)")
        spec.batch_size = batch
    return spec


def mapper_of(args) -> registry.MapperSpec:
    """The mapper a run uses: --searcher, else a system YAML's `mappers.layer`, else marl; with
    --objective and --batch-size applied."""
    spec = resolve_spec(args.searcher, args.objective, args.batch_size)
    if args.searcher is None and "system" in top_keys(args.arch):   # the system's `mappers.layer`
        from coexplore.arch.system import load_system_arch
        from coexplore.system.from_system import system_layer_mapper
        spec = system_layer_mapper(load_system_arch(args.arch)) or spec
        spec = resolve_spec_overrides(spec, args.objective, args.batch_size)
    return spec


def command_of(args) -> dict:
    """{"command": the command line} for a run record: how to run it again (not for a layer of
    `--all-layers`, whose network's summary.json has it, nor for a Python caller)."""
    return {} if getattr(args, "layer_of_network", False) else command_record()


def _found_beside(ctx, constraints, args) -> dict:
    """The ERT and constraints files a run read without their being named (beside ARCH, a
    system's core): for its record, path and digest, as the files given are."""
    out = {}
    ert = getattr(ctx.ert, "source", None)
    if args.ert is None and ert and Path(ert).is_file():
        out["ert"] = str(Path(ert).resolve())
    named = {str(Path(c).resolve()) for c in args.constraints or []}
    files = sorted({str(Path(c.source).resolve()) for c in (constraints or {}).values()
                    if c.source and Path(c.source).is_file()} - named - {str(resolve("arch", args.arch).resolve())})
    if files:
        out["constraints"] = files
    return out


def run(args) -> int:
    with own_core_names(args):           # (a system's own template core: its var: names)
        return _run(args)


def _mapspace_note(arch) -> None:
    """A spec's `mapspace:` section: coexplore's mapspace is Timeloop's `uber` one (perfect
    factorizations); another template (`ruby`: imperfect ones, with remainder loops) is not explored."""
    from coexplore.spec.yamlio import load_yaml
    if not Path(str(arch)).is_file() or "mapspace" not in top_keys(arch):
        return
    section = load_yaml(arch).get("mapspace")
    template = section.get("template") if isinstance(section, dict) else None
    if template not in (None, "uber"):
        print(f"coexplore map: note: {arch} asks for Timeloop's `{template}` mapspace template (imperfect "
              "factorizations, with remainder loops): coexplore explores perfect factorizations only (Timeloop's "
              "`uber` template), so its optimum is that of the smaller space", file=sys.stderr)


MEMORY_PER_SAMPLE = 500     # bytes a searcher keeps per mapping it evaluated (docs/readme_search.md, Limits)


def _memory_note(budget: int) -> None:
    """Say when the budget's memory (searchers remember every mapping they evaluate) passes half of
    this machine's: a budget typed with too many zeros runs until it runs out of memory."""
    import os
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):     # (no sysconf: not said)
        return
    need = budget * MEMORY_PER_SAMPLE
    if need > total / 2:
        print(f"coexplore map: warning: --budget {budget:,}: a search remembers every mapping it evaluates "
              f"(~{MEMORY_PER_SAMPLE} bytes each), up to {need / 2**30:,.0f} GiB, more than half of this "
              f"machine's {total / 2**30:,.0f} GiB (a layer of fewer mappings stops at their count)", file=sys.stderr)


def _run(args) -> int:
    problem_in_arch(args)
    if args.budget < 1:
        raise CoexploreError(f"budget must be at least 1 sample, got {args.budget}", key="--budget",
                             expected="a positive integer")
    _memory_note(args.budget)
    if args.objective is not None:      # before any input is read, priced or searched
        args.objective = registry.checked_objective(args.objective, option="--objective")
    if getattr(args, "all_layers", False):
        from coexplore.cli.map_workload import run_all_layers
        return run_all_layers(args, run)
    if getattr(args, "jobs", 1) > 1:
        raise CoexploreError(f"--jobs {args.jobs} maps several layers at once", key="--jobs",
                             expected="--all-layers with it, or --jobs 1 for one layer")
    ctx, constraints = load_inputs(args, with_constraints=True)
    ctx.stride_rule = args.stride_rule
    spec = mapper_of(args)
    for note in spec.notes + ([spec.advice] if spec.advice else []):
        print(f"coexplore map: note: {note}", file=sys.stderr)
    if args.searcher is None and "mapper" in top_keys(args.arch):      # a timeloopfe spec's own settings
        print(f"coexplore map: note: {args.arch} has a timeloop-mapper `mapper:` section, which is used with "
              f"--searcher {args.arch} only; this run uses {spec.searcher} ({spec.objective})", file=sys.stderr)
    _mapspace_note(args.arch)
    if not registry.SEARCHERS[spec.searcher][0].seeded and args.seed != 0:
        print(f"coexplore map: note: {spec.searcher} walks the mappings in one order: --seed {args.seed} "
              "changes nothing (the result is that of every seed)", file=sys.stderr)
    if registry.SEARCHERS[spec.searcher][0].learns_between_batches and 2 * spec.batch_size > args.budget:
        print(f"coexplore map: warning: batch size {spec.batch_size:,} is more than half the budget "
              f"{args.budget:,}: {spec.searcher} learns between batches, so it learns (almost) nothing here",
              file=sys.stderr)
    # a workload layer is named after its workload too (conv1 is in several networks)
    label = f"{Path(args.problem).stem}-{ctx.problem.name}" if is_workload(args.problem) else ctx.problem.name
    def where(x, kind=None):     # a file as an absolute path (a bundled name as the file it names), else as given
        found = None if x is None else resolve(kind, x) if kind else Path(x)
        return x if found is None or not found.exists() else record_name(found)
    problem_file = resolve("problems", args.problem) if args.problem is not None else None
    found = _found_beside(ctx, constraints, args)          # an ERT or constraints file read without being named
    run_desc = {**run_header(),
                "arch": where(args.arch, "arch"), "problem": where(args.problem, "problems"), "core": args.core,
                "layer": args.layer,
                "ert": where(args.ert), "constraints": [where(c) for c in args.constraints or []] or None,
                **({"found": found} if found else {}), "mapper": spec.to_dict(),
                "budget": args.budget, "seed": args.seed,
                **({"stride_rule": args.stride_rule} if args.stride_rule != "current" else {}),
                **({"var": sorted(args.var)} if getattr(args, "var", None) else {}),
                **({"classes": args.classes} if getattr(args, "classes", None) else {}),
                "inputs_sha256": digests(resolve("arch", args.arch), problem_file, args.ert, *(args.constraints or []),
                                         found.get("ert"), *found.get("constraints", []),
                                         args.searcher if args.searcher and Path(args.searcher).is_file() else None,
                                         *template.files_read()),     # (what a template pulled in)
                # everything the result depends on, wherever it was found (an ERT or constraints.yaml
                # beside ARCH, a system's mapper): the cache key of the run
                "content_key": cache_key(**cache_parts(ctx, constraints, spec, budget=args.budget, seed=args.seed))}
    # created before the search, not after; a default folder holding another run's result is kept
    # the default folder says which search made it: runs of several searchers or seeds side by side
    base = f"results/map/{ctx.arch.name}-{label}-{spec.searcher}-seed{args.seed}"
    writes = ("mapping.yaml", "map.txt", *(("problem.yaml",) if is_workload(args.problem) else ()))
    out = chosen_dir(args.out, "result.json", run_desc, "map", writes=writes,
                     inputs=(resolve("arch", args.arch), problem_file, args.ert, *(args.constraints or []))) if args.out \
        else default_run_dir(base, "result.json", run_desc)
    cache = None
    if not args.no_cache:
        cache = open_cache(args.cache, "map")
    checkpoint = run_checkpoint(out, run_desc, "map", args.restart)
    # a Ctrl-C after the search (caching, writing) waits for the result to be written
    with finishing("the result is written", hold_after_stop=True) as guard:
        code = _search_and_write(args, ctx, constraints, spec, run_desc, out, cache, checkpoint)
    if guard.asked and code == 0:
        print("coexplore map: the stop came after the search had finished; the complete result is in "
              f"{out}", file=sys.stderr)
    return code


def _search_and_write(args, ctx, constraints, spec, run_desc: dict, out: Path, cache, checkpoint) -> int:
    """The search, then mapping.yaml, map.txt, result.json and the summary; the exit code."""
    stop_now = False                # a stop-at-once while the result was made: written, then exit 130
    try:
        res = map_layer(ctx, constraints, spec, args.budget, args.seed,
                        progress=show_progress(args), cache=cache, checkpoint=checkpoint)
    except MapInterrupted as exc:   # Ctrl-C: write the best mapping so far, then exit 130
        res, stop_now = exc.result, exc.stop_now
        if res is None:
            interrupted_note("map", checkpoint)
            if args.json:             # a script reading stdout gets a record still: stopped, nothing found
                print(json.dumps({"searcher": spec.searcher, "samples": None, "best": None, "mapping_file": None,
                                  "history": [], "interrupted": True, "objective": spec.objective,
                                  "seed": args.seed, "run": run_desc}, indent=1))
            raise KeyboardInterrupt from None
    except NoValidMapping as exc:   # a failed search, not bad input: recorded, exit 1
        checkpoint.discard()
        return _failed_run(args, out, spec, run_desc, exc)
    finally:
        if cache is not None:
            cache.close()
    if res.interrupted and keeps_earlier(out / "result.json", run_desc, res.samples, "map", checkpoint):
        if args.json:                 # the result kept is this run's best: a script gets it as usual
            print((out / "result.json").read_text())
        return 130
    with holding_stops() as hold:     # a second Ctrl-C here still leaves the result's files
        mapping_file = out / "mapping.yaml"
        arrays = to_arrays([parse_mapping({"mapping": res.mapping}, ctx.arch, ctx.problem)], ctx.arch, ctx.problem)
        files = {out / "map.txt": format_loop_nest(arrays, 0, ctx.arch, ctx.problem, res.best),
                 mapping_file: yaml_text({"mapping": res.mapping},
                                         header=f"coexplore map: best {spec.objective} mapping of {ctx.problem.name} "
                                                f"on {ctx.arch.name}\nsearcher {spec.searcher}, "
                                                f"{plural(res.samples, 'sample')}, seed {args.seed}")}
        problem_file = None
        if is_workload(args.problem):     # the layer as a Timeloop problem file, for timeloop-model
            from coexplore.spec.workload import find_workload, load_workload, problem_yaml
            from coexplore.bundled import resolve
            layer = load_workload(find_workload(resolve("problems", args.problem))).layer(ctx.problem.name)
            problem_file = out / "problem.yaml"
            files[problem_file] = problem_yaml(layer)
        long_names = [d for d in ctx.problem.dims if len(d) > 1]
        if long_names:     # Timeloop's permutation parser takes one character per dimension
            print(f"coexplore map: note: {mapping_file} writes the permutations of dimensions "
                  f"{', '.join(long_names)} space-separated, which coexplore reads but timeloop-model cannot "
                  "(it reads a permutation one letter per dimension)", file=sys.stderr)
        payload = {"searcher": spec.searcher, "samples": res.samples, "invalid_samples": res.invalid_samples,
                   "best": res.best,
                   "mapping_file": str(mapping_file), "history": res.history, "objective": spec.objective,
                   "seed": args.seed, "cached": res.cached, "wall_s": res.wall_s,
                   "mapspace_log10_size": res.mapspace_log10, "mapspace_size": res.mapspace_size, "run": run_desc,
                   **command_of(args)}
        if res.exhausted is not None:
            payload["exhausted"] = res.exhausted
        if res.interrupted:
            payload["interrupted"] = True
        files[out / "result.json"] = json.dumps(payload, indent=1)
        write_texts(files)                # together: the folder never mixes two runs' files
        if not res.interrupted:
            checkpoint.discard()          # the result is stored (and cached): nothing to resume
    if args.json:
        print(json.dumps(payload, indent=1))
        if res.interrupted:
            print(f"coexplore map: interrupted after {res.samples:,} samples; wrote the best so far to "
                  f"{mapping_file}", file=sys.stderr)
    else:
        b = res.best
        size = (plural(res.mapspace_size, 'mapping') if res.mapspace_size is not None
                else f"at most 10^{res.mapspace_log10:.1f}")     # not counted: the upper bound
        bad = f" ({res.invalid_samples:,} invalid)" if res.invalid_samples else ""     # (a hint for the budget)
        print(f"coexplore map: {ctx.problem.name} on {ctx.arch.name}, searcher {spec.searcher}, "
              f"{plural(res.samples, 'sample')}{bad}{' (from cache)' if res.cached else ''}, mapspace {size}")
        uj = b['energy_pJ'] / 1e6
        energy = f"{uj:,.3f} uJ" if uj >= 1 else f"{uj:.6g} uJ"   # one unit for every layer; tiny ones keep 6 digits
        print(f"best {spec.objective}: energy {energy} ({b['energy_pJ'] / b['computes']:.4g} pJ/MAC), cycles {b['cycles']:,}, "
              f"utilization {b['utilization']:.3f}, EDP {b['edp_J_cycle']:.6g} J*cycle")
        if res.exhausted is True:
            print("every distinct mapping was evaluated: this is the optimum")
        elif res.exhausted is False and spec.searcher == "linear_pruned":
            # an in-order walk: a budget below the space covers a sliver of it
            print(f"note: linear_pruned walks the mapspace ({size}) in order and stopped after "
                  f"{plural(res.samples, 'sample')}: raise --budget, or use a searcher that samples "
                  "the whole space (random_pruned, ga, marl)")
        elif res.exhausted is False:
            print(f"note: the budget ended before every distinct mapping was evaluated ({size}); "
                  "raise --budget for the optimum")
        if res.interrupted:
            print(f"interrupted after {res.samples:,} of {args.budget:,} samples: this is the best so far "
                  "(not cached)")
        print(f"wrote {mapping_file}, {out / 'map.txt'} (loop nest)"
              + (f", {problem_file} (the layer as a Timeloop problem)" if problem_file else "")
              + f" and {out / 'result.json'}")
    stop_now = stop_now or hold.stop_now
    if res.interrupted:
        interrupted_note("map", checkpoint)
    elif stop_now:
        print(f"coexplore map: stopped after the search had ended: the complete result is in {out}",
              file=sys.stderr)
    return 130 if res.interrupted or stop_now else 0
