"""dqkit's exit codes, defined once: the CLI, every result's ``exit_code`` and the reports use these.

As ``diff``: 0 = clean / identical, 1 = differences or violations found, 2 = error (or an answer that
covers only part of the input). TCFC adds 3: the time budget ran out before every fragment was compared.
"""
from __future__ import annotations

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: TCFC: the budget expired with fragments left uncompared (the answer is coarse, not wrong)
EXIT_UNCOMPLETED = 3
