"""Multi-core systems: a checked SystemSpec plus the generated architecture of each core.

System-wide settings flow into every core's template parameters: `clock_GHz`, the DRAM
`type`/`width`, and `technology` (a core may override `technology`, not the shared DRAM or
the clock). Sweep axes are checked here too: every value of every axis must give a system
whose cores all build.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from pathlib import Path

from coexplore.arch.core import CoreArch, build_core
from coexplore.arch.params import SYSTEM_OWNED
from coexplore.arch.file_core import FileCore
from coexplore.errors import CoexploreError
from coexplore.spec.system import CoreSpec, SystemSpec, load_system



@dataclass(frozen=True)
class CoreInstance:
    """One physical core of the system."""
    name: str                         # e.g. simba_0_1
    core: str                         # the distinct core design it is a copy of
    position: tuple[int, int] | None  # grid (row, column), None for counted cores


@dataclass(frozen=True, eq=False)
class SystemArch:
    """A system with its distinct core architectures generated."""
    spec: SystemSpec
    cores: dict[str, CoreArch | FileCore]   # core name -> generated core (or the user's files), in file order

    def instances(self) -> list[CoreInstance]:
        out = []
        for c in self.spec.cores:
            for name, pos in zip(c.instance_names(), c.positions()):
                out.append(CoreInstance(name, c.name, pos))
        return out

    @property
    def offchip_bytes_per_cycle(self) -> float:
        return self.spec.dram.bandwidth_bytes_per_cycle(self.spec.clock_GHz)


def core_params(spec: SystemSpec, core: CoreSpec) -> dict:
    """The template parameters of `core` with the system-wide settings filled in."""
    for name, where in SYSTEM_OWNED.items():
        if name in core.params:
            raise CoexploreError(f"'{name}' is shared by all cores", file=spec.file,
                                 key=f"{core.key}.params.{name}",
                                 expected=f"no '{name}' in core params; set {where}")
    merged = {"clock_GHz": spec.clock_GHz, "dram_type": spec.dram.type,
              "dram_width": spec.dram.width}
    if spec.technology is not None:
        merged["technology"] = spec.technology
    merged.update(core.params)
    return merged


def build_system(spec: SystemSpec) -> SystemArch:
    """Generate every distinct core of `spec` (errors name the file and core key)."""
    cores = {}
    for c in spec.cores:
        if c.template is None:          # a Timeloop architecture file of the user's own
            cores[c.name] = FileCore.of(c)
            try:
                cores[c.name].architecture       # read now: a bad file is said before any work
            except CoexploreError as exc:
                raise _in_core(exc, spec, c) from None
            continue
        try:
            cores[c.name] = build_core(c.template, core_params(spec, c), c.name, file=spec.file,
                                       key=f"{c.key}.params")
        except CoexploreError as exc:       # a system-wide setting: name the system key
            param = (exc.key or "").rpartition(".params.")[2]
            inherited = param not in c.params and (param in SYSTEM_OWNED or param == "technology")
            if param == "dram_width" and "word_bits" in c.params:
                exc.key = f"{c.key}.params.word_bits"      # the shared DRAM width vs this core's word
                exc.expected = "word_bits dividing the shared DRAM width (system.dram.width), e.g. 8 or 16"
                raise
            if exc.key and exc.key.startswith(f"{c.key}.params.") and inherited:
                exc.key = SYSTEM_OWNED.get(param, "system.technology")
            raise
        _check_generated(spec, c, cores[c.name])
    return SystemArch(spec, cores)


def _in_core(exc: CoexploreError, spec: SystemSpec, c: CoreSpec) -> CoexploreError:
    """An error reading an own core's file, said with where the system gives its names: a name the
    template lacks belongs in the core's var: (also one a sweep axis sets: the system as written is
    built too), a bad value may come from there."""
    import json
    if exc.file is None:                  # (a var: the template does not use: the system file's)
        return exc.with_file(spec.file)
    if "is undefined" in exc.message:
        exc.expected = (f"its value under {c.key}.var in {spec.file} (a name a sweep axis sets needs one there "
                        "too: the system as written is read as well), or a | default(...) in the template")
    elif c.var:
        exc.message += f" (the template rendered with {c.key}.var = {json.dumps(c.var, sort_keys=True)} of {spec.file})"
    return exc


def _check_generated(spec: SystemSpec, c: CoreSpec, core) -> None:
    """The generated core must be one the model reads (a template parameter such as 3 register-file
    ports passes the template but not Timeloop's rules): refused here, naming the core's params,
    not later by `map` or `evaluate` on the written files."""
    from coexplore.spec.architecture import parse_architecture
    try:
        parse_architecture(core.flat.processed, name=c.name)
    except CoexploreError as exc:
        raise CoexploreError(f"the generated core is not a valid architecture: {exc.format()}", file=spec.file,
                             key=f"{c.key}.params", expected="template parameters within Timeloop's rules") from None
    macs = getattr(core.params, "macs", 0)
    if macs > PLAUSIBLE_MACS:          # (as a clock in MHz is warned: a mistyped mesh, not a design)
        import warnings
        from coexplore.errors import CoexploreWarning
        warnings.warn(f"{spec.file + ': ' if spec.file else ''}{c.key}.params: {macs:,} MACs in one core, more than "
                      f"{PLAUSIBLE_MACS:,} (a 1024 x 1024 array): is a mesh or count mistyped?", CoexploreWarning,
                      stacklevel=3)


PLAUSIBLE_MACS = 2 ** 20   # MACs in one core beyond which a generated core is warned of


SWEEP_CHECK_ALL = 256   # sweeps up to this many points are checked point by point


def check_sweep(spec: SystemSpec) -> None:
    """Every sweep point must build: all combinations when there are at most SWEEP_CHECK_ALL,
    else every value of every axis (errors name the axis, or the combination, and the value)."""
    import itertools
    axes = list(spec.sweep_axes.items())
    total = math.prod(len(v) for _, v in axes) if axes else 0
    if 0 < total <= SWEEP_CHECK_ALL and len(axes) > 1:
        for path, values in axes:          # a value wrong on its own is named as that axis's
            for value in values:
                _check_point(spec, spec.with_value(path, value, key=f"sweep.axes.{path}"), path, value)
        for combo in itertools.product(*(values for _, values in axes)):
            point = spec
            for (path, _), value in zip(axes, combo):
                point = point.with_value(path, value, key=f"sweep.axes.{path}")
            try:
                build_system(point)
            except CoexploreError as exc:
                where = ", ".join(f"{p}={v!r}" for (p, _), v in zip(axes, combo))
                raise CoexploreError(f"the point {where} makes {exc.key} invalid: {exc.message}",
                                     file=spec.file, key="sweep.axes", expected=exc.expected) from None
        return
    for path, values in axes:
        for value in values:
            _check_point(spec, spec.with_value(path, value, key=f"sweep.axes.{path}"), path, value)


def _check_point(spec: SystemSpec, point: SystemSpec, path: str, value) -> None:
    try:
        build_system(point)
    except CoexploreError as exc:
        if exc.message.startswith("unknown parameter") and (exc.key or "").endswith(path.rpartition(".")[2]):
            raise CoexploreError(f"the axis names an {exc.message} (of {exc.key.rpartition('.params.')[0]})",
                                 file=spec.file, key=f"sweep.axes.{path}", expected=exc.expected) from None
        raise CoexploreError(f"value {value!r} makes {exc.key} invalid: {exc.message}",
                             file=spec.file, key=f"sweep.axes.{path}", expected=exc.expected) from None


def load_system_arch(path: str | Path, *, check_files: bool = False) -> SystemArch:
    """Load a system YAML, generate its cores and check its sweep axes."""
    spec = load_system(path, check_files=check_files)
    system = build_system(spec)
    check_sweep(spec)
    return system
