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
RUN_STATS = ("timeloop-model.stats.txt", "timeloop-mapper.stats.txt")
RUN_ERTS = ("timeloop-model.ERT.yaml", "timeloop-mapper.ERT.yaml", "ERT.yaml")


def _runs(root: Path, skipped: list) -> list[Case]:
    """The Timeloop run folders below `root` (timeloopfe's output folders, the exercises' ref/): the
    flattened input, the ERT Timeloop used, the mapping it evaluated (the mapper's best, else the
    input's) and its stats.txt. Sparseloop runs go to `skipped` (coexplore models dense tensors)."""
    cases = []
    for inp in sorted(root.rglob(RUN_INPUT)):
        folder = inp.parent
        stats = next((folder / n for n in RUN_STATS if (folder / n).is_file()), None)
        ert = next((folder / n for n in RUN_ERTS if (folder / n).is_file()), None)
        if stats is None or ert is None:
            continue
        if "Actual scalar reads" in read_text(stats):
            skipped.append(folder)
            continue
        mapper = folder / "timeloop-mapper.map.yaml"
        name = str((folder.parent if folder.name == "ref" else folder).relative_to(root)) or folder.name
        cases.append(Case(folder, name, "run", inp, ert, inp, mapper if mapper.is_file() else inp, stats))
    return cases


@functools.lru_cache(maxsize=64)
def _level_names(arch_file: Path) -> tuple[str, ...]:
    import warnings
    from coexplore.spec.architecture import load_architecture
    with warnings.catch_warnings():                 # (said when the case is evaluated)
        warnings.simplefilter("ignore")
        return tuple(lv.name for lv in load_architecture(arch_file).all_levels)


def _find_up(start: Path, sub: str, stop: Path | None = None) -> Path | None:
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
    arches/ and layers/ above) and Timeloop run folders (`_runs`); Sparseloop runs left out are
    appended to `skipped`."""
    root = Path(root)
    if not root.is_dir():
        raise CoexploreError("not a directory", file=str(root), expected="a corpus directory")
    cases = _runs(root, skipped if skipped is not None else [])
    for mapping in sorted(root.rglob("mapping.yaml")):
        case = mapping.parent
        if not any((case / n).is_file() for n in REFERENCES):
            continue
        parts = case.parts
        if len(parts) < 3:
            continue
        arch, layer = parts[-3], parts[-2]
        arch_dir = _find_up(case, f"arches/{arch}", root)
        layer_file = _find_up(case, f"layers/{layer}.yaml", root)
        if arch_dir is None or layer_file is None:
            raise CoexploreError(f"case {case} has no arches/{arch}/ or layers/{layer}.yaml at or above {root}",
                                 file=str(case), expected="arches/ and layers/ at the corpus root or one level up")
        arch_file = arch_dir / "processed.yaml"
        if not arch_file.exists():
            arch_file = arch_dir / "arch.yaml"
        ert = arch_dir / "ERT.yaml"
        cases.append(Case(case, arch, layer, arch_file, ert if ert.exists() else None, layer_file))
    if not cases:
        raise CoexploreError("no cases found", file=str(root),
                             expected="<split>/<arch>/<layer>/<id>/{mapping.yaml, expected.json} below it "
                                      "(or timeloop-model.stats.txt / .log instead of expected.json), or folders "
                                      f"Timeloop ran in ({RUN_INPUT} with a stats.txt beside it)")
    return cases
