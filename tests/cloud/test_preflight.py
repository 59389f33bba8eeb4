"""Pre-flight checks against AWS, mocked by moto: one exact message per failure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import boto3
import pulumi
import pulumi.runtime.mocks
import pytest
import yaml
from moto import mock_aws

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.cloud.preflight import (
    CheckResult,
    EcrImage,
    PreflightFailed,
    PreflightSettings,
    check_before_registering,
    run_checks,
    run_preflight,
)
from trainjobs.cloud.scheduling import GpuPod, SchedulingProfile
from trainjobs.kinds.registry import load_job

REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
IMAGE = f"{REGISTRY}/trainjobs/chainermn:7.8.1-cuda12.2"
DIGEST = "sha256:" + "a" * 64
# One session for the tests that call AWS through moto: botocore loads each service's model
# once per session, which costs far more than the checks themselves.
SESSION = boto3.Session()
MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {},
        "layers": [],
    }
)


@pytest.fixture
def aws_env(monkeypatch):
    """Fake credentials and a region, and nothing from the developer's own AWS setup."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")  # not needed; slow to load


def checks(preflight_settings: PreflightSettings) -> list[CheckResult]:
    return run_checks(preflight_settings, SESSION)


def problems(preflight_settings: PreflightSettings) -> list[str]:
    return [str(problem) for problem in run_preflight(preflight_settings, SESSION)]


def create_aws_world() -> dict[str, str]:
    """Subnets in us-east-1a and us-east-1e (where moto's data has no p4d.24xlarge) and the
    ECR image the GPU example runs."""
    ec2 = SESSION.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"][
            "SubnetId"
        ]
        for zone, cidr in (("us-east-1a", "10.0.1.0/24"), ("us-east-1e", "10.0.2.0/24"))
    }
    ecr = SESSION.client("ecr")
    ecr.create_repository(repositoryName="trainjobs/chainermn")
    ecr.put_image(
        repositoryName="trainjobs/chainermn",
        imageManifest=MANIFEST,
        imageTag="7.8.1-cuda12.2",
        imageDigest=DIGEST,
    )
    return subnets


@pytest.fixture
def aws(aws_env):
    with mock_aws():
        yield create_aws_world()


def settings(subnets: list[str], **overrides) -> PreflightSettings:
    fields = {
        "instance_types": ("p4d.24xlarge",),
        "subnet_ids": tuple(subnets),
        "gpu_requests": (GpuPod("StatefulSet/train-worker", 8),),
        "images": (IMAGE,),
    }
    return PreflightSettings(**{**fields, **overrides})


def test_a_job_that_fits_the_pool_passes_every_check(aws):
    results = checks(settings([aws["us-east-1a"]]))
    assert [(r.status, r.summary) for r in results] == [
        ("ok", "instance type p4d.24xlarge exists with 8x NVIDIA A100"),
        ("ok", "StatefulSet/train-worker: 8 GPUs per pod fit one node of p4d.24xlarge (8)"),
        ("ok", "p4d.24xlarge is offered in us-east-1a"),
        ("ok", f"image {IMAGE} is in ECR"),
    ]


def test_an_instance_type_that_does_not_exist(aws):
    assert problems(settings([aws["us-east-1a"]], instance_types=("p4d.24xlarg",))) == [
        "trainjobs:gpuPool.instanceTypes[0]: instance type 'p4d.24xlarg' does not exist in "
        "us-east-1; check the spelling (e.g. 'p4d.24xlarge', 'g6.xlarge')"
    ]


def test_an_instance_type_without_gpus(aws):
    assert problems(settings([aws["us-east-1a"]], instance_types=("m5.large",))) == [
        "trainjobs:gpuPool.instanceTypes[0]: instance type 'm5.large' has no GPUs; choose a GPU "
        "instance type (e.g. 'g6.xlarge' with 1 L4, 'p4d.24xlarge' with 8 A100)"
    ]


