"""`trainjobs dockerfiles` and `trainjobs images`: render, configure and build the images."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainjobs.engines import ENGINES
from trainjobs.engines.settings import ENGINE_DIR
from trainjobs.images.dockerfiles import stale, write


def _dockerfiles(args: argparse.Namespace) -> int:
    if args.check:
        outdated = stale(args.out)
        for name in outdated:
            print(f"{args.out / name} is stale: run `make images`", file=sys.stderr)
        return 1 if outdated else 0
    for path in write(args.out):
        print(path)
    return 0


def _say(line: str) -> None:
    print(f"[images] {line}", flush=True)


def _settings(args: argparse.Namespace, saved: bool):
    """The build settings: the saved ones (or the public sources), the flags over them."""
    from trainjobs.images.bootstrap import bootstrap_reference
    from trainjobs.images.build_settings import BuildSettings
    from trainjobs.images.builder import saved_settings
    from trainjobs.images.catalogue import IMAGES
    from trainjobs.images.host_config import host_settings
    from trainjobs.images.kubectl_stand_in import REFERENCE

    base = saved_settings() if saved else BuildSettings()
    pip = dict(base.pip)
    for option, values in (
        ("index-url", [args.pip_index_url] if args.pip_index_url else []),
        ("extra-index-url", args.pip_extra_index_url),
        ("find-links", args.pip_find_links),
        ("trusted-host", args.pip_trusted_host),
    ):
        if values:
            pip[option] = tuple(values)
    debian = next(image.debian for image in IMAGES.values() if image.debian is not None)
    local_base = bootstrap_reference(debian) if args.no_registry else None
    settings = BuildSettings(
        debian_base_image=args.base_image or local_base or base.debian_base_image,
        kubectl_image=args.kubectl_image
        or (REFERENCE if args.no_registry else None)
        or base.kubectl_image,
        debian_mirror=args.debian_mirror or base.debian_mirror,
        debian_security_mirror=args.debian_security_mirror or base.debian_security_mirror,
        pip=pip,
        ca_bundle=args.ca_bundle or base.ca_bundle,
    )
    return host_settings(settings) if args.host_config else settings


def _configure(args: argparse.Namespace) -> int:
    from trainjobs.engines.settings import write_containers_conf
    from trainjobs.images.builder import SETTINGS_FILE
    from trainjobs.local.files import write_private

    settings = _settings(args, saved=False)
    print(write_containers_conf())
    SETTINGS_FILE.parent.mkdir(parents=True, exist_ok=True)
    # Private: an index URL may carry credentials.
    write_private(SETTINGS_FILE, settings.to_json())
    print(SETTINGS_FILE)
    return 0


def _build_count(value: str) -> int:
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= 16:
        raise argparse.ArgumentTypeError(f"{value!r} is no number of builds from 1 to 16")
    return int(value)


def _build(args: argparse.Namespace) -> int:
    from trainjobs.engines.registry import find_engine
    from trainjobs.images.builder import buildable, cpu_images
    from trainjobs.images.local_images import build_images
    from trainjobs.images.push import check_registry, push_images, record_pins

    images = [buildable(reference) for reference in args.images] or cpu_images()
    registry = check_registry(args.push) if args.push is not None else None
    engine = find_engine(args.engine)
    settings = _settings(args, saved=True)
    built = build_images(engine, images, settings, _say, rebuild=args.rebuild, jobs=args.jobs)
    _say(f"done: {len(built)} built, {len(images) - len(built)} up to date")
    if registry is not None:
        pins = push_images(engine, images, registry, _say)
        _say(f"digests recorded in {record_pins(pins, args.pins)}")
    return 0


def _bootstrap(args: argparse.Namespace) -> int:
    from trainjobs.engines.registry import find_engine
    from trainjobs.images.local_images import prepare

    prepare(find_engine(args.engine), _settings(args, saved=True), _say)
    return 0


def _add_settings(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "build settings (default: the saved ones, else the public sources)"
    )
    group.add_argument(
        "--base-image", metavar="REF", help="instead of debian:12.12-slim (the default)"
    )
    group.add_argument(
        "--kubectl-image", metavar="REF", help="instead of registry.k8s.io/kubectl:v1.34.2"
    )
    group.add_argument(
        "--no-registry",
        action="store_true",
        help="no registry is reachable: a Debian base bootstrapped here and the kubectl "
        "stand-in image",
    )
    group.add_argument("--debian-mirror", metavar="URL", help="instead of snapshot.debian.org")
    group.add_argument(
        "--debian-security-mirror", metavar="URL", help="instead of snapshot.debian.org's"
    )
    group.add_argument("--pip-index-url", metavar="URL", help="instead of PyPI (and torch's)")
    group.add_argument(
        "--pip-extra-index-url",
        metavar="URL",
        action="append",
        default=[],
        help="another index (repeatable; default: none)",
    )
    group.add_argument(
        "--pip-find-links",
        metavar="DIR_OR_URL",
        action="append",
        default=[],
        help="where pip also looks for packages (repeatable; default: none)",
    )
    group.add_argument(
        "--pip-trusted-host",
        metavar="HOST",
        action="append",
        default=[],
        help="a host pip trusts without HTTPS checks (repeatable; default: none)",
    )
    group.add_argument("--ca-bundle", type=Path, metavar="FILE", help="CA certificates to trust")
    group.add_argument(
        "--host-config",
        action="store_true",
        help="this machine's Debian mirror, pip configuration and CA bundle (flags win)",
    )


PINS_FILE = ENGINE_DIR / "image-pins.json"
"""Where ``images build --push`` records digests by default."""

ENGINE_EXIT_CODES = (
    "exit codes: 0 done, 1 the engine or a build failed, 2 an unknown image, flag or engine"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    command = subparsers.add_parser(
        "dockerfiles",
        help="render the Dockerfiles of the images trainjobs builds "
        "(declared in components/images/catalogue.py)",
        description="Write images/<image dir>/Dockerfile for every image declared in "
        "components/images/catalogue.py, or with --check say which ones are stale.",
        epilog="exit codes: 0 written (or current), 1 a Dockerfile is stale with --check, "
        "2 an invalid --out",
    )
    command.add_argument(
        "--out",
        default=Path("images"),
        type=Path,
        metavar="DIR",
        help="where <image dir>/Dockerfile goes (default: images)",
    )
    command.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a Dockerfile is stale"
    )
    command.set_defaults(handler=_dockerfiles)

    images = subparsers.add_parser(
        "images",
        help="build the images trainjobs declares with podman or docker",
        description="Build the images trainjobs declares (components/images/catalogue.py) "
        "with podman or docker, and keep the settings the builds use.",
    )
    actions = images.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build",
        help="build images (default: the CPU images the examples run), tagged as jobs name "
        "them; a current image is kept",
        description="Build the named images, or the CPU images the examples run, with the "
        "saved build settings and the flags over them; an image whose inputs did not change "
        "is kept.",
        epilog=ENGINE_EXIT_CODES,
    )
    build.add_argument(
        "images",
        nargs="*",
        metavar="IMAGE",
        help="e.g. trainjobs/chainermn:7.8.1 (default: the CPU images the examples run)",
    )
    build.add_argument("--rebuild", action="store_true", help="build even a current image")
    build.add_argument(
        "--jobs",
        type=_build_count,
        default=1,
        metavar="N",
        help="build up to N images at once, after the first (default: 1); builds that wait "
        "on downloads overlap",
    )
    build.add_argument(
        "--push",
        metavar="REGISTRY",
        help="then push each image as REGISTRY/<image> (HOST[:PORT][/PATH]; credentials from "
        "`podman login`, the registry's CA from out/engine/certs.d/HOST[:PORT]/) and record "
        "its digest (default: no push)",
    )
    build.add_argument(
        "--pins",
        type=Path,
        default=PINS_FILE,
        metavar="FILE",
        help="with --push: the JSON file of pins the digests are added to, the shape of "
        "trainjobs:images and `trainjobs run --image-pins` (default: out/engine/image-pins.json)",
    )
    build.set_defaults(handler=_build)
    bootstrap = actions.add_parser(
        "bootstrap",
        help="make the local images the build settings start from (a debootstrapped Debian, "
        "the kubectl stand-in), once",
        description="Make, once, the local images that builds without a registry start from: "
        "a Debian base made with debootstrap and the kubectl stand-in image.",
        epilog=ENGINE_EXIT_CODES,
    )
    bootstrap.set_defaults(handler=_bootstrap)
    configure = actions.add_parser(
        "configure",
        help="save build settings and this project's engine settings under out/engine/",
        description="Save the build settings (flags over the public sources) and this "
        "project's container engine settings under out/engine/, and print their paths.",
        epilog="exit codes: 0 saved, 1 the machine refused a write, 2 an invalid flag",
    )
    configure.set_defaults(handler=_configure)
    for parser in (build, bootstrap, configure):
        parser.add_argument(
            "--engine", choices=ENGINES, help="the engine (default: podman, else docker)"
        )
        _add_settings(parser)
