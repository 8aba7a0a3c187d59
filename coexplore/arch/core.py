"""A generated core: template + parameters -> Timeloop v0.4 YAML, flattened YAML, constraints.

`build_core("simba", {"glb_depth": 4096})` returns a `CoreArch`; its `architecture()` is
the v0.4 `architecture:` body (tags `!Container`/`!Component`/`!Parallel`), `flattened()`
the v0.3 `subtree/local` form timeloop-model consumes plus the mapper's constraints, and
`write(dir)` writes arch.yaml, processed.yaml and constraints.yaml.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from coexplore.arch import timeloop_yaml
from coexplore.arch.eyeriss import EyerissParams, eyeriss_nodes
from coexplore.arch.flatten import Flattened, flatten
from coexplore.arch.params import as_dict, params_from_dict
from coexplore.arch.simba import SimbaParams, simba_nodes
from coexplore.errors import CoexploreError

# template name -> (parameter dataclass, node-list builder)
TEMPLATES: dict[str, tuple[type, Callable[[Any], list]]] = {
    "simba": (SimbaParams, simba_nodes),
    "eyeriss": (EyerissParams, eyeriss_nodes),
}


@dataclass(frozen=True, eq=False)
class CoreArch:
    """One generated core architecture (immutable; derived forms are computed on demand)."""
    name: str
    template: str
    params: Any
    nodes: list = field(repr=False)

    @property
    def variables(self) -> dict:
        """timeloopfe's global variables for this core (technology, clock)."""
        return {"version": 0.4, "technology": self.params.technology,
                "global_cycle_seconds": 1e-9 / self.params.clock_GHz}

    def architecture(self) -> dict:
        """The v0.4 `architecture:` body: {'version': 0.4, 'nodes': [...]}."""
        return {"version": 0.4, "nodes": self.nodes}

    @cached_property
    def flat(self) -> Flattened:
        return flatten(self.nodes, self.variables)

    def flattened(self) -> Flattened:
        """The v0.3 (processed.yaml) form and mapspace constraints (constraints.yaml)."""
        return self.flat

    def digest(self) -> str:
        """Content hash (sha256 hex) of everything a cost model or mapper sees of this core:
        the flattened architecture and its constraints (not the core's name). Equal digests
        mean interchangeable cores, e.g. for caching per-(core, layer) results."""
        text = json.dumps([self.flat.processed, self.flat.constraints], sort_keys=True,
                          default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def header(self, what: str) -> str:
        changed = {k: v for k, v in as_dict(self.params).items()
                   if v != getattr(type(self.params)(), k)}
        text = (f"{what} of core '{self.name}': coexplore template '{self.template}'"
                f" (structure of timeloop-accelergy-exercises example_designs/"
                f"{self.template}_like, MIT, J. Emer)\n")
        text += "parameters changed from the template defaults: " + (
            ", ".join(f"{k}={v}" for k, v in changed.items()) if changed else "none")
        return text

    def arch_yaml(self) -> str:
        """arch.yaml text: the v0.4 architecture plus the global variables it relies on."""
        return timeloop_yaml.dump({"architecture": self.architecture(),
                                   "variables": self.variables},
                                  header=self.header("Timeloop v0.4 architecture"))

    def processed_yaml(self) -> str:
        return timeloop_yaml.dump(self.flat.processed,
                                  header=self.header("Flattened (v0.3 subtree/local) architecture"))

    def constraints_yaml(self) -> str:
        return timeloop_yaml.dump(self.flat.constraints,
                                  header=self.header("Mapspace constraints (timeloop-mapper)"))

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write arch.yaml, processed.yaml and constraints.yaml into `out_dir`."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = {"arch": out / "arch.yaml", "processed": out / "processed.yaml",
                 "constraints": out / "constraints.yaml"}
        files["arch"].write_text(self.arch_yaml())
        files["processed"].write_text(self.processed_yaml())
        files["constraints"].write_text(self.constraints_yaml())
        return files

    def components(self) -> list[dict]:
        """The flattened levels (name without range, class, subclass, attributes, instances)
        that an energy estimator prices; dummy levels included (they cost nothing)."""
        local = self.flat.processed["architecture"]["subtree"][0]["local"]
        out = []
        for entry, name, n in zip(local, self.flat.levels, self.flat.instances):
            out.append({"name": name, "full_name": f"{self.flat.top_name}.{entry['name']}",
                        "class": entry["class"], "subclass": entry.get("subclass"),
                        "attributes": entry["attributes"], "instances": n})
        return out


def build_core(template: str, params: Any = None, name: str | None = None, *,
               file: str | None = None, key: str = "params") -> CoreArch:
    """Generate a core from a template name and parameters (a dict, the dataclass or None).

    Bad input raises CoexploreError naming `file` and the key under `key`.
    """
    if template not in TEMPLATES:
        raise CoexploreError(f"unknown template '{template}'", file=file,
                             key=key.rsplit(".", 1)[0] + ".template" if "." in key else "template",
                             expected="one of " + ", ".join(TEMPLATES))
    cls, builder = TEMPLATES[template]
    p = params_from_dict(cls, params, file=file, key=key)
    return CoreArch(name=name or template, template=template, params=p, nodes=builder(p))
