"""Pre-flight checks: ask AWS whether a GPU job can schedule and start, before anything exists.

Jobs that cannot schedule (no such instance type, too many GPUs for one node, a type not
offered in the subnets' zones) or cannot start (image tag missing from ECR) otherwise sit
Pending for hours while nodes scale up for nothing. Each check is one read-only AWS call;
each failure is one message that says what is wrong and what to do.

AWS credentials, region and endpoint come the standard boto3 way (environment, shared config,
instance role; ``AWS_ENDPOINT_URL`` for a local endpoint). ``trainjobs preflight --stack NAME``
runs the checks from the command line; :func:`check_before_registering` runs them from the
Pulumi program.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainjobs.cloud.scheduling import GpuPod, SchedulingProfile, gpu_pods, pod_template
from trainjobs.core.errors import Problem, UserError
from trainjobs.core.extras import import_extra
from trainjobs.core.graph import Graph
from trainjobs.core.pod_template import GPU_RESOURCE

CONFIG_KEY = "trainjobs:gpuPool"

# <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]/<repository>[:<tag>][@<digest>]
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?"
    r"/(?P<repository>[^:@]+)(?::(?P<tag>[^@]+))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)
# Errors that mean "these credentials cannot talk to AWS at all", not "this check failed".
_REGION = re.compile(r"[a-z]{2,4}(?:-[a-z]+)+-[0-9]+", re.ASCII)
"""An AWS region name: the shape of every partition's ``regionRegex`` in botocore's
data/endpoints.json (``us-east-1``, ``us-gov-west-1``, ``cn-north-1``, ``eusc-de-east-1``).
botocore's own check (utils.validate_region_name) takes any host label, a trailing newline
included, and its error shows the name raw."""
_ACCESS_ERRORS = {
    "AuthFailure",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
}


class PreflightFailed(UserError):
    """Pre-flight checks found problems: the job would not schedule or start."""

    exit_code = 1

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        lines = [f"pre-flight checks failed ({len(self.problems)} problem(s))"]
        lines += [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class EcrImage:
    reference: str
    account: str
    region: str
    repository: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, reference: str) -> EcrImage | None:
        """The ECR coordinates of an image reference; None for other registries."""
        match = _ECR_IMAGE.fullmatch(reference)
        if match is None:
            return None
        tag, digest = match["tag"], match["digest"]
        return cls(
            reference,
            match["account"],
            match["region"],
            match["repository"],
            tag if tag or digest else "latest",
            digest,
        )


@dataclass(frozen=True)
class PreflightSettings:
    """What to check: the pool's instance types and subnets, the GPU pods, the images."""

    instance_types: tuple[str, ...]
    subnet_ids: tuple[str, ...]
    gpu_requests: tuple[GpuPod, ...] = ()
    images: tuple[str, ...] = ()
    gpu_resource: str = GPU_RESOURCE
    config_key: str = CONFIG_KEY
    """Where the instance types and subnets come from, for messages."""

    @classmethod
    def from_jobs(cls, profile: SchedulingProfile, graphs: Iterable[Graph]) -> PreflightSettings:
        graphs = list(graphs)
        requests = [pod for graph in graphs for pod in gpu_pods(graph, profile.gpu_resource)]
        return cls(
            instance_types=profile.instance_types,
            subnet_ids=profile.subnet_ids,
            gpu_requests=tuple(requests),
            images=tuple(images_of(graphs)),
            gpu_resource=profile.gpu_resource,
        )


def images_of(graphs: Iterable[Graph]) -> list[str]:
    """Every container image the graphs' pods run, init containers included, sorted."""
    images = set()
    for graph in graphs:
        for node in graph.nodes:
            template = pod_template(node.manifest)
            if template is None:
                continue
            pod = template["spec"]
            for container in [*(pod.get("initContainers") or []), *pod["containers"]]:
                images.add(container["image"])
    return sorted(images)


@dataclass
class CheckResult:
    """One check: what it established, or the problems it found; or why it did not run."""

    summary: str
    problems: list[Problem] = field(default_factory=list)
    skipped: bool = False

    @property
    def status(self) -> str:
        return "skip" if self.skipped else "FAIL" if self.problems else "ok"


