"""The Pulumi SDK's dynamic provider host, started and spoken to as the Pulumi engine does it.

The engine runs ``python -u -m pulumi.dynamic`` (the `pulumi-resource-pulumi-python` plugin),
reads the port it prints, and calls it over gRPC: Configure, then Check, Diff, Create,
Update... with the serialized provider in each request's ``__provider`` property. One host
serves every dynamic resource of a program; its gRPC server has a 4-thread pool
(``pulumi/dynamic/__main__.py``, ``futures.ThreadPoolExecutor(max_workers=4)``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import proto, rpc
from pulumi.runtime.proto import provider_pb2_grpc

from trainjobs.deploy.completion import JobCompletionProvider

URN = "urn:pulumi:test::trainjobs::pulumi-python:dynamic/trainjobs:JobCompletion::completion"


class Host:
    """A running provider host and a stub to call it."""

    def __init__(self, stub: provider_pb2_grpc.ResourceProviderStub) -> None:
        self.stub = stub
        self.provider = serialize_provider(JobCompletionProvider())

    def _struct(self, props: dict[str, Any]) -> Any:
        # A loop of its own, as the host itself does: asyncio.run would leave the thread
        # without the current loop that the Pulumi SDK's mock runtime uses later.
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(
                rpc.serialize_properties({**props, "__provider": self.provider}, {})
            )
        finally:
            loop.close()

    def check(self, news: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        response = self.stub.Check(
            proto.CheckRequest(urn=URN, olds=self._struct({}), news=self._struct(news))
        )
        inputs = rpc.deserialize_properties(response.inputs)
        return inputs, [(f.property, f.reason) for f in response.failures]

    def create(self, props: dict[str, Any], timeout: float) -> tuple[str, dict[str, Any]]:
        response = self.stub.Create(
            proto.CreateRequest(urn=URN, properties=self._struct(props)), timeout=timeout
        )
        return response.id, rpc.deserialize_properties(response.properties)


@contextmanager
def provider_host(repo: Path, log: Path) -> Iterator[Host]:
    """Start the host with the project importable, as the engine runs it from the project.
    What the provider logs (the engine shows it as diagnostics) goes to ``log``."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    with log.open("w") as diagnostics:
        process = subprocess.Popen(
            [sys.executable, "-u", "-m", "pulumi.dynamic"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=diagnostics,
            text=True,
        )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        stub.Configure(proto.ConfigureRequest(acceptSecrets=False))
        try:
            yield Host(stub)
        finally:
            channel.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
