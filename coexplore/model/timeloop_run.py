"""The real `timeloop-model` as an optional backend: one mapping of a `Context` written as the
files timeloop-model reads (the flattened architecture, the problem, the mapping and the energy
table, as coexplore reads them), run in a temporary folder, and its stats.txt (or its error) read
back as a record of the built-in model's schema (`timeloop_stats`). Timeloop is not installable
from the package registries; where a user has it (a build, the Accelergy docker image), this
checks the built-in model against it mapping by mapping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.model.timeloop_stats import failed_run, parse_stats, refuses_mapping
from coexplore.spec.architecture import architecture_to_v3
from coexplore.spec.mapping import MappingArrays, save_mapping
from coexplore.spec.problem import underscored_shape
from coexplore.spec.yamlio import write_yaml

EXECUTABLE = "timeloop-model"
ENV = "COEXPLORE_TIMELOOP_MODEL"          # a timeloop-model not on PATH
STATS = "timeloop-model.stats.txt"
TIMEOUT_S = 600.0


def find_timeloop_model() -> str:
    """The timeloop-model to run: $COEXPLORE_TIMELOOP_MODEL, else the one on PATH."""
    given = os.environ.get(ENV)
    if given:
        path = shutil.which(given)
        if path is None:
            raise CoexploreError(f"${ENV} is {given!r}, which is not an executable", key=ENV,
                                 expected="the path of a timeloop-model executable")
        return os.path.abspath(path)              # (it runs in another folder)
    path = shutil.which(EXECUTABLE)
    if path is None:
        there = next((Path(d) / EXECUTABLE for d in os.environ.get("PATH", "").split(os.pathsep)
                      if d and (Path(d) / EXECUTABLE).is_file()), None)
        if there is not None:
            raise CoexploreError(f"{there} is not executable", key="model", option="--model",
                                 expected=f"chmod +x {there}, or ${ENV}=/path/to/timeloop-model")
        raise CoexploreError("timeloop-model is not installed here (not on PATH)", key="model", option="--model",
                             expected=f"Timeloop built and on PATH (or ${ENV}=/path/to/timeloop-model), or "
                                      "--model builtin (the default: Timeloop's numbers without Timeloop)")
    return os.path.abspath(path)


def write_inputs(ctx, arrays: MappingArrays, index: int, folder: str | Path) -> list[Path]:
    """The files timeloop-model needs for mapping `index` of `arrays`, written into `folder`."""
    folder = Path(folder)
    files = [_written(folder / "arch.yaml", architecture_to_v3(ctx.arch)),
             _written(folder / "problem.yaml", {"problem": {"shape": underscored_shape(ctx.problem.shape),
                                                                   "instance": ctx.problem.instance}}),
             save_mapping(folder / "mapping.yaml", arrays, index, ctx.arch, ctx.problem)]
    if ctx.ert.raw is not None and ctx.ert.actions:
        files.append(_written(folder / "ERT.yaml", {"ERT": ctx.ert.raw}))
    return files


def _written(path: Path, data) -> Path:
    write_yaml(path, data)
    return path


def run_timeloop_model(ctx, arrays: MappingArrays, index: int = 0, executable: str | None = None,
                       timeout: float = TIMEOUT_S, keep: str | Path | None = None) -> dict:
    """Mapping `index` of `arrays` through the real timeloop-model: its record (the schema of
    `Context.record`; an invalid mapping is `valid: False` with Timeloop's `ERROR:` line). `keep`:
    a folder to leave the inputs and Timeloop's outputs in (default: a temporary one, removed)."""
    exe = executable or find_timeloop_model()
    with tempfile.TemporaryDirectory(prefix="coexplore-timeloop-") as tmp:
        folder = Path(keep) if keep is not None else Path(tmp)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if keep is not None:
                _claim_folder(folder)
            for old in folder.glob("timeloop-model.*"):     # an earlier run's outputs are not this one's
                if old.is_file():
                    old.unlink()
            files = write_inputs(ctx, arrays, index, folder)
        except OSError as exc:
            raise CoexploreError(f"cannot write timeloop-model's inputs there: {exc.strerror or exc}",
                                 file=str(folder), key="timeloop_dir", option="--timeloop-dir",
                                 expected="a folder path (created if missing)"
                                 ) from None
        try:
            done = _run_group([exe, *(f.name for f in files)], folder, timeout)
        except subprocess.TimeoutExpired:
            raise CoexploreError(f"timeloop-model ran longer than {timeout:g} s (--timeloop-timeout)",
                                 key="model", option="--model",
                                 expected="a timeloop-model that finishes") from None
        except OSError as exc:
            raise CoexploreError(f"cannot run {exe}: {exc.strerror or exc}", key="model", option="--model",
                                 expected="an executable timeloop-model") from None
        log = done.stdout + "\n" + done.stderr
        stats = folder / STATS
        look = "(--timeloop-dir DIR keeps its inputs and outputs to look at)" if keep is None else f"(see {folder})"
        if done.returncode == 0 and stats.is_file() and stats.stat().st_size:
            try:
                # (bytes that are not UTF-8 read as U+FFFD: said as a stats.txt coexplore cannot read)
                return parse_stats(stats.read_text(encoding="utf-8", errors="replace"), [lv.name for lv in ctx.arch.all_levels],
                                   file=str(stats) if keep is not None else None)
            except CoexploreError as exc:
                said = f"{exc.file}: {exc.message}" if exc.file else exc.message    # (its `expected` is said below)
                raise CoexploreError(f"timeloop-model wrote a stats.txt coexplore cannot read: {said}",
                                     key="model", option="--model",
                                     expected=f"{exc.expected or 'the stats.txt of a dense timeloop-model run'} {look}"
                                     ) from None
        if done.returncode == 1 and refuses_mapping(log):
            return failed_run(log)                             # Timeloop refused the mapping
        tail = " | ".join(ln.strip() for ln in log.strip().splitlines() if ln.strip())
        tail = " | ".join(tail.split(" | ")[-3:]) or "no output"
        if done.returncode < 0:
            import signal
            try:
                how = f"killed by signal {-done.returncode} ({signal.Signals(-done.returncode).name})"
            except ValueError:
                how = f"killed by signal {-done.returncode}"
        elif done.returncode == 0:
            how = f"ended (exit code 0) without writing {STATS}"
        else:
            how = f"failed (exit code {done.returncode})"
        raise CoexploreError(f"timeloop-model {how}: {tail}", key="model", option="--model",
                             expected=f"a timeloop-model run that writes {STATS} or refuses the mapping {look}")


def _run_group(command: list, folder: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run `command` in a process group of its own, so a timeout or a Ctrl-C stops everything it
    started (a timeloop-model behind a wrapper script, docker or conda leaves no process behind)."""
    import signal
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="replace", stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:                 # the timeout, Ctrl-C, SIGTERM: the whole group goes
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


MARK = ".coexplore-timeloop"         # in a --timeloop-dir: coexplore's (its files may be replaced)


def _claim_folder(folder: Path) -> None:
    """A --timeloop-dir is written only if it is empty or coexplore's (it holds MARK): the files
    coexplore writes there (mapping.yaml, ERT.yaml, ...) would replace a user's own."""
    if (folder / MARK).is_file():
        return
    other = sorted(p.name for p in folder.iterdir())
    if other:
        raise CoexploreError(f"holds files of its own ({', '.join(other[:4])}{', ...' if len(other) > 4 else ''}), "
                             "which timeloop-model's inputs and outputs would replace", file=str(folder),
                             key="timeloop_dir", option="--timeloop-dir",
                             expected="a new or empty folder (or one an earlier --timeloop-dir "
                                      "run wrote)")
    (folder / MARK).write_text("timeloop-model's inputs and outputs, written by coexplore evaluate --timeloop-dir\n")
