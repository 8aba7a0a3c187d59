"""Wall time of one design-space sweep run by each executor, from a cold cache, and whether every
executor gives the records and point files of one process.

    python bench/sweep_executors.py [--system simba_2x2] [--layer-budget 2000] [--executors ...]

Executors: `jobs1` (one process), `jobs2` (2 processes), `ray` (a Ray started on this machine by the
command, 2 CPUs) and `ray2nodes` (a Ray cluster of two 1-CPU nodes started here by this script with
`ray.cluster_utils.Cluster`, and only those stopped after; the command joins it by address: tasks and
their results cross between raylets, as on a cluster).
Each run is `coexplore sweep` in a subprocess with its own fresh cache. Prints a table and writes
results/bench/sweep_executors.json. Needs `pip install 'coexplore[ray]'` for the Ray rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from shared_data import positive  # noqa: E402
EXECUTORS = {"jobs1": ["--jobs", "1"], "jobs2": ["--jobs", "2"], "ray": ["--ray", "--jobs", "2"],
             "ray2nodes": ["--ray", "{address}"]}


def _files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run(name: str, system: str, layer_budget: int, tmp: Path) -> dict:
    out, cache = tmp / name, tmp / f"{name}.sqlite"
    cluster = None
    if name == "ray2nodes":            # a head and a worker node of 1 CPU each, on this machine
        from ray.cluster_utils import Cluster
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
    argv = [sys.executable, "-m", "coexplore.cli.main", "sweep", system, "--layer-budget", str(layer_budget),
            "--no-progress", "--cache", str(cache), "--out", str(out),
            *[a.format(address=cluster.address if cluster else "") for a in EXECUTORS[name]]]
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    finally:
        if cluster is not None:
            cluster.shutdown()
    if proc.returncode != 0:
        raise SystemExit(f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return {"executor": name, "wall_s": wall, "out": out}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", default="simba_2x2", help="system YAML with sweep axes, or a bundled name")
    ap.add_argument("--layer-budget", type=positive, default=2000, help="samples per layer search")
    ap.add_argument("--executors", default=",".join(EXECUTORS), help="comma-separated, from " + ", ".join(EXECUTORS))
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "sweep_executors.json"), help="JSON summary")
    a = ap.parse_args(argv)
    names = [n.strip() for n in a.executors.split(",") if n.strip()]
    unknown = [n for n in names if n not in EXECUTORS]
    if unknown:
        ap.error(f"unknown executors {unknown}: choose from {', '.join(EXECUTORS)}")
    tmp = Path(tempfile.mkdtemp(prefix="coexplore-bench-sweep-"))
    rows = []
    try:
        for name in names:
            row = run(name, a.system, a.layer_budget, tmp)
            rows.append(row)
            print(f"{name}: {row['wall_s']:.1f} s", file=sys.stderr, flush=True)
        base = rows[0]
        want = json.loads((base["out"] / "sweep.json").read_text())["records"]
        want_files = _files(base["out"] / "points")
        for row in rows:
            got = json.loads((row["out"] / "sweep.json").read_text())["records"]
            row["same_records"] = got == want
            row["same_point_files"] = _files(row["out"] / "points") == want_files
            row["speedup"] = base["wall_s"] / row["wall_s"]
            row["points"] = len(got)
            del row["out"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{a.system}, layer budget {a.layer_budget}, cold cache; speed-up against {rows[0]['executor']}")
    print(f"{'executor':<10} {'wall s':>8} {'speed-up':>9} {'same records':>13} {'same files':>11}")
    for r in rows:
        print(f"{r['executor']:<10} {r['wall_s']:8.1f} {r['speedup']:9.2f} {str(r['same_records']):>13} "
              f"{str(r['same_point_files']):>11}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"system": a.system, "layer_budget": a.layer_budget, "cpus": os.cpu_count(),
                                       "rows": rows}, indent=1) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
