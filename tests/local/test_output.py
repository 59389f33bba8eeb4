"""What a local run shows on the terminal: known noise hidden by default, --quiet shows only
trainjobs' own lines. (The log files keep everything; see test_history.)"""

from __future__ import annotations

import io

from trainjobs.local.output import TerminalFilter

# As tf-mnist prints it with TensorFlow 2.20 (absl logging, a protobuf dump), PyTorch's c10d
# and Open MPI on a busy machine, between lines of the job and of trainjobs.
OUTPUT = """\
[trainjobs] pod tf-mnist-worker-0: attempt 1 of at most 3
[tf-mnist-worker-0] WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
[tf-mnist-worker-0] I0000 00:00:1795603650.703547   30754 grpc_server_lib.cc:466] Started server with target: grpc://tf-mnist-worker-0.default.svc:2222
[tf-mnist-worker-0] serving worker 0 at grpc://tf-mnist-worker-0.default.svc:2222
[tf-mnist-ps-0] I0000 00:00:1795603651.586126   31637 eager_service_impl.cc:355] SessionOptions: device_count {
[tf-mnist-ps-0]   key: "CPU"
[tf-mnist-worker-0] loss: 0.5
[tf-mnist-ps-0]   value: 1
[tf-mnist-ps-0] }
[tf-mnist-ps-0] allow_soft_placement: true
[tf-mnist-ps-0] experimental {
[tf-mnist-ps-0] }
[tf-mnist-ps-0] <empty>
[tf-mnist-ps-0] serving ps 0 at grpc://tf-mnist-ps-0.default.svc:2222
[tf-mnist-chief-0] 2026-11-25 10:00:00.123456: I tensorflow/core/util/port.cc:153] oneDNN custom operations are on.
[pytorch-mnist-master-0] [W1125 10:45:59.092187423 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3
[demo-master] [demo-master:01234] plm:rsh: Warning: setpgid(77,77) failed in parent with errno=Permission denied(13)
[tf-mnist-chief-0] final validation accuracy: 0.9694
[trainjobs] === tf-mnist: Succeeded (Completed) ===
""".replace("<empty>", "")


def shown(**flags: bool) -> list[str]:
    stream = io.StringIO()
    terminal = TerminalFilter(stream, **flags)
    for line in OUTPUT.splitlines():
        # print() writes the text and the newline separately: lines are whole only on "\n".
        terminal.write(line)
        terminal.write("\n")
    return stream.getvalue().splitlines()


def test_known_noise_is_hidden_by_default():
    assert shown() == [
        "[trainjobs] pod tf-mnist-worker-0: attempt 1 of at most 3",
        "[tf-mnist-worker-0] serving worker 0 at grpc://tf-mnist-worker-0.default.svc:2222",
        "[tf-mnist-worker-0] loss: 0.5",
        "[tf-mnist-ps-0] serving ps 0 at grpc://tf-mnist-ps-0.default.svc:2222",
        "[tf-mnist-chief-0] final validation accuracy: 0.9694",
        "[trainjobs] === tf-mnist: Succeeded (Completed) ===",
    ]


def test_quiet_shows_only_trainjobs_lines():
    assert shown(quiet=True) == [
        "[trainjobs] pod tf-mnist-worker-0: attempt 1 of at most 3",
        "[trainjobs] === tf-mnist: Succeeded (Completed) ===",
    ]


def test_all_output_shows_every_line():
    assert shown(noise=False) == OUTPUT.splitlines()
