"""Presentation of a design-space sweep's records: the Pareto plot (`pareto_plot`) and the
self-contained HTML report (`html`). Reads only the records and `coexplore.sweep`'s objective
definitions, so it never runs or imports a model, a searcher or a system."""

import warnings as _warnings

# matplotlib warns of a character its font lacks at every draw (tight_layout too), with its source
# line; `schedule_plot.save_png` says the missing characters once instead
_warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
