"""Hostile specs and command lines, generated: every command answers with exit 0 or 2 (1 only
where the machine refuses), never a traceback, in bounded time and memory, and writes nothing
outside the output it was given.

Specs start from valid ones of each kind and have values replaced by what a careless or
hostile user writes (paths that climb out, NUL bytes, huge numbers, wrong types, YAML tricks);
raw files add aliases, deep nesting, duplicate keys and bytes that are not text.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import shutil
import tempfile
import time
import tracemalloc
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tests.local.runs import needs_open_mpi
from trainjobs.cli import main

SETTINGS = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SECONDS = 20.0
"""CPU seconds per command (this process's, so other load on the machine does not count); the
slowest legitimate answer here takes well under a second: a spec built to make the reader
work without end is what this bounds."""
MEMORY = 200 * 1024 * 1024

CONTAINER = {"name": "tensorflow", "image": "trainjobs/tensorflow:2.20.0-cpu"}
VALID: list[dict[str, Any]] = [
    {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "demo", "labels": {"team": "a"}},
        "spec": {
            "master": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "image": "trainjobs/chainermn:7.8.1",
                                "command": ["mpiexec", "-n", "2", "python3", "/train_mnist.py"],
                                "env": [{"name": "EPOCHS", "value": "1"}],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                            }
                        ],
                        "volumes": [{"name": "data", "emptyDir": {}}],
                    }
                }
            },
            "worker": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"image": "trainjobs/chainermn:7.8.1"}]}},
            },
        },
    },
    {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "team"},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 1},
            "tfReplicaSpecs": {
                "Chief": {"replicas": 1, "template": {"spec": {"containers": [CONTAINER]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [CONTAINER]}}},
            },
        },
    },
    {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "template": {
                        "spec": {"containers": [{"name": "pytorch", "image": "pytorch:1"}]}
                    },
                },
                "Worker": {
                    "replicas": 1,
                    "template": {
                        "spec": {"containers": [{"name": "pytorch", "image": "pytorch:1"}]}
                    },
                },
            }
        },
    },
]

HOSTILE_STRINGS = st.sampled_from(
    [
        "../..",
        "../../victim",
        "/victim",
        "a/../../victim",
        "..",
        ".",
        "",
        " ",
        "\x00",
        "a\x00b",
        "A=B",
        "$(HOME)",
        "$$",
        "x" * 300,
        "é",
        "-rf",
        "--help",
        "\n",
        "line\nbreak",
        "{{ value }}",
        "1e18",
        "abc",
        "-1",
        "0.5",
        "demo-assets",
        "chainer",
        "tensorflow",
        "nvidia.com/gpu",
        "metadata.name",
        "metadata.labels['team']",
        "spec.secret",
        "Always",
        "Never",
    ]
) | st.text(max_size=12)
HOSTILE_SCALARS = (
    HOSTILE_STRINGS
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.booleans()
    | st.none()
)
HOSTILE_VALUES = st.recursive(
    HOSTILE_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(HOSTILE_STRINGS, children, max_size=3)
    ),
    max_leaves=8,
)
RAW_FILES = st.sampled_from(
    [
        b"a: &a [1, *a]\n",
        b"a: " + b"[" * 3000 + b"]" * 3000 + b"\n",
        b"a: &a [x,x,x,x,x,x,x,x,x,x]\n"
        + b"".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n".encode()
            for i in range(8)
        ),
        b"metadata:\n  name: a\n  name: b\n",
        b"\xff\xfe\x00\x00garbage",
        b"\x89PNG\r\n\x1a\n",
        b"name: caf\xe9\n",
        b"a: !!python/object:os.system x\n",
        b"a: !!binary aGVsbG8=\n",
        b"---\na: 1\n---\nb: 2\n",
        b"- just\n- a list\n",
        b'config:\n  trainjobs:job: "jobs/\\0.yaml"\n',
        b"",
    ]
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


# Values of the same type as the one they replace, often valid: the mutated spec then gets
# past validation and exercises rendering and the runtime.
SAME_TYPE = {
    str: st.sampled_from(["x", "demo-2", "/data/x", "conf/a", "a.b_c", "1", "500m"])
    | HOSTILE_STRINGS,
    int: st.integers(-2, 5) | st.sampled_from([0o777, 2**31, 10**18]),
}


@st.composite
def hostile_documents(
    draw: st.DrawFn, bases: list[dict[str, Any]] = VALID, within: tuple[str, ...] = ()
) -> Any:
    """A valid spec with up to three values changed, removed or added (below the paths
    starting with one of ``within``, if given)."""
    document = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 3))):
        paths = [
            path
            for path in _paths(document)
            if path and (not within or ".".join(map(str, path)).startswith(within))
        ]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        old = parent[path[-1]]
        action = draw(st.sampled_from(["tweak", "tweak", "tweak", "replace", "remove", "add"]))
        if action == "tweak" and type(old) in SAME_TYPE:
            parent[path[-1]] = draw(SAME_TYPE[type(old)])
        elif action == "replace":
            parent[path[-1]] = draw(HOSTILE_VALUES)
        elif action == "remove" and len(paths) > 1:
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(HOSTILE_STRINGS)] = draw(HOSTILE_VALUES)
    return document


def spec_bytes(document: Any) -> bytes:
    return yaml.safe_dump(document, allow_unicode=True).encode("utf-8")


SPECS = hostile_documents().map(spec_bytes) | RAW_FILES


@contextlib.contextmanager
def sandbox() -> Iterator[Path]:
    """A fresh directory to work in (the current directory while inside)."""
    with tempfile.TemporaryDirectory(prefix="trainjobs-hostile-") as root:
        work = Path(root) / "work"
        work.mkdir()
        previous = Path.cwd()
        os.chdir(work)
        try:
            yield Path(root)
        finally:
            os.chdir(previous)


def everything(root: Path) -> set[Path]:
    return {path for path in root.rglob("*")}


def invoke(argv: list[str], *, memory: bool = True) -> tuple[int, str]:
    """Run the CLI in this process; its exit code and everything it printed. ``memory``
    traces allocations (slow: the preview and run tests, whose specs are read by the same
    code as validate's, leave it to the first test)."""
    out, err = io.StringIO(), io.StringIO()
    started = time.process_time()
    if memory:
        tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's own refusals
                code = int(exit_.code or 0)
        peak = tracemalloc.get_traced_memory()[1] if memory else 0
    finally:
        tracemalloc.stop()
    elapsed = time.process_time() - started
    printed = out.getvalue() + err.getvalue()
    event(f"{argv[0]} exit {code}")  # --hypothesis-show-statistics: what the examples reached
    assert elapsed < SECONDS, (argv, elapsed)
    assert peak < MEMORY, (argv, peak)
    assert "Traceback" not in printed, printed
    return code, printed


def check_written_only_below(root: Path, before: set[Path], output: Path) -> None:
    created = everything(root) - before
    # The output itself, what lies below it, and the directories made on the way to it.
    outside = [
        path
        for path in created
        if output not in (path, *path.parents) and path not in output.parents
    ]
    assert outside == [], outside
    assert not Path("/victim").exists()


OUT_NAMES = st.sampled_from(["out", "out/deeper", "spec.yaml", "dangling", "../out-sibling", "."])


@settings(SETTINGS, max_examples=120)
@given(
    spec=SPECS, out_name=OUT_NAMES, namespace=st.sampled_from(["default", "../x", "a b", "", "ok"])
)
@example(spec=spec_bytes(VALID[1]), out_name="out", namespace="default")
def test_validate_and_render_answer_hostile_specs_in_one_line(spec, out_name, namespace):
    with sandbox() as root:
        path = root / "work" / "spec.yaml"
        path.write_bytes(spec)
        (root / "work" / "dangling").symlink_to(root / "nowhere")
        before = everything(root)

        code, printed = invoke(["validate", str(path)])
        assert code in (0, 2), printed

        output = (root / "work" / out_name).resolve()
        code, printed = invoke(["render", str(path), "--out", out_name, "--namespace", namespace])
        assert code in (0, 2), printed
        check_written_only_below(root, before, output)


def write_project(root: Path, spec: bytes, stack_text: bytes | None) -> Path:
    project = root / "project"
    (project / "jobs").mkdir(parents=True)
    shutil.copy(REPO / "__main__.py", project / "__main__.py")
    shutil.copy(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "jobs" / "job.yaml").write_bytes(spec)
    stack = stack_text or b"config:\n  trainjobs:job: jobs/job.yaml\n  trainjobs:watch: 'false'\n"
    (project / "Pulumi.test.yaml").write_bytes(stack)
    return project


@settings(SETTINGS, max_examples=25)
@given(
    spec=hostile_documents().map(spec_bytes) | RAW_FILES,
    stack_text=st.one_of(st.none(), st.none(), st.none(), RAW_FILES),
)
@example(spec=spec_bytes(VALID[0]), stack_text=None)
def test_preview_answers_hostile_specs_and_stack_files_in_one_line(spec, stack_text):
    with sandbox() as root:
        project = write_project(root, spec, stack_text)
        before = everything(root)
        output = root / "work" / "preview"
        code, printed = invoke(
            ["preview", "--stack", "test", "--project", str(project), "--out", str(output)],
            memory=False,
        )
        assert code in (0, 2), printed
        check_written_only_below(root, before, output)


def cheap_job(pod: dict[str, Any]) -> dict[str, Any]:
    """A single pod that runs `true`: what a hostile template does to the runtime, cheaply."""
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "cheap"},
        "spec": {"master": {"template": {"spec": pod}}},
    }


