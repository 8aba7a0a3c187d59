"""Timeloop's loop-nest printout (`timeloop-model.map.txt`, `timeloop-mapper.map.txt`) read back as
mapping directives.

A v0.3 mapper run leaves its best mapping only as this printout (and map+stats.xml); reading it
lets `coexplore evaluate` take that mapping as it is. The printout lists the storage levels
outermost first, each as `Name [ Weights:864 (864) Inputs:... ]` (the dataspaces it keeps)
followed by its loops, outermost first: `for M in [0:16)` temporal, `... (Spatial-X)` /
`(Spatial-Y)` across its fan-out.
"""

from __future__ import annotations

import re

from coexplore.errors import CoexploreError

_LEVEL = re.compile(r"^(\S+)\s*\[(.*)\]\s*$")
_LOOP = re.compile(r"^\|?\s*for\s+(\w+)\s+in\s+\[(\d+):(\d+)\)\s*(.*)$")
_AXIS = re.compile(r"^\(Spatial-([XY])\)$")
_KEPT = re.compile(r"(\w+):\d+")


class Directives(list):
    """The directives of a printout, with the line each came from (`lines`): an error about
    `mapping[i]` is said at its line of the printout (`at_line`)."""

    lines: list[int]

    def at_line(self, exc: CoexploreError) -> CoexploreError:
        m = re.fullmatch(r"mapping\[(\d+)\](.*)", str(exc.key or ""))
        if m and int(m.group(1)) < len(self.lines):
            exc.key = f"map.txt line {self.lines[int(m.group(1))]}"
        return exc


def looks_like_map_txt(text: str) -> bool:
    """A loop-nest printout: a level header line and a `for D in [a:b)` loop line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return any(_LEVEL.match(ln) for ln in lines) and any(_LOOP.match(ln) for ln in lines)


def _permutation(names: list[str]) -> str:
    """Dimension names as a permutation string: letters run together, longer names spaced."""
    return ("" if all(len(d) == 1 for d in names) else " ").join(names)


def parse_map_txt(text: str, dataspaces: list[str], file: str | None = None) -> list[dict]:
    """Mapping directives (the `mapping:` list of a Timeloop mapping YAML) of a printout: per level a
    temporal directive (factors; permutation innermost first, as the loops print outermost first),
    a spatial one where it fans out (X dimensions first, `split` after them) and the keep/bypass
    of the dataspaces its header lists."""
    out, level, loops, kept, at = Directives(), None, [], [], 0
    out.lines = []

    def close():
        if level is None:
            return
        temporal = [(d, n) for d, n, axis in loops if axis is None]
        spatial = [(d, n, axis) for d, n, axis in loops if axis is not None]
        out.append({"target": level, "type": "temporal", "factors": " ".join(f"{d}={n}" for d, n in temporal),
                    "permutation": _permutation([d for d, _ in reversed(temporal)])})
        if spatial:
            xs = [(d, n) for d, n, a in reversed(spatial) if a == "X"]
            ys = [(d, n) for d, n, a in reversed(spatial) if a == "Y"]
            out.append({"target": level, "type": "spatial", "factors": " ".join(f"{d}={n}" for d, n in xs + ys),
                        "permutation": _permutation([d for d, _ in xs + ys]), "split": len(xs)})
        out.append({"target": level, "type": "bypass", "keep": [d for d in dataspaces if d in kept],
                    "bypass": [d for d in dataspaces if d not in kept]})
        out.lines.extend([at] * (len(out) - len(out.lines)))

    def refuse(number: int, what: str, expected: str):
        raise CoexploreError(f"line {number}: {what}", file=file, key="map.txt", expected=expected)

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or set(line) <= {"-"} or line.lstrip("| ").startswith("<<"):   # (`<< Compute >>`)
            continue
        m = _LEVEL.match(line)
        if m and not line.startswith("|"):
            close()
            level, loops, kept, at = m.group(1), [], _KEPT.findall(m.group(2)), number
            unknown = [d for d in kept if d not in dataspaces]
            if unknown:
                refuse(number, f"unknown dataspace '{unknown[0]}' in the header of level {level}",
                       f"the problem's dataspaces ({', '.join(dataspaces)}) as 'Name:size'")
            continue
        m = _LOOP.match(line)
        if m is None or level is None:
            refuse(number, f"neither a level header nor a loop: {line[:60]!r}",
                   "Timeloop's printout: 'Level [ Weights:N ... ]' headers and '| for D in [0:N)' loops")
        note = m.group(4).strip()
        axis = _AXIS.match(note)
        if note and axis is None:
            refuse(number, f"unrecognised note {note[:40]!r} after the loop",
                   "nothing (a temporal loop) or (Spatial-X) / (Spatial-Y), as Timeloop prints them")
        lo, hi = int(m.group(2)), int(m.group(3))
        if lo != 0 or hi < 1:
            refuse(number, f"loop over [{lo}:{hi})", "loops from 0 (a printout of a whole-factor mapping)")
        if axis is None and hi > 1 and any(a is not None for _, _, a in loops):
            refuse(number, f"a temporal loop inside level {level}'s spatial loops",
                   "a level's temporal loops first, then its spatial ones, as Timeloop prints them")
        if hi > 1:
            loops.append((m.group(1), hi, axis.group(1) if axis else None))
    close()
    if not out:
        raise CoexploreError("no levels", file=file, key="map.txt", expected="Timeloop's loop-nest printout")
    return out
