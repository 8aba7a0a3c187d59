"""Searchers behind one ask/tell interface (see `coexplore.search.base`)."""
