"""A core of the user's own in a system YAML (`cores: [{arch: FILE, ert: ..., constraints: ...}]`):
a Timeloop architecture file (v0.4 node list, whole spec, template or flattened v0.3) standing beside
the generated template cores. Its files are found as `coexplore evaluate` / `map` find an ARCH's
(an ERT given, beside it or inside it; constraints files given or a constraints.yaml beside it); the system's clock and
DRAM settings do not rewrite it (its own DRAM and technology price it). A Jinja2 template takes
its names from the core's `var:` (over any --var), wherever the file is read."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.spec.architecture import Architecture, load_architecture
from coexplore.spec.ert import ert_file_beside
from coexplore.spec.yamlio import load_yaml


@dataclass(frozen=True, eq=False)
class FileCore:
    """One core design given as files; `template` is None (it is no coexplore template)."""
    name: str
    arch_file: Path
    ert_file: Path | None = None
    constraints_files: tuple[Path, ...] = ()    # combined as timeloop-mapper combines them
    key: str = "system.cores[0]"          # where the system file names it (for messages)
    var: dict = field(default_factory=dict)   # a template's names (the core's `var:`)
    template = None

    @classmethod
    def of(cls, core) -> "FileCore":
        """The core of a system YAML's entry (`spec.system.CoreSpec` with `arch:`)."""
        return cls(core.name, core.arch, core.ert, core.constraints, key=core.key, var=core.var)

    def rendering(self):
        """A block in which reading the architecture file renders it with the core's names; yields
        the set of names the template asked for."""
        from coexplore.spec.template import with_names
        return with_names(self.var)

    @cached_property
    def architecture(self) -> Architecture:
        """The architecture, named after the core (results and messages say `tpu`, not the file's name)."""
        with self.rendering() as asked:
            arch = load_architecture(self.arch_file)
        unused = sorted(set(self.var) - asked)
        if unused:
            from coexplore.errors import CoexploreError
            raise CoexploreError(f"the template {self.arch_file} does not ask for {', '.join(unused)}",
                                 key=f"{self.key}.var.{unused[0]}", expected="names the template uses" + (
                                     f": {', '.join(sorted(asked))}" if asked else " (it asks for none)"))
        return dataclasses.replace(arch, name=self.name)

    def ert_source(self) -> Path | dict | None:
        """The energy table the core is priced with: the `ert:` given, else an ERT beside the file,
        else the `ERT:` inside it; None: none anywhere (the built-in estimator prices it)."""
        if self.ert_file is not None:
            return self.ert_file
        beside = ert_file_beside(self.arch_file)
        if beside is not None:
            return beside
        with self.rendering():
            data = load_yaml(self.arch_file)
        return data["ERT"] if isinstance(data, dict) and isinstance(data.get("ERT"), dict) else None

    def constraints_sources(self) -> tuple[Path, ...]:
        """The constraints files given, else (unless the file holds its own constraint targets, which
        then apply) a constraints.yaml beside it; none: those in the file or its nodes'."""
        if self.constraints_files:
            return self.constraints_files
        from coexplore.spec.constraints import constraint_targets
        with self.rendering():
            data = load_yaml(self.arch_file)
        if constraint_targets(data, str(self.arch_file)) is not None:
            return ()
        beside = self.arch_file.parent / "constraints.yaml"
        return (beside,) if beside.is_file() else ()

    def inputs(self) -> list[Path]:
        """Every file `arch generate` reads for this core (its outputs must not land on one of them)."""
        ert, art, _ = self.tables(estimator="builtin", price=False)
        return self.files() + [table[1] for table in (ert, art) if table is not None and isinstance(table[1], Path)]

    def files(self) -> list[Path]:
        """Every file the core's results depend on (a run is the same run only if none changed)."""
        ert = self.ert_source()
        found = [self.arch_file, ert if isinstance(ert, Path) else None, *self.constraints_sources()]
        return [p for p in found if p is not None]

    def tables(self, estimator: str = "builtin", price: bool = True
               ) -> tuple[tuple[str, object], tuple[str, object], list[str]]:
        """(ERT, ART, warnings), each table as (how, what): ("copied", path), ("inside", the ERT: of the
        architecture file) or ("built", a table priced by `estimator`). The ART is the ART.yaml beside
        the ERT file used, else beside the architecture, else priced."""
        found = self.ert_source()
        ert = ("copied", found) if isinstance(found, Path) else ("inside", found) if found is not None else None
        art = None
        for folder in ([found.parent] if isinstance(found, Path) else []) + [self.arch_file.parent]:
            if (folder / "ART.yaml").is_file():
                art = ("copied", folder / "ART.yaml")
                break
        said: list[str] = []
        if art is not None:                 # an ART of another design or size would give its area
            from coexplore.arch.tables import check_own_table
            from coexplore.energy.tables import read_art
            check_own_table(self.name, self.architecture, read_art(art[1]), "ART", art[1])
        if (ert is None or art is None) and price:
            from coexplore.energy.pricing import price_architecture
            with warnings.catch_warnings(), self.rendering():       # (warnings: said once, by the caller)
                warnings.simplefilter("ignore")
                try:
                    built_ert, built_art, _ = price_architecture(self.arch_file, estimator=estimator)
                except CoexploreError as exc:
                    if ert is not None:          # only the area was missing: say so
                        exc.message = (f"core {self.name}: no ART.yaml beside its ERT or architecture, so its area "
                                       f"is priced from the architecture, which fails: {exc.message}")
                        exc.expected = (exc.expected or "") + " (or an ART.yaml beside the ERT: Accelergy writes one)"
                    raise
            if ert is None:
                ert, said = ("built", built_ert), [str(w) for w in built_ert.get("warnings") or ()]
            art = art or ("built", built_art)
        return ert, art, said

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """arch.yaml (the file as given; a template rendered) and, when the core has constraints files
        (given or beside it), constraints.yaml (one copied; several combined into one) into `out_dir`."""
        from coexplore.spec.template import is_template
        from coexplore.spec.yamlio import dump_yaml, read_text
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = {"arch": out / "arch.yaml"}
        if is_template(self.arch_file, read_text(self.arch_file)):
            with self.rendering():
                rendered = load_yaml(self.arch_file)
            names = f" with {json.dumps(self.var, sort_keys=True)}" if self.var else ""
            files["arch"].write_text(f"# {self.arch_file} rendered{names}\n" + dump_yaml(rendered))
        else:
            files["arch"].write_bytes(self.arch_file.read_bytes())
        cons = self.constraints_sources()
        if len(cons) == 1:
            files["constraints"] = out / "constraints.yaml"
            files["constraints"].write_bytes(cons[0].read_bytes())
        elif cons:
            from coexplore.spec.constraints import combined_constraints
            files["constraints"] = out / "constraints.yaml"
            files["constraints"].write_text("# " + " + ".join(map(str, cons)) + " combined\n"
                                            + dump_yaml(combined_constraints(cons)))
        return files

    def digest(self) -> str:
        """Content hash (sha256 hex) of the files that make the core (not its name)."""
        h = hashlib.sha256()
        for p in self.files():
            h.update(p.read_bytes() + b"\0")
        if self.var:                            # the same template with other names is another core
            h.update(json.dumps(self.var, sort_keys=True, default=str).encode())
        return h.hexdigest()