def test_a_pod_asking_for_more_gpus_than_one_instance_has(aws):
    requests = (GpuPod("StatefulSet/train-worker", 16), GpuPod("Job/train-master", 8))
    assert problems(settings([aws["us-east-1a"]], gpu_requests=requests)) == [
        "StatefulSet/train-worker: a pod requests 16 nvidia.com/gpu but a p4d.24xlarge node has "
        "8; a pod runs on one node, so request at most 8 and add replicas instead"
    ]


def test_an_instance_type_not_offered_in_a_subnets_zone_names_where_it_is(aws):
    assert problems(settings([aws["us-east-1a"], aws["us-east-1e"]])) == [
        f"trainjobs:gpuPool.subnetIds[1]: p4d.24xlarge is not offered in us-east-1e (subnet "
        f"{aws['us-east-1e']}); it is offered in us-east-1a, us-east-1b, us-east-1c, us-east-1d"
    ]


def test_a_subnet_that_does_not_exist(aws):
    assert problems(settings(["subnet-0123456789abcdef0"])) == [
        "trainjobs:gpuPool.subnetIds[0]: subnet 'subnet-0123456789abcdef0' does not exist in "
        "us-east-1"
    ]


def test_zones_are_not_checked_when_no_subnet_exists(aws):
    results = checks(settings(["subnet-0123456789abcdef0"]))
    assert [r.summary for r in results if "offered" in r.summary] == []


def test_an_image_tag_missing_from_ecr(aws):
    missing = f"{REGISTRY}/trainjobs/chainermn:7.8.2"
    assert problems(settings([aws["us-east-1a"]], images=(missing,))) == [
        f"image {missing}: tag '7.8.2' is not in ECR repository 'trainjobs/chainermn' "
        "(registry 123456789012, us-east-1); push the image or fix the tag"
    ]


def test_an_image_digest_missing_from_ecr(aws):
    missing = f"{REGISTRY}/trainjobs/chainermn@sha256:{'b' * 64}"
    assert problems(settings([aws["us-east-1a"]], images=(missing,))) == [
        f"image {missing}: digest sha256:{'b' * 64} is not in ECR repository "
        "'trainjobs/chainermn' (registry 123456789012, us-east-1); push the image or fix it"
    ]


def test_an_image_by_digest_that_exists_passes(aws):
    pinned = f"{REGISTRY}/trainjobs/chainermn@{DIGEST}"
    assert problems(settings([aws["us-east-1a"]], images=(pinned,))) == []


def test_an_ecr_repository_that_does_not_exist(aws):
    missing = f"{REGISTRY}/trainjobs/pytorch:2.13.0"
    assert problems(settings([aws["us-east-1a"]], images=(missing,))) == [
        f"image {missing}: ECR repository 'trainjobs/pytorch' (registry 123456789012, "
        "us-east-1) does not exist; create it and push the image"
    ]


def test_images_outside_ecr_are_skipped(aws):
    results = checks(settings([aws["us-east-1a"]], images=("registry.k8s.io/kubectl:v1.34.2",)))
    assert results[-1] == CheckResult(
        "image registry.k8s.io/kubectl:v1.34.2: not in ECR", skipped=True
    )


def test_every_failure_is_reported_at_once(aws):
    found = run_preflight(
        settings(
            [aws["us-east-1e"]],
            gpu_requests=(GpuPod("StatefulSet/train-worker", 9),),
            images=(f"{REGISTRY}/trainjobs/chainermn:nope",),
        ),
        SESSION,
    )
    assert [p.path for p in found] == [
        "StatefulSet/train-worker",
        "trainjobs:gpuPool.subnetIds[0]",
        f"image {REGISTRY}/trainjobs/chainermn:nope",
    ]


def test_ecr_references_are_parsed_into_registry_repository_and_tag():
    assert EcrImage.parse(IMAGE) == EcrImage(
        IMAGE, "123456789012", "us-east-1", "trainjobs/chainermn", "7.8.1-cuda12.2", None
    )
    assert EcrImage.parse(f"{REGISTRY}/team/app").tag == "latest"
    assert EcrImage.parse("nvcr.io/nvidia/k8s-device-plugin:v0.19.0") is None


