"""`trainjobs runs` and `trainjobs logs`: the local runs of this project and their output."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainjobs.local.history import RunRecord

RUNS_HELP = (
    "a directory of run directories, the only place looked (default: out/runs and every run "
    "of yours elsewhere)"
)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{rest:02d}s"


def _started(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _runs(args: argparse.Namespace) -> int:
    from trainjobs.core.terminal import escape
    from trainjobs.local.api import list_local_runs

    runs = list_local_runs(args.dir)
    if args.json:
        print(json.dumps([_as_json(run) for run in runs], indent=2))
        return 0
    if not runs:
        where = "" if args.dir is None else f" in {escape(str(args.dir))}"
        print(f"no runs{where}")
        return 0
    # A table built here from what run directories say: no field may drive the terminal or
    # break the table's lines, wherever it is printed.
    rows = [["JOB", "KIND", "OUTCOME", "STARTED (UTC)", "DURATION", "RUN DIR"]]
    rows += [
        [
            escape(cell)
            for cell in (
                run.job,
                run.kind,
                run.outcome,
                _started(run.started),
                _duration(run.duration_seconds),
                str(run.run_dir),
            )
        ]
        for run in runs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)]
        print("  ".join([*cells, row[5]]))
    return 0


def _as_json(run: RunRecord) -> dict[str, object]:
    started = run.started.isoformat().replace("+00:00", "Z") if run.started else None
    return {
        "job": run.job,
        "kind": run.kind,
        "outcome": run.outcome,
        "started": started,
        "durationSeconds": run.duration_seconds,
        "runDir": str(run.run_dir),
    }


def _logs(args: argparse.Namespace) -> int:
    from trainjobs.core.terminal import escape
    from trainjobs.local.history import RUNS_DIRECTORY, find_run, read_logs

    run_dir = find_run(args.run, args.dir or RUNS_DIRECTORY, everywhere=args.dir is None)
    # On a terminal, a pod's escape sequences would drive it, as `trainjobs run` shows them;
    # piped, the lines stay as the pods wrote them.
    shown = escape if sys.stdout.isatty() else str
    read_logs(
        run_dir,
        args.pod,
        args.follow,
        args.timestamps,
        lambda line: print(shown(line), flush=args.follow),
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    runs = subparsers.add_parser(
        "runs",
        help="list the local runs: job, kind, outcome, start, duration, run directory",
        description="List your local runs, oldest first: those in out/runs (where `trainjobs "
        "run` puts them by default) and every run made with --run-dir elsewhere (an index "
        "beside the run records remembers them), or only those in --dir: each one's job, "
        "kind, outcome (Running while its runtime runs, Unknown when it was killed and not "
        "yet cleaned up after), start time, duration and run directory.",
        epilog="exit codes: 0 listed (or none to list), 2 an invalid option",
    )
    runs.add_argument("--dir", type=Path, metavar="DIR", help=RUNS_HELP)
    runs.add_argument(
        "--json", action="store_true", help="print the runs as a JSON list, one object each"
    )
    runs.set_defaults(handler=_runs)

    logs = subparsers.add_parser(
        "logs",
        help="print or follow the pods' logs of a local run",
        description="Print the logs of a local run: one pod's lines, or every pod's with a "
        "[pod] prefix in the order they were written. With -f, keep printing new lines "
        "until the run ends, as `kubectl logs -f` does.",
        epilog="exit codes: 0 printed (with -f: the run ended), 2 no such run or pod, "
        "130 interrupted",
    )
    logs.add_argument(
        "run",
        metavar="RUN",
        help="a run directory, its name under --dir, or a job name (its latest run)",
    )
    logs.add_argument(
        "pod", nargs="?", metavar="POD", help="only this pod's log (default: every pod's)"
    )
    logs.add_argument(
        "-f", "--follow", action="store_true", help="follow the logs until the run ends"
    )
    logs.add_argument(
        "--timestamps",
        action="store_true",
        help="show when each line was written (UTC, as in the log files)",
    )
    logs.add_argument("--dir", type=Path, metavar="DIR", help=RUNS_HELP)
    logs.set_defaults(handler=_logs)
