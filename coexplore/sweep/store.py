"""A sweep's results folder: one JSON line per finished point (`points.jsonl`, appended and synced
as each point ends, so a killed sweep loses only the point it was in), and the tables made from
them (`points.csv`, `pareto.csv`).

Each line carries the key of the run that made it (a hash of the run record: settings and input
files); a rerun of the same sweep skips the points its lines hold; lines of another run (an edited
input, other settings) are never resumed (`drop_others`, or the caller refuses the folder).
"""

from __future__ import annotations


import csv
import io
import json
import math
import os
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import write_text
from coexplore.sweep.metrics import COLUMNS, Objective

POINTS = "points.jsonl"


class SweepStore:
    """The finished points of one sweep run in folder `out`; `key` names the run (e.g. a hash of its
    settings and input files)."""

    def __repr__(self) -> str:
        return f"SweepStore({str(self.out)!r}, {self.key!r}, {len(self.records)} points)"

    def __init__(self, out: str | Path, key: str):
        self.out = Path(out)
        self.key = key
        self.path = self.out / POINTS
        self.records: dict[int, dict] = {}
        self.others = 0                  # lines of another run (reading changes nothing)
        self.unsound: list[str] = []     # this run's points whose line was edited or whose folder is gone
        for rec in self._read():
            if rec.get("run") == self.key and isinstance(rec.get("index"), int):
                if _sound(rec, self.out):
                    self.records[rec["index"]] = rec
                    if str(rec.get("point")) in self.unsound:     # (a later line of the point: it ran again)
                        self.unsound.remove(str(rec.get("point")))
                else:                    # run again, as a line cut short by a kill is
                    self.records.pop(rec["index"], None)
                    self.unsound.append(str(rec.get("point")))
            else:
                self.others += 1

    def drop_others(self) -> None:
        """Keep only this run's sound lines in the file (another run's are not ours to resume; an
        unsound one's point runs again)."""
        if self.others or self.unsound:
            write_text(self.path, "".join(json.dumps(r) + "\n" for r in self.ordered()))
            self.others = 0

    def clear(self) -> None:
        """Start over: no point of any run kept."""
        self.records.clear()
        self.others = 0
        if self.path.exists():
            write_text(self.path, "")

    def drop_stale_points(self) -> list[str]:
        """Remove the point folders (`points/<id>/`) of no point kept here: another run's (a --restart,
        other settings) or one cut short by a stop, so that every folder left is a finished point of
        this run (a point's files are never mistaken for the current run's); their names."""
        import shutil
        folder = self.out / "points"
        kept = {str(r.get("point")) for r in self.records.values()}
        stale = sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name not in kept) \
            if folder.is_dir() else []
        for name in stale:
            shutil.rmtree(folder / name, ignore_errors=True)
        return stale

    def _read(self) -> list[dict]:
        if not self.path.exists():
            return []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise CoexploreError(f"cannot read it ({exc})", file=str(self.path),
                                 expected="a sweep's points.jsonl, or no such file") from None
        out = []
        for line in lines:            # a line cut short by a kill is skipped: its point runs again
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def add(self, record: dict) -> None:
        """Append one finished point (synced to disk before returning)."""
        record = {**record, "run": self.key}
        try:
            with open(self.path, "a+b") as f:
                cut = False
                if f.seek(0, os.SEEK_END) > 0:        # a line cut short by a kill is ended first,
                    f.seek(-1, os.SEEK_END)            # so this point's line stays whole
                    cut = f.read(1) != b"\n"
                f.write((b"\n" if cut else b"") + (json.dumps(record) + "\n").encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise CoexploreError(f"cannot write it ({exc})", file=str(self.path)) from None
        self.records[record["index"]] = record

    def ordered(self) -> list[dict]:
        return [self.records[i] for i in sorted(self.records)]


def _sound(rec: dict, out: Path) -> bool:
    """A finished point's line as a run wrote it: its fields of their types, and for a point that
    ran (status ok) the folder its `dir` names, with its schedule and job table (a line edited by
    hand, or a folder deleted since, is not)."""
    numbers = all(rec.get(c) is None or (isinstance(rec.get(c), (int, float)) and not isinstance(rec.get(c), bool))
                  for c in COLUMNS)
    if not (numbers and isinstance(rec.get("point"), str) and isinstance(rec.get("values", {}), dict)
            and rec.get("status", "ok") in ("ok", "failed") and isinstance(rec.get("dir", ""), str)):
        return False
    folder = out / rec["dir"] if rec.get("dir") else None
    return rec.get("status") != "ok" or folder is None or all((folder / f).is_file()
                                                               for f in ("schedule.json", "jobs.csv"))


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def axis_text(value) -> str:
    """An axis value as the sweep file spells it (YAML): null, true/false, numbers as written; one
    spelling in points.csv, the summary and the report (an empty cell there is a missing number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return _cell(value)


def points_csv(records: list[dict], axes: list[str], front: list[bool]) -> str:
    """One row per point: id, the axes' values, every measured column (named as in sweep.json, the
    unit in the name: `latency_s`, `energy_J`), whether it is on the Pareto front, its status and error."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["point", *axes, *COLUMNS, "pareto", "status", "error"])
    for rec, on in zip(records, front):
        w.writerow([rec["point"], *(axis_text(rec["values"].get(a)) for a in axes),
                    *(_cell(rec.get(c)) for c in COLUMNS), int(bool(on)), rec["status"], rec.get("error") or ""])
    return buf.getvalue()


def write_tables(out: Path, records: list[dict], axes: list[str], objectives: list[Objective],
                 front: list[bool]) -> dict[str, Path]:
    """points.csv (every finished point) and pareto.csv (the front, best first in the first
    objective), written atomically."""
    on = [r for r, f in zip(records, front) if f]
    first = objectives[0]
    on.sort(key=lambda r: r[first.column] if first.sense == "min" else -r[first.column])
    files = {"points": out / "points.csv", "pareto": out / "pareto.csv"}
    write_text(files["points"], points_csv(records, axes, front))
    write_text(files["pareto"], points_csv(on, axes, [True] * len(on)))
    return files

