"""dqkit's widget layer (the design card's widgets/ folder, installed as ``dqkit.widgets``).

Thin ipywidgets views over plain-Python controllers (``dqkit.widgets.controllers``) that call dqkit's
public API only: ``TablePicker``, ``ColumnPicker``, ``SparkProgress`` and ``DeltaExplorer``.
"""
from __future__ import annotations

from dqkit.widgets.controllers import DeltaController, TableListing
from dqkit.widgets.delta_explorer import DeltaExplorer
from dqkit.widgets.pickers import ColumnPicker, TablePicker
from dqkit.widgets.progress import SparkProgress

__all__ = ["ColumnPicker", "DeltaController", "DeltaExplorer", "SparkProgress", "TableListing", "TablePicker"]