CHEAP_POD = {
    "containers": [
        {
            "name": "chainer",
            "image": "trainjobs/chainer:7.8.1",
            "command": ["true"],
            "env": [
                {"name": "FROM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "PLAIN", "value": "x"},
            ],
            "volumeMounts": [
                {"name": "data", "mountPath": "/data"},
                {"name": "assets", "mountPath": "/etc/assets"},
            ],
            "workingDir": "/data",
        }
    ],
    "volumes": [
        {"name": "data", "emptyDir": {}},
        {
            "name": "assets",
            "configMap": {
                "name": "cheap-assets",
                "defaultMode": 0o644,
                "items": [{"key": "hostfile", "path": "conf/hostfile", "mode": 0o600}],
            },
        },
    ],
    "terminationGracePeriodSeconds": 1,
}


@needs_open_mpi
@settings(SETTINGS, max_examples=15)
@given(
    spec=hostile_documents(
        [cheap_job(CHEAP_POD)],
        within=(
            "metadata",
            "spec.master.template.spec.volumes",
            "spec.master.template.spec.containers.0.env",
            "spec.master.template.spec.containers.0.volumeMounts",
            "spec.master.template.spec.containers.0.workingDir",
            "spec.master.template.spec.containers.0.name",
        ),
    ).map(spec_bytes)
)
def test_run_answers_hostile_pod_templates_and_stays_in_its_run_directory(spec):
    with sandbox() as root:
        path = root / "work" / "spec.yaml"
        path.write_bytes(spec)
        before = everything(root)
        output = root / "work" / "run"
        code, printed = invoke(
            ["run", str(path), "--run-dir", str(output), "--network", "loopback"], memory=False
        )
        assert code in (0, 2), printed
        check_written_only_below(root, before, output)


ARGUMENTS = st.sampled_from(
    [
        "--out",
        "--run-dir",
        "--namespace",
        "--network",
        "--wait-timeout",
        "--map-image",
        "--stack",
        "--project",
        "--max-bytes",
        "--kubectl-image",
        "--gang-scheduler",
        "--gang-scheduler-name",
        "--mpi-transport",
        "ssh",
        "--against",
        "--expect-no-changes",
        "--help",
        "loopback",
        "netns",
        "-1",
        "0",
        "99999999999999999999",
        "x=y",
        "=",
        "a=",
        "../up",
        "/dev/null",
        "spec.yaml",
        "out",
        "test",
        "",
        "volcano",
    ]
)


@needs_open_mpi
@settings(SETTINGS, max_examples=80)
@given(
    command=st.sampled_from(["validate", "render", "preview", "run", "clean", "crds"]),
    arguments=st.lists(ARGUMENTS, max_size=6),
)
def test_every_command_answers_hostile_arguments_in_one_line(command, arguments):
    with sandbox() as root:
        work = root / "work"
        (work / "spec.yaml").write_bytes(spec_bytes(cheap_job(CHEAP_POD)))
        write_project(root, spec_bytes(cheap_job(CHEAP_POD)), None)
        before = everything(root)
        code, printed = invoke([command, *arguments])
        assert code in (0, 2) or (code == 1 and printed.startswith("error: ")), printed
        check_written_only_below(root, before, work)


# --- what a cluster or a pod sends: names, messages, API responses ------------------------

UNSAFE_CHARACTERS = st.sampled_from(
    ["\x1b", "\x07", "\r", "\n", "\x08", "\x00", "\x7f", "\x9b", "\x9d", "\u202e", "\u2066"]
)
HOSTILE_TEXT = st.lists(
    st.sampled_from(["\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b[2J", "\x1b]0;t\x07", "ok", "é", "\t"])
    | UNSAFE_CHARACTERS
    | st.text(max_size=4),
    max_size=8,
).map("".join)


def _shows_no_control(text: str) -> bool:
    return not any(
        (unicodedata.category(c) == "Cc" and c != "\t")
        or "\u202a" <= c <= "\u202e"
        or "\u2066" <= c <= "\u2069"
        or c in "\u061c\u200e\u200f\u2028\u2029"
        for c in text
    )


@settings(SETTINGS, max_examples=300)
@given(text=HOSTILE_TEXT)
def test_the_terminal_sanitiser_lets_no_control_character_through(text):
    from trainjobs.core.terminal import escape

    shown = escape(text)
    assert _shows_no_control(shown)
    assert "\n" not in shown
    assert escape(shown) == shown  # what it shows is itself safe text
    if _shows_no_control(text) and "\n" not in text:
        assert shown == text
    assert [line for line in escape(text, keep_newlines=True).split("\n")] == [
        escape(line) for line in text.split("\n")
    ]


JOB_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "active": HOSTILE_SCALARS,
        "ready": HOSTILE_SCALARS,
        "succeeded": HOSTILE_SCALARS,
        "failed": HOSTILE_SCALARS,
        "startTime": HOSTILE_SCALARS,
        "conditions": HOSTILE_VALUES
        | st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["Complete", "Failed"]) | HOSTILE_SCALARS},
                optional={
                    "status": st.just("True") | HOSTILE_SCALARS,
                    "reason": HOSTILE_TEXT | HOSTILE_SCALARS,
                    "message": HOSTILE_TEXT | HOSTILE_SCALARS,
                    "lastTransitionTime": st.just("2024-01-01T00:00:00Z") | HOSTILE_SCALARS,
                },
            ),
            max_size=3,
        ),
    },
)


