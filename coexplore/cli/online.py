"""`coexplore online`: multi-tenant request streams served online; schedulers compared on SLAs.

    coexplore online SYSTEM.yaml [--workload W ...] [--layer-searcher S] [--layer-budget N]
                     [--layer-seed S] [--jobs N] [--cache PATH | --no-cache] [--bandwidth B]
    coexplore online --table JOBS.csv --bandwidth B
          [--load 0.8] [--loads RHO,...] [--load-basis fastest|capacity] [--requests 200]
          [--slack LOW HIGH] [--mix W ...] [--keep-late]
          [--schedulers fcfs,edf,...,relmas] [--seeds 5] [--seed S]
          [--train-generations 25] [--train-streams 3] [--policy POLICY.json]
          [--out DIR] [--restart] [--json] [--no-plot] [--no-progress]

Each DNN of the workloads is a tenant sending Poisson requests at the offered load; a request's
layers run in order on the cores, which share the off-chip bandwidth. The learned scheduler
(relmas) is trained on streams of its own, then every scheduler serves the same evaluation streams.
Writes DIR/online.json, results.csv (per scheduler and stream), requests.csv (every stream,
per request and scheduler), policy.json (the trained weights) and sla.png.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

from coexplore.bundled import record_name, resolve
from coexplore.cli.paths import (show_progress, nonnegative, add_cache_option, command_record, chosen_dir,
                                 count_at_most, default_run_dir, digests, processes, remove_empty_created, run_key,
                                 seed, table_run_name)
from coexplore.errors import CoexploreError
from coexplore.provenance import run_header
from coexplore.spec.yamlio import write_text, write_texts

RESULT = "online.json"
MAX_REQUESTS = 10_000_000     # per stream: its arrays and per-request results stay within a few GB
MAX_STREAMS = 100_000         # evaluation or training streams: each one simulated in turn
TRAIN_STATE = ".train_state.json"      # an interrupted training's state (resumed by the same run)


def register(subparsers) -> None:
    from coexplore.online.schedulers import HEURISTICS
    p = subparsers.add_parser(
        "online", help="serve multi-tenant request streams online: RELMAS and heuristic schedulers, SLA rates",
        description="Simulate tenants sending DNN inference requests with deadlines to a multi-core system "
                    "sharing off-chip bandwidth; train the learned scheduler (relmas) and compare it with "
                    "heuristic schedulers on the same streams (SLA satisfaction, energy, latency).")
    p.add_argument("system", nargs="?", metavar="SYSTEM.yaml",
                   help="system YAML (cores, shared DRAM bandwidth, workloads) or a bundled name "
                        "(hetero_2simba_2eyeriss)")
    from coexplore.cli.schedule import add_job_table_options
    add_job_table_options(p)
    p.add_argument("--jobs", type=processes, default=1, metavar="N",
                   help="processes mapping the layers for the job table, then training relmas (default 1; the "
                        "same results with any N)")
    add_cache_option(p, no_cache=True)
    p.add_argument("--table", metavar="JOBS.csv",
                   help="a job table with a dnn column (the jobs.csv `coexplore schedule SYSTEM.yaml` writes) "
                        "instead of SYSTEM.yaml")
    p.add_argument("--bandwidth", type=float, metavar="B",
                   help="off-chip bandwidth in bytes/cycle (with SYSTEM.yaml: overrides the system's)")
    p.add_argument("--trace", metavar="TRACE.csv",
                   help="serve the requests of this trace (columns arrival_cycle, deadline_cycle, dnn; optional "
                        "seed: several streams; a run's requests.csv is one) instead of Poisson streams; relmas "
                        "is trained on Poisson streams at the trace's measured load and mix")
    p.add_argument("--load", type=float, metavar="RHO",
                   help="offered load (default 0.8; with --trace the trace's own), on the --load-basis")
    p.add_argument("--loads", metavar="RHO,RHO,...",
                   help="also serve the evaluation streams at these loads (relmas trained at --load only): "
                        "online.json's loads, results.csv's load column and sla_load.png")
    p.add_argument("--load-basis", choices=("fastest", "capacity"), default="fastest",
                   help="what load 1 is: fastest (default): as much work, each layer on its fastest core, as the "
                        "cores have cycles (unequal cores saturate below 1); capacity: the largest request rate "
                        "the cores can serve (a linear program over where each layer runs)")
    p.add_argument("--requests", type=count_at_most(MAX_REQUESTS, "a stream's arrays take ~100 bytes a request"),
                   default=None, metavar="N", help="requests per stream (default 200)")
    p.add_argument("--slack", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"),
                   help="deadline = arrival + k x the DNN's isolated latency, k uniform in [LOW, HIGH] "
                        "(default 1.5 4)")
    p.add_argument("--mix", type=float, nargs="+", metavar="W",
                   help="relative request rates of the DNNs, in workload order (default: equal)")
    p.add_argument("--keep-late", action="store_true",
                   help="run late requests to the end (default: a request whose deadline passes while it "
                        "waits is dropped)")
    p.add_argument("--schedulers", default=",".join([*HEURISTICS, "relmas"]), metavar="A,B,...",
                   help="schedulers to compare (default all: " + ", ".join([*HEURISTICS, "relmas"]) + ")")
    p.add_argument("--seeds", type=count_at_most(MAX_STREAMS, "each stream is simulated by every scheduler"),
                   metavar="N",
                   help="evaluation streams (default 5: seeds S..S+4)")
    p.add_argument("--seed", type=seed, default=0, metavar="S",
                   help="first evaluation stream's seed, also the training's (default 0)")
    p.add_argument("--train-generations", type=nonnegative, default=None, metavar="N",
                   help="generations of relmas's training (default 25; 0: the untrained policy)")
    p.add_argument("--train-streams", default=None, metavar="N",
                   type=count_at_most(MAX_STREAMS, "each generation simulates them all, twice per pair"),
                   help="training streams per generation (default 3)")
    p.add_argument("--policy", metavar="POLICY.json",
                   help="relmas's weights from an earlier run's policy.json (no training)")
    p.add_argument("--out", metavar="DIR",
                   help="result folder (default results/online/<system>-load<RHO>-s<S>, numbered when it "
                        "holds another run's results)")
    p.add_argument("--restart", action="store_true",
                   help="train relmas from generation 0 even when this folder holds this run's policy or "
                        "interrupted training (by default they are reused or resumed)")
    p.add_argument("--json", action="store_true", help="print online.json on stdout instead of the summary")
    p.add_argument("--no-plot", action="store_true", help="do not draw sla.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args) -> int:
    from coexplore.online.schedulers import heuristic

    names, scenario, train, policy = _checked_options(args)
    from coexplore.search.layer import NoValidMapping
    try:
        table, bandwidth = _job_table(args)
    except NoValidMapping as exc:     # a failed layer search, not bad input: exit 1, as `coexplore schedule`
        print(f"coexplore online: {exc.format(cli=True)}", file=sys.stderr)
        remove_empty_created()
        return 1
    from coexplore.cli.schedule import bandwidth_given
    from coexplore.online.models import served_system
    from coexplore.online.stream import check_scenario, request_rates
    try:
        system = served_system(table, bandwidth)
    except CoexploreError as exc:
        exc = bandwidth_given(exc, args)
        raise (exc.with_file(args.table) if args.table and exc.file is None else exc) from None
    if policy is not None:
        _say_other_system(policy, system, args.policy)
    streams, trained_at = None, None
    if args.trace:
        streams, scenario, trained_at = _trace_streams(args, system, scenario)
    loads = _loads(args)
    rates = request_rates(system, scenario)          # (a --mix of the wrong length is refused here)
    for load in loads:                               # every load's streams fit a float (else: said, naming it)
        try:
            check_scenario(system, dataclasses.replace(scenario, load=load))
        except CoexploreError as exc:
            if exc.option == "--load" and load != scenario.load:
                exc.option = "--loads"
            raise
    simulations = len(names) * args.seeds * len(loads) + (2 * train.pairs * train.streams * train.generations
                                             if "relmas" in names and not args.policy else 0)
    note = stream_size_note(system, rates, max(len(st) for st in streams.values()) if streams else scenario.requests,
                            simulations)
    if note:
        print(f"coexplore online: note: {note}", file=sys.stderr)
    _say_dram_overload(system, scenario, loads)
    if scenario.slack[0] < 1:
        print(f"coexplore online: warning: --slack {scenario.slack[0]:g} ...: a deadline below "
              "a request's isolated latency (slack 1) cannot be met, even on an idle system", file=sys.stderr)
    run_desc = _run_description(args, scenario, train, names, loads)
    if trained_at is not None:                   # a trace's relmas trained at another load than it has
        run_desc["train_load"] = trained_at.load
    origins = {str(k): st.origin for k, st in (streams or {}).items() if st.origin != "0"}
    if origins:                                  # log timestamps: where each stream's cycle 0 is
        run_desc["trace_origin_cycles"] = origins
    if args.out and "relmas" in names and policy is None and not args.restart:   # (before the folder's notes)
        _refuse_shorter_training(Path(args.out), training_key(run_desc), train)
    out = _out_dir(args, run_desc)
    if "relmas" in names and policy is None:
        _keep_others_training(out, run_desc)
    progress = show_progress(args)
    history, learned = None, None
    if "relmas" in names:
        from coexplore.online.policy import LearnedScheduler
        if policy is None:
            policy, history = _trained(system, trained_at or scenario, train, not args.keep_late, out, run_desc,
                                       args.restart, progress, args.jobs)
            if policy is None:
                return 130
        learned = LearnedScheduler(policy)
    by_load = {}
    for load in loads:                   # the training load first
        at = dataclasses.replace(scenario, load=load)
        at_rates = request_rates(system, at)
        schedulers = {n: learned if n == "relmas" else heuristic(n, at_rates) for n in names}
        results = _evaluate(system, at, schedulers, args, progress, f" at load {load:g}" if len(loads) > 1 else "",
                            streams)
        if results is None:
            return 130
        by_load[load] = (at_rates, results)
    entries = {load: _at_load(system, load, *by_load[load]) for load in loads}
    data = _record(system, entries[args.load], run_desc, history, args, policy)
    if len(loads) > 1:
        data["loads"] = [entries[load] for load in sorted(loads)]
    _write_and_say(args, out, data, system, scenario, table, by_load, streams, names, loads)
    return 0


def _checked_options(args) -> tuple:
    """Every option checked before any work: (scheduler names, scenario, training settings, the
    --policy given or None); fills the defaults that depend on --trace."""
    from coexplore.online.policy import load_policy
    from coexplore.online.schedulers import heuristic
    from coexplore.online.stream import Scenario
    from coexplore.online.train import TrainSettings
    for option in ("trace", "policy", "table"):       # (an unset shell variable: not "no file")
        if getattr(args, option) == "":
            raise CoexploreError("an empty path", key=f"--{option}", expected="a file")
    names = [n.strip().lower() for n in args.schedulers.split(",")]     # (names are case-blind: FCFS is fcfs)
    args.schedulers = ",".join(names)
    if not all(names) or len(set(names)) != len(names):      # (an empty name: 'edf,' or 'edf,,fcfs', or 'fcfs,FCFS')
        raise CoexploreError(f"schedulers {args.schedulers!r}", key="--schedulers",
                             expected="a comma-separated list of distinct scheduler names")
    for n in names:
        if n != "relmas":
            heuristic(n)                                # an unknown name is refused here
    if args.trace:
        for option, given in (("--loads", args.loads), ("--seeds", args.seeds is not None), ("--mix", args.mix)):
            if given:
                raise CoexploreError(f"{option} with --trace", key=option,
                                     expected="no " + option + ": the trace gives the streams, their load and mix")
        why = _nothing_trained(args)                 # the trace is served: these shape relmas's training only
        for option, given in (("--requests", args.requests), ("--slack", args.slack)):
            if given is not None and why:     # (--load too, unless the trace's load cannot be measured: _trace_streams)
                raise CoexploreError(f"{option} with --trace, and nothing is trained ({why})", key=option,
                                     expected=f"no {option}: with --trace it sets relmas's training streams "
                                              "only (the trace's own requests, deadlines and load are served)")
    else:
        args.seeds = 5 if args.seeds is None else args.seeds
        args.load = 0.8 if args.load is None else args.load
    if args.seeds is not None and args.seeds < 1:
        raise CoexploreError(f"got {args.seeds}", key="--seeds", expected="an integer >= 1 (evaluation streams)")
    from coexplore.cli.schedule import check_job_table_source
    check_job_table_source(args, "online", jobs_map_only=False)
    args.requests = 200 if args.requests is None else args.requests
    args.slack = (1.5, 4.0) if args.slack is None else args.slack
    scenario = Scenario(0.8 if args.load is None else args.load, args.requests, tuple(args.slack),
                        tuple(args.mix) if args.mix else None, basis=args.load_basis)
    for option, given in (("--train-generations", args.train_generations), ("--train-streams", args.train_streams)):
        if given is not None and args.policy:        # a policy given is not trained: the option would do nothing
            raise CoexploreError(f"{option} with --policy", key=option,
                                 expected=f"no {option} (--policy gives relmas's weights, untrained further), "
                                          "or no --policy (relmas trained here)")
        if given is not None and "relmas" not in names:
            print(f"coexplore online: note: {option} {given}: no relmas among the schedulers, nothing is trained",
                  file=sys.stderr)
    args.train_generations = 25 if args.train_generations is None else args.train_generations
    args.train_streams = 3 if args.train_streams is None else args.train_streams
    train = TrainSettings(generations=args.train_generations, streams=args.train_streams, seed=args.seed)
    policy = None
    if args.policy:
        try:
            policy = load_policy(args.policy)
        except CoexploreError as exc:           # (a file that cannot be read: said with the option's name)
            if exc.key is None:
                exc.key = "--policy"
            raise
    if args.policy and "relmas" not in names:
        raise CoexploreError("relmas is not among the schedulers", key="--policy",
                             expected="--schedulers with relmas, or no --policy")
    return names, scenario, train, policy


def _write_and_say(args, out: Path, data: dict, system, scenario, table, by_load: dict, streams,
                   names: list[str], loads: list[float]) -> None:
    """The run's files (written together, the record last), its charts, and what the terminal shows."""
    results = by_load[args.load][1]                 # (the requests listed are those at the training load)
    seeds = _seeds(args, streams)
    files = {out / "results.csv": _results_csv(by_load, seeds), out / "requests.csv": _requests_csv(system, results, seeds)}
    if args.system:
        from coexplore.system.tables import table_csv
        files[out / "jobs.csv"] = table_csv(table)
    ready = _json_ready(data)                # (no energy in the table, no request met: null, not NaN)
    files[out / RESULT] = json.dumps(ready, indent=1, allow_nan=False) + "\n"          # the record last
    write_texts(files)                # together: the folder never mixes two runs' files
    png = None
    if not args.no_plot:
        from coexplore.report.online_plot import draw_sla
        png = draw_sla(data, out / "sla.png", title=_chart_title(data["name"], scenario, system.bandwidth, args))
        if len(loads) > 1:
            from coexplore.report.online_plot import draw_sla_by_load
            png = [png, draw_sla_by_load(data, out / "sla_load.png",
                                         title=_chart_title(data["name"], scenario, system.bandwidth, args,
                                                            loads).replace("; ", "\n"))]
    for chart in ("sla.png", "sla_load.png"):     # an earlier run's chart would not match
        if (args.no_plot or (chart == "sla_load.png" and len(loads) == 1)) and (out / chart).exists():
            (out / chart).unlink()
    if args.json:
        print(json.dumps(ready, allow_nan=False))
    else:
        print("\n".join(_summary(data)))
        print(f"results    {out / RESULT}\nper stream {out / 'results.csv'}\nrequests   {out / 'requests.csv'}"
              + (f"\npolicy     {out / 'policy.json'}" if "relmas" in names and not args.policy else "")
              + "".join(f"\nchart      {p}" for p in (png if isinstance(png, list) else [png] if png else [])))


