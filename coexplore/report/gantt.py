"""A sweep point's Gantt chart (points/<id>/gantt.png), drawn by coexplore.report.schedule_plot."""

from __future__ import annotations

import json
from pathlib import Path


def draw_gantt(out: Path, record: dict, system_name: str, table=None, schedule: dict | None = None) -> Path:
    """The Gantt chart of an ok point from its job table and schedule; read from the point's folder
    when not given (a point run with plots off gets its chart later)."""
    import numpy as np

    from coexplore.system.evaluator import trace
    from coexplore.report.schedule_plot import plot_schedule
    from coexplore.system.tables import load_table
    folder = Path(out) / record["dir"]
    table = table if table is not None else load_table(folder / "jobs.csv")
    schedule = schedule if schedule is not None else json.loads((folder / "schedule.json").read_text())
    tr = trace(table.latency, table.bandwidth, schedule["bandwidth"], np.array(schedule["core_index"]),
               np.array(schedule["priority"]))
    return plot_schedule(table, tr, folder / "gantt.png",
                         title=f"{system_name} {record['point']}: {schedule['searcher']}, makespan "
                               f"{schedule['makespan']:.4g} cycles, BW {schedule['bandwidth']:g} B/cycle")