class AwsClients:
    """boto3 clients made the standard way (credentials, region and endpoint from the
    environment and shared config), one per service and region."""

    def __init__(self, session: Any = None, stack_region: str | None = None) -> None:
        # botocore is slow to import and an extra: only pre-flight needs it.
        boto3 = import_extra("boto3", "`trainjobs preflight`")
        if session is None:
            # The AWS CLI reads AWS_REGION before AWS_DEFAULT_REGION and the profile's region;
            # botocore reads only those two (botocore/configprovider.py, "region"). The
            # stack's aws:region, which the Pulumi AWS provider would use, comes last.
            environment = os.environ.get("AWS_REGION") or None
            session = boto3.Session(region_name=environment)
            where = (
                "AWS_REGION" if environment else "AWS_DEFAULT_REGION or the AWS profile's region"
            )
            if session.region_name is None and stack_region:
                session = boto3.Session(region_name=stack_region)
                where = "stack config aws:region"
            _check_region(session.region_name, where)
        self.session = session
        self._clients: dict[tuple[str, str | None], Any] = {}

    def client(self, service: str, region: str | None = None) -> Any:
        from botocore.exceptions import NoRegionError

        key = (service, region)
        if key not in self._clients:
            try:
                self._clients[key] = self.session.client(service, region_name=region)
            except NoRegionError:
                raise UserError(
                    "no AWS region configured: set AWS_REGION (or AWS_DEFAULT_REGION), a region "
                    "in the AWS profile, or aws:region in the stack (pulumi config set aws:region "
                    "REGION)"
                ) from None
        return self._clients[key]


def region_problem(region: str) -> str | None:
    """Why ``region`` is not an AWS region name, or None."""
    if _REGION.fullmatch(region):
        return None
    return f"{region!r} is not an AWS region name; set a region name such as us-east-1"


def _check_region(region: str | None, where: str) -> None:
    """Raise :class:`UserError` naming ``where`` the session's region came from, if it is no
    region name (None: the client says none is configured)."""
    problem = region_problem(region) if region is not None else None
    if problem is not None:
        raise UserError(f"{where}: {problem}")


def run_checks(settings: PreflightSettings, aws: AwsClients | Any = None) -> list[CheckResult]:
    """Run every check; raises :class:`UserError` when AWS cannot be reached at all."""
    import_extra("botocore", "`trainjobs preflight`")  # one line, not an ImportError, if absent
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    clients = aws if isinstance(aws, AwsClients) else AwsClients(aws)
    try:
        ec2 = clients.client("ec2")
        gpus: dict[str, int] = {}
        results = _instance_type_checks(ec2, settings, gpus)
        results += _fit_checks(settings, gpus)
        results += _zone_checks(ec2, settings, gpus)
        results += _image_checks(clients, settings)
    except (NoCredentialsError, PartialCredentialsError):
        raise UserError(
            "no AWS credentials found: pre-flight checks read them the standard boto3 way "
            "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance role)"
        ) from None
    except EndpointConnectionError as error:
        raise UserError(f"cannot reach AWS: {error}") from None
    except ClientError as error:
        if _code(error) in _ACCESS_ERRORS:
            raise UserError(f"AWS refused the credentials: {_describe(error)}") from None
        raise
    return results


def run_preflight(settings: PreflightSettings, aws: AwsClients | Any = None) -> list[Problem]:
    """Every problem the checks found (empty when the job can schedule and start).

    ``aws`` is an :class:`AwsClients`, a ``boto3.Session``, or None for the default session.
    """
    return [problem for result in run_checks(settings, aws) for problem in result.problems]


def check_before_registering(
    profile: SchedulingProfile, graphs: Iterable[Graph], aws: AwsClients | Any = None
) -> None:
    """For the Pulumi program: raise :class:`PreflightFailed` if the jobs would not run.

    Does nothing under the Pulumi SDK's mock runtime: offline previews never call AWS.
    """
    from pulumi.runtime import mocks, settings

    if isinstance(settings.get_monitor(), mocks.MockMonitor):
        return
    problems = run_preflight(PreflightSettings.from_jobs(profile, graphs), aws)
    if problems:
        raise PreflightFailed(problems)


def _code(error: Any) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _describe(error: Any) -> str:
    details = error.response.get("Error", {})
    return f"{details.get('Code', 'error')}: {details.get('Message', str(error))}"


def _not_checked(summary: str, where: str, error: Any) -> CheckResult:
    """An AWS error other than "not found" (e.g. AccessDenied): the check could not run."""
    if _code(error) in _ACCESS_ERRORS:
        raise error
    return CheckResult(summary, [Problem(where, f"could not check: {_describe(error)}")])


def _instance_type_checks(
    ec2: Any, settings: PreflightSettings, gpus: dict[str, int]
) -> list[CheckResult]:
    """Each instance type exists in the region and has GPUs; records its GPU count."""
    from botocore.exceptions import ClientError

    region = ec2.meta.region_name
    if not settings.instance_types:
        return [CheckResult(f"instance types: none in {settings.config_key}", skipped=True)]
    results = []
    for index, name in enumerate(settings.instance_types):
        where = f"{settings.config_key}.instanceTypes[{index}]"
        try:
            found = ec2.describe_instance_types(InstanceTypes=[name])["InstanceTypes"]
        except ClientError as error:
            if _code(error) != "InvalidInstanceType":
                results.append(_not_checked(f"instance type {name}", where, error))
                continue
            found = []
        if not found:
            message = (
                f"instance type {name!r} does not exist in {region}; check the spelling "
                "(e.g. 'p4d.24xlarge', 'g6.xlarge')"
            )
            results.append(CheckResult(f"instance type {name}", [Problem(where, message)]))
            continue
        devices = (found[0].get("GpuInfo") or {}).get("Gpus") or []
        count = sum(device.get("Count", 0) for device in devices)
        if count == 0:
            message = (
                f"instance type {name!r} has no GPUs; choose a GPU instance type "
                "(e.g. 'g6.xlarge' with 1 L4, 'p4d.24xlarge' with 8 A100)"
            )
            results.append(CheckResult(f"instance type {name}", [Problem(where, message)]))
            continue
        gpus[name] = count
        model = " + ".join(f"{d.get('Manufacturer', '')} {d.get('Name', '')}" for d in devices)
        results.append(CheckResult(f"instance type {name} exists with {count}x {model.strip()}"))
    return results