LARGE_STREAM = 200_000    # layer runs per stream from which the command says how many there are


def stream_size_note(system, rates, requests: int, simulations: int) -> str | None:
    """A note when a stream runs so many layers (DNNs of thousands of layers, e.g. MobileNet-V2 with its
    depthwise layers as one job per channel) that the run's `simulations` of a stream take long; else None."""
    layers = [len(m.layers) for m in system.models]
    per_request = sum(r * n for r, n in zip(rates, layers)) / max(sum(rates), 1e-300)
    runs = requests * per_request
    if runs < LARGE_STREAM:
        return None
    big = [f"{m.name} {len(m.layers):,}" for m in system.models if len(m.layers) >= 1000]
    return (f"a stream runs ~{runs:,.0f} layers" + (f" (layers per request: {', '.join(big)})" if big else "")
            + f"; this run simulates {simulations:,} streams (training and evaluation), each for seconds to minutes: "
            "fewer --requests or --train-generations, or a grouped workload (mobilenet_v2_grouped), keep it short")


def _loads(args) -> list[float]:
    """The evaluation loads: --load (the training's) first, then the other --loads."""
    if not args.loads:
        return [args.load]
    try:
        extra = [float(x) for x in args.loads.split(",")]
    except ValueError:
        extra = []
    if not extra or any(not (x > 0 and x < float("inf")) for x in extra):
        raise CoexploreError(f"loads {args.loads!r}", key="--loads",
                             expected="comma-separated numbers > 0, e.g. 0.5,0.8,1.2")
    loads = list(dict.fromkeys([args.load, *extra]))
    if len(loads) == 1:
        print(f"coexplore online: note: --loads {args.loads} is --load {args.load:g}: one load is served",
              file=sys.stderr)
    return loads


