"""Argument types that several commands share, cheap to import.

`status` and `watch` load this module and not the job commands' (which load the pod
template machinery)."""

from __future__ import annotations

import argparse


def namespace_argument(value: str) -> str:
    """``--namespace``: a DNS-1123 label, as the API server requires of a namespace."""
    from trainjobs.core.names import namespace_problems

    problems = namespace_problems(value, "--namespace")
    if problems:
        raise argparse.ArgumentTypeError(problems[0].message)
    return value
