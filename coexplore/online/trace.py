"""Request traces from CSV files: recorded (or hand-written) streams to serve instead of Poisson ones.

A trace has a row per request: `arrival_cycle`, `deadline_cycle` and `dnn` (a served DNN's name;
or `model`, its index in the system's order). An optional `seed` (or `stream`) column splits it into
several streams, each served from an idle system; other columns are ignored, so the `requests.csv`
a `coexplore online` run writes is a trace of that run's evaluation streams. Rows of one stream are
served in order of arrival (a stable sort: rows arriving together keep the file's order). Times are
read exactly; a stream whose first arrival is 2^40 cycles or later (log timestamps: 1e18 cycles, where
floats are 256 apart) is counted from that first arrival, so its differences keep their digits.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.online.stream import RequestStream
from coexplore.spec.yamlio import read_text

REBASE_FROM = Decimal(2 ** 40)      # arrivals from here on lose precision as floats: a stream is shifted
EXPECTED = ("a CSV with a header: arrival_cycle, deadline_cycle, and dnn (a served DNN's name) or model (its "
            "index); optionally seed or stream (several streams); a row per request")


def read_trace(path: str | Path, model_names: list[str] | tuple[str, ...]) -> dict[int, RequestStream]:
    """{stream id: RequestStream} of the trace at `path`, DNNs given by name matched to `model_names`."""
    with io.StringIO(read_text(path), newline="") as fh:
        reader = csv.reader(fh)
        try:
            rows = [(reader.line_num, r) for r in reader if any(cell.strip() for cell in r)]
        except csv.Error as exc:
            raise CoexploreError(f"line {reader.line_num}: {exc}", file=path, expected=EXPECTED) from None
    if len(rows) < 2:
        raise CoexploreError("the trace has no requests" if rows else "the trace is empty", file=path,
                             expected=EXPECTED)
    header = [h.strip().lstrip("\ufeff").lower() for h in rows[0][1]]       # (Excel's "CSV UTF-8" BOM)
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        raise CoexploreError(f"column {twice[0]!r} appears {header.count(twice[0])} times", file=path, key=twice[0],
                             expected="each column once")
    if "dnn" in header and "model" in header:
        raise CoexploreError("both a 'dnn' and a 'model' column", file=path, key="model",
                             expected="one of them: dnn (names) or model (indices)")
    col = {h: i for i, h in enumerate(header)}
    for need in ("arrival_cycle", "deadline_cycle"):
        if need not in col:
            raise CoexploreError(f"no column {need!r} (columns: {', '.join(header)})", file=path, key=need,
                                 expected=EXPECTED)
    who = "dnn" if "dnn" in col else "model" if "model" in col else None
    if who is None:
        raise CoexploreError(f"no column 'dnn' or 'model' (columns: {', '.join(header)})", file=path, key="dnn",
                             expected=EXPECTED)
    group = "seed" if "seed" in col else "stream" if "stream" in col else None
    names = {n: i for i, n in enumerate(model_names)}
    per: dict[int, list] = {}
    for line, r in rows[1:]:
        if len(r) > len(header) and any(c.strip() for c in r[len(header):]):
            raise CoexploreError(f"line {line}: {len(r)} cells for {len(header)} columns", file=path,
                                 expected="as many cells as the header has columns (a comma inside a value "
                                          "needs quotes)")

        def cell(key):
            i = col[key]
            if i >= len(r) or not r[i].strip():
                raise CoexploreError(f"line {line}: no {key}", file=path, key=key, expected="a value in every row")
            return r[i].strip()

        def number(key, integral=False):
            """The cell as an exact decimal (log times of 1e18 cycles keep their last digits)."""
            text = cell(key)
            try:
                value = Decimal(text) if "_" not in text else Decimal("NaN")
            except InvalidOperation:
                value = Decimal("NaN")
            if not value.is_finite() or value < 0 or (integral and value != value.to_integral_value()):
                raise CoexploreError(f"line {line}: {key} {text!r}", file=path, key=key,
                                     expected="a whole number >= 0" if integral else "a finite number >= 0 (cycles)")
            return value

        arrival, deadline = number("arrival_cycle"), number("deadline_cycle")
        if deadline < arrival:
            raise CoexploreError(f"line {line}: deadline {deadline:g} before its arrival {arrival:g}", file=path,
                                 key="deadline_cycle", expected="deadlines >= arrivals (cycles)")
        if who == "dnn":
            name = cell("dnn")
            if name not in names:
                raise CoexploreError(f"line {line}: dnn {name!r} is not served", file=path, key="dnn",
                                     expected="one of " + ", ".join(model_names))
            model = names[name]
        else:
            model = int(number("model", integral=True))
            if model >= len(model_names):
                raise CoexploreError(f"line {line}: model {model}", file=path, key="model",
                                     expected=f"an index below {len(model_names)} ({', '.join(model_names)})")
        stream = int(number(group, integral=True)) if group else 0        # (exact: large ids stay apart)
        per.setdefault(stream, []).append((arrival, deadline, model))
    out = {}
    for stream in sorted(per):
        reqs = sorted(per[stream], key=lambda x: x[0])          # (stable: equal arrivals keep the file's order)
        # log timestamps (1e18 cycles: floats 256 apart there): the stream from its first arrival, exactly
        first = reqs[0][0] if reqs[0][0] >= REBASE_FROM else Decimal(0)
        out[stream] = RequestStream(np.array([float(a - first) for a, _, _ in reqs]),
                                    np.array([float(d - first) for _, d, _ in reqs]),
                                    np.array([m for _, _, m in reqs], np.int64), origin=format(first, "f"))
    return out


def trace_rates(streams: dict[int, RequestStream], num_models: int) -> np.ndarray | None:
    """Each DNN's request rate (per cycle) in the trace: its requests over the streams' summed spans
    (first to last arrival); None when no stream spans any time."""
    span = sum(float(s.arrival[-1] - s.arrival[0]) for s in streams.values())
    if span <= 0:
        return None
    counts = np.zeros(num_models)
    for s in streams.values():
        np.add.at(counts, s.model, 1.0)
    gaps = sum(len(s) - 1 for s in streams.values())     # a stream of n arrivals spans n - 1 gaps
    return counts / counts.sum() * gaps / span