def _chart_title(name: str, scenario, bandwidth: float, args, loads: list | None = None) -> str:
    """What the chart's numbers depend on, in one line."""
    mix = f", mix {':'.join(f'{w:g}' for w in scenario.mix)}" if scenario.mix else ""
    late = "late requests run to the end" if args.keep_late else "late requests dropped"
    trained = "relmas" in [n.strip() for n in args.schedulers.split(",")] and not args.policy
    load = (f"relmas trained at load {scenario.load:g}" if loads and trained else
            f"loads {', '.join(f'{x:g}' for x in sorted(loads))}" if loads else f"load {scenario.load:g}")
    basis = " of capacity" if scenario.basis == "capacity" else ""
    if args.trace:
        at = getattr(args, "train_load", None) or scenario.load
        trained = f", relmas trained at load {at:.3g}{basis}" if trained else ""
        return f"{name}: trace {Path(args.trace).name} ({args.seeds} streams){trained}, {bandwidth:g} B/cycle, {late}"
    return (f"{name}: {load}{basis}, slack {scenario.slack[0]:g}-{scenario.slack[1]:g}{mix}, "
            f"{bandwidth:g} B/cycle, {late}; {scenario.requests} requests x {args.seeds} streams")


def _job_table(args):
    """The job table and bandwidth: SYSTEM.yaml's (layers mapped through the cache) or --table's."""
    from coexplore.cli.schedule import system_table
    if args.table:
        from coexplore.cli.schedule import load_table_option
        return load_table_option(args.table), args.bandwidth
    table, bandwidth, _ = system_table(args, progress=show_progress(args), command="online")
    return table, bandwidth


