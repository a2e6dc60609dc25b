"""``dqkit report NAME -p KEY VALUE ... -o OUTDIR``: run a template notebook into a reproducible report."""
from __future__ import annotations

import argparse
import sys

from dqkit.cli import EXIT_ERROR, EXIT_SAME


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``report`` subcommand."""
    p = sub.add_parser(
        "report", help="execute a report template (papermill) into OUTDIR as .ipynb and .html",
        description="Execute the template notebook NAME with papermill and write OUTDIR/NAME_report.ipynb "
                    "(the executed notebook) and OUTDIR/NAME_report.html (code hidden, charts embedded, "
                    "self-contained). The parameters are checked before any kernel starts. Exit 0 on "
                    "success; 2 when a parameter is refused or the run fails: OUTDIR is then left as it "
                    "was, and the failed notebook (error at the top) is kept in a temporary folder named "
                    "on stderr.",
        epilog="Example: dqkit report delta -p old data/users/old -p new data/users/new -p key users=id "
               "-o reports/users. Repeatable: -p key TABLE=COL[,COL] (joined with ';'), -p table T and "
               "-p exclude T[.COL] (joined with ',').")
    from dqkit.report import report_names
    from dqkit.systems import all_systems

    described = {s.name: s.summary for s in all_systems()}
    p.add_argument("name", metavar="NAME", choices=report_names(),
                   help="the report: " + "; ".join(f"{n} ({described[n]})" for n in report_names()))
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                   help="a template parameter (repeat for more)")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="folder for the executed notebook and HTML (required "
                                                         "unless --list-parameters)")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel to execute with (default: python3)")
    p.add_argument("--list-parameters", action="store_true", help="list the template's parameters and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute the report; print where it went; exit 2 with the cause when it fails."""
    from dqkit.report import collect_parameters, run_report, template_parameters

    from dqkit.errors import ParameterError

    known = template_parameters(args.name)
    if args.list_parameters:
        for name, spec in known.items():
            if name == "report_dir":
                continue  # filled in by dqkit report itself
            print(f"{name} = {spec.get('default')}    # {spec.get('help', '')}")
        return EXIT_SAME
    if not args.out:
        raise ParameterError("the report needs an output folder", hint="pass -o OUTDIR")
    parameters = collect_parameters(args.parameter, known, args.name)
    outcome = run_report(args.name, parameters, args.out, kernel_name=args.kernel)
    if not outcome.ok:
        print(f"dqkit: error: the {args.name} report failed: {outcome.error_class}: {outcome.error}",
              file=sys.stderr)
        print(f"dqkit: nothing was written to {args.out}; the executed notebook, with the error at the top, "
              f"is kept at {outcome.notebook}", file=sys.stderr)
        return EXIT_ERROR
    print(outcome.html)
    print(f"dqkit: executed notebook {outcome.notebook} ({outcome.seconds:.1f} s)", file=sys.stderr)
    return EXIT_SAME
