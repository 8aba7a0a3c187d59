"""Reference corpora laid out like Timeloop's: `<split>/<arch>/<layer>/<id>/{mapping.yaml, expected.json}`
with `arches/<arch>/{processed.yaml|arch.yaml, ERT.yaml}` and `layers/<layer>.yaml` at the root or above.
Instead of expected.json a case may hold what timeloop-model wrote: its `timeloop-model.stats.txt`, or
for a refused mapping its output saved as `timeloop-model.log` (read by `timeloop_stats`)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import read_text


REFERENCES = ("expected.json", "timeloop-model.stats.txt", "timeloop-model.log")   # in this order of precedence


@dataclass
class Case:
    path: Path
    arch: str
    layer: str
    arch_file: Path
    ert_file: Path | None
    layer_file: Path
    mapping_file: Path | None = None      # default: mapping.yaml in the case folder
    reference_file: Path | None = None    # default: the first of REFERENCES it holds
    rules: str | None = None              # the Timeloop rules its reference was made by, when known ("v0.3")

    @property
    def mapping(self) -> Path:
        return self.mapping_file or self.path / "mapping.yaml"

    @property
    def reference(self) -> Path:
        """The case's reference results: the first of REFERENCES it holds."""
        if self.reference_file is not None:
            return self.reference_file
        return next((self.path / n for n in REFERENCES if (self.path / n).is_file()), self.path / REFERENCES[0])

    @property
    def expected(self) -> dict:
        f = self.reference
        if f.name != "expected.json":
            return _from_timeloop_output(f, self.arch_file)
        try:
            data = json.loads(read_text(f))
        except ValueError as exc:
            raise CoexploreError(f"not valid JSON: {exc}", file=str(f),
                                 expected="Timeloop results in the corpus' expected.json schema") from None
        need = ("valid",) + (("cycles", "energy_pJ", "edp_J_cycle") if isinstance(data, dict) and data.get("valid")
                             else ())
        missing = [k for k in need if not isinstance(data, dict) or k not in data]
        if missing:
            raise CoexploreError("missing key", file=str(f), key=missing[0],
                                 expected="Timeloop results in the corpus' expected.json schema "
                                          "(valid, cycles, energy_pJ, edp_J_cycle, levels)")
        return data


def _from_timeloop_output(f: Path, arch_file: Path) -> dict:
    """The expected.json-schema record of a stats.txt or a refused run's log."""
    from coexplore.model.timeloop_stats import REFUSALS, failed_run, parse_stats, refuses_mapping
    text = read_text(f)
    if f.name == "timeloop-model.log":
        if not refuses_mapping(text):
            raise CoexploreError(f"no '{REFUSALS[0]} ...' line: not the output of a run that refused the "
                                 "mapping", file=str(f),
                                 expected="timeloop-model's output for a mapping that does not fit, or its stats.txt")
        return failed_run(text)
    return parse_stats(text, _level_names(arch_file), file=str(f))


# a folder timeloopfe ran Timeloop in: its flattened input and what Timeloop wrote beside it
RUN_INPUT = "parsed-processed-input.yaml"
RUN_TOOLS = ("timeloop-model", "timeloop-mapper")


def find_files(root: Path, name: str) -> list[Path]:
    """Every file `name` below `root`, symlinked folders followed (each real folder once)."""
    import os
    out, seen = [], set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        if name in files:
            out.append(Path(folder) / name)
    return sorted(out)


