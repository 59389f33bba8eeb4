"""The API server's own rules for pod templates, beyond types: names, paths, env, quantities.

What kubernetes ``pkg/apis/core/validation/validation.go`` checks when a Job or StatefulSet
is created (``ValidatePodTemplateSpec`` and what it calls: ``ValidateVolumes``,
``validateContainers``, ``ValidateEnv``, ``ValidateVolumeMounts``, ``validateContainerPorts``,
``ValidateResourceRequirements``...), for the fields a training job uses, with the API
server's messages (``<path>: Invalid value: "x": <rule>``). Values the API server's defaulting
fills in first (a port's protocol, a fieldRef's apiVersion) are not required here either.

Each check reads only values of the right type: wrong types are the schema's to report
(:mod:`trainjobs.core.pod_schema`), so both run and every problem is reported at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from trainjobs.core import apimachinery, quantity
from trainjobs.core.errors import Problem
from trainjobs.core.unknown_values import is_unknown

Check = Callable[[str], list[str]]

FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
NEGATIVE_ERROR = "must be greater than or equal to 0"
NOT_INTEGER_ERROR = "must be an integer"
ID_MAX = 2**31 - 1
"""apimachinery ``IsValidUserID``/``IsValidGroupID``: ids from 0 to math.MaxInt32."""
ID_ERROR = f"must be between 0 and {ID_MAX}, inclusive"
# validEnvDownwardAPIFieldPathExpressions; labels and annotations only with a subscript.
ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
# helper.IsStandardContainerResourceName, and the prefix of hugepages resources.
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES_PREFIX = "hugepages-"
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
VOLUME_SOURCES = (
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "persistentVolumeClaim",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "quobyte",
    "rbd",
    "scaleIO",
    "secret",
    "storageos",
    "vsphereVolume",
)


class _Checker:
    """Collects problems with their field paths."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.add(path, f"Invalid value: {_shown(value)}: {detail}")

    def required(self, path: str, detail: str) -> None:
        self.add(path, f"Required value: {detail}")

    def name(self, path: str, value: Any, rule: Check, what: str) -> bool:
        """A required name that must follow ``rule``; False if it is missing or invalid."""
        if not isinstance(value, str) or not value:
            if value is None or value == "":
                self.required(path, f"{what} must be given")
            return False
        messages = rule(value)
        for message in messages:
            self.invalid(path, value, message)
        return not messages


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, str | int | float) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return (
        [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]
        if isinstance(value, list)
        else []
    )


def check_template_rules(template: Any, path: str, problems: list[Problem]) -> None:
    """Append a problem for each rule of the API server that ``template`` breaks."""
    check = _Checker(problems)
    template = _mapping(template)
    _check_metadata(check, _mapping(template.get("metadata")), f"{path}.metadata")
    spec = _mapping(template.get("spec"))
    where = f"{path}.spec"
    volumes = _check_volumes(check, spec.get("volumes"), f"{where}.volumes")
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for index, container in _items(spec.get(group)):
            _check_container(check, container, f"{where}.{group}[{index}]", volumes, names)
    _check_ids(check, _mapping(spec.get("securityContext")), f"{where}.securityContext")
    restart = spec.get("restartPolicy")
    if isinstance(restart, str) and restart not in RESTART_POLICIES:
        supported = ", ".join(json.dumps(p) for p in RESTART_POLICIES)
        check.add(
            f"{where}.restartPolicy",
            f"Unsupported value: {_shown(restart)}: supported values: {supported}",
        )
    for key in ("terminationGracePeriodSeconds", "activeDeadlineSeconds"):
        value = spec.get(key)
        minimum = 0 if key == "terminationGracePeriodSeconds" else 1
        if isinstance(value, int) and value < minimum:
            detail = NEGATIVE_ERROR if minimum == 0 else "must be greater than or equal to 1"
            check.invalid(f"{where}.{key}", value, detail)
    for key in ("hostname", "subdomain"):
        value = spec.get(key)
        if isinstance(value, str) and value:
            for message in apimachinery.dns1123_label(value):
                check.invalid(f"{where}.{key}", value, message)
    for key in ("serviceAccountName", "serviceAccount"):
        value = spec.get(key)
        if isinstance(value, str) and value:
            rules = apimachinery.path_segment_name(value) or apimachinery.dns1123_subdomain(value)
            for message in rules:
                check.invalid(f"{where}.{key}", value, message)
    for key, value in _mapping(spec.get("nodeSelector")).items():
        _label(check, f"{where}.nodeSelector", key, value)


def _check_metadata(check: _Checker, metadata: dict[str, Any], path: str) -> None:
    for key, value in _mapping(metadata.get("labels")).items():
        _label(check, f"{path}.labels", key, value)
    check_annotation_keys(
        _mapping(metadata.get("annotations")), f"{path}.annotations", check.problems
    )


