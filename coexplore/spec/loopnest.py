"""A mapping as a readable loop nest, in the layout of timeloop-model's `map.txt`.

Levels outermost first; under each, its temporal loops (outer to inner, as the permutation
orders them) then its spatial loops (X then Y, marked), each nested one step deeper; loops with
bound 1 are left out and a level without loops is its header line alone, as Timeloop prints them.
With a result record the header lists the dataspaces the level keeps with their utilized
capacity (words per instance).
"""

from __future__ import annotations

from coexplore.spec.architecture import Architecture
from coexplore.spec.mapping import MappingArrays, default_spatial_perm
from coexplore.spec.problem import Problem


def format_loop_nest(arrays: MappingArrays, index: int, arch: Architecture, problem: Problem,
                     record: dict | None = None) -> str:
    """Mapping `index` of a batch as a loop nest, outermost level first (as map.txt shows it), with
    the per-level numbers of `record` (`Context.record`) when given."""
    dims = problem.dims
    L = len(arch.levels)
    sperm = arrays.spatial_perm if arrays.spatial_perm is not None else default_spatial_perm(arrays)
    lines: list[str] = []
    depth = 0
    for i, lv in enumerate(arch.levels):
        li = L - 1 - i                                   # arrays: innermost level first
        kept = [ds.name for s, ds in enumerate(problem.dataspaces) if arrays.keep[index, li, s]]
        if record and record.get("levels", {}).get(lv.name):
            have = record["levels"][lv.name].get("dataspaces", {})
            # Timeloop prints each tile's size and, in parentheses, its capacity with metadata (the same when dense)
            kept = [f"{ds}:{have[ds]['utilized_capacity']} ({have[ds]['utilized_capacity']})" if ds in have else ds
                    for ds in kept]
        loops = [(dims[int(d)], int(arrays.temporal[index, li, int(d)]), "")
                 for d in reversed(arrays.perm[index, li].tolist())]
        for d in reversed(sperm[index, li].tolist()):
            x, y = int(arrays.spatial_x[index, li, d]), int(arrays.spatial_y[index, li, d])
            loops.append((dims[d], x, " (Spatial-X)") if x > 1 else (dims[d], y, " (Spatial-Y)"))
        loops = [lp for lp in loops if lp[1] > 1]
        header = f"{lv.name} [ {' '.join(kept)} ] " if kept else f"{lv.name} [ ] "
        if not loops and i < L - 1:           # as Timeloop: a level without loops is its header alone,
            lines.append(header)              # but for the innermost, whose block holds the compute
            continue
        lines += [header, "-" * len(header.rstrip())]
        for name, bound, kind in loops:
            lines.append("| " + "  " * depth + f"for {name} in [0:{bound}){kind}")
            depth += 1
        lines.append("")
    if lines and lines[-1] == "":
        lines.pop()
    lines.append("| " + "  " * depth + "<< Compute >>")
    return "\n".join(lines) + "\n"
