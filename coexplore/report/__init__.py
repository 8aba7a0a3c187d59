"""Presentation of a design-space sweep's records: the Pareto plot (`pareto_plot`) and the
self-contained HTML report (`html`). Reads only the records and `coexplore.sweep`'s objective
definitions, so it never runs or imports a model, a searcher or a system."""
