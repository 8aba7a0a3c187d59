"""The sweep report: the Pareto plot (coexplore.report.pareto_plot) and the HTML report
(coexplore.report.html), checked on properties of synthetic sweep records."""

import base64
import itertools
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from coexplore.report.html import digits_apart, render_report, write_report
from coexplore.report.pareto_plot import FRONT_COLOUR, axis_label, draw_pareto, plot_pareto, wants_log
from coexplore.sweep.metrics import COLUMNS, OBJECTIVES, point_metrics
from coexplore.sweep.pareto import pareto_front

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
AXES = {"cores.simba.params.pe_mesh_x": [8, 16], "cores.simba.params.glb_depth": [1024, 2048, 4096],
        "dram.bandwidth_GBps": [12.8, 25.6, 51.2]}
EVIL = "no mapping fits <script>alert('x')</script> & gave up"


def sweep(n_failed=2, seed=0):
    """18 records as a sweep of AXES produces them; the first `n_failed` failed."""
    rng = np.random.default_rng(seed)
    pts = []
    for i, combo in enumerate(itertools.product(*AXES.values())):
        vals = dict(zip(AXES, combo))
        rec = {"point": f"p{i:02d}", "index": i, "values": vals, "dir": f"points/p{i:02d}",
               "status": "ok", "error": None}
        if i < n_failed:
            rec.update(status="failed", error=EVIL)
        else:
            pe, glb, bw = combo
            rec.update(point_metrics(
                makespan_cycles=1e7 / pe * 12.8 / bw * rng.uniform(0.8, 1.2),
                energy_pJ=1e10 * (1 + glb / 4096) * rng.uniform(0.8, 1.2), clock_GHz=1.0,
                area_mm2=0.05 * pe * pe + glb / 1000, inferences=3, cores=4, macs=4_089_184_256,
                jobs=120, offchip_bytes_per_cycle=rng.uniform(1, 30), operations=10**15))
        pts.append(rec)
    return pts


def objectives(*names):
    return [OBJECTIVES[n] for n in names]


def front_of(pts, objs):
    v = [[p[o.column] if p["status"] == "ok" else np.nan for o in objs] for p in pts]
    return pareto_front(np.array(v, dtype=float), objs)


def scatter_sets(ax):
    """(front offsets, dominated offsets) of a scatter panel, found by their legend labels."""
    got = {}
    for c in ax.collections:
        label = c.get_label()
        key = "front" if label.startswith("Pareto front") else "other" if label.startswith("dominated") else None
        if key:
            got[key] = np.asarray(c.get_offsets(), dtype=float)
    return got["front"], got["other"]


# ---- the Pareto plot ----

@pytest.mark.parametrize("names", [("latency",), ("latency", "energy"), ("latency", "energy", "area"),
                                   ("latency", "energy", "edp", "area", "throughput")])
def test_plot_writes_a_real_png_atomically(tmp_path, names):
    import matplotlib.image

    pts, objs = sweep(), objectives(*names)
    out = plot_pareto(pts, objs, front_of(pts, objs), tmp_path / "sub" / "pareto.png")
    assert out == tmp_path / "sub" / "pareto.png"
    assert out.read_bytes()[:8] == PNG_MAGIC
    img = matplotlib.image.imread(out)
    assert img.ndim == 3 and img.shape[2] in (3, 4) and min(img.shape[:2]) > 100
    assert img[..., :3].std() > 0.05                         # something is drawn on it
    assert [p.name for p in out.parent.iterdir()] == ["pareto.png"]   # no temp file left