def test_settings_come_from_the_profile_and_the_jobs_gpu_pods():
    profile = SchedulingProfile.from_config(
        yaml.safe_load((REPO / "Pulumi.chainermn-gpu.yaml").read_text())["config"][
            "trainjobs:gpuPool"
        ]
    )
    assert profile is not None
    job = load_job(REPO / "jobs" / "chainermn-gpu.yaml")
    assert PreflightSettings.from_jobs(profile, [job.graph]) == PreflightSettings(
        instance_types=("p4d.24xlarge",),
        subnet_ids=("subnet-0a1b2c3d4e5f60001",),
        gpu_requests=(
            GpuPod("StatefulSet/chainermn-gpu-worker", 8),
            GpuPod("Job/chainermn-gpu-master", 8),
        ),
        images=(IMAGE, "registry.k8s.io/kubectl:v1.34.2"),
    )


def no_gpu_profile() -> SchedulingProfile:
    profile = SchedulingProfile.from_config(
        {
            "pool": "cpu",
            "gpusPerNode": 8,
            "nodeSelector": {"trainjobs.io/gpu-pool": "cpu"},
            "tolerations": [],
            "instanceTypes": ["m5.large"],
        }
    )
    assert profile is not None
    return profile


def test_the_program_hook_raises_with_every_problem(aws, monkeypatch):
    monkeypatch.setattr(pulumi.runtime.settings, "get_monitor", lambda: None)  # a real engine
    graph = load_job(REPO / "jobs" / "chainermn-gpu.yaml").graph
    with pytest.raises(PreflightFailed) as raised:
        check_before_registering(no_gpu_profile(), [graph], SESSION)
    assert raised.value.exit_code == 1
    assert str(raised.value) == (
        "pre-flight checks failed (1 problem(s))\n"
        "  trainjobs:gpuPool.instanceTypes[0]: instance type 'm5.large' has no GPUs; choose a GPU "
        "instance type (e.g. 'g6.xlarge' with 1 L4, 'p4d.24xlarge' with 8 A100)"
    )


class NoMocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        raise AssertionError("no resources expected")

    def call(self, args):
        raise AssertionError("no calls expected")


def test_the_program_hook_never_calls_aws_under_the_pulumi_mock_runtime(aws_env, monkeypatch):
    monitor = pulumi.runtime.mocks.MockMonitor(NoMocks())
    monkeypatch.setattr(pulumi.runtime.settings, "get_monitor", lambda: monitor)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    graph = load_job(REPO / "jobs" / "chainermn-gpu.yaml").graph
    assert check_before_registering(no_gpu_profile(), [graph], SESSION) is None


# The command line: `trainjobs preflight --stack NAME`


def gpu_stack_project(tmp_path: Path, subnet: str | None, image: str = IMAGE) -> Path:
    """A project with the GPU example job and a stack whose profile names ``subnet``."""
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    (tmp_path / "jobs").mkdir()
    job = (REPO / "jobs" / "chainermn-gpu.yaml").read_text().replace(IMAGE, image)
    (tmp_path / "jobs" / "gpu.yaml").write_text(job)
    config = yaml.safe_load((REPO / "Pulumi.chainermn-gpu.yaml").read_text())["config"]
    config["trainjobs:job"] = "jobs/gpu.yaml"
    if subnet is None:
        del config["trainjobs:gpuPool"]
    else:
        config["trainjobs:gpuPool"]["subnetIds"] = [subnet]
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def preflight(project: Path) -> int:
    return main(["preflight", "--stack", "test", "--project", str(project)])


