"""The ssh transport's key pair at deploy time: a TLS provider private key, secret in state."""

from __future__ import annotations

import base64

import pulumi
import pulumi_tls as tls

from trainjobs.kinds.mpi import ssh_assets


def ssh_secret_data(
    job: str, parent: pulumi.Resource, resource_name: str | None = None
) -> pulumi.Output[dict[str, str]]:
    """The ``data`` of job ``job``'s ssh-auth Secret, from a key pair made once per job:
    ``<resource_name>-ssh-key`` (default: the job's name), a child of ``parent``.

    The TLS provider keeps the private key in the stack's state as a secret (its
    ``privateKeyOpenssh`` output is marked secret); the Secret's data is wrapped as a secret
    too, so neither a preview nor the state shows it in the clear.
    """
    key = tls.PrivateKey(
        f"{resource_name or job}-ssh-key",
        algorithm=ssh_assets.KEY_ALGORITHM,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    alias = ssh_assets.host_key_alias(job)
    files = pulumi.Output.all(key.private_key_openssh, key.public_key_openssh).apply(
        lambda pair: {
            name: base64.b64encode(content.encode("ascii")).decode("ascii")
            for name, content in ssh_assets.secret_files(alias, pair[0], pair[1]).items()
        }
    )
    return pulumi.Output.secret(files)
