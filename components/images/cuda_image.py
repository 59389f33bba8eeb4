"""A CUDA image as a Pulumi component: built and pushed to ECR, or resolved to a digest.

Pods are pinned by that digest (:func:`trainjobs.images.pinning.pin_images`, stack config
``trainjobs:images``), never by tag: every node pulls exactly the image that was built and
checked, and a later push cannot change a running job's image. The component lives in an
infrastructure stack; job stacks receive its ``ref`` output as plain config, so a job's
graph is complete before anything is registered (as with the GPU pool's scheduling profile).

This module loads pulumi_aws and pulumi_docker_build when a component is created, never on
the command line's start-up path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pulumi

from trainjobs.cloud.preflight import EcrImage
from trainjobs.core.errors import UserError
from trainjobs.core.extras import import_extra
from trainjobs.images.build_context import IMAGES_DIR
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.declarations import Image
from trainjobs.images.dockerfiles import dockerfile_path, recipe_hash, render
from trainjobs.images.references import is_digest_pinned

INFRA_CONFIG = "trainjobs-infra"
"""Config namespace of the infrastructure project (infra/Pulumi.yaml)."""
PLATFORMS = ("linux/amd64",)
"""The CUDA base images and the GPU node pools' AMIs are x86_64 (arm64 GPU instances such as
g5g would need a linux/arm64 build)."""


def _relative(path: Path) -> str:
    """A path as the program's working directory (the Pulumi project) sees it: Pulumi keeps
    inputs in the stack's state, and an absolute path would differ on every machine."""
    return os.path.relpath(path, Path.cwd())


def image_tag(image: Image) -> str:
    """The tag a build is pushed under: the declared tag plus the recipe's hash.

    The repository's tags are immutable, so a changed Dockerfile or training script must get
    a new tag (an unchanged recipe keeps its tag, and Pulumi does not rebuild it).
    """
    return f"{image.tag}-{recipe_hash(image)[:12]}"