def _runs(root: Path, skipped: list, taken: set) -> list[Case]:
    """The Timeloop run folders below `root` (timeloopfe's output folders, the exercises' ref/): the
    flattened input and, per tool that ran there, its ERT, the mapping it evaluated (the mapper's
    map.yaml; timeloop-model's: the input's `mapping:`) and its stats.txt (or, for a refused
    mapping, timeloop-model.log). Folders in `taken` (corpus cases) are not runs; Sparseloop runs
    and folders with no outputs go to `skipped` as (folder, why)."""
    cases = []
    for inp in find_files(root, RUN_INPUT):
        folder = inp.parent
        if folder in taken:
            continue
        rel = folder.relative_to(root)
        if rel.name == "ref":                     # (the exercises' <case>/ref)
            rel = rel.parent
        name = str(rel) if str(rel) != "." else (folder.parent.name if folder.name == "ref" else folder.name)
        found = 0
        for tool in RUN_TOOLS:
            stats, log = folder / f"{tool}.stats.txt", folder / f"{tool}.log"
            ref = stats if stats.is_file() else log if tool == "timeloop-model" and log.is_file() else None
            if ref is None:
                continue
            found += 1
            ert = folder / f"{tool}.ERT.yaml"
            if not ert.is_file():
                ert = folder / "ERT.yaml"
            if not ert.is_file():
                raise CoexploreError(f"{tool}'s outputs but not the energy table it used", file=str(folder),
                                     expected=f"{tool}.ERT.yaml (or ERT.yaml) beside {RUN_INPUT}")
            mapping = inp
            if tool == "timeloop-mapper":
                mapping = folder / "timeloop-mapper.map.yaml"
                if not mapping.is_file():
                    raise CoexploreError("timeloop-mapper's stats but not the mapping it found", file=str(folder),
                                         expected="timeloop-mapper.map.yaml beside its stats.txt")
            if ref is stats and "Actual scalar reads" in read_text(stats):
                skipped.append((folder, "Sparseloop run (coexplore models dense tensors)"))
                continue
            label = name if tool == "timeloop-model" or not any(
                (folder / f"timeloop-model.{n}").is_file() for n in ("stats.txt", "log")) else f"{name} (mapper)"
            cases.append(Case(folder, label, "run", inp, ert, inp, mapping, ref))
        if not found:
            skipped.append((folder, f"no Timeloop outputs ({RUN_TOOLS[0]}.stats.txt / {RUN_TOOLS[1]}.stats.txt)"))
    return cases


def _runs_without_inputs(root: Path, skipped: list, taken: set) -> list[Case]:
    """The run folders below `root` with no input copy (Timeloop v0.3's, or a timeloop-model run
    without timeloopfe): a tool's stats.txt, ERT and printed loop nest (map.txt, the mapping it
    evaluated or found); their inputs found near them by `run_inputs.find_inputs` (a folder whose
    inputs cannot be told goes to `skipped`, as Sparseloop runs do). A v0.3 stats.txt marks its
    case `rules="v0.3"`."""
    from coexplore.model.run_inputs import TOOLS, find_inputs, is_run_without_inputs
    cases = []
    folders = sorted({f.parent for tool in TOOLS for f in find_files(root, f"{tool}.map.txt")})
    for folder in folders:
        tools = [t for t in TOOLS if is_run_without_inputs(folder, t)]
        if folder in taken or not tools:
            continue
        rel = folder.relative_to(root)
        if rel.name in ("ref", "ref-output", "output"):
            rel = rel.parent
        name = str(rel) if str(rel) != "." else folder.name
        for tool in tools:
            stats = read_text(folder / f"{tool}.stats.txt")
            if "Actual scalar reads" in stats:
                skipped.append((folder, "Sparseloop run (coexplore models dense tensors)"))
                continue
            ert = next((f for f in (folder / f"{tool}.ERT.yaml", folder / "ERT.yaml") if f.is_file()), None)
            if ert is None:
                skipped.append((folder, f"Timeloop run without the energy table it used ({tool}.ERT.yaml)"))
                continue
            inputs = find_inputs(folder, tool)
            if isinstance(inputs, str):
                skipped.append((folder, inputs))
                continue
            label = f"{name} (mapper)" if tool == "timeloop-mapper" and len(tools) > 1 else name
            # the stats.txt of the Timeloop of 2020-21 prints its compute unit's `Energy-per-op`
            cases.append(Case(folder, label, "run", inputs[0], ert, inputs[1], folder / f"{tool}.map.txt",
                              folder / f"{tool}.stats.txt", rules="v0.3" if "Energy-per-op" in stats else None))
    return cases