def _run_description(args, scenario, train, names: list[str], loads: list[float]) -> dict:
    """Everything the results depend on (online.json's `run`; compared before a folder is reused)."""
    from coexplore.cli.schedule import job_table_budget, system_input_files
    desc = {**run_header(), "schedulers": names, "seeds": args.seeds, "seed": args.seed,
            "scenario": _scenario_desc(scenario), "drop_late": not args.keep_late, "bandwidth": args.bandwidth,
            "train": dataclasses.asdict(train) if "relmas" in names and not args.policy else None,
            "policy": str(Path(args.policy).resolve()) if args.policy else None}
    if "magma" in names:              # the placement's plan: MAGMA's settings (fixed, not options)
        from coexplore.online.schedulers import MagmaPlanned
        plan = MagmaPlanned()
        desc["magma_plan"] = {"budget": plan.budget, "seed": plan.seed, "batch": plan.batch}
    if len(loads) > 1:                # (only then: the key of a run of one load stays as it was)
        desc["loads"] = sorted(loads)
    files = [args.table, args.policy, args.trace]
    if args.trace:
        desc["trace"] = str(Path(args.trace).resolve())
    if args.table:
        desc["table"] = str(Path(args.table).resolve())
    else:
        desc.update(system=record_name(resolve("arch", args.system)),      # (a bundled name: its file)
                    workloads=[record_name(resolve("problems", w)) for w in args.workload] if args.workload else None,
                    layer_searcher=args.layer_searcher,
                    layer_budget=job_table_budget(args),
                    layer_seed=0 if args.layer_seed is None else args.layer_seed)
        files += system_input_files(args.system, args.workload, args.layer_searcher)
    desc["inputs_sha256"] = digests(*[f for f in files if f])
    return desc


def _scenario_desc(scenario) -> dict:
    """The scenario's fields; the load basis only when not the default (the key of runs made before
    it existed stays the same)."""
    desc = dataclasses.asdict(scenario)
    if desc["basis"] == "fastest":
        del desc["basis"]
    return desc


def run_name(args) -> str:
    """The system's file name, or the table's (`table_run_name`)."""
    return table_run_name(args.table) if args.table else Path(args.system).stem


