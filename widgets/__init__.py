"""dqkit's widget layer (the design card's widgets/ folder, installed as ``dqkit.widgets``).

Thin ipywidgets views over plain-Python controllers (``dqkit.widgets.controllers``) that call dqkit's
public API only: ``TablePicker``, ``ColumnPicker``, ``SparkProgress``, ``ResultView`` (any result's sections),
``DeltaExplorer``, ``QueryCleaner`` (Daisy: queries cleaned on demand), ``RulePicker`` (rules with live validation) and ``ViolationExplorer`` (detect, repair,
violation graphs); ``RunController``/``ExplorerBase`` are the run plumbing every explorer shares.
"""
from __future__ import annotations

from dqkit.widgets.controllers import DeltaController, RunController, TableListing
from dqkit.widgets.delta_explorer import DeltaExplorer
from dqkit.widgets.pickers import ColumnPicker, TablePicker
from dqkit.widgets.progress import SparkProgress
from dqkit.widgets.query_cleaner import QueryCleaner, QueryController
from dqkit.widgets.result_view import ExplorerBase, ResultView
from dqkit.widgets.rules_explorer import (
    RulePicker, RuleProblem, RulesController, ViolationController, ViolationExplorer, ViolationRun,
)

__all__ = ["ColumnPicker", "DeltaController", "DeltaExplorer", "ExplorerBase", "QueryCleaner", "QueryController", "ResultView", "RulePicker",
           "RuleProblem", "RulesController", "RunController", "SparkProgress", "TableListing", "TablePicker",
           "ViolationController", "ViolationExplorer", "ViolationRun"]
