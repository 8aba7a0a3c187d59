"""A core of the user's own in a system YAML (`cores: [{arch: FILE, ert: ..., constraints: ...}]`):
a Timeloop architecture file (v0.4 node list, whole spec or flattened v0.3) standing beside the
generated template cores. It is read as `coexplore evaluate` reads an ARCH file; the system's
clock and DRAM settings do not rewrite it (its own DRAM and technology price it)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from coexplore.spec.architecture import Architecture, load_architecture


@dataclass(frozen=True, eq=False)
class FileCore:
    """One core design given as files; `template` is None (it is no coexplore template)."""
    name: str
    arch_file: Path
    ert_file: Path | None = None
    constraints_file: Path | None = None
    key: str = "system.cores[0]"          # where the system file names it (for messages)
    template = None

    @cached_property
    def architecture(self) -> Architecture:
        return load_architecture(self.arch_file)

    def files(self) -> list[Path]:
        return [p for p in (self.arch_file, self.ert_file, self.constraints_file) if p is not None]

    def tables(self, estimator: str = "builtin") -> tuple:
        """(ERT, ART), each a file to copy or a table priced by `estimator`: the ERT given, else
        an ERT.yaml beside the architecture; the ART.yaml beside it; what is missing priced."""
        beside = self.arch_file.parent
        ert = self.ert_file or (beside / "ERT.yaml" if (beside / "ERT.yaml").is_file() else None)
        art = beside / "ART.yaml" if (beside / "ART.yaml").is_file() else None
        if ert is None or art is None:
            from coexplore.energy.pricing import price_architecture
            built_ert, built_art, _ = price_architecture(self.arch_file, estimator=estimator)
            ert, art = ert or built_ert, art or built_art
        return ert, art

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """arch.yaml (the file as given: for a node list, the input timeloopfe reads, its constraints
        in its nodes) and, when the core has a constraints file, constraints.yaml (copied)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = {"arch": out / "arch.yaml"}
        files["arch"].write_bytes(self.arch_file.read_bytes())
        if self.constraints_file is not None:
            files["constraints"] = out / "constraints.yaml"
            files["constraints"].write_bytes(self.constraints_file.read_bytes())
        return files

    def digest(self) -> str:
        """Content hash (sha256 hex) of the files that make the core (not its name)."""
        h = hashlib.sha256()
        for p in self.files():
            h.update(p.read_bytes() + b"\0")
        return h.hexdigest()
