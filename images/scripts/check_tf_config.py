#!/usr/bin/env python3
"""Checks the TF_CONFIG a TFJob gives this process, as TensorFlow would read it, and that the
cluster it describes is reachable: a light stand-in for a distributed TensorFlow program.

Checks, each failing with exit code 1 (a permanent error: retrying cannot fix a wrong
TF_CONFIG):

- TF_CONFIG is JSON with `cluster` (lowercase replica type -> non-empty list of "host:port"),
  `task` {type, index} and `environment` "cloud";
- the task is this replica: its type and index are TRAINJOBS_REPLICA_TYPE and
  TRAINJOBS_REPLICA_INDEX, and this pod's hostname is the host at cluster[type][index]
  (evaluators are not part of the cluster, as in Kubeflow);
- every task is reachable at its address: each one serves its task on its port, and the
  coordinator (the chief or master, else worker 0, as in TensorFlow) connects to every
  other task by its DNS name and checks that the task answering there is the one TF_CONFIG
  names.

It prints `TF_CONFIG: <the JSON as received>` first. A task other than the coordinator exits 0
once the coordinator has checked it; with --serve (parameter servers, which never finish on
their own) it keeps serving until stopped, and SIGTERM makes it exit 0.
"""

import argparse
import json
import os
import signal
import socket
import sys
import time

TYPES = ("chief", "master", "ps", "worker", "evaluator")


class CheckFailed(Exception):
    pass


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true",
                        help="keep serving until SIGTERM (parameter servers)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for the other tasks (default: 300)")
    return parser.parse_args(argv)


def read_tf_config():
    raw = os.environ.get("TF_CONFIG")
    if raw is None:
        raise CheckFailed("TF_CONFIG is not set")
    print(f"TF_CONFIG: {raw}", flush=True)
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise CheckFailed(f"TF_CONFIG is not JSON: {error}") from None
    if not isinstance(config, dict) or sorted(config) != ["cluster", "environment", "task"]:
        raise CheckFailed("TF_CONFIG must have exactly the keys cluster, task and environment")
    if config["environment"] != "cloud":
        raise CheckFailed(f"environment must be 'cloud' (got {config['environment']!r})")
    cluster = config["cluster"]
    if not isinstance(cluster, dict) or not cluster:
        raise CheckFailed("cluster must be a non-empty object")
    for kind, addresses in cluster.items():
        if kind not in TYPES or kind == "evaluator":
            raise CheckFailed(f"cluster has an unexpected replica type {kind!r}")
        if not isinstance(addresses, list) or not addresses:
            raise CheckFailed(f"cluster[{kind!r}] must be a non-empty list")
        for address in addresses:
            host, _, port = str(address).rpartition(":")
            if not host or not port.isdigit():
                raise CheckFailed(f"cluster[{kind!r}] has {address!r}, not 'host:port'")
    if not any(kind in cluster for kind in ("chief", "master", "worker")):
        raise CheckFailed("cluster has no chief, master or worker to drive training")
    task = config["task"]
    if not isinstance(task, dict) or sorted(task) != ["index", "type"]:
        raise CheckFailed("task must have exactly the keys type and index")
    return config


def check_task(config):
    """The task TF_CONFIG names must be this replica, at this pod's address."""
    task_type, index = config["task"]["type"], config["task"]["index"]
    expected_type = os.environ.get("TRAINJOBS_REPLICA_TYPE")
    expected_index = os.environ.get("TRAINJOBS_REPLICA_INDEX")
    if task_type != expected_type or str(index) != expected_index:
        raise CheckFailed(
            f"task is {task_type} {index}, but this replica is {expected_type} {expected_index}"
        )
    if not isinstance(index, int) or isinstance(index, bool):
        raise CheckFailed(f"task index must be an integer (got {index!r})")
    cluster = config["cluster"]
    if task_type == "evaluator":
        return None
    addresses = cluster.get(task_type) or []
    if index >= len(addresses):
        raise CheckFailed(f"cluster[{task_type!r}] has no entry {index}")
    address = addresses[index]
    hostname = socket.gethostname()
    if address.split(":")[0].split(".")[0] != hostname:
        raise CheckFailed(f"cluster[{task_type!r}][{index}] is {address}, not this pod ({hostname})")
    return address


def coordinator(cluster):
    for kind in ("chief", "master"):
        if kind in cluster:
            return kind, 0
    return "worker", 0


def serve(config, address, forever, timeout):
    """Answer each connection with this task; return once the coordinator confirmed it
    (unless ``forever``)."""
    port = int(address.rpartition(":")[2])
    task = json.dumps(config["task"], sort_keys=True)
    with socket.create_server(("", port), reuse_port=False) as server:
        server.settimeout(None if forever else timeout)
        print(f"serving {task} on port {port}", flush=True)
        while True:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                raise CheckFailed(
                    f"the coordinator did not check this task in {timeout:g}s") from None
            with connection:
                connection.settimeout(30)
                connection.sendall(task.encode() + b"\n")
                reply = connection.makefile().readline().strip()
            if reply == "ok" and not forever:
                print("checked by the coordinator", flush=True)
                return


def reach_everyone(config, own_address, timeout):
    """Connect to every other task by its DNS name; the task there must be the named one."""
    deadline = time.monotonic() + timeout
    tasks = [(kind, index, address) for kind, addresses in config["cluster"].items()
             for index, address in enumerate(addresses) if address != own_address]
    for kind, index, address in tasks:
        host, _, port = address.rpartition(":")
        expected = json.dumps({"index": index, "type": kind}, sort_keys=True)
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=10) as connection:
                    answer = connection.makefile().readline().strip()
                    verdict = "ok" if answer == expected else "mismatch"
                    connection.sendall(verdict.encode() + b"\n")
                break
            except OSError as error:  # not resolvable or not listening yet
                if time.monotonic() > deadline:
                    raise CheckFailed(f"{address} unreachable after {timeout:g}s: {error}")
                time.sleep(0.2)
        if answer != expected:
            raise CheckFailed(f"{address} answered {answer!r}, expected {expected}")
    print(f"reached all {len(tasks)} other task(s) at their TF_CONFIG addresses", flush=True)


def stop(signum, frame):
    print("stopping: SIGTERM", flush=True)
    sys.exit(0)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, stop)
    try:
        config = read_tf_config()
        address = check_task(config)
        task = config["task"]
        print(f"TF_CONFIG verified: {task['type']} {task['index']}"
              + (f" at {address}" if address else " (not part of the cluster)"), flush=True)
        if address is None:
            return 0
        if (task["type"], task["index"]) == coordinator(config["cluster"]):
            reach_everyone(config, address, args.timeout)
        else:
            serve(config, address, args.serve, args.timeout)
    except CheckFailed as error:
        print(f"check_tf_config: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