def _system_name(args) -> str:
    """The system's `name:` (as schedule and sweep say it), else its file name; a table's name."""
    if args.table:
        return table_run_name(args.table)
    from coexplore.spec.system import load_system
    return load_system(args.system).name


def _out_dir(args, run_desc: dict) -> Path:
    if args.out:
        return chosen_dir(args.out, RESULT, run_desc, "online", writes=("jobs.csv",) if args.system else (),
                          inputs=(args.trace, args.table, args.policy),
                          also_writes=("requests.csv", "results.csv", "sla.png", "sla_load.png"))
    name = run_name(args)
    basis = "cap" if args.load_basis == "capacity" else ""
    if args.trace:
        return default_run_dir(Path("results") / "online" / f"{name}-trace-{table_run_name(args.trace)}-s{args.seed}",
                               RESULT, run_desc)
    return default_run_dir(Path("results") / "online" / f"{name}-load{args.load:g}{basis}-s{args.seed}", RESULT, run_desc)


def _refuse_shorter_training(out: Path, key, train) -> int:
    """A longer training of this run, finished (policy.json) or interrupted (its saved state), is never
    replaced by a shorter one: refused. Returns the generations of the interrupted one (0: none)."""
    from coexplore.online.policy import load_policy
    done, state_file = out / "policy.json", out / TRAIN_STATE
    try:
        saved = json.loads(state_file.read_text()) if state_file.is_file() else None
        interrupted_at = len(saved["state"]["history"]) if saved and saved.get("run") == key else 0
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        interrupted_at = 0
    try:
        kept = load_policy(done) if done.is_file() else None
    except CoexploreError:
        kept = None
    trained = len(kept.meta.get("history") or []) if kept is not None and kept.meta.get("run") == key else 0
    for n, holder, what, use in ((interrupted_at, state_file, "interrupted after", "resume it"),
                                 (trained, done, "after", "use (or continue) it")):
        if n > train.generations:
            raise CoexploreError(f"{holder} holds this training, {what} {n} generations; --train-generations "
                                 f"{train.generations} would replace it with a shorter one", file=str(out),
                                 key="--train-generations", expected=f"--train-generations {n} (or more) to {use}, "
                                 "--restart to train anew here, or another --out folder")
    return interrupted_at


def _trained(system, scenario, train, drop_late: bool, out: Path, run_desc: dict, restart: bool, progress: bool,
             workers: int = 1):
    """relmas's policy: policy.json of this same training if it is there (continued when more generations
    are asked), else trained (resuming a saved state of this training); (None, None) when interrupted (the
    state is kept for the rerun). A training continued from G generations to N ends with the weights of
    an uninterrupted N-generation training (each generation's streams and steps depend only on its index)."""
    from coexplore.online.policy import Policy, load_policy
    from coexplore.online.train import train_policy
    key = training_key(run_desc)
    done, state_file = out / "policy.json", out / TRAIN_STATE
    if restart:
        for f in (done, state_file):
            if f.exists():
                f.unlink()
    state = None
    interrupted_at = _refuse_shorter_training(out, key, train)
    if done.is_file():
        try:
            kept = load_policy(done)
        except CoexploreError:
            kept = None
        if kept is not None and kept.meta.get("run") == key:
            trained = len(kept.meta.get("history") or [])
            if trained == train.generations:
                print(f"coexplore online: using the policy this run already trained ({done})", file=sys.stderr)
                return kept, kept.meta.get("history")
            if interrupted_at <= trained < train.generations and isinstance(kept.meta.get("strategy"), dict):
                state = {"strategy": kept.meta["strategy"], "history": kept.meta["history"]}
                print(f"coexplore online: continuing the training of {done} from generation {trained}",
                      file=sys.stderr)
    if state is None and state_file.is_file():
        try:
            saved = json.loads(state_file.read_text())
            if saved.get("run") == key and len(saved["state"]["history"]) <= train.generations:
                state = saved["state"]
                print(f"coexplore online: resuming the training after {len(state['history'])} generations "
                      f"({state_file})", file=sys.stderr)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            state = None

    def save(st):
        write_text(state_file, json.dumps({"run": key, "state": st}) + "\n")
    try:
        policy, state = train_policy(system, scenario, train, drop_late, state=state, on_generation=save,
                                     progress=progress, workers=workers)
    except KeyboardInterrupt:
        if state_file.is_file():
            print(f"\ncoexplore online: interrupted; the training state is saved in {state_file}: run the same "
                  "command again to continue (--restart starts over)", file=sys.stderr)
        else:
            print("\ncoexplore online: interrupted before the first training generation ended", file=sys.stderr)
            remove_empty_created()
        return None, None
    policy = Policy(policy.weights, {"run": key, "history": state["history"], "generations": train.generations,
                                     "streams": train.streams, "strategy": state["strategy"],
                                     "trained_on": served_what(system)})
    policy.save(done)
    if state_file.exists():
        state_file.unlink()
    return policy, state["history"]


def served_what(system) -> dict:
    """What a policy was trained to serve (recorded in policy.json, compared when it is given)."""
    return {"cores": list(system.cores), "dnns": [m.name for m in system.models]}


def _say_other_system(policy, system, path) -> None:
    """A note when a policy given was trained on other cores or DNNs: it is used as given (its
    features are per request and core, so it runs anywhere), but how well it serves here is unknown."""
    then, now = policy.meta.get("trained_on"), served_what(system)
    if not isinstance(then, dict):
        return
    differ = [k for k in now if then.get(k) != now[k]]
    if differ:
        was = "; ".join(f"{k} " + ", ".join(map(str, then.get(k) or [])) for k in differ)
        print(f"coexplore online: note: the policy {path} was trained on other {' and '.join(differ)} ({was}): it "
              "is used as given, but its training did not see this system", file=sys.stderr)