def check_annotation_keys(annotations: dict[str, Any], path: str, problems: list[Problem]) -> None:
    """Annotation keys are qualified names, compared in lower case (``ValidateAnnotations``)."""
    check = _Checker(problems)
    for key in annotations:
        for message in apimachinery.qualified_name(str(key).lower()):
            check.invalid(path, key, message)


def _label(check: _Checker, path: str, key: Any, value: Any) -> None:
    for message in apimachinery.qualified_name(str(key)):
        check.invalid(path, key, message)
    if isinstance(value, str):
        for message in apimachinery.label_value(value):
            check.invalid(f"{path}.{key}", value, message)


def check_labels(labels: dict[str, Any], path: str, problems: list[Problem]) -> None:
    """Label keys and values (an object's ``metadata.labels``), as the API server checks them."""
    check = _Checker(problems)
    for key, value in labels.items():
        _label(check, path, key, value)


def _check_volumes(check: _Checker, volumes: Any, path: str) -> set[str]:
    """``ValidateVolumes``: unique DNS-1123 names, one source each. Returns the valid names."""
    names: set[str] = set()
    for index, volume in _items(volumes):
        where = f"{path}[{index}]"
        name = volume.get("name")
        valid = check.name(f"{where}.name", name, apimachinery.dns1123_label, "the volume's name")
        if isinstance(name, str) and name in names:
            check.add(f"{where}.name", f"Duplicate value: {_shown(name)}")
        elif valid and isinstance(name, str):
            names.add(name)
        sources = [key for key in VOLUME_SOURCES if volume.get(key) is not None]
        if not sources:
            check.required(where, "must specify a volume type")
        for extra in sources[1:]:
            check.add(f"{where}.{extra}", "Forbidden: may not specify more than 1 volume type")
        for source in sources[:1]:
            _check_volume_source(check, source, _mapping(volume.get(source)), f"{where}.{source}")
    return names


def _check_volume_source(check: _Checker, kind: str, source: dict[str, Any], path: str) -> None:
    if kind in ("configMap", "secret"):
        reference = "name" if kind == "configMap" else "secretName"
        if kind == "configMap" and not source.get(reference):
            check.required(f"{path}.{reference}", "the ConfigMap to mount must be named")
        _file_mode(check, source.get("defaultMode"), f"{path}.defaultMode")
        _key_to_paths(check, source.get("items"), f"{path}.items")
    elif kind == "emptyDir":
        _quantity(check, source.get("sizeLimit"), f"{path}.sizeLimit", None)
    elif kind == "hostPath":
        host_path = source.get("path")
        if not host_path:
            check.required(f"{path}.path", "the host path to mount must be given")
        elif isinstance(host_path, str) and ".." in host_path.split("/"):
            check.invalid(f"{path}.path", host_path, "must not contain '..'")
    elif kind == "persistentVolumeClaim" and not source.get("claimName"):
        check.required(f"{path}.claimName", "the claim to mount must be named")
    elif kind == "downwardAPI":
        _file_mode(check, source.get("defaultMode"), f"{path}.defaultMode")
        for index, item in _items(source.get("items")):
            _relative_path(check, item.get("path"), f"{path}.items[{index}].path")
            _file_mode(check, item.get("mode"), f"{path}.items[{index}].mode")
    elif kind == "projected":
        _file_mode(check, source.get("defaultMode"), f"{path}.defaultMode")
        for index, projection in _items(source.get("sources")):
            for part in ("configMap", "secret"):
                items = _mapping(projection.get(part)).get("items")
                _key_to_paths(check, items, f"{path}.sources[{index}].{part}.items")


def _key_to_paths(check: _Checker, items: Any, path: str) -> None:
    """``validateKeyToPath``: a key, a relative path inside the volume, a file mode."""
    for index, item in _items(items):
        where = f"{path}[{index}]"
        if not item.get("key"):
            check.required(f"{where}.key", "the key to project must be given")
        _relative_path(check, item.get("path"), f"{where}.path")
        _file_mode(check, item.get("mode"), f"{where}.mode")


def _relative_path(check: _Checker, value: Any, path: str) -> None:
    if value is None or value == "":
        check.required(path, "a path relative to the volume must be given")
    elif isinstance(value, str):
        for message in apimachinery.local_non_reserved_path(value):
            check.invalid(path, value, message)


def _file_mode(check: _Checker, value: Any, path: str) -> None:
    if isinstance(value, int) and not 0 <= value <= 0o777:
        check.invalid(path, value, FILE_MODE_ERROR)


