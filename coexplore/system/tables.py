"""Job tables as CSV, in the format of MAGMA's tables (`../shared/magma/tables/`).

Columns: `job` (optional), any descriptive columns (MAGMA's `K,C,Y,X,R,S,T`), then per core
`lat_<core>` (cycles) and `bw_<core>` (bytes/cycle), optionally `en_<core>` (pJ). The cores
are the names after `lat_`, in column order; every core needs both a lat_ and a bw_ column.
Rows keep the file order (genome index i = data row i).
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import read_text, write_text, yaml_text
from coexplore.system.jobs import Job, JobTable

_KIND = {"0": "FC", "1": "CONV", "2": "DSCONV", "3": "GEMM"}  # MAGMA's T column


def _number(text: str, path, row: int, col: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CoexploreError(f"line {row}: {text!r} is not a number", file=path, key=col,
                             expected="a number") from None
    if math.isinf(value) and "inf" not in text.strip().lower():   # 1e400: too large, not a written inf
        raise CoexploreError(f"line {row}: {text!r} is too large for a number", file=path, key=col,
                             expected="a number below 1.8e308 (or inf: the job cannot run on that core)")
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_table(path: str | Path) -> JobTable:
    """Read a job table CSV; raise CoexploreError on missing columns or bad values."""
    with io.StringIO(read_text(path), newline="") as fh:
        reader = csv.reader(fh)
        try:
            numbered = [(reader.line_num, r) for r in reader]
        except csv.Error as exc:
            raise CoexploreError(f"line {reader.line_num}: {exc}", file=path,
                                 expected="a CSV job table (a header with lat_<core>/bw_<core> columns, job rows)") from None
    numbered = [(n, r) for n, r in numbered if any(cell.strip() for cell in r)]   # blank lines skipped
    lines = [n for n, _ in numbered]
    rows = [r for _, r in numbered]
    if not rows:
        raise CoexploreError("the job table is empty", file=path,
                             expected="a header with lat_<core>/bw_<core> columns and job rows")
    header = [h.strip() for h in rows[0]]
    if not any(h.lower().startswith(("lat_", "bw_")) for h in header) and all(_is_number(h) for h in header):
        raise CoexploreError("no header row: its first line holds numbers only", file=path,
                             expected="a job table: a header with lat_<core>/bw_<core> columns, then a row per job "
                                      "(a layer list, such as MAGMA's traffic_insts/*.csv of K,C,Y,X,R,S,T rows, "
                                      "is no job table: its latencies and bandwidths come from a cost model, as "
                                      "MAGMA's tables/ hold them)")
    for i, h in enumerate(header):       # LAT_a, Bw_a: the prefixes in any case
        low = h.lower()
        for prefix in ("lat_", "bw_", "en_"):
            if low.startswith(prefix):
                header[i] = prefix + h[len(prefix):]
                if not h[len(prefix):]:
                    raise CoexploreError(f"column '{h}' names no core", file=path, key=h,
                                         expected=f"{prefix}<core name>")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise CoexploreError(f"column '{dup[0]}' appears {header.count(dup[0])} times", file=path, key=dup[0],
                             expected="each column once")
    lat_cores = [h[4:] for h in header if h.startswith("lat_")]
    bw_cores = [h[3:] for h in header if h.startswith("bw_")]
    en_cores = [h[3:] for h in header if h.startswith("en_")]
    if not lat_cores and not bw_cores:
        raise CoexploreError("no core columns", file=path,
                             expected="columns lat_<core> and bw_<core> for every core")
    for core in lat_cores:
        if core not in bw_cores:
            stray = [c for c in bw_cores if c not in lat_cores]
            raise CoexploreError(f"core '{core}' has a latency column but no bandwidth column"
                                 + (f" (the table has {', '.join(f'bw_{c}, with no lat_{c}' for c in stray)}: "
                                    "misspelt?)" if stray else ""),
                                 file=path, key=f"bw_{core}", expected=f"a column bw_{core}")
    for core in bw_cores:
        if core not in lat_cores:
            raise CoexploreError(f"core '{core}' has a bandwidth column but no latency column",
                                 file=path, key=f"lat_{core}", expected=f"a column lat_{core}")
    if en_cores and sorted(en_cores) != sorted(lat_cores):
        missing = sorted(set(lat_cores) - set(en_cores)) or sorted(set(en_cores) - set(lat_cores))
        raise CoexploreError(f"energy columns do not cover the same cores (core '{missing[0]}')",
                             file=path, key=f"en_{missing[0]}",
                             expected="en_<core> for every core or for none")
    body = rows[1:]
    if not body:
        raise CoexploreError("the job table has no job rows (empty workload)", file=path,
                             expected="at least one job row")
    col = {h: i for i, h in enumerate(header)}
    desc_cols = [h for h in header if not h.startswith(("lat_", "bw_", "en_"))
                 and h not in ("job", "dnn", "layer", "kind")]
    n, m = len(body), len(lat_cores)
    lat = np.empty((n, m))
    bw = np.empty((n, m))
    en = np.full((n, m), np.nan)
    jobs, first_line, numbered = [], {}, set()       # (numbered: names rows without one were given)
    for r, row in enumerate(body):
        rownum = lines[r + 1]                # the file's line number, blank lines counted
        if len(row) != len(header):
            raise CoexploreError(f"line {rownum} has {len(row)} cells, the header {len(header)}",
                                 file=path, expected="one cell per column")
        for c, core in enumerate(lat_cores):
            lat[r, c] = _number(row[col[f"lat_{core}"]], path, rownum, f"lat_{core}")
            bw[r, c] = _number(row[col[f"bw_{core}"]], path, rownum, f"bw_{core}")
            if en_cores:
                en[r, c] = _number(row[col[f"en_{core}"]], path, rownum, f"en_{core}")
                unused = np.isinf(lat[r, c]) and np.isnan(en[r, c])   # a job that cannot run there: no energy
                if not (np.isfinite(en[r, c]) and en[r, c] >= 0) and not unused:
                    raise CoexploreError(f"line {rownum}: energy {row[col[f'en_{core}']].strip()!r}", file=path,
                                         key=f"en_{core}", expected="a finite number of pJ >= 0")
        given = row[col["job"]].strip() if "job" in col else ""
        name = given or str(r)
        if name in first_line:
            blank = " (a row without a job name is named by its row number, from 0)" if not given or \
                name in numbered else ""
            raise CoexploreError(f"line {rownum}: job '{name}' is already on line {first_line[name]}{blank}",
                                 file=path, key="job",
                                 expected="each job name once (or no job column: rows are numbered from 0)")
        first_line[name] = rownum
        if not given:
            numbered.add(name)
        dims = tuple((h, _dim(row[col[h]])) for h in desc_cols)
        kind = row[col["kind"]].strip() if "kind" in col else _KIND.get(row[col["T"]].strip(), "") if "T" in col else ""
        jobs.append(Job(name=name, dnn=row[col["dnn"]].strip() if "dnn" in col else "",
                        layer=row[col["layer"]].strip() if "layer" in col else "", kind=kind, dims=dims))
    try:
        return JobTable(jobs, lat_cores, lat, bw, en)
    except CoexploreError as exc:         # a value out of range: said with the line of the job it names
        line = next((n for name, n in first_line.items() if f"job {name} " in exc.message), None)
        if line is not None and not exc.message.startswith("line "):
            exc.message = f"line {line}: {exc.message}"
        raise exc.with_file(path) from None


def _dim(cell: str):
    """A descriptive cell: an integer as an int (a layer's dimension), anything else as text."""
    text = cell.strip()
    return int(text) if re.fullmatch(r"[-+]?\d+", text) else text


def save_table(table: JobTable, path: str | Path) -> None:
    """Write a job table in the same CSV format (the job's DNN and layer, descriptive dims kept,
    energy if known; latencies in cycles, bandwidth needs in bytes/cycle, energies in pJ),
    atomically (`table_csv` gives the text)."""
    write_text(path, table_csv(table))


MAPPINGS = "mappings"     # the folder of a result that holds its job table's layer mappings


def layer_mapping_files(table: JobTable, folder: str | Path) -> dict[Path, str]:
    """The Timeloop mapping YAML behind each (core design, workload, layer) entry of a system's job
    table (`JobTable.mappings`), as `folder/mappings/<design>/<workload>/<layer>.yaml` -> text:
    what `coexplore evaluate` takes to reproduce the entry's latency and energy."""
    out = {}
    def safe(name) -> str:                # a file name of any layer name (none of only dots)
        name = re.sub(r"[^\w.@+=-]", "_", str(name))
        return name if name.strip(".") else "_" * len(name)
    for (design, dnn, layer), mapping in table.mappings.items():
        path = Path(folder) / MAPPINGS / safe(design) / safe(dnn) / f"{safe(layer)}.yaml"
        out[path] = yaml_text({"mapping": mapping}, header=(
            f"the best mapping found of layer {layer} of {dnn} on core design {design}: the latency and energy "
            f"of its jobs in the job table\n(coexplore evaluate <core {design}'s architecture> <{dnn}'s workload> "
            f"--layer {layer} <this file> reproduces them)"))
    return out


def table_csv(table: JobTable) -> str:
    """A job table as the CSV text `save_table` writes and `load_table` reads."""
    dim_names: list[str] = []
    for job in table.jobs:
        for k, _ in job.dims:
            if k not in dim_names:
                dim_names.append(k)
    named = [k for k in ("dnn", "layer", "kind") if any(getattr(job, k) for job in table.jobs)]
    header = ["job", *named, *dim_names, *(f"lat_{c}" for c in table.cores),
              *(f"bw_{c}" for c in table.cores)]
    energy = table.has_energy()
    if energy:
        header += [f"en_{c}" for c in table.cores]
    with io.StringIO(newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for j, job in enumerate(table.jobs):
            d = dict(job.dims)
            row = [job.name, *(getattr(job, k) for k in named), *(d.get(k, "") for k in dim_names),
                   *(repr(float(v)) for v in table.latency[j]),
                   *(repr(float(v)) for v in table.bandwidth[j])]
            if energy:
                row += [repr(float(v)) for v in table.energy[j]]
            w.writerow(row)
        return fh.getvalue()
