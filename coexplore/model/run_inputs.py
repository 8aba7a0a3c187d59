"""The inputs of a Timeloop run folder that holds no copy of them.

Timeloop before timeloopfe (v0.3, 2020-21), and timeloop-model run without timeloopfe, write no
copy of their inputs: such a run folder holds only its outputs (`<tool>.stats.txt`,
`<tool>.ERT.yaml`, `<tool>.map.txt`, ...). The architecture and problem it ran on are the user's
files beside the outputs or near them (the exercises keep them in `../inputs/`, the original
repository in `../arch`, `../prob`). They are found by content (a top-level `architecture:` or
`problem:` key) in the run folder and below its parent, two levels deep (else below its grandparent:
`ref-output/<variant>/` runs beside `arch/`, `prob/`), and told apart by what the
outputs print: the problem whose dimensions the printed loop nest covers, the architecture whose
levels the stats.txt names.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from pathlib import Path

TOOLS = ("timeloop-model", "timeloop-mapper")
DEPTH = 2                   # folders below the run folder's parent searched for its inputs
MAX_BYTES = 2_000_000       # larger YAML files are not inputs (traces, logs)
_TOP = re.compile(r"^(architecture|problem)\s*:", re.MULTILINE)
_LEVEL = re.compile(r"^=== (.+) ===\s*$", re.MULTILINE)
_LOOP = re.compile(r"for\s+(\w+)\s+in\s+\[0:(\d+)\)")


def is_run_without_inputs(folder: Path, tool: str) -> bool:
    """Outputs of `tool` (a stats.txt and the loop nest it printed) and no timeloopfe input copy:
    Timeloop v0.3's run folders, or any run without timeloopfe."""
    return ((folder / f"{tool}.stats.txt").is_file() and (folder / f"{tool}.map.txt").is_file()
            and not (folder / "parsed-processed-input.yaml").is_file())


def _is_run_folder(folder: Path) -> bool:
    return any((folder / f"{t}.stats.txt").is_file() for t in TOOLS)


def _candidates(run: Path) -> dict[str, list[Path]]:
    """The YAML files that may be this run's inputs, by the top-level key that marks them: the run
    folder's own first, then those below its parent (other run folders and Timeloop's outputs left
    out)."""
    found = _below(run, run.parent)
    if not (found["architecture"] and found["problem"]):      # variants' runs in ref-output/<variant>/, the
        more = _below(run, run.parent.parent)                # inputs beside ref-output/ (the original repository)
        found = {k: found[k] or more[k] for k in found}
    return found


def _below(run: Path, base: Path) -> dict[str, list[Path]]:
    """The candidate inputs of `run` in `base` and its folders, DEPTH deep, other run folders left out."""
    found: dict[str, list[Path]] = {"architecture": [], "problem": []}
    for folder, dirs, files in os.walk(base):
        here = Path(folder)
        depth = len(here.relative_to(base).parts)
        dirs[:] = sorted(d for d in dirs if depth < DEPTH and not _is_run_folder(here / d) or here / d == run)
        for name in sorted(files):
            f = here / name
            if not name.endswith((".yaml", ".yml")) or name.startswith(TOOLS):
                continue
            try:                                # (a dangling link, an unreadable file: no input)
                if f.stat().st_size > MAX_BYTES:
                    continue
                text = f.read_text(errors="replace")
            except OSError:
                continue
            for key in set(_TOP.findall(text)):
                found[key].append(f)
    return found


def _loop_bounds(map_txt: str) -> dict[str, int]:
    """Each dimension's bound: the product of its loops in the printed nest."""
    out: dict[str, int] = {}
    for dim, n in _LOOP.findall(map_txt):
        out[dim] = out.get(dim, 1) * int(n)
    return out


def _covers(problem: Path, bounds: dict[str, int]) -> bool:
    from coexplore.spec.problem import load_problem
    try:
        p = load_problem(problem)
    except Exception:                       # (not a problem coexplore reads: not a candidate)
        return False
    return all(bounds.get(d, 1) == b for d, b in zip(p.dims, p.bounds)) and set(bounds) <= set(p.dims)


def _names_levels(arch: Path, levels: set[str]) -> bool:
    from coexplore.spec.architecture import load_architecture
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names = {lv.name for lv in load_architecture(arch).all_levels}
    except Exception:                       # (not an architecture coexplore reads: not a candidate)
        return False
    return levels <= names


def _pick(files: list[Path], fits, run: Path) -> list[Path]:
    """The files that fit, the run folder's own if any fit; files of the same text count once."""
    fit = [f for f in files if fits(f)]
    own = [f for f in fit if f.parent == run]
    unique: dict[str, Path] = {}
    for f in own or fit:
        unique.setdefault(f.read_text(errors="replace"), f)
    return list(unique.values())


def find_inputs(run: Path, tool: str) -> tuple[Path, Path] | str:
    """(architecture, problem) of a run of `tool` in `run`, or why they cannot be told (text)."""
    found = _candidates(run)
    map_txt = (run / f"{tool}.map.txt").read_text(errors="replace")
    stats = (run / f"{tool}.stats.txt").read_text(errors="replace")
    bounds = _loop_bounds(map_txt)
    levels = set(_LEVEL.findall(stats))
    problems = _pick(found["problem"], lambda p: _covers(p, bounds), run)
    archs = _pick(found["architecture"], lambda a: _names_levels(a, levels), run)
    where = f"in {run} or below {run.parent}"
    if len(problems) != 1:
        shape = " ".join(f"{d}={n}" for d, n in bounds.items()) or "none printed"
        count = "no" if not problems else len(problems)
        return (f"Timeloop run without an input copy: {count} problem files {where} of the loop bounds "
                f"its {tool}.map.txt prints ({shape}; product {math.prod(bounds.values())})")
    if len(archs) != 1:
        count = "no" if not archs else len(archs)
        return (f"Timeloop run without an input copy: {count} architecture files {where} with the "
                f"levels its {tool}.stats.txt names ({', '.join(sorted(levels))})")
    return archs[0], problems[0]