def _check_container(
    check: _Checker,
    container: dict[str, Any],
    path: str,
    volumes: set[str],
    names: set[str],
) -> None:
    """``validateContainers`` (and ``validateInitContainers``' names) for one container."""
    name = container.get("name")
    check.name(f"{path}.name", name, apimachinery.dns1123_label, "the container's name")
    if isinstance(name, str) and name:
        if name in names:
            check.add(f"{path}.name", f"Duplicate value: {_shown(name)}")
        names.add(name)
    _check_ports(check, container.get("ports"), f"{path}.ports")
    _check_env(check, container.get("env"), f"{path}.env")
    for index, source in _items(container.get("envFrom")):
        where = f"{path}.envFrom[{index}]"
        prefix = source.get("prefix")
        if isinstance(prefix, str) and prefix:
            for message in apimachinery.env_var_name(prefix):
                check.invalid(f"{where}.prefix", prefix, message)
        given = [key for key in ("configMapRef", "secretRef") if source.get(key) is not None]
        if len(given) != 1:
            detail = "must specify one of: `configMapRef` or `secretRef`"
            if given:
                detail = "may not have more than one field specified at a time"
            check.invalid(f"{path}.envFrom", "", detail)
    _check_mounts(check, container.get("volumeMounts"), f"{path}.volumeMounts", volumes)
    _check_resources(check, _mapping(container.get("resources")), f"{path}.resources")
    _check_ids(check, _mapping(container.get("securityContext")), f"{path}.securityContext")


def _check_ids(check: _Checker, context: dict[str, Any], path: str) -> None:
    """User and group ids of a pod's or a container's securityContext: ``IsValidUserID`` and
    ``IsValidGroupID`` (``validatePodSpecSecurityContext``, ``ValidateSecurityContext``); the
    schema's int64 alone would let -5 or 2**40 through."""
    for key in ("runAsUser", "runAsGroup", "fsGroup"):
        value = context.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= ID_MAX:
            check.invalid(f"{path}.{key}", value, ID_ERROR)
    groups = context.get("supplementalGroups")
    for index, value in enumerate(groups if isinstance(groups, list) else []):
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= ID_MAX:
            check.invalid(f"{path}.supplementalGroups[{index}]", value, ID_ERROR)


def _check_ports(check: _Checker, ports: Any, path: str) -> None:
    """``validateContainerPorts``: named ports unique IANA names, numbers in range."""
    names: set[str] = set()
    for index, port in _items(ports):
        where = f"{path}[{index}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            messages = apimachinery.port_name(name)
            for message in messages:
                check.invalid(f"{where}.name", name, message)
            if not messages and name in names:
                check.add(f"{where}.name", f"Duplicate value: {_shown(name)}")
            names.add(name)
        number = port.get("containerPort")
        if number is None or number == 0:
            check.required(f"{where}.containerPort", "the port number must be given")
        elif isinstance(number, int):
            for message in apimachinery.port_number(number):
                check.invalid(f"{where}.containerPort", number, message)
        host = port.get("hostPort")
        if isinstance(host, int) and host != 0:
            for message in apimachinery.port_number(host):
                check.invalid(f"{where}.hostPort", host, message)
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol and protocol not in PORT_PROTOCOLS:
            supported = ", ".join(json.dumps(p) for p in PORT_PROTOCOLS)
            check.add(
                f"{where}.protocol",
                f"Unsupported value: {_shown(protocol)}: supported values: {supported}",
            )


def _check_env(check: _Checker, env: Any, path: str) -> None:
    """``ValidateEnv`` and ``validateEnvVarValueFrom``."""
    for index, item in _items(env):
        where = f"{path}[{index}]"
        name = item.get("name")
        if name is None or name == "":
            check.required(f"{where}.name", "every environment variable needs a name")
        elif isinstance(name, str):
            for message in apimachinery.env_var_name(name):
                check.invalid(f"{where}.name", name, message)
        source = item.get("valueFrom")
        if source is None:
            continue
        source = _mapping(source)
        given = [
            key
            for key in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
            if source.get(key) is not None
        ]
        from_path = f"{where}.valueFrom"
        if not given:
            check.invalid(
                from_path,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                "`secretKeyRef`",
            )
        elif item.get("value"):
            check.invalid(from_path, "", "may not be specified when `value` is not empty")
        elif len(given) > 1:
            check.invalid(from_path, "", "may not have more than one field specified at a time")
        field_ref = _mapping(source.get("fieldRef"))
        field_path = field_ref.get("fieldPath")
        if "fieldRef" in given and isinstance(field_path, str):
            _check_field_path(check, field_path, f"{from_path}.fieldRef")
        for key in ("configMapKeyRef", "secretKeyRef"):
            selector = _mapping(source.get(key))
            if key in given and isinstance(selector.get("key"), str):
                if not selector["key"]:
                    check.required(f"{from_path}.{key}.key", "the key to read must be given")
                for message in apimachinery.config_map_key(selector["key"]):
                    check.invalid(f"{from_path}.{key}.key", selector["key"], message)


