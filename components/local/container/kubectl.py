#!/usr/bin/env -S python3 -I -S
"""The `kubectl` inside local containers: it hands its call to the run's API stand-in.

In a container run (``trainjobs run --runtime container``) kubectl runs inside a container,
where the other pods are out of reach, so it does what the real kubectl does: it sends the
call to an API server, here the run's stand-in (:mod:`trainjobs.local.container.api`), over
the unix socket mounted where Kubernetes mounts a pod's service account token
(``/var/run/secrets/kubernetes.io/serviceaccount``): a pod without a token has no socket
and so no credentials. It passes its own stdin, stdout and stderr with the call
(``SCM_RIGHTS``), so the API stand-in connects them straight to ``podman exec`` in the target
container and the exec'd command reads and writes the caller's pipes, and it exits with the
exit code the stand-in sends back.

The image that delivers it (the kubectl image's stand-in) copies it to the master as the
real kubectl would be copied; it needs a ``python3`` there, and imports only the standard
library.
"""

from __future__ import annotations

import os
import socket
import sys

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SOCKET_NAME = "trainjobs-api.sock"
PROGRAM = "kubectl (trainjobs local stand-in)"


def encode(argv: list[str]) -> bytes:
    """The call as sent: the argument count, then each argument, each ended by NUL."""
    return b"".join(os.fsencode(part) + b"\0" for part in [str(len(argv)), *argv])


def decode(data: bytes) -> list[str] | None:
    """The call's arguments once ``data`` holds all of them, else None."""
    count, _, rest = data.partition(b"\0")
    if not count.isdigit() or rest.count(b"\0") < int(count):
        return None
    return [os.fsdecode(part) for part in rest.split(b"\0")[: int(count)]]


def main(argv: list[str]) -> int:
    path = os.path.join(SERVICE_ACCOUNT_DIR, SOCKET_NAME)
    if not os.path.exists(path):
        print(
            f"{PROGRAM}: this pod has no service account token mounted "
            "(automountServiceAccountToken: false), so kubectl has no credentials",
            file=sys.stderr,
        )
        return 1
    request = encode(argv)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        try:
            connection.connect(path)
            socket.send_fds(connection, [request], [0, 1, 2])
            reply = b""
            while chunk := connection.recv(4096):
                reply += chunk
        except OSError as error:
            print(f"{PROGRAM}: the local cluster is gone ({error.strerror})", file=sys.stderr)
            return 1
    if not reply:
        print(f"{PROGRAM}: the local API server closed the connection", file=sys.stderr)
        return 1
    return int(reply)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
