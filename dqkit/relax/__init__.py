"""Daisy: queries over dirty data, cleaned on demand into probabilistic candidate values.

``Daisy`` registers tables and rules and answers queries (``query``) by cleaning only what each query
touches (relaxation, FD and inequality-DC cleaning, clean_⋈, the cost model); ``QueryResult`` is the
answer on the common result contract. See ``dqkit.relax.model`` for the representation.
"""
from __future__ import annotations

from dqkit.relax._result import QueryResult
from dqkit.relax.cost import CostModel, full_cost, incremental_cost
from dqkit.relax.dc import hypergeometric_extra_iteration, relaxed_size_bound, tighten
from dqkit.relax.engine import STRATEGIES, Daisy, StateMismatchError
from dqkit.relax.sql import UnsupportedQueryError, parse_query

__all__ = ["Daisy", "QueryResult", "CostModel", "incremental_cost", "full_cost", "tighten",
           "hypergeometric_extra_iteration", "relaxed_size_bound", "STRATEGIES", "StateMismatchError",
           "UnsupportedQueryError", "parse_query"]