def _check_field_path(check: _Checker, field_path: str, path: str) -> None:
    """``validateObjectFieldSelector`` for env: a supported path, or a subscripted label or
    annotation whose key is a qualified name."""
    if not field_path:
        check.required(f"{path}.fieldPath", "the field to read must be given")
        return
    base, bracket, subscript = field_path.partition("[")
    if bracket:
        key = subscript[1:-2] if subscript[:1] == "'" and subscript[-2:] == "']" else ""
        if base not in ("metadata.labels", "metadata.annotations"):
            check.invalid(path, base, "does not support subscript")
            return
        lowered = key.lower() if base == "metadata.annotations" else key
        for message in apimachinery.qualified_name(lowered):
            check.invalid(path, key, message)
        return
    if field_path not in ENV_FIELD_PATHS:
        supported = ", ".join(json.dumps(p) for p in ENV_FIELD_PATHS)
        check.add(
            f"{path}.fieldPath",
            f"Unsupported value: {_shown(field_path)}: supported values: {supported}",
        )


def _check_mounts(check: _Checker, mounts: Any, path: str, volumes: set[str]) -> None:
    """``ValidateVolumeMounts``: a defined volume, a unique mount path, a relative subPath."""
    seen: set[str] = set()
    for index, mount in _items(mounts):
        where = f"{path}[{index}]"
        name = mount.get("name")
        if name is None or name == "":
            check.required(f"{where}.name", "the volume to mount must be named")
        elif isinstance(name, str) and name not in volumes:
            check.add(f"{where}.name", f"Not found: {_shown(name)}")
        mount_path = mount.get("mountPath")
        if mount_path is None or mount_path == "":
            check.required(f"{where}.mountPath", "where to mount the volume must be given")
        elif isinstance(mount_path, str):
            if mount_path in seen:
                check.invalid(f"{where}.mountPath", mount_path, "must be unique")
            seen.add(mount_path)
        for key in ("subPath", "subPathExpr"):
            value = mount.get(key)
            if isinstance(value, str) and value:
                for message in apimachinery.local_descending_path(value):
                    check.invalid(f"{where}.{key}", value, message)


def _check_resources(check: _Checker, resources: dict[str, Any], path: str) -> None:
    """``ValidateResourceRequirements``: resource names, quantities, requests within limits."""
    parsed: dict[str, dict[str, tuple[Any, Decimal]]] = {}
    for kind in ("limits", "requests"):
        parsed[kind] = {}
        for name, value in _mapping(resources.get(kind)).items():
            where = f"{path}.{kind}.{name}"
            if not _resource_name(check, str(name), where):
                continue
            amount = _quantity(check, value, where, str(name))
            if amount is not None:
                parsed[kind][str(name)] = (value, amount)
    limits, requests = parsed["limits"], parsed["requests"]
    for name, (asked, request) in requests.items():
        if name in limits:
            written, limit = limits[name]
            if request != limit and not _overcommit_allowed(name):
                check.invalid(
                    f"{path}.requests", asked, f"must be equal to {name} limit of {written}"
                )
            elif request > limit:
                check.invalid(
                    f"{path}.requests",
                    asked,
                    f"must be less than or equal to {name} limit of {written}",
                )
        elif not _overcommit_allowed(name):
            # The API server's words, then the resource and the fix.
            check.required(
                f"{path}.limits",
                "Limit must be set for non overcommitable resources: "
                f"{name} is requested ({asked}) without a limit; add limits: {{{name}: {asked}}} "
                "(the request of a resource that cannot be overcommitted must equal its limit)",
            )


def _resource_name(check: _Checker, name: str, path: str) -> bool:
    """``validateContainerResourceName``: a standard resource or a domain-qualified name."""
    messages = apimachinery.qualified_name(name)
    standard = name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX)
    if "/" not in name and not messages and not standard:
        messages = ["must be a standard resource for containers"]
    for message in messages:
        check.invalid(path, name, message)
    return not messages


def _native(name: str) -> bool:
    """``helper.IsNativeResource``: unprefixed, or in the kubernetes.io domain; every other
    resource is an extended one (``nvidia.com/gpu``), counted in whole units."""
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources other than hugepages."""
    return _native(name) and not name.startswith(HUGEPAGES_PREFIX)


def _quantity(check: _Checker, value: Any, path: str, resource: str | None) -> Decimal | None:
    """A quantity the API server can decode, not negative, whole for extended resources."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if is_unknown(value):  # an Output's: checked when it resolves
        return None
    try:
        amount = quantity.parse(value)
    except quantity.QuantityError as error:
        check.invalid(path, value, str(error))
        return None
    if amount < 0:
        check.invalid(path, value, NEGATIVE_ERROR)
    elif resource is not None and not _native(resource) and not quantity.is_integer(amount):
        check.invalid(path, value, NOT_INTEGER_ERROR)
    return amount