def training_key(run_desc: dict) -> str:
    """What relmas's training depends on (not the evaluation's schedulers and seeds, nor the number of
    generations: a longer training continues a shorter one): the key of its saved state and of the
    policy.json a rerun reuses or continues."""
    desc = {k: v for k, v in run_desc.items() if k not in ("schedulers", "seeds", "loads", "magma_plan")}
    if isinstance(desc.get("train"), dict):
        desc["train"] = {k: v for k, v in desc["train"].items() if k != "generations"}
    return run_key(desc)


def _keep_others_training(out: Path, run_desc: dict) -> None:
    """Refuse an --out folder holding another training's interrupted state (it would be lost)."""
    state_file = out / TRAIN_STATE
    if not state_file.is_file():
        return
    try:
        other = json.loads(state_file.read_text()).get("run")
    except (OSError, ValueError, AttributeError):
        return                                   # unreadable: nothing there to resume
    if other != training_key(run_desc):
        raise CoexploreError(f"holds the saved training state of another run, interrupted ({TRAIN_STATE}): "
                             "writing here would lose it", file=str(out), key="--out",
                             expected=f"another --out folder, or delete {state_file} to discard that state (the "
                                      "command of that run, with its inputs as they were, resumes it)")


def _seeds(args, streams) -> list[int]:
    """The evaluation streams' seeds: S..S+N-1, or the trace's stream numbers."""
    return list(streams) if streams is not None else list(range(args.seed, args.seed + args.seeds))