@settings(SETTINGS, max_examples=300)
@given(
    name=HOSTILE_TEXT | HOSTILE_SCALARS,
    status=JOB_FIELDS | HOSTILE_VALUES,
    metadata_extra=st.fixed_dictionaries(
        {}, optional={"uid": HOSTILE_SCALARS, "labels": HOSTILE_VALUES}
    ),
)
def test_a_hostile_job_from_the_api_is_checked_or_refused_in_one_line(name, status, metadata_extra):
    from kubernetes import client

    from trainjobs.cluster.errors import BadResponse
    from trainjobs.cluster.responses import check_job, to_model
    from trainjobs.cluster.status import JobStatus
    from trainjobs.core.terminal import escape

    document = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, **metadata_extra},
        "spec": {"template": {"spec": {"containers": []}}},
        "status": status,
    }
    api = client.ApiClient()
    try:
        job = check_job(to_model(api, document, "V1Job", "list Jobs"), "list Jobs")
    except BadResponse as refused:
        event("refused")
        assert str(refused).startswith("the Kubernetes API answered the request to list Jobs ")
        assert "\n" not in escape(str(refused))
        return
    event("accepted")
    state = JobStatus.from_job(job)
    counts = (state.active, state.ready, state.succeeded, state.failed)
    assert all(type(count) is int for count in counts)
    assert isinstance(job.metadata.name, str)
    assert all(part is None or isinstance(part, str) for part in (state.reason, state.message))
    shown = escape(f"{job.metadata.name}: {state.counts()} {state.reason} {state.message}")
    assert _shows_no_control(shown)


@settings(SETTINGS, max_examples=200)
@given(
    lines=st.lists(
        st.binary(max_size=40)
        | st.sampled_from(
            [
                b'{"type": "MODIFIED", "object": {"metadata": {"name": "j"}}}',
                b'{"type": "ERROR", "object": {"code": 410, "message": "gone"}}',
                b'{"type": "BOOKMARK", "object": {}}',
                b"[]",
                b'{"type": 1}',
            ]
        ),
        max_size=5,
    )
)
def test_a_hostile_watch_stream_gives_events_or_one_line_errors(lines):
    import urllib3
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from trainjobs.cluster.errors import BadResponse
    from trainjobs.cluster.responses import check_job, watch_events

    body = io.BytesIO(b"\n".join(lines) + b"\n")
    response = urllib3.HTTPResponse(body=body, preload_content=False)
    api = client.ApiClient()
    try:
        for kind, obj in watch_events(
            api, response, time.monotonic() + 10, "watch Job d/j", "V1Job", check_job
        ):
            assert kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
            assert obj is None or isinstance(obj.metadata.name, str)
    except BadResponse as refused:
        event("refused")
        assert len(str(refused).splitlines()) == 1
    except ApiException as error:
        event("error event")
        assert isinstance(error.status, int)
