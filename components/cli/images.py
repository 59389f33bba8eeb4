"""`trainjobs dockerfiles`: render the Dockerfiles of the images trainjobs builds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.images.dockerfiles import stale, write


def _dockerfiles(args: argparse.Namespace) -> int:
    if args.check:
        outdated = stale(args.out)
        for name in outdated:
            print(f"{args.out / name} is stale: run `make images`", file=sys.stderr)
        return 1 if outdated else 0
    for path in write(args.out):
        print(path)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    command = subparsers.add_parser(
        "dockerfiles",
        help="render the Dockerfiles of the images trainjobs builds "
        "(declared in components/images/catalogue.py)",
    )
    command.add_argument(
        "--out",
        default=Path("images"),
        type=Path,
        metavar="DIR",
        help="where <image dir>/Dockerfile goes (default: images)",
    )
    command.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a Dockerfile is stale"
    )
    command.set_defaults(handler=_dockerfiles)