def _json_ready(value):
    """`value` with every non-finite float as None: JSON has no NaN (an energy the table does not
    give, an energy per met request when none was met)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def _nothing_trained(args) -> str | None:
    """Why this run trains no relmas (None when it trains one)."""
    if "relmas" not in args.schedulers.split(","):
        return "no relmas among the schedulers"
    return "relmas is given by --policy" if args.policy else None


def _cycle(origin: str) -> str:
    """A trace origin (exact digits, as recorded) said in a line: long ones in floating point."""
    return origin if len(origin) <= 20 else f"{float(origin):.6g}"


def _trace_streams(args, system, scenario):
    """--trace's streams; the scenario at the trace's measured load and mix (the load figures, the
    static placements); and, when --load differs from the measured load, the scenario relmas is
    trained at (else None). A trace of one instant has no measurable load: --load is its label too."""
    from coexplore.online.stream import offered_load
    from coexplore.online.trace import read_trace, trace_rates
    streams = read_trace(args.trace, [m.name for m in system.models])
    rates = trace_rates(streams, len(system.models))
    requests = sum(len(st) for st in streams.values())
    if rates is None:
        if args.load is None:
            relmas = "relmas" in args.schedulers.split(",") and not args.policy
            raise CoexploreError("its arrivals span no time, so its load cannot be measured", file=args.trace,
                                 key="arrival_cycle", expected="--load RHO, " + (
                                     "for relmas's training and the load figures" if relmas else
                                     "the load its results are labelled with"))
        measured = None
        import numpy as np
        counts = np.bincount(np.concatenate([st.model for st in streams.values()]),
                             minlength=len(system.models)).astype(float)
        if counts.sum() > 0:              # (no rates, but the requests' shares are the trace's mix)
            scenario = dataclasses.replace(scenario, mix=tuple(float(x) for x in counts / counts.sum()))
    else:
        measured = offered_load(system, rates, scenario.basis)
        scenario = dataclasses.replace(scenario, mix=tuple(float(x) for x in rates / rates.sum()))
    if measured is not None and args.load is not None and (why := _nothing_trained(args)):
        raise CoexploreError(f"--load with --trace, and nothing is trained ({why})", key="--load",
                             expected=f"no --load: the trace's measured load ({measured:.3g}) is served; --load "
                                      "sets relmas's training load only")
    given, args.load = args.load, measured if measured is not None else args.load
    scenario = dataclasses.replace(scenario, load=args.load)
    trained_at = dataclasses.replace(scenario, load=given) if given is not None and given != args.load else None
    args.train_load = (trained_at or scenario).load          # (the chart's title)
    args.seeds = len(streams)
    gaps = sum(len(st) - 1 for st in streams.values())
    mix = ", ".join(f"{m.name} {w:.3g}" for m, w in zip(system.models, scenario.mix or ()))
    print(f"coexplore online: trace {args.trace}: {requests} requests in {len(streams)} stream"
          f"{'s' if len(streams) > 1 else ''}"
          + (f", offered load {measured:.3g} ({'of capacity' if scenario.basis == 'capacity' else 'fastest-core basis'})"
             f", mix {mix}" if measured is not None else "")
          + (f"; relmas trained at --load {given:g}" if trained_at is not None else ""), file=sys.stderr)
    shifted = [st.origin for st in streams.values() if st.origin != "0"]
    if shifted:
        print(f"coexplore online: note: {len(shifted)} stream{'s' if len(shifted) > 1 else ''} of the trace counted "
              f"from {'their' if len(shifted) > 1 else 'its'} first arrival (cycle {_cycle(shifted[0])}"
              f"{', ...' if len(shifted) > 1 else ''}: log timestamps): requests.csv's times are from there "
              "(online.json's run.trace_origin_cycles)", file=sys.stderr)
    import numpy as np
    iso = np.array([m.isolated_latency for m in system.models])
    short = sum(int((st.deadline - st.arrival < iso[st.model]).sum()) for st in streams.values())
    if short:                                     # (as --slack below 1 is warned)
        print(f"coexplore online: warning: {short} of {requests} requests of the trace have a deadline shorter "
              "than their DNN's isolated latency: no scheduler can meet them, even on an idle system",
              file=sys.stderr)
    if measured is not None and gaps < 20:
        print(f"coexplore online: note: the load is measured from {gaps} gap{'s' if gaps != 1 else ''} between "
              "arrivals, so it is rough (and the overload warnings with it); --load sets relmas's training load",
              file=sys.stderr)
    return streams, scenario, trained_at


def _evaluate(system, scenario, schedulers: dict, args, progress: bool, where: str = "", streams=None):
    from coexplore.online.compare import run_schedulers
    seeds = _seeds(args, streams)
    bar = None
    if progress:
        from coexplore.progress import progress_bar
        bar = progress_bar(total=len(schedulers) * len(seeds), desc="serve streams" + where, unit="run", leave=False)
    try:
        return run_schedulers(system, scenario, schedulers, seeds, not args.keep_late,
                              done=lambda n, s: bar.update(1) if bar is not None else None, streams=streams)
    except KeyboardInterrupt:
        print("\ncoexplore online: interrupted while serving the evaluation streams (the trained policy, "
              "if any, is kept: a rerun only serves the streams)", file=sys.stderr)
        remove_empty_created()
        return None
    finally:
        if bar is not None:
            bar.close()


CORES_FAR_BEYOND = 10.0     # offered load over the cores' capacity past which a load is warned of


def _say_dram_overload(system, scenario, loads) -> None:
    """A warning for each load whose requests ask more DRAM traffic than the bandwidth passes (the
    load figures count the cores only): every scheduler falls behind there."""
    import dataclasses

    from coexplore.online.stream import dram_demand, request_rates
    over = [(load, dram_demand(system, request_rates(system, dataclasses.replace(scenario, load=load))))
            for load in sorted(loads)]
    over = [(load, d) for load, d in over if d > 1]
    from coexplore.online.stream import capacity_rate
    rates = {load: request_rates(system, dataclasses.replace(scenario, load=load)) for load in loads}
    beyond = sorted(load for load, r in rates.items()
                    if r.sum() / capacity_rate(system, r / r.sum()) > CORES_FAR_BEYOND)
    if beyond:                           # (a mistyped load, 1e6 for 1.0: every request would be late)
        print(f"coexplore online: warning: --load {', '.join(f'{x:g}' for x in beyond)}: more than "
              f"{CORES_FAR_BEYOND:g} times what the cores can serve: nearly every request misses its deadline "
              "whatever the scheduler (a load near 1 compares schedulers)", file=sys.stderr)
    if over:
        print("coexplore online: warning: the requests ask more DRAM traffic than the bandwidth "
              f"({system.bandwidth:g} bytes/cycle) passes: "
              + ", ".join(f"{d:.3g}x at load {load:g}" for load, d in over)
              + "; the load counts the cores only, so no scheduler keeps up there (a lower load or more "
                "bandwidth)", file=sys.stderr)


def _at_load(system, load: float, rates, results: dict) -> dict:
    """The numbers of one evaluation load: its rates, the cores' capacity for this mix (requests/cycle),
    each scheduler's means, the best heuristic and relmas's gains (online.json's `loads` entries)."""
    from coexplore.online.compare import gains, mean_summary
    from coexplore.online.stream import capacity_rate, dram_demand
    means = {n: mean_summary(rs) for n, rs in results.items()}
    capacity = capacity_rate(system, rates / rates.sum())
    entry = {"load": load, "capacity_requests_per_cycle": capacity, "load_of_capacity": float(rates.sum()) / capacity,
             "dram_demand_of_bandwidth": dram_demand(system, rates),
             "requests_per_cycle": [float(r) for r in rates], "schedulers": means}
    heuristics = {n: v for n, v in means.items() if n != "relmas"}
    if heuristics:
        entry["best_heuristic"] = max(heuristics, key=lambda n: (heuristics[n]["sla_rate"], -heuristics[n]["energy_pJ"]))
    if "relmas" in means:
        entry["relmas_gains"] = gains(means, "relmas")
    return entry


def _record(system, entry: dict, run_desc: dict, history, args, policy) -> dict:
    """online.json: the run, the system and its DNNs, and the numbers of the `--load` evaluation (`entry`)."""
    data = {"name": _system_name(args), "run": run_desc, **command_record(),
            "cores": list(system.cores), "bandwidth_bytes_per_cycle": system.bandwidth,
            "models": [{"name": m.name, "layers": len(m.layers), "isolated_latency_cycles": m.isolated_latency,
                        "work_cycles": m.work, "requests_per_cycle": r}
                       for m, r in zip(system.models, entry["requests_per_cycle"])],
            **{k: entry[k] for k in ("capacity_requests_per_cycle", "load_of_capacity", "dram_demand_of_bandwidth",
                                     "schedulers",
                                     "best_heuristic", "relmas_gains") if k in entry}}
    if "relmas" in entry["schedulers"]:
        data["policy"] = {"weights": dict(zip(_features(), policy.weights.tolist())),
                          "training_history": history}
    return data


def _features():
    from coexplore.online.policy import FEATURES
    return FEATURES


_COLUMNS = ("sla_rate", "met", "dropped", "energy_pJ", "latency_mean_cycles", "latency_p95_cycles",
            "utilization", "bandwidth_utilization", "decisions", "decision_us")


def _results_csv(by_load: dict, seeds: list[int]) -> str:
    """Per evaluation load (`by_load`: load -> (rates, results)), scheduler and stream, the stream's summary."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scheduler", "load", "seed", *_COLUMNS])
    for load in sorted(by_load):
        for name, rs in by_load[load][1].items():
            for i, r in enumerate(rs):
                s = r.summary()
                w.writerow([name, load, seeds[i], *[s[k] for k in _COLUMNS]])
    return buf.getvalue()


def _requests_csv(system, results: dict, seeds: list[int]) -> str:
    """Every evaluation stream's requests (the `--load` run's): stream seed, request, DNN, arrival,
    deadline, and per scheduler the finish (empty: dropped), so percentiles over all streams can be
    recomputed."""
    import csv
    import io
    import math
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["seed", "request", "dnn", "arrival_cycle", "deadline_cycle", *[f"finish_{n}" for n in results]])
    streams = len(next(iter(results.values())))
    for k in range(streams):
        by = {n: rs[k] for n, rs in results.items()}
        any_r = next(iter(by.values()))
        for i in range(len(any_r.arrival)):
            w.writerow([seeds[k], i, system.models[int(any_r.model[i])].name, float(any_r.arrival[i]),
                        float(any_r.deadline[i]),
                        *["" if math.isnan(r.finish[i]) else float(r.finish[i]) for r in by.values()]])
    return buf.getvalue()


def _summary(data: dict) -> list[str]:
    means = data["schedulers"]
    dnns = len(data["models"])
    lines = [f"{data['name']}: {len(data['cores'])} cores, {dnns} DNN{'s' if dnns != 1 else ''} "
             f"({', '.join(m['name'] for m in data['models'])}), load "
             # (a trace's load is measured: as many digits as the note that says it; a given one as given)
             + (f"{data['run']['scenario']['load']:.3g}" if data["run"].get("trace") else
                f"{data['run']['scenario']['load']:g}")
             + (" of capacity" if data['run']['scenario'].get('basis') == 'capacity' else
                f" ({data['load_of_capacity']:.3g} of the cores' capacity)")
             + (f"; DRAM traffic {data['dram_demand_of_bandwidth']:.3g} of the bandwidth"
                if data.get("dram_demand_of_bandwidth") else ""),
             f"{'scheduler':10} {'SLA rate':>9} {'min-max':>12} {'worst DNN':>9} {'energy J':>9} {'p95 cycles':>11} "
             f"{'util':>5} {'us/decide':>9}"]
    for name, m in sorted(means.items(), key=lambda kv: -kv[1]["sla_rate"]):
        per = m["sla_rate_per_seed"]
        lines.append(f"{name:10} {m['sla_rate']:9.3f} {min(per):5.3f}-{max(per):5.3f} {m['min_model_sla_rate']:9.3f} "
                     f"{m['energy_pJ'] / 1e12:9.4g} {m['latency_p95_cycles']:11.4g} {m['utilization']:5.2f} "
                     f"{m['decision_us']:9.1f}")
    if "relmas_gains" in data and "best_heuristic" in data:
        b = data["best_heuristic"]
        g = data["relmas_gains"][b]

        def pct(x):
            return "n/a" if x is None else f"{100 * x:+.1f}%"
        # the lowest SLA rate, of equal ones the most energy (the best's own order reversed); never the
        # best itself while another heuristic is there (two that tie are two names)
        others = [n for n in data["relmas_gains"] if n != b] or [b]
        worst = min(others, key=lambda n: (means[n]["sla_rate"], -means[n]["energy_pJ"]))
        alone = len(data["relmas_gains"]) == 1           # one heuristic: neither best nor worst, nor alike
        tie = not alone and all((means[n]["sla_rate"], means[n]["energy_pJ"]) ==
                                (means[b]["sla_rate"], means[b]["energy_pJ"]) for n in data["relmas_gains"])
        which = ("" if alone else "the heuristics, all alike in SLA rate and energy, e.g. " if tie
                 else "the best heuristic ")
        lines.append(f"relmas vs {which}" + (f"{b}" if alone else f"({b})") + f": SLA {pct(g['sla_gain'])} (more met on "
                     f"{g['streams_better']} of {g['streams']} streams, as many on {g['streams_equal']}), energy "
                     f"{pct(g['energy_overhead'])} (per met request {pct(g['energy_per_met_overhead'])})"
                     + ("" if tie or alone else
                        f"; vs the worst ({worst}): SLA {pct(data['relmas_gains'][worst]['sla_gain'])}"))
    if data.get("loads"):
        loads = data["loads"]
        policy = data["run"].get("policy")
        lines.append("SLA rate by load" + ("" if "relmas" not in means else f" (relmas's policy from {policy})"
                                           if policy else f" (relmas trained at load {data['run']['scenario']['load']:g})"))
        lines.append(f"{'load':10} " + " ".join(f"{e['load']:>7g}" for e in loads))
        lines.append(f"{'capacity':10} " + " ".join(f"{e['load_of_capacity']:7.3f}" for e in loads))
        for name in sorted(means, key=lambda n: -means[n]["sla_rate"]):
            lines.append(f"{name:10} " + " ".join(f"{e['schedulers'][name]['sla_rate']:7.3f}" for e in loads))
    return lines
