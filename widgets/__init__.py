"""dqkit's widget layer (the design card's widgets/ folder, installed as ``dqkit.widgets``).

Thin ipywidgets views over plain-Python controllers (``dqkit.widgets.controllers``) that call dqkit's
public API only: ``TablePicker``, ``ColumnPicker``, ``SparkProgress``, ``ResultView`` (any result's sections),
``DeltaExplorer``, ``DedupExplorer`` (blocking, comparisons, threshold, clusters, waterfalls), ``RulePicker``
(rules with live validation), ``ViolationExplorer`` (detect, repair, violation graphs), ``TcfcExplorer``
(time-budgeted fragment comparison with a growing drill-down tree), ``LakeExplorer`` (R2D2 on a lake) and
``QueryCleaner`` (Daisy: queries cleaned on demand), ``QualityTimeline`` (a metric of a history over time,
with its band and flagged runs), ``SinceView``/``ChangeReview`` (a nightly
``detect --since`` in New/Resolved/Persisting tabs; per-cell review of a change list), ``SystemExplorer``/``SystemController`` (any system of
the registry, derived from its declaration); ``RunController``/``ExplorerBase`` are the run plumbing
every explorer shares.
"""
from __future__ import annotations

from dqkit.widgets.controllers import DeltaController, RunController, TableListing
from dqkit.widgets.dedup_explorer import DedupController, DedupExplorer
from dqkit.widgets.delta_explorer import DeltaExplorer
from dqkit.widgets.lake_explorer import LakeController, LakeExplorer
from dqkit.widgets.pickers import ColumnPicker, TablePicker
from dqkit.widgets.progress import SparkProgress
from dqkit.widgets.quality_timeline import QualityTimeline, TimelineController
from dqkit.widgets.query_cleaner import QueryCleaner, QueryController
from dqkit.widgets.result_view import ExplorerBase, ResultView
from dqkit.widgets.since_review import ChangeReview, SinceView
from dqkit.widgets.system import SystemController, SystemExplorer
from dqkit.widgets.tcfc_explorer import TcfcController, TcfcExplorer
from dqkit.widgets.rules_controller import RuleProblem, RulesController
from dqkit.widgets.rule_picker import RulePicker
from dqkit.widgets.violation_controller import ViolationController, ViolationRun
from dqkit.widgets.rules_explorer import ViolationExplorer

__all__ = ["ChangeReview", "ColumnPicker", "DedupController", "DedupExplorer", "DeltaController", "DeltaExplorer", "ExplorerBase",
           "LakeController", "LakeExplorer", "QualityTimeline", "QueryCleaner", "QueryController", "ResultView", "RulePicker", "SinceView",
           "RuleProblem", "RulesController", "RunController", "SparkProgress", "SystemController", "SystemExplorer", "TableListing", "TablePicker",
           "TcfcController", "TcfcExplorer", "TimelineController",
           "ViolationController", "ViolationExplorer", "ViolationRun"]