def test_preflight_command_prints_each_check_and_exits_0(aws, tmp_path, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    assert preflight(project) == 0
    assert capsys.readouterr().out == (
        "pre-flight checks for stack test (region us-east-1):\n"
        "  ok    instance type p4d.24xlarge exists with 8x NVIDIA A100\n"
        "  ok    StatefulSet/chainermn-gpu-worker: 8 GPUs per pod fit one node of p4d.24xlarge (8)\n"
        "  ok    Job/chainermn-gpu-master: 8 GPUs per pod fit one node of p4d.24xlarge (8)\n"
        "  ok    p4d.24xlarge is offered in us-east-1a\n"
        f"  ok    image {IMAGE} is in ECR\n"
        "  skip  image registry.k8s.io/kubectl:v1.34.2: not in ECR\n"
        "all pre-flight checks passed\n"
    )


def test_preflight_command_exits_1_with_the_messages(aws, tmp_path, capsys):
    project = gpu_stack_project(
        tmp_path, aws["us-east-1e"], image=f"{REGISTRY}/trainjobs/chainermn:9"
    )
    assert preflight(project) == 1
    output = capsys.readouterr()
    assert "  FAIL  p4d.24xlarge is offered in us-east-1e\n" in output.out
    assert output.err == (
        "pre-flight checks failed (2 problem(s))\n"
        f"  trainjobs:gpuPool.subnetIds[0]: p4d.24xlarge is not offered in us-east-1e (subnet "
        f"{aws['us-east-1e']}); it is offered in us-east-1a, us-east-1b, us-east-1c, us-east-1d\n"
        f"  image {REGISTRY}/trainjobs/chainermn:9: tag '9' is not in ECR repository "
        "'trainjobs/chainermn' (registry 123456789012, us-east-1); push the image or fix the tag\n"
    )


def test_preflight_command_exits_2_for_a_stack_without_a_gpu_pool(aws, tmp_path, capsys):
    assert preflight(gpu_stack_project(tmp_path, None)) == 2
    assert capsys.readouterr().err == (
        "error: stack test sets no trainjobs:gpuPool: pre-flight checks need the GPU pool's "
        "scheduling profile (the infra stack's schedulingProfiles output; see infra/)\n"
    )


def test_preflight_command_exits_2_for_an_invalid_profile(aws, tmp_path, capsys):
    project = gpu_stack_project(tmp_path, "subnet-0a1b2c3d4e5f60001")
    stack = yaml.safe_load((project / "Pulumi.test.yaml").read_text())
    stack["config"]["trainjobs:gpuPool"]["gpusPerNode"] = "eight"
    (project / "Pulumi.test.yaml").write_text(yaml.safe_dump(stack))
    assert preflight(project) == 2
    assert capsys.readouterr().err == (
        "error: trainjobs:gpuPool: invalid GPU scheduling profile (1 problem(s))\n"
        "  gpusPerNode: must be a whole number (got 'eight')\n"
    )


def test_preflight_command_exits_2_without_credentials(aws_env, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert preflight(gpu_stack_project(tmp_path, "subnet-0a1b2c3d4e5f60001")) == 2
    assert capsys.readouterr().err == (
        "error: no AWS credentials found: pre-flight checks read them the standard boto3 way "
        "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance role)\n"
    )


@pytest.mark.filterwarnings("ignore:When using MotoServer")
def test_preflight_command_reaches_the_endpoint_in_aws_endpoint_url(aws_env, monkeypatch, tmp_path):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
        subnets = create_aws_world()  # through the endpoint: no in-process mock is active
        (tmp_path / "a").mkdir()
        (tmp_path / "e").mkdir()
        assert preflight(gpu_stack_project(tmp_path / "a", subnets["us-east-1a"])) == 0
        assert preflight(gpu_stack_project(tmp_path / "e", subnets["us-east-1e"])) == 1
    finally:
        server.stop()


# The region, found as the AWS CLI finds it: AWS_REGION, AWS_DEFAULT_REGION, the profile's
# region (botocore's configprovider reads only the last two), then the stack's aws:region.

FIRST_LINE = "pre-flight checks for stack test (region us-east-1):"


def test_aws_region_is_read_and_wins_over_aws_default_region(aws, tmp_path, monkeypatch, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert preflight(project) == 0
    assert capsys.readouterr().out.splitlines()[0] == FIRST_LINE


def test_the_profiles_region_is_read(aws, tmp_path, monkeypatch, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    config = tmp_path / "aws-config"
    config.write_text("[profile train]\nregion = us-east-1\n")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "train")
    assert preflight(project) == 0
    assert capsys.readouterr().out.splitlines()[0] == FIRST_LINE


def test_the_stacks_aws_region_is_read_when_aws_names_none(aws, tmp_path, monkeypatch, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    stack = project / "Pulumi.test.yaml"
    document = yaml.safe_load(stack.read_text())
    document["config"]["aws:region"] = "us-east-1"
    stack.write_text(yaml.safe_dump(document))
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert preflight(project) == 0
    assert capsys.readouterr().out.splitlines()[0] == FIRST_LINE


def test_the_environment_wins_over_the_stacks_aws_region(aws, tmp_path, monkeypatch, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    stack = project / "Pulumi.test.yaml"
    document = yaml.safe_load(stack.read_text())
    document["config"]["aws:region"] = "eu-west-1"
    stack.write_text(yaml.safe_dump(document))
    assert preflight(project) == 0
    assert capsys.readouterr().out.splitlines()[0] == FIRST_LINE


def test_no_region_anywhere_says_every_place_one_can_be_set(aws, tmp_path, monkeypatch, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert preflight(project) == 2
    assert capsys.readouterr().err == (
        "error: no AWS region configured: set AWS_REGION (or AWS_DEFAULT_REGION), a region in "
        "the AWS profile, or aws:region in the stack (pulumi config set aws:region REGION)\n"
    )


# A region that is no AWS region name: botocore's own error printed it raw (or accepted it,
# a trailing newline included), so it is refused before any client is made.

REGION_FIX = "set a region name such as us-east-1"


@pytest.mark.parametrize(
    "region", ["us-east-1#", "us-east-1\x1b]0;owned\x07", "us-east-1\n", "US-EAST-1"]
)
def test_an_aws_region_that_is_no_region_name_is_refused_escaped(
    aws, tmp_path, monkeypatch, capsys, region
):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    monkeypatch.setenv("AWS_REGION", region)
    assert preflight(project) == 2
    shown = repr(region).replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert capsys.readouterr() == (
        "",
        f"error: AWS_REGION: {shown} is not an AWS region name; {REGION_FIX}\n",
    )


def test_a_stacks_aws_region_that_is_no_region_name_is_refused(aws, tmp_path, monkeypatch, capsys):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    stack = project / "Pulumi.test.yaml"
    document = yaml.safe_load(stack.read_text())
    document["config"]["aws:region"] = "eu west 1"
    stack.write_text(yaml.safe_dump(document))
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert preflight(project) == 2
    assert capsys.readouterr().err == (
        f"error: stack config aws:region: 'eu west 1' is not an AWS region name; {REGION_FIX}\n"
    )


def test_a_default_region_that_is_no_region_name_names_where_it_may_come_from(
    aws, tmp_path, monkeypatch, capsys
):
    project = gpu_stack_project(tmp_path, aws["us-east-1a"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1;")
    assert preflight(project) == 2
    assert capsys.readouterr().err == (
        "error: AWS_DEFAULT_REGION or the AWS profile's region: 'us-east-1;' is not an AWS "
        f"region name; {REGION_FIX}\n"
    )


@pytest.mark.parametrize(
    "region", ["us-east-1", "us-gov-west-1", "cn-north-1", "us-isob-east-1", "eusc-de-east-1"]
)
def test_the_region_names_of_every_aws_partition_are_accepted(region):
    from trainjobs.cloud.preflight import region_problem

    assert region_problem(region) is None