@pytest.mark.parametrize("k, panels", [(1, 1), (2, 1), (3, 3), (4, 6), (5, 10)])
def test_one_panel_per_pair_of_objectives(k, panels):
    names = ["latency", "energy", "area", "throughput", "edp"][:k]
    pts, objs = sweep(), objectives(*names)
    fig = draw_pareto(pts, objs, front_of(pts, objs))
    assert len(fig.axes) == panels
    if k >= 2:   # every pair once, labelled "name (unit)"
        drawn = {(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes}
        assert drawn == {(axis_label(a), axis_label(b)) for a, b in itertools.combinations(objs, 2)}
        assert all(f"({o.unit})" in axis_label(o) for o in objs)


@pytest.mark.parametrize("names", [("latency", "energy"), ("latency", "energy", "area"),
                                   ("area", "throughput", "energy", "latency", "edp")])
def test_front_highlighted_in_every_panel_and_failed_points_left_out(names):
    pts, objs = sweep(n_failed=3), objectives(*names)
    front = front_of(pts, objs)
    ok = np.array([p["status"] == "ok" for p in pts])
    fig = draw_pareto(pts, objs, front)
    assert "3 failed points not shown" in fig._suptitle.get_text()
    col = {axis_label(o): o.column for o in objs}
    for ax in fig.axes:
        xc, yc = col[ax.get_xlabel()], col[ax.get_ylabel()]
        on, off = scatter_sets(ax)
        expect_on = sorted((pts[i][xc], pts[i][yc]) for i in np.flatnonzero(front & ok))
        expect_off = sorted((pts[i][xc], pts[i][yc]) for i in np.flatnonzero(~front & ok))
        assert sorted(map(tuple, on)) == expect_on
        assert sorted(map(tuple, off)) == expect_off
        labels = {name for t in ax.texts for name in t.get_text().split("/")}
        assert {pts[i]["point"] for i in np.flatnonzero(front & ok)} <= labels   # front named


def _stair_value(xs, ys, style, x):
    """y of a matplotlib steps line at x (xs ascending)."""
    if style == "steps-post":
        return ys[np.flatnonzero(xs <= x)[-1]]
    return ys[np.flatnonzero(xs >= x)[0]]


@pytest.mark.parametrize("xname, yname", [("latency", "energy"), ("area", "throughput"),
                                          ("throughput", "area"), ("throughput", "throughput")])
def test_staircase_bounds_the_dominated_region(xname, yname):
    """Every point lies on the dominated side of the front's staircase (or on it), whatever the
    senses of the two objectives; the staircase passes through every front point."""
    rng = np.random.default_rng(3)
    xo, yo = OBJECTIVES[xname], OBJECTIVES[yname]
    if xname == yname:                       # two maximised objectives: a copy of throughput
        yo = type(xo)("throughput2", "t2", "max", "1/s")
    a = rng.uniform(1, 9, 60)                # a trade-off (better x, worse y) plus noise
    b = (a if xo.sense != yo.sense else 10 - a) + rng.uniform(0, 3, 60) * (1 if yo.sense == "min" else -1)
    pts = [{"point": f"q{i}", "status": "ok", xo.column: float(x), yo.column: float(y)}
           for i, (x, y) in enumerate(zip(a, b))]
    objs = [xo, yo]
    front = pareto_front([[p[xo.column], p[yo.column]] for p in pts], objs)
    assert front.sum() >= 3
    ax = draw_pareto(pts, objs, front).axes[0]
    (line,) = [ln for ln in ax.lines if ln.get_drawstyle().startswith("steps")]
    xs, ys = (np.asarray(a, dtype=float) for a in line.get_data())
    assert sorted(zip(xs, ys)) == sorted((p[xo.column], p[yo.column]) for p, f in zip(pts, front) if f)
    # between its corners the staircase is the border of the dominated region: at x, the best y
    # of the front points at least as good as x in the x objective
    fx = np.array([p[xo.column] for p, f in zip(pts, front) if f])
    fy = np.array([p[yo.column] for p, f in zip(pts, front) if f])
    best = np.min if yo.sense == "min" else np.max
    grid = np.setdiff1d(np.linspace(xs.min(), xs.max(), 301), xs)
    for x in grid:
        as_good = fx <= x if xo.sense == "min" else fx >= x
        assert _stair_value(xs, ys, line.get_drawstyle(), x) == best(fy[as_good])
    worse = 1.0 if yo.sense == "min" else -1.0            # so every point is on or behind it
    for p in pts:
        x, y = p[xo.column], p[yo.column]
        if xs.min() < x < xs.max():
            assert (y - _stair_value(xs, ys, line.get_drawstyle(), x)) * worse >= 0


def test_log_scale_only_for_axes_spanning_over_10x():
    assert wants_log([1.0, 11.0]) and not wants_log([1.0, 9.0])
    assert not wants_log([-1.0, 100.0]) and not wants_log([0.0, 100.0]) and not wants_log([])
    pts = [{"point": f"q{i}", "status": "ok", "latency_s": 10.0 ** (i / 2), "energy_J": 1.0 + i / 10}
           for i in range(6)]                                     # latency 1 .. 316, energy 1 .. 1.5
    pts.append({"point": "bad", "status": "failed", "latency_s": None, "energy_J": 1e9})  # not drawn
    objs = objectives("latency", "energy")
    ax = draw_pareto(pts, objs, [True] * 6 + [False]).axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
    ax = draw_pareto(pts, objs[::-1], [True] * 6 + [False]).axes[0]
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "log"


@pytest.mark.parametrize("name", ["latency", "throughput"])
def test_one_objective_marks_the_best_points(name):
    from matplotlib.colors import to_rgba

    pts, objs = sweep(), objectives(name)
    front = front_of(pts, objs)
    ax = draw_pareto(pts, objs, front).axes[0]
    bars = ax.patches
    values = [p[objs[0].column] for p in pts if p["status"] == "ok"]
    assert sorted(b.get_height() for b in bars) == pytest.approx(sorted(values))
    best = [b.get_height() for b in bars if b.get_facecolor() == to_rgba(FRONT_COLOUR)]
    assert best == [max(values) if objs[0].sense == "max" else min(values)]
    assert ax.get_ylabel() == axis_label(objs[0])


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_no_successful_point_still_gives_a_png(tmp_path, k):
    pts = [dict(p, status="failed", error="x") for p in sweep()[:4]]
    objs = objectives(*["latency", "energy", "area", "throughput", "edp"][:k])
    fig = draw_pareto(pts, objs, [False] * 4)
    assert all(not ax.axison for ax in fig.axes)
    assert "4 failed points not shown" in fig._suptitle.get_text()
    out = plot_pareto(pts, objs, [False] * 4, tmp_path / "p.png")
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert plot_pareto([], objs, [], tmp_path / "empty.png").read_bytes()[:8] == PNG_MAGIC


def test_plot_refuses_a_front_of_the_wrong_length():
    pts, objs = sweep(), objectives("latency", "energy")
    with pytest.raises(ValueError):
        draw_pareto(pts, objs, [True])


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
@pytest.mark.parametrize("names", [("latency", "energy"), ("latency", "energy", "area")])
def test_point_without_finite_values_is_not_drawn_and_is_counted(bad, names):
    """An ok point whose latency is inf or NaN is drawn in no panel (even when flagged on the front)
    and the title says so; the failed points are counted apart."""
    pts, objs = sweep(n_failed=2), objectives(*names)
    pts[5]["latency_s"] = bad
    front = front_of(pts, objs)
    front[5] = True                              # flagged or not, it cannot be placed on an axis
    fig = draw_pareto(pts, objs, front)
    title = fig._suptitle.get_text()
    assert "1 point without finite values not shown" in title and "2 failed points not shown" in title
    col = {axis_label(o): o.column for o in objs}
    drawn = [i for i, p in enumerate(pts) if p["status"] == "ok" and i != 5]
    for ax in fig.axes:
        xc, yc = col[ax.get_xlabel()], col[ax.get_ylabel()]
        on, off = scatter_sets(ax)
        assert np.isfinite(on).all() and np.isfinite(off).all()
        assert len(on) + len(off) == len(drawn)
        assert sorted(map(tuple, np.vstack([on, off]))) == sorted((pts[i][xc], pts[i][yc]) for i in drawn)
        assert pts[5]["point"] not in {t.get_text() for t in ax.texts}
        for ln in ax.lines:                      # nor on the staircase
            assert np.isfinite(np.asarray(ln.get_xydata(), dtype=float)).all()


def test_one_objective_leaves_out_a_point_without_a_finite_value():
    pts, objs = sweep(n_failed=0), objectives("latency")
    pts[4]["latency_s"] = float("inf")
    ax = draw_pareto(pts, objs, front_of(pts, objs)).axes[0]
    heights = sorted(b.get_height() for b in ax.patches)
    assert heights == pytest.approx(sorted(p["latency_s"] for i, p in enumerate(pts) if i != 4))
    assert "1 point without finite values" in ax.figure._suptitle.get_text()


def _tradeoff(n_front, n_dominated, seed=0):
    """n_front points on a latency/energy trade-off curve plus n_dominated points behind it."""
    rng = np.random.default_rng(seed)
    pts = [{"point": f"f{i}", "status": "ok", "latency_s": 1.0 + i, "energy_J": 100.0 / (1.0 + i)}
           for i in range(n_front)]
    for i in range(n_dominated):                 # worse than the front point f{j} in both
        j = int(rng.integers(n_front))
        pts.append({"point": f"d{i}", "status": "ok", "latency_s": 1.0 + j + rng.uniform(0.1, 0.5),
                    "energy_J": 100.0 / (1.0 + j) * rng.uniform(1.1, 2.0)})
    objs = objectives("latency", "energy")
    front = front_of(pts, objs)
    assert front.sum() == n_front and all(p["point"].startswith("f") for p, f in zip(pts, front) if f)
    return pts, objs, front


@pytest.mark.parametrize("n_front, n_dominated, front_named, dominated_named",
                         [(4, 6, True, True), (5, 15, True, True), (5, 16, True, False),
                          (4, 26, True, False), (20, 0, True, True), (21, 0, False, False),
                          (25, 5, False, False)])
def test_ids_written_beside_points_only_up_to_20(n_front, n_dominated, front_named, dominated_named):
    """Front ids are written when the front has at most 20 points; dominated ids only when at most
    20 points are drawn in all (30 points: none)."""
    pts, objs, front = _tradeoff(n_front, n_dominated)
    pts.append({"point": "x", "status": "failed", "error": "boom"})    # not drawn, not counted
    front = np.append(front, False)
    (ax,) = draw_pareto(pts, objs, front).axes
    labels = [name.strip("()") for t in ax.texts for name in t.get_text().split("/")]   # (near ones share one)
    fronts = {p["point"] for p, f in zip(pts, front) if f}
    dominated = {p["point"] for p, f in zip(pts, front) if not f and p["status"] == "ok"}
    assert (set(labels) & fronts == fronts) if front_named else not set(labels) & fronts
    assert (set(labels) & dominated == dominated) if dominated_named else not set(labels) & dominated
    assert "x" not in labels and len(labels) == len(set(labels))


def test_points_at_the_same_spot_share_one_label():
    """Two front points and two dominated points drawn at the same places: one label each spot, naming
    both (not two labels written over each other)."""
    pts = [{"point": "a", "status": "ok", "latency_s": 1.0, "energy_J": 5.0},
           {"point": "b", "status": "ok", "latency_s": 1.0, "energy_J": 5.0},
           {"point": "c", "status": "ok", "latency_s": 2.0, "energy_J": 1.0},
           {"point": "d", "status": "ok", "latency_s": 3.0, "energy_J": 6.0},
           {"point": "e", "status": "ok", "latency_s": 3.0, "energy_J": 6.0}]
    objs = objectives("latency", "energy")
    front = front_of(pts, objs)
    assert front.tolist() == [True, True, True, False, False]
    (ax,) = draw_pareto(pts, objs, front).axes
    assert sorted(t.get_text() for t in ax.texts) == ["a/b", "c", "d/e"]


def test_front_and_dominated_points_at_one_spot_or_a_hair_apart_share_one_label():
    """A panel of three objectives can draw a dominated point exactly on a front point, and points
    0.1% apart overprint: each spot gets one label, front points named first, in the front's colour."""
    pts = [{"point": "p0", "status": "ok", "latency_s": 1.0, "energy_J": 5.0, "area_mm2": 2.0},
           {"point": "p1", "status": "ok", "latency_s": 1.0, "energy_J": 5.0, "area_mm2": 3.0},   # dominated by p0
           {"point": "p2", "status": "ok", "latency_s": 2.0, "energy_J": 1.0, "area_mm2": 9.0},
           {"point": "p3", "status": "ok", "latency_s": 2.002, "energy_J": 1.001, "area_mm2": 8.0},
           {"point": "p4", "status": "ok", "latency_s": 3.0, "energy_J": 3.0, "area_mm2": 1.0}]
    objs = objectives("latency", "energy", "area")
    front = front_of(pts, objs)
    assert front.tolist() == [True, False, True, True, True]
    ax = next(a for a in draw_pareto(pts, objs, front).axes
              if (a.get_xlabel(), a.get_ylabel()) == (axis_label(objs[0]), axis_label(objs[1])))
    texts = {t.get_text(): t.get_color() for t in ax.texts}
    assert sorted(texts) == ["p0/(p1)", "p2/p3", "p4"]        # (p1: dominated, drawn where p0 is)
    assert texts["p0/(p1)"] == "black"

@pytest.mark.parametrize("names", [("latency", "energy", "area"), ("latency", "energy", "area", "throughput"),
                                   ("latency", "energy", "edp", "area", "throughput")])
def test_no_staircase_with_three_or_more_objectives(names):
    """The staircase is the 2-objective front's border; a pair of 3+ objectives has no such border."""
    pts, objs = sweep(), objectives(*names)
    fig = draw_pareto(pts, objs, front_of(pts, objs))
    assert len(fig.axes) >= 3
    styles = [ln.get_drawstyle() for ax in fig.axes for ln in ax.lines]
    assert not [s for s in styles if s.startswith("steps")]
    two = draw_pareto(pts, objs[:2], front_of(pts, objs[:2])).axes[0]   # the 2-objective panel has one
    assert [ln.get_drawstyle() for ln in two.lines if ln.get_drawstyle().startswith("steps")]


# ---- the HTML report ----

RUN = {"system": "arch/simba_2x2.yaml", "axes": AXES, "workloads": ["problems/resnet50.yaml", "problems/vgg16.yaml"],
       "layer_searcher": "marl", "layer_budget": 1000, "searcher": "magma", "budget": 10000, "seed": 0,
       "coexplore_version": "0.1.0"}


class Tags(HTMLParser):
    """Checks that every opened element (of those that need closing) is closed, in order; collects
    each table's rows as lists of cell texts (and each row's class in `classes`), and every src/href."""
    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.tables, self.src, self.href, self.cell = [], [], [], [], None
        self.classes = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.src += [a["src"]] if "src" in a else []
        self.href += [a["href"]] if "href" in a else []
        if tag == "table":
            self.tables.append([])
            self.classes.append([])
        elif tag == "tr":
            self.tables[-1].append([])
            self.classes[-1].append(a.get("class", ""))
        elif tag in ("td", "th"):
            self.cell = ""
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
        self.stack.pop()
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def parse(text):
    t = Tags()
    t.feed(text)
    t.close()
    assert not t.stack
    return t


def significant_digits(shown: str) -> int:
    mantissa = re.sub(r"e[+-]\d+$", "", shown).lstrip("-").replace(".", "").lstrip("0")
    return len(mantissa)


def test_report_lists_every_point_with_its_values_and_front_marks():
    pts, objs = sweep(n_failed=2), objectives("latency", "energy", "area")
    front = front_of(pts, objs)
    text = render_report(RUN, pts, objs, front)
    doc = parse(text)
    assert "simba_2x2" in text[text.index("<h1>"):text.index("</h1>")]
    assert text.count('class="front-mark"') == int(front.sum()) > 0
    head, *rows = doc.tables[-1]                                 # all points, in sweep order
    assert len(rows) == len(pts)
    axes = list(AXES)
    for c, u in COLUMNS.items():
        assert (f"{c} ({u})" if u else c) in head
    objective_columns = {o.column for o in objs}
    for p, row, f in zip(pts, rows, front):
        cells = dict(zip(head, row))
        assert cells["point"].split()[0] == p["point"]
        for a in axes:
            assert float(cells[a]) == p["values"][a]
        assert (cells["front"] == "\u2605") == f
        for c, u in COLUMNS.items():
            shown = cells[f"{c} ({u})" if u else c]
            if p["status"] == "ok":     # 4 significant digits of the measured value
                assert float(shown) == pytest.approx(p[c], rel=5e-4)
                small_int = isinstance(p[c], int) and p[c] < 10**6
                most = digits_apart([q[c] for q, g in zip(pts, front) if g]) if c in objective_columns else 4
                assert shown == str(p[c]) if small_int else significant_digits(shown) <= most
            else:
                assert shown == ""
    for p in pts:                                              # every id links to its folder
        assert p["dir"] + "/" in doc.href


def test_front_table_holds_the_front_best_first_for_a_max_objective():
    pts, objs = sweep(), objectives("throughput", "area")
    front = front_of(pts, objs)
    doc = parse(render_report(RUN, pts, objs, front))
    head, *rows = doc.tables[1]                                # facts, front, all points
    assert head[-2:] == ["throughput (inferences/s), max", "area (mm^2), min"]
    ids = [r[0] for r in rows]
    assert sorted(ids) == sorted(p["point"] for p, f in zip(pts, front) if f)
    shown = [float(r[-2]) for r in rows]
    assert shown == sorted(shown, reverse=True)                # best (highest) throughput first


def test_front_points_nearly_tied_are_shown_with_the_digits_that_tell_them_apart():
    """User study: two front points whose energies differ in the 6th digit showed the same energy (and
    area) at 4 digits, so one looked dominated. The front table, the all-points table and the sweep's
    summary show each objective with as many digits as its front needs; other columns keep 4."""
    from types import SimpleNamespace
    from coexplore.cli.sweep import summary_lines
    pts, objs = sweep(n_failed=0), objectives("latency", "energy")
    a, b = pts[3], pts[4]
    b.update(latency_s=a["latency_s"] * 0.5, energy_J=a["energy_J"] * (1 + 2e-6))
    for p in pts:                                  # everything else is worse than both
        if p is not a and p is not b:
            p.update(latency_s=a["latency_s"] * 2, energy_J=a["energy_J"] * 2)
    front = front_of(pts, objs)
    assert front[3] and front[4] and front.sum() == 2
    doc = parse(render_report(RUN, pts, objs, front))
    rows = {r[0].split()[0]: r for r in doc.tables[1][1:]}
    assert rows[a["point"]][-1] != rows[b["point"]][-1]
    for p in (a, b):
        assert float(rows[p["point"]][-1]) == pytest.approx(p["energy_J"], rel=1e-5)
    lines = summary_lines(SimpleNamespace(name="s", sweep_axes=AXES), pts, objs, list(front), len(pts))
    shown = {ln.split()[0]: ln.split()[-1] for ln in lines if ln.strip().startswith((a["point"], b["point"]))}
    assert shown[a["point"]] != shown[b["point"]]
    assert float(shown[a["point"]]) == pytest.approx(a["energy_J"], rel=1e-5)


def test_failed_point_error_is_escaped():
    pts, objs = sweep(n_failed=1), objectives("latency", "energy")
    pts[2]["values"] = dict(pts[2]["values"], **{"dram.bandwidth_GBps": "<b>fast</b>"})
    pts[3]["point"] = "p<i>3"
    text = render_report(dict(RUN, note="<img src=x onerror=alert(1)>"), pts, objs, front_of(pts, objs),
                         images={"<script>cap</script>": "/nonexistent/plot.png"})
    assert "<script" not in text and "<b>" not in text and "<i>" not in text and "<img src=x" not in text
    from html import escape
    assert escape(EVIL) in text and escape("<b>fast</b>") in text and escape("p<i>3") in text
    doc = parse(text)
    failed_row = doc.tables[-1][1]
    assert failed_row[-1] == "failed" + EVIL                   # status, then its error


def test_embedded_image_is_the_png_and_the_file_is_self_contained(tmp_path):
    pts, objs = sweep(), objectives("latency", "energy", "area")
    front = front_of(pts, objs)
    png = plot_pareto(pts, objs, front, tmp_path / "pareto.png")
    text = render_report(RUN, pts, objs, front, images={"Pareto front": png})
    doc = parse(text)
    assert len(doc.src) == 1 and doc.src[0].startswith("data:image/png;base64,")
    assert base64.b64decode(doc.src[0].split(",", 1)[1], validate=True) == png.read_bytes()
    assert all(not re.match(r"[a-z]+:", h) for h in doc.href)  # links are relative
    assert "<script" not in text.lower() and "<link" not in text.lower()


def test_write_report_makes_the_folder_links_gantts_and_leaves_no_temp_file(tmp_path):
    pts, objs = sweep(), objectives("latency", "energy")
    front = front_of(pts, objs)
    out = tmp_path / "a" / "b" / "report.html"
    (out.parent / "points" / "p05").mkdir(parents=True)
    (out.parent / "points" / "p05" / "gantt.png").write_bytes(PNG_MAGIC)
    assert write_report(out, RUN, pts, objs, front) == out
    assert sorted(p.name for p in out.parent.iterdir()) == ["points", "report.html"]
    text = out.read_text(encoding="utf-8")
    assert text == render_report(RUN, pts, objs, front, base=out.parent)
    gantts = [h for h in parse(text).href if h.endswith("gantt.png")]
    assert gantts == ["points/p05/gantt.png"]
    assert not [h for h in parse(render_report(RUN, pts, objs, front)).href if h.endswith(".png")]


def test_write_report_is_whole_or_nothing(tmp_path, monkeypatch):
    pts, objs = sweep(), objectives("latency", "energy")
    out = tmp_path / "report.html"
    out.write_text("old")

    def fail(self, target):
        raise OSError("disk full")

    monkeypatch.setattr(Path, "replace", fail)
    with pytest.raises(OSError):
        write_report(out, RUN, pts, objs, front_of(pts, objs))
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_run_facts_every_key_compactly():
    pts, objs = sweep(), objectives("latency")
    doc = parse(render_report(dict(RUN, extra={"a": [1, 2], "b": None}), pts, objs, front_of(pts, objs)))
    facts = dict(doc.tables[0])
    assert set(facts) == set(RUN) | {"extra"}
    assert facts["workloads"] == "problems/resnet50.yaml, problems/vgg16.yaml"
    assert facts["axes"].splitlines() == [f"{k}: [{', '.join(map(str, v))}]" for k, v in AXES.items()]
    assert facts["budget"] == "10000"


def test_sweep_without_axes_and_without_ok_points():
    pts = [{"point": "p00", "index": 0, "values": {}, "status": "failed", "error": "boom", "dir": "points/p00"}]
    objs = objectives("latency", "energy")
    doc = parse(render_report({"system": "s"}, pts, objs, [False]))
    head, row = doc.tables[-1]
    assert head[0] == "point" and head[1] == next(iter(COLUMNS)) + " (cycles)"
    assert row[0] == "p00" and row[-1] == "failedboom"
    assert len(doc.tables) == 2                                # facts, all points: no front table


def _col(head, o):
    return next(h for h in head if h.startswith(f"{o.name} (") or h.startswith(f"{o.name},"))


def test_front_table_best_first_for_a_min_objective_and_values_under_their_headers():
    pts, objs = sweep(n_failed=2, seed=4), objectives("latency", "energy", "area")
    front = front_of(pts, objs)
    assert front.sum() >= 3
    doc = parse(render_report(RUN, pts, objs, front))
    head, *rows = doc.tables[1]                                # facts, front, all points
    by_id = {p["point"]: p for p in pts}
    ids = [r[0].split()[0] for r in rows]
    assert sorted(ids) == sorted(p["point"] for p, f in zip(pts, front) if f)
    lat = [by_id[i]["latency_s"] for i in ids]                 # the records' latencies, in table order
    assert lat == sorted(lat)                                  # best (lowest) latency first
    shown = [float(dict(zip(head, r))[_col(head, objs[0])]) for r in rows]
    assert shown == sorted(shown)
    for r in rows:                                             # each objective under its own header
        cells, p = dict(zip(head, r)), by_id[r[0].split()[0]]
        for o in objs:
            assert float(cells[_col(head, o)]) == pytest.approx(p[o.column], rel=5e-4)
    all_head, *all_rows = doc.tables[-1]
    for r, p in zip(all_rows, pts):
        cells = dict(zip(all_head, r))
        for o in objs:
            if p["status"] == "ok":
                assert float(cells[f"{o.column} ({o.unit})"]) == pytest.approx(p[o.column], rel=5e-4)


def test_links_are_url_quoted_relative_paths():
    pts, objs = sweep(n_failed=0), objectives("latency", "energy")
    pts[0]["dir"] = "javascript:alert(1)"
    pts[1]["dir"] = "points/my point #1"
    pts[2]["dir"] = "https://evil.example/x"
    doc = parse(render_report(RUN, pts, objs, front_of(pts, objs)))
    from urllib.parse import unquote
    assert doc.href and all(not re.match(r"^[a-z][a-z0-9+.-]*:", h, re.I) for h in doc.href)
    assert not [h for h in doc.href if " " in h or "#" in h]
    targets = {unquote(h) for h in doc.href}
    assert {p["dir"].rstrip("/") + "/" for p in pts} == targets   # each still names its folder


def test_summary_counts_ok_failed_and_front():
    pts, objs = sweep(n_failed=2), objectives("latency", "energy")
    front = front_of(pts, objs)
    text = render_report(RUN, pts, objs, front)
    m = re.search(r"(\d+) points?: (\d+) ok, (\d+) failed; (\d+) on the Pareto front", text)
    assert m, text[:2000]
    n_ok = sum(p["status"] == "ok" for p in pts)
    assert [int(g) for g in m.groups()] == [len(pts), n_ok, len(pts) - n_ok, int(front.sum())]
    assert (len(pts), n_ok, len(pts) - n_ok) == (18, 16, 2)


def test_report_refuses_a_front_of_the_wrong_length():
    pts, objs = sweep()[:3], objectives("latency", "energy")
    with pytest.raises(ValueError):
        render_report(RUN, pts, objs, [True])
    with pytest.raises(ValueError):
        render_report(RUN, pts, objs, [True, False, True, False])


def test_rows_of_front_and_failed_points_carry_their_class():
    pts, objs = sweep(n_failed=3), objectives("latency", "energy", "area")
    front = front_of(pts, objs)
    doc = parse(render_report(RUN, pts, objs, front))
    classes = doc.classes[-1][1:]                              # all points, after the header
    assert len(classes) == len(pts)
    for p, f, c in zip(pts, front, classes):
        assert c == ("front" if f else "failed" if p["status"] != "ok" else "")
    assert classes.count("failed") == 3 and classes.count("front") == int(front.sum()) > 0


@pytest.mark.parametrize("bad, shown", [(float("inf"), "inf"), (float("nan"), "n/a")])
def test_non_finite_values_are_not_shown_as_numbers(bad, shown):
    """inf is 'inf' and NaN 'n/a' wherever they appear (front table, all points, run facts), never a
    finite-looking number; a failed point's missing values stay empty."""
    import math

    pts, objs = sweep(n_failed=1), objectives("latency", "energy")
    pts[3]["latency_s"] = bad
    pts[3]["edp_J_s"] = bad
    front = front_of(pts, objs)
    front[3] = True
    doc = parse(render_report(dict(RUN, limit=bad), pts, objs, front))
    assert dict(doc.tables[0])["limit"] == shown
    fhead, *frows = doc.tables[1]
    (frow,) = [r for r in frows if r[0].split()[0] == pts[3]["point"]]
    assert dict(zip(fhead, frow))[_col(fhead, objs[0])] == shown
    assert frows[-1] is frow                                   # ranked last by latency
    head, *rows = doc.tables[-1]
    cells = dict(zip(head, rows[3]))
    assert cells["latency_s (s)"] == shown and cells["edp_J_s (J*s)"] == shown
    for c in ("latency_s (s)", "energy_J (J)"):
        assert dict(zip(head, rows[0]))[c] == ""               # failed: no value
    for r in rows:
        for h, v in zip(head, r):
            if v not in ("", "inf", "n/a") and h.split(" (")[0] in COLUMNS:
                assert math.isfinite(float(v))


def test_title_is_the_systems_name_else_the_file_stem():
    def h1(text):
        from html import unescape
        return unescape(text[text.index("<h1>") + 4:text.index("</h1>")])

    pts, objs = sweep(), objectives("latency", "energy")
    front = front_of(pts, objs)
    named = render_report(dict(RUN, name="Simba 2x2 <mesh>", system="/abs/arch/simba_2x2.yaml"), pts, objs, front)
    assert h1(named) == "coexplore sweep: Simba 2x2 <mesh>"
    assert "/abs/arch" not in h1(named)
    assert dict(parse(named).tables[0])["system"] == "/abs/arch/simba_2x2.yaml"   # the path stays a fact
    plain = render_report(dict(RUN, system="/abs/arch/simba_2x2.yaml"), pts, objs, front)
    assert h1(plain) == "coexplore sweep: simba_2x2"
    assert h1(render_report({}, pts, objs, front)) == "coexplore sweep: sweep"


def test_the_points_warnings_are_listed_once_each_with_their_points():
    pts, objs = sweep(), objectives("latency", "energy")
    for p in pts:
        p["warnings"] = ["SRAM: depth 64 is outside the fitted CACTI data <x>"]
    pts[1]["warnings"] = pts[1]["warnings"] + ["only here"]
    text = render_report(RUN, pts, objs, front_of(pts, objs))
    doc = parse(text)
    assert "<h2>Warnings</h2>" in text and "<x>" not in text
    head, *rows = doc.tables[-1]
    assert head == ["points", "warning"]
    assert rows == [["every point", "SRAM: depth 64 is outside the fitted CACTI data <x>"],
                    [pts[1]["point"], "only here"]]
    for p in pts:
        p["warnings"] = []
    assert "Warnings" not in render_report(RUN, pts, objs, front_of(pts, objs))


def test_a_warning_said_twice_by_one_point_is_not_every_points():
    from coexplore.report.html import grouped_warnings
    pts = [{"point": "p0", "warnings": ["w", "w"]}, {"point": "p1", "warnings": []}]
    assert grouped_warnings(pts) == [("p0", "w")]
    assert grouped_warnings([pts[0], {"point": "p1", "warnings": ["w"]}]) == [("every point", "w")]


def test_characters_the_chart_font_lacks_are_said_once_not_per_glyph_and_draw(tmp_path):
    """User study: a system named with CJK characters printed matplotlib's warning per character and
    draw (18 lines with source paths); one note names them."""
    import warnings

    from matplotlib.figure import Figure

    from coexplore.errors import CoexploreNote
    from coexplore.report.schedule_plot import save_png
    fig = Figure()
    ax = fig.add_subplot()
    ax.set_title("Système 加速器")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_png(fig, tmp_path / "x.png")
    notes = [w for w in caught if issubclass(w.category, CoexploreNote)]
    assert len(notes) == 1 and "加速器" in str(notes[0].message) and "è" not in str(notes[0].message)
    assert not [w for w in caught if "missing from font" in str(w.message)]
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"


def test_point_labels_do_not_cover_each_other_and_stay_in_their_panel():
    """User study: labels of nearby points were written over each other ("15" and "4" as "154")."""
    rng = np.random.default_rng(1)
    pts = []
    for i in range(18):
        lat = 1e-5 * (1 + rng.random())
        en = 1e-4 * (1 + 0.3 / (lat * 1e5) + 0.05 * rng.random())
        pts.append({"point": f"p{i}", "status": "ok", "latency_s": lat, "energy_J": en, "edp_J_s": lat * en})
    objs = objectives("latency", "energy", "edp")
    fig = draw_pareto(pts, objs, front_of(pts, objs))
    renderer = fig.canvas.get_renderer()
    named = []
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
        named += [t.get_text() for t in ax.texts]
        inner = ax.get_window_extent(renderer).padded(2)       # (a hair over the frame allowed)
        for k, a in enumerate(boxes):
            assert inner.x0 <= a.x0 and a.x1 <= inner.x1 and inner.y0 <= a.y0 and a.y1 <= inner.y1
            assert not any(a.overlaps(b) for b in boxes[k + 1:]), [t.get_text() for t in ax.texts]
    assert {n.strip("()") for label in named for n in label.split("/")} == {p["point"] for p in pts}


def test_the_title_names_the_front_and_keeps_a_dollar_sign_as_text():
    """Plots study: the title said only "simba_alex: 18 of 18 points" (not what the figure is), and a
    `$` in the system name was set as maths; with no dominated point, no "dominated (0)" entry."""
    pts, objs = sweep(n_failed=0), objectives("latency", "energy")
    fig = draw_pareto(pts, objs, front_of(pts, objs), title="cost $x_1$ 50%: 18 of 18 points")
    title = fig._suptitle.get_text()
    assert "Pareto front: latency, energy" in title and r"cost \$x_1\$ 50%" in title
    only_front = [dict(p, latency_s=float(i), energy_J=float(len(pts) - i)) for i, p in enumerate(pts)]
    (ax,) = draw_pareto(only_front, objs, front_of(only_front, objs)).axes
    assert not any("dominated" in t.get_text() for t in ax.get_legend().get_texts())


def test_gantt_cores_use_colours_no_job_has_and_outline_every_core_alike(tmp_path, monkeypatch):
    """Plots study: a one-DNN chart coloured jobs with tab20 and the cores' bandwidth with tab10 (tab20's
    dark hues: blue was a job above and a core below), several DNNs used pale Set3 for cores, and
    job outlines were drawn per core by its own job count (black bars on some cores, none on others)."""
    import matplotlib
    from matplotlib.axes import Axes
    from coexplore.report.schedule_plot import plot_schedule
    from coexplore.system.jobs import Job, JobTable
    from coexplore.system.schedule import schedule_trace, search_schedule
    n = 30
    table = JobTable([Job(f"net.l{i}", dnn="net", layer=f"l{i}") for i in range(n)], ["a", "b", "c"],
                     np.full((n, 3), 100.0) + np.arange(n)[:, None], np.ones((n, 3)))
    res = search_schedule(table, 4.0, "random", 50, 0)
    seen = {"fill": [], "bars": []}
    real_fill, real_bars = Axes.fill_between, Axes.broken_barh
    monkeypatch.setattr(Axes, "fill_between", lambda self, *a, **k: seen["fill"].append(k.get("color"))
                        or real_fill(self, *a, **k))
    monkeypatch.setattr(Axes, "broken_barh", lambda self, *a, **k: seen["bars"].append(k) or real_bars(self, *a, **k))
    plot_schedule(table, schedule_trace(table, res), tmp_path / "g.png")
    tab20 = {tuple(round(v, 3) for v in matplotlib.colormaps["tab20"](i)[:3]) for i in range(20)}
    cores = [tuple(round(v, 3) for v in c[:3]) for c in seen["fill"]]
    assert len(cores) == 3 and not set(cores) & tab20
    assert all(min(c) < 0.75 for c in cores)                         # no pale colour on white
    assert len({k["linewidth"] for k in seen["bars"]}) == 1          # every core's jobs outlined alike
