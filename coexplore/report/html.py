"""A sweep's self-contained HTML report: the run's facts, its plots (embedded as data URIs, so the
file displays when copied alone), the Pareto front and every point with its measured columns.

Plain HTML with a little inline CSS. Every value that comes from the user (ids, axis paths and
values, errors, run facts, captions) goes through `html.escape`; links are URL-quoted relative
paths.
"""

from __future__ import annotations

import base64
import math
import mimetypes
import numbers
from html import escape
from pathlib import Path
from urllib.parse import quote

import numpy as np

from coexplore.sweep.metrics import COLUMNS, Objective

FRONT_MARK = '<td class="front-mark" title="on the Pareto front">&#9733;</td>'
NO_MARK = "<td></td>"

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts th { width: 12em; }
table.facts td { white-space: pre-line; }
tr.front td { background: #fff3f0; }
tr.failed td { color: #777; }
td.front-mark { color: #c62828; text-align: center; }
th.objective { background: #ffe2dc; }
.error { color: #b00020; white-space: pre-wrap; font-family: monospace; font-size: 0.95em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #555; }
.note { color: #555; font-size: 0.9em; }
.warn { color: #8a4b00; background: #fff6e0; padding: 0.3em 0.6em; border-left: 3px solid #e0a000; }
"""


def digits_apart(values, least: int = 4, most: int = 12) -> int:
    """The fewest significant digits (from `least`, at most `most`) at which different finite values
    are shown differently: two front points 0.018415624 and 0.018415990 at 4 digits read as equal,
    and one then looks dominated by the other."""
    finite = sorted({float(v) for v in values if isinstance(v, numbers.Real) and not isinstance(v, bool)
                     and math.isfinite(v)})
    for d in range(least, most):
        if len({f"{v:.{d}g}" for v in finite}) == len(finite):
            return d
    return most


def fmt_number(v, digits: int = 4) -> str:
    """`digits` significant digits (integers below a million as they are); '' for a missing value
    (None), 'inf' / '-inf' for an infinite one (as points.csv writes it) and 'n/a' for NaN: never a
    number that looks valid."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).lower()
    if isinstance(v, (int, np.integer)):
        return str(int(v)) if abs(int(v)) < 10**6 else f"{int(v):.{digits}g}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.{digits}g}"
    return str(v)


def fmt_value(v) -> str:
    """A run fact or an axis value as compact text (not yet escaped): lists as `a, b`, mappings
    one `key: value` per line (nested ones inline in braces)."""
    if isinstance(v, dict):
        return "\n".join(f"{k}: {_inline(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_inline(x) for x in v)
    if v is None:
        return "null"                   # (YAML's spelling, as points.csv and the summary give it)
    if isinstance(v, float):            # as written in the YAML (12.8), unless long
        r = repr(float(v))              # float(): numpy 2 writes np.float64(12.8)
        return r if math.isfinite(v) and len(r) <= 12 else fmt_number(v)
    return fmt_number(v)


def _inline(v) -> str:
    """A value nested in a list or mapping: on one line, brackets kept."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_inline(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    return fmt_value(v)


def _href(path: str) -> str:
    """A relative link, URL-quoted (so no scheme such as javascript: survives) and attribute-escaped."""
    return escape(quote(str(path).replace("\\", "/"), safe="/"), quote=True)


def _cell(v, digits: int = 4) -> str:
    return f'<td class="num">{escape(fmt_number(v, digits))}</td>'


def _axes(points: list[dict]) -> list[str]:
    """Every axis path any point names, in order of first appearance."""
    return list(dict.fromkeys(k for p in points for k in (p.get("values") or {})))


def _unit(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def _id_cell(p: dict, base: Path | None) -> str:
    pid = escape(str(p.get("point", p.get("index", ""))))
    d = p.get("dir")
    if not d:
        return f"<td>{pid}</td>"
    links = f'<a href="{_href(str(d).rstrip("/") + "/")}">{pid}</a>'
    gantt = f"{str(d).rstrip('/')}/gantt.png"
    if base is not None and (base / gantt).is_file():
        links += f' <a href="{_href(gantt)}" title="Gantt chart of its schedule">gantt</a>'
    return f"<td>{links}</td>"


def _image(caption: str, path) -> str:
    p = Path(path)
    cap = escape(str(caption))
    if not p.is_file():
        return f'<p class="note">{cap}: image not found ({escape(str(p))})</p>'
    mime = mimetypes.guess_type(p.name)[0] or "image/png"
    data = base64.b64encode(p.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:{mime};base64,{data}" alt="{escape(str(caption), quote=True)}">'
            f"<figcaption>{cap}</figcaption></figure>")


def _system_name(run: dict) -> str:
    """The system's name from the run facts: `name` when given, else the stem of the `system` file."""
    if run.get("name"):
        return str(run["name"])
    if run.get("system"):
        return Path(str(run["system"]).replace("\\", "/")).stem or str(run["system"])
    return "sweep"


def render_report(run: dict, points: list[dict], objectives: list[Objective], front,
                  images: dict | None = None, base: str | Path | None = None, total: int | None = None) -> str:
    """The report as one HTML string. `front` flags the non-dominated points (one per point);
    `images` maps a caption to an image file, embedded; `base` is the report's folder, where each
    point's `dir` is looked up for a `gantt.png` to link (no such links without it); `total`: the
    sweep's points, when more than those done (a stopped sweep: its headline says so)."""
    front = np.asarray(front, dtype=bool).reshape(-1)
    if len(front) != len(points):
        raise ValueError(f"front has {len(front)} flags for {len(points)} points")
    base = Path(base) if base is not None else None
    system = _system_name(run)
    axes = _axes(points)
    ok = [p.get("status") == "ok" for p in points]
    n_failed = len(points) - sum(ok)
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>coexplore sweep: {escape(str(system))}</title>", f"<style>{CSS}</style>", "</head>",
           "<body>", f"<h1>coexplore sweep: {escape(str(system))}</h1>"]
    partial = total is not None and total > len(points)
    if partial:
        out.append(f'<p class="warn">Stopped: {len(points)} of {total} points done. The front below is '
                   "that of the points done; running the same command again continues the sweep.</p>")
    out.append(f'<p class="note">{len(points)} point{"s" if len(points) != 1 else ""}'
               + (f" of {total}" if partial else "") + ": "
               f"{sum(ok)} ok, {n_failed} failed; {int(front.sum())} on the Pareto front of "
               + escape(", ".join(f"{o.name} ({o.sense})" for o in objectives)) + ".</p>")

    out.append("<h2>Run</h2>")
    out.append('<table class="facts">')
    for k, v in run.items():
        out.append(f"<tr><th>{escape(str(k))}</th><td>{escape(fmt_value(v))}</td></tr>")
    out.append("</table>")

    if images:
        out.append("<h2>Plots</h2>")
        out.extend(_image(c, p) for c, p in images.items())

    # the front, best first in the first objective
    out.append("<h2>Pareto front</h2>")
    on = [i for i in range(len(points)) if front[i]]
    o0 = objectives[0] if objectives else None
    if o0 is not None:
        def key(i):
            v = points[i].get(o0.column)
            v = float(v) if isinstance(v, numbers.Real) and not isinstance(v, bool) else math.nan
            return (math.isnan(v), v if o0.sense == "min" else -v)
        on.sort(key=key)
    # an objective's column shows as many digits as tell its front points apart
    digits = {o.column: digits_apart(points[i].get(o.column) for i in on) for o in objectives}
    if on:
        out.append("<table><tr><th>point</th>" + "".join(f"<th>{escape(a)}</th>" for a in axes)
                   + "".join(f'<th class="objective">{escape(_unit(o.name, o.unit))}, {o.sense}</th>'
                             for o in objectives) + "</tr>")
        for i in on:
            p = points[i]
            vals = p.get("values") or {}
            out.append("<tr>" + _id_cell(p, base)
                       + "".join(f"<td>{escape(fmt_value(vals[a])) if a in vals else ''}</td>" for a in axes)
                       + "".join(_cell(p.get(o.column), digits[o.column]) for o in objectives) + "</tr>")
        out.append("</table>")
    else:
        out.append('<p class="note">No point on the front (no point succeeded).</p>')

    # every point, in sweep order
    objective_columns = {o.column for o in objectives}
    out.append("<h2>All points</h2>")
    out.append("<table><tr><th>point</th>" + "".join(f"<th>{escape(a)}</th>" for a in axes)
               + "".join(('<th class="objective">' if c in objective_columns else "<th>")
                         + f"{escape(_unit(c, u))}</th>" for c, u in COLUMNS.items())
               + "<th>front</th><th>status</th></tr>")
    for i, p in enumerate(points):
        vals = p.get("values") or {}
        status = str(p.get("status", ""))
        cls = "front" if front[i] else ("failed" if status != "ok" else "")
        err = p.get("error")
        status_cell = escape(status) + (f'<div class="error">{escape(str(err))}</div>' if err else "")
        out.append((f'<tr class="{cls}">' if cls else "<tr>") + _id_cell(p, base)
                   + "".join(f"<td>{escape(fmt_value(vals[a])) if a in vals else ''}</td>" for a in axes)
                   + "".join(_cell(p.get(c), digits.get(c, 4)) for c in COLUMNS)
                   + (FRONT_MARK if front[i] else NO_MARK)
                   + f"<td>{status_cell}</td></tr>")
    out.append("</table>")
    out.append('<p class="note">Numbers to 4 significant digits, objectives to as many as tell the front '
               "points apart (inf: infinite, n/a: not a number). "
               "Objective columns' headers shaded; &#9733; marks the Pareto front.</p>")
    out += _warnings(points)
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def grouped_warnings(points: list[dict]) -> list[tuple[str, str]]:
    """(where, warning) for each distinct warning of the points' records, where = the points it
    came from ("every point" when all of several did)."""
    said: dict = {}
    for p in points:
        for w in p.get("warnings") or ():
            ids = said.setdefault(str(w), [])
            if str(p.get("point", "")) not in ids:
                ids.append(str(p.get("point", "")))
    return [("every point" if len(ids) == len(points) > 1 else ", ".join(ids), w) for w, ids in said.items()]


def _warnings(points: list[dict]) -> list[str]:
    """What the points warned of (estimates standing in, extrapolated fits, idle fan-outs ...),
    each once with the points it came from: the numbers above rest on them."""
    said = grouped_warnings(points)
    if not said:
        return []
    return (["<h2>Warnings</h2>", '<table class="warnings"><tr><th>points</th><th>warning</th></tr>']
            + [f"<tr><td>{escape(where)}</td><td>{escape(w)}</td></tr>" for where, w in said] + ["</table>"])


def write_report(path: str | Path, run: dict, points: list[dict], objectives: list[Objective], front,
                 images: dict | None = None, total: int | None = None) -> Path:
    """Write `render_report` to `path` (whole or not at all), making its folder; gantt links are
    checked relative to that folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_report(run, points, objectives, front, images, base=path.parent, total=total)
    tmp = path.with_name(f".{path.name}.tmp")
    try:                               # written whole or not at all (Ctrl-C, full disk)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
