"""`trainjobs preflight`: ask AWS whether a stack's GPU jobs can schedule, before `pulumi up`."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from trainjobs.cloud.preflight import (
    CONFIG_KEY,
    AwsClients,
    PreflightFailed,
    PreflightSettings,
    run_checks,
)
from trainjobs.core.errors import UserError


def _settings_for_stack(stack: str, project: Path) -> tuple[PreflightSettings, str | None]:
    """The stack's jobs and GPU profile, read the way the Pulumi program reads them, and its
    aws:region."""
    import pulumi

    from trainjobs.deploy.infra_stack import stack_outputs
    from trainjobs.deploy.program import StackSettings, load_jobs
    from trainjobs.review.preview import stack_config

    config = stack_config(project, stack)
    pulumi.runtime.set_all_config(config, [])
    settings = StackSettings.from_config(pulumi.Config("trainjobs"))
    if settings.infra_stack is not None:  # the pool of `trainjobs:infraStack`
        settings = settings.with_infra_stack(stack_outputs(project, settings.infra_stack))
    profile = settings.gpu_pool
    if profile is None:
        raise UserError(
            f"stack {stack} sets no {CONFIG_KEY}: pre-flight checks need the GPU pool's "
            "scheduling profile (the infra stack's schedulingProfiles output; see infra/)"
        )
    with contextlib.chdir(project):  # job files are relative to the project, as for Pulumi
        jobs = load_jobs(settings)
    region = config.get("aws:region")
    preflight = PreflightSettings.from_jobs(profile, [job.graph for job in jobs])
    return preflight, region if isinstance(region, str) and region else None


def _preflight(args: argparse.Namespace) -> int:
    settings, stack_region = _settings_for_stack(args.stack, args.project)
    clients = AwsClients(stack_region=stack_region)
    results = run_checks(settings, clients)
    print(f"pre-flight checks for stack {args.stack} (region {clients.session.region_name}):")
    for result in results:
        print(f"  {result.status:<4}  {result.summary}")
    problems = [problem for result in results for problem in result.problems]
    if problems:
        print(str(PreflightFailed(problems)), file=sys.stderr)
        return PreflightFailed.exit_code
    print("all pre-flight checks passed")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    preflight = subparsers.add_parser(
        "preflight",
        help="check a GPU job stack against AWS (instance types, zones, GPU fit, ECR images)",
        description="Ask AWS, read-only, whether the stack's GPU jobs can schedule and start: "
        "the pool's instance types exist and have GPUs, every GPU pod fits one instance, each "
        "type is offered in every subnet's zone, and ECR images exist. Credentials and region "
        "are found as boto3 and the AWS CLI find them (AWS_PROFILE, AWS_REGION, "
        "AWS_DEFAULT_REGION, the profile's region), else the stack's aws:region.",
        epilog="exit codes: 0 every check passed, 1 a check failed, 2 a mistake in the stack "
        "or no AWS credentials or region",
    )
    preflight.add_argument(
        "--stack", required=True, metavar="NAME", help="reads Pulumi.NAME.yaml (required)"
    )
    preflight.add_argument(
        "--project",
        default=Path("."),
        type=Path,
        metavar="DIR",
        help="the Pulumi project (default: .)",
    )
    preflight.set_defaults(handler=_preflight)