def _fit_checks(settings: PreflightSettings, gpus: dict[str, int]) -> list[CheckResult]:
    """A pod runs on one node: its GPUs must fit one instance of every type of the pool."""
    results = []
    for request in settings.gpu_requests:
        problems = [
            Problem(
                request.workload,
                f"a pod requests {request.gpus} {settings.gpu_resource} but a {name} node has "
                f"{count}; a pod runs on one node, so request at most {count} and add "
                "replicas instead",
            )
            for name, count in gpus.items()
            if request.gpus > count
        ]
        fits = ", ".join(f"{name} ({count})" for name, count in gpus.items())
        results.append(
            CheckResult(
                f"{request.workload}: {request.gpus} GPUs per pod fit one node of {fits}",
                problems,
            )
        )
    return results


def _zone_checks(ec2: Any, settings: PreflightSettings, gpus: dict[str, int]) -> list[CheckResult]:
    """Each instance type is offered in the availability zone of every subnet."""
    from botocore.exceptions import ClientError

    region = ec2.meta.region_name
    if not settings.subnet_ids:
        return [CheckResult(f"subnets: none in {settings.config_key}", skipped=True)]
    zones: dict[int, tuple[str, str]] = {}
    results = []
    for index, subnet in enumerate(settings.subnet_ids):
        where = f"{settings.config_key}.subnetIds[{index}]"
        try:
            found = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"]
        except ClientError as error:
            if _code(error) != "InvalidSubnetID.NotFound":
                results.append(_not_checked(f"subnet {subnet}", where, error))
                continue
            found = []
        if not found:
            problem = Problem(where, f"subnet {subnet!r} does not exist in {region}")
            results.append(CheckResult(f"subnet {subnet}", [problem]))
            continue
        zones[index] = (subnet, found[0]["AvailabilityZone"])
    for name in gpus if zones else ():  # no zone to check when no subnet was found
        offered = _offered_zones(ec2, name)
        problems = []
        for index, (subnet, zone) in zones.items():
            if zone in offered:
                continue
            where = f"{settings.config_key}.subnetIds[{index}]"
            instead = (
                f"it is offered in {', '.join(sorted(offered))}"
                if offered
                else f"it is not offered in any availability zone of {region}"
            )
            problems.append(
                Problem(where, f"{name} is not offered in {zone} (subnet {subnet}); {instead}")
            )
        checked = ", ".join(sorted({zone for _, zone in zones.values()}))
        results.append(CheckResult(f"{name} is offered in {checked}", problems))
    return results


def _offered_zones(ec2: Any, instance_type: str) -> set[str]:
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    pages = paginator.paginate(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )
    return {item["Location"] for page in pages for item in page["InstanceTypeOfferings"]}


def _image_checks(clients: AwsClients, settings: PreflightSettings) -> list[CheckResult]:
    """Each pre-built image a pod names in ECR is there, by tag or by digest."""
    from botocore.exceptions import ClientError

    results = []
    for reference in settings.images:
        image = EcrImage.parse(reference)
        if image is None:
            results.append(CheckResult(f"image {reference}: not in ECR", skipped=True))
            continue
        ecr = clients.client("ecr", image.region)
        image_id = {"imageDigest": image.digest} if image.digest else {"imageTag": image.tag}
        where = f"image {reference}"
        place = f"ECR repository {image.repository!r} (registry {image.account}, {image.region})"
        try:
            ecr.describe_images(
                registryId=image.account, repositoryName=image.repository, imageIds=[image_id]
            )
        except ClientError as error:
            code = _code(error)
            if code == "RepositoryNotFoundException":
                message = f"{place} does not exist; create it and push the image"
            elif code == "ImageNotFoundException" and image.digest:
                message = f"digest {image.digest} is not in {place}; push the image or fix it"
            elif code == "ImageNotFoundException":
                message = f"tag {image.tag!r} is not in {place}; push the image or fix the tag"
            else:
                results.append(_not_checked(f"image {reference}", where, error))
                continue
            results.append(CheckResult(f"image {reference}", [Problem(where, message)]))
            continue
        results.append(CheckResult(f"image {reference} is in ECR"))
    return results