def _unread_outputs(root: Path, skipped: list, taken: set) -> None:
    """Folders holding Timeloop outputs that make no case, each said in `skipped` with why (they were
    passed over without a word): a stats.txt without the loop nest it printed or an input copy, a
    map+stats.xml alone, outputs renamed without the tool's prefix."""
    from coexplore.model.run_inputs import TOOLS
    names = [f"{t}.{n}" for t in TOOLS for n in ("stats.txt", "map+stats.xml")] + ["stats.txt", "map+stats.xml"]
    folders = sorted({f.parent for n in names for f in find_files(root, n)} - set(taken))
    for folder in folders:
        has = {n for n in names if (folder / n).is_file()}
        if has & {"stats.txt", "map+stats.xml"} and not has - {"stats.txt", "map+stats.xml"}:
            why = (f"outputs named without the tool's prefix ({', '.join(sorted(has))}): rename them "
                   f"{TOOLS[0]}.stats.txt, {TOOLS[0]}.map.txt, {TOOLS[0]}.ERT.yaml as Timeloop writes them")
        elif any(n.endswith("stats.txt") for n in has):
            why = (f"a stats.txt without the loop nest its run printed (<tool>.map.txt) or timeloopfe's "
                   f"{RUN_INPUT}: the mapping it evaluated is not known")
        else:
            why = (f"only {', '.join(sorted(has))}, which coexplore does not read (a stats.txt with its map.txt, "
                   f"or timeloopfe's {RUN_INPUT}, makes a case)")
        skipped.append((folder, why))


@functools.lru_cache(maxsize=64)
def _level_names(arch_file: Path) -> tuple[str, ...]:
    import warnings
    from coexplore.spec.architecture import load_architecture
    with warnings.catch_warnings():                 # (said when the case is evaluated)
        warnings.simplefilter("ignore")
        return tuple(lv.name for lv in load_architecture(arch_file).all_levels)


def find_up(start: Path, sub: str, stop: Path | None = None) -> Path | None:
    """The nearest `sub` at or above `start` (a case may sit deep below the corpus root)."""
    cur = start
    while True:
        cand = cur / sub
        if cand.exists():
            return cand
        if cur.parent == cur:
            return None
        cur = cur.parent


def discover(root: str | Path, skipped: list | None = None) -> list[Case]:
    """The cases below `root`: corpus cases (mapping.yaml + expected.json or Timeloop's outputs, with
    arches/ and layers/ above) and Timeloop run folders (`_runs`); what is left out is appended to
    `skipped` as (folder, why)."""
    root = Path(root)
    if not root.is_dir():
        raise CoexploreError("not a directory" if root.exists() else "no such folder", file=str(root),
                             expected="a corpus directory")
    cases = []
    for mapping in find_files(root, "mapping.yaml"):
        case = mapping.parent
        if not any((case / n).is_file() for n in REFERENCES):
            continue
        parts = case.parts
        if len(parts) < 3:
            continue
        arch, layer = parts[-3], parts[-2]
        arch_dir = find_up(case, f"arches/{arch}", root)
        layer_file = find_up(case, f"layers/{layer}.yaml", root)
        if (arch_dir is None or layer_file is None) and (case / RUN_INPUT).is_file():
            continue                              # (a folder Timeloop ran in: `_runs`)
        if arch_dir is None or layer_file is None:
            raise CoexploreError(f"case {case} has no arches/{arch}/ or layers/{layer}.yaml in a folder above it",
                                 file=str(case), expected="arches/ and layers/ at the corpus root (or any folder "
                                                          "above the case)")
        arch_file = arch_dir / "processed.yaml"
        if not arch_file.exists():
            arch_file = arch_dir / "arch.yaml"
        ert = arch_dir / "ERT.yaml"
        cases.append(Case(case, arch, layer, arch_file, ert if ert.exists() else None, layer_file))
    skipped = skipped if skipped is not None else []
    cases += _runs(root, skipped, {c.path for c in cases})
    cases += _runs_without_inputs(root, skipped, {c.path for c in cases})
    _unread_outputs(root, skipped, {c.path for c in cases} | {f for f, _ in skipped})
    if not cases:
        why = "; ".join(f"{f}: {w}" for f, w in skipped[:3]) + ("; ..." if len(skipped) > 3 else "")
        raise CoexploreError("no cases found" + (f" (skipped: {why})" if why else ""), file=str(root),
                             expected="<split>/<arch>/<layer>/<id>/{mapping.yaml, expected.json} below it "
                                      "(or timeloop-model.stats.txt / .log instead of expected.json), or folders "
                                      f"Timeloop ran in ({RUN_INPUT}, or for Timeloop v0.3 the map.txt, with a "
                                      "stats.txt beside it)")
    return cases
