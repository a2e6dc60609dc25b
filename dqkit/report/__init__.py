"""``dqkit report``: a system's template notebook executed by papermill into a notebook and an HTML page."""
from __future__ import annotations

from dqkit.report.runner import (KERNEL, KERNEL_LOG, REPORT_OPTIONS, ReportError, ReportOutcome, collect_parameters,
                                 command_line, demo_report, environment, prepare_report, report_heading, report_names,
                                 report_record, run_report, show_result, template_parameters, to_html)

__all__ = ["KERNEL", "KERNEL_LOG", "REPORT_OPTIONS", "ReportError", "ReportOutcome", "collect_parameters",
           "command_line", "demo_report", "environment", "prepare_report", "report_heading", "report_names",
           "report_record", "run_report", "show_result", "template_parameters", "to_html"]