class CudaImage(pulumi.ComponentResource):
    """A CUDA image, typed `trainjobs:index:CudaImage`.

    With ``prebuilt=None`` it builds the image from its checked-in Dockerfile (context
    ``images/``) with docker-build (BuildKit) and pushes it to an ECR repository it creates
    (named like the image, e.g. ``trainjobs/chainermn``; scan on push; immutable tags). With
    ``prebuilt`` it creates nothing and resolves an image built elsewhere to its digest:

    - ``<repository>@sha256:<digest>`` (any registry) is used as is;
    - an ECR tag (``<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>``) is resolved
      with ``aws.ecr.get_image`` at deployment;
    - a tag in another registry is refused: resolving it needs that registry's API and
      credentials, which nothing in this program has; pin it by digest instead.
    """

    repository: pulumi.CustomResource | None
    """The `aws.ecr.Repository` (None for a prebuilt image)."""
    image: pulumi.CustomResource | None
    """The `docker-build.Image` (None for a prebuilt image)."""
    ref: pulumi.Output[str]
    """``<repository>@sha256:<digest>``: what pods run."""
    digest: pulumi.Output[str]
    tag: pulumi.Output[str | None]
    """The tag pushed (None for a prebuilt image)."""

    def __init__(
        self,
        name: str,
        declaration: Image,
        *,
        prebuilt: str | None = None,
        build_on_preview: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``build_on_preview``: also build during `pulumi preview`; off by default because a
        CUDA image with Open MPI takes many minutes, and the Dockerfile is checked offline
        (rendered, compatibility rules, stale test) before any preview."""
        prebuilt_ecr = _check(declaration, prebuilt)  # before anything is registered
        super().__init__("trainjobs:index:CudaImage", name, None, opts)
        self.repository = None
        self.image = None
        if prebuilt is None:
            self._build(name, declaration, build_on_preview)
        elif prebuilt_ecr is None:
            self.digest = pulumi.Output.from_input(prebuilt.split("@", 1)[1])
            self.ref = pulumi.Output.from_input(prebuilt)
            self.tag = pulumi.Output.from_input(None)
        else:
            self._resolve(prebuilt_ecr)
        self.register_outputs({"ref": self.ref, "digest": self.digest, "tag": self.tag})

    def _build(self, name: str, declaration: Image, build_on_preview: bool) -> None:
        # Large SDKs and extras: loaded only when an image is declared.
        aws = import_extra("pulumi_aws", "a CUDA image")
        docker_build = import_extra("pulumi_docker_build", "building a CUDA image")

        child = pulumi.ResourceOptions(parent=self)
        self.repository = repository = aws.ecr.Repository(
            name,
            name=declaration.repository,
            image_scanning_configuration={"scan_on_push": True},
            image_tag_mutability="IMMUTABLE",
            tags={"trainjobs.io/image": declaration.reference},
            opts=child,
        )
        url = repository.repository_url
        token = aws.ecr.get_authorization_token_output(
            registry_id=repository.registry_id, opts=pulumi.InvokeOptions(parent=self)
        )
        tag = image_tag(declaration)
        # Platforms as their names: docker-build's Platform enum is a str enum of the same values.
        self.image = image = docker_build.Image(
            name,
            context={"location": _relative(IMAGES_DIR)},
            dockerfile={"location": _relative(IMAGES_DIR / dockerfile_path(declaration))},
            platforms=list(PLATFORMS),
            tags=[url.apply(lambda repository: f"{repository}:{tag}")],
            push=True,
            registries=[
                {
                    "address": url.apply(lambda repository: repository.split("/", 1)[0]),
                    "username": token.user_name,
                    "password": pulumi.Output.secret(token.password),
                }
            ],
            labels={
                "org.opencontainers.image.title": declaration.reference,
                "org.opencontainers.image.description": declaration.summary,
            },
            build_on_preview=build_on_preview,
            opts=child,
        )
        self.digest = image.digest
        self.ref = pulumi.Output.concat(url, "@", self.digest)
        self.tag = pulumi.Output.from_input(tag)

    def _resolve(self, image: EcrImage) -> None:
        aws = import_extra("pulumi_aws", "a CUDA image")

        registry = image.reference.split("/", 1)[0]
        if image.digest is not None:
            self.digest = pulumi.Output.from_input(image.digest)
        else:
            found = aws.ecr.get_image_output(
                registry_id=image.account,
                repository_name=image.repository,
                image_tag=image.tag,
                region=image.region,
                opts=pulumi.InvokeOptions(parent=self),
            )
            self.digest = found.image_digest
        self.ref = pulumi.Output.concat(f"{registry}/{image.repository}@", self.digest)
        self.tag = pulumi.Output.from_input(None)


def _check(declaration: Image, prebuilt: str | None) -> EcrImage | None:
    """Refuse what cannot work, before anything is registered; the ECR coordinates of a
    prebuilt ECR tag (None when there is nothing to resolve)."""
    if prebuilt is None:
        if declaration.build is None:
            raise UserError(
                f"image {declaration.reference} has no build recipe: declare an ImageBuild for "
                "it in components/images/catalogue.py, or give a prebuilt reference"
            )
        path = IMAGES_DIR / dockerfile_path(declaration)
        if not path.is_file() or path.read_text(encoding="utf-8") != render(declaration):
            raise UserError(
                f"images/{dockerfile_path(declaration)} does not match the declaration of "
                f"{declaration.reference}: run `make images` and commit the result"
            )
        return None
    if is_digest_pinned(prebuilt):
        return None
    ecr = EcrImage.parse(prebuilt)
    last = prebuilt.rpartition("/")[2]
    if ecr is None or (ecr.digest is None and ":" not in last):
        raise UserError(
            f"prebuilt image {prebuilt!r} for {declaration.reference}: give it pinned by digest "
            "(<repository>@sha256:<digest>; `docker buildx imagetools inspect IMAGE` prints "
            "it), or as an ECR tag (<account>.dkr.ecr.<region>.amazonaws.com/<repository>:"
            "<tag>), which is resolved to its digest; other registries' tags cannot be resolved "
            "here"
        )
    return ecr


def images_from_config(namespace: str = INFRA_CONFIG) -> dict[str, pulumi.Output[str]]:
    """The images of an infrastructure stack: ``<namespace>:images``, a list of
    ``{image: <declared reference>}`` (built and pushed) or ``{image: ..., prebuilt: <ref>}``
    (resolved); exported as ``images`` (declared reference -> ``repo@sha256:...``), the
    value job stacks set as ``trainjobs:images``."""
    config = pulumi.Config(namespace)
    entries = config.get_object("images")
    if entries is None:
        return {}  # a stack without images exports nothing
    if not isinstance(entries, list):
        raise pulumi.RunError(
            f"{namespace}:images must be a list of {{image: ...}} (got {entries!r})"
        )
    problems, declared = [], []
    for index, entry in enumerate(entries):
        where = f"{namespace}:images[{index}]"
        if not isinstance(entry, dict) or set(entry) - {"image", "prebuilt", "buildOnPreview"}:
            problems.append(
                f"{where}: must be {{image: <declared reference>, prebuilt?: <reference>, "
                f"buildOnPreview?: bool}} (got {entry!r})"
            )
            continue
        image = IMAGES.get(str(entry.get("image")))
        if image is None:
            known = ", ".join(ref for ref, i in IMAGES.items() if i.build is not None)
            problems.append(f"{where}.image: {entry.get('image')!r} is not declared ({known})")
            continue
        declared.append((image, entry))
    if problems:
        raise pulumi.RunError("\n".join(problems))
    images: dict[str, pulumi.Output[str]] = {}
    try:
        for image, entry in declared:
            component = CudaImage(
                image.repository.replace("/", "-"),
                image,
                prebuilt=entry.get("prebuilt"),
                build_on_preview=bool(entry.get("buildOnPreview", False)),
            )
            images[image.reference] = component.ref
    except UserError as error:
        raise pulumi.RunError(str(error)) from None
    pulumi.export("images", images)
    return images
