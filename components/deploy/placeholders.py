"""Pulumi Inputs through the pure graph: each Output a program gives stands in as a token.

Structure is plain, values are Inputs (docs ARCHITECTURE.md). A job's arguments may hold
Outputs where a Kubernetes object only carries the value (an image, an env value, a
namespace, a label's value, a quantity...). The graph builders are pure and never see one:
:meth:`Placeholders.hide` puts a unique token in each Output's place (a DNS label, so it passes
the checks of names, images and label values as any known value does), the graph is built,
and :meth:`Placeholders.restore` puts the Outputs back into what goes to pulumi-kubernetes: a
token alone becomes its Output, a token inside a string (a namespace in a host name, in
TF_CONFIG's JSON, in a hostfile) an ``Output.concat`` of the parts. pulumi-kubernetes takes
Inputs at any depth of its arguments (``pulumi.Input`` in every ``*Args`` field), so the rest of
the manifest stays plain data and a preview shows every known value in place.

An Output where the graph needs the value itself (a replica count, a name, a kind) is refused
naming the field; an Output's value is checked as the field's known values are when it
resolves, and a bad one fails the resource with the field and the value.

pulumi-kubernetes ``*Args`` objects (``PodTemplateSpecArgs`` and the types inside it) become
plain mappings with the Kubernetes field names (``host_pid`` is ``hostPID``): the SDK's own
conversion of input types (``pulumi._types.input_type_to_dict``, what it serializes them with).
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

# The SDK's own reading of an input type (what it serializes `*Args` with); it has no public
# equivalent.
from pulumi import _types

from trainjobs.core import apimachinery
from trainjobs.core.errors import ConfigError, Problem
from trainjobs.core.names import namespace_problems
from trainjobs.core.quantity import QuantityError, parse
from trainjobs.core.unknown_values import TOKEN
from trainjobs.images.references import reference_problem

Check = Callable[[str, Any], str | None]
"""Why a resolved value does not fit the field at ``path``, or None."""

_KEY = r"[^\[\]]+"  # a mapping key (label keys hold dots and slashes)
_VALUE_FIELDS = re.compile(
    "|".join(
        [
            # A job's own arguments.
            rf"namespace|labels\.{_KEY}|images\.{_KEY}",
            # Anywhere in a spec or pod template: what a Kubernetes object only carries.
            r".*\.(image|workingDir|serviceAccountName|priorityClassName)",
            r".*\.(command|args)\[\d+\]",
            r".*\.env\[\d+\]\.value",
            rf".*\.(labels|annotations|nodeSelector)\.{_KEY}",
            # Native resources only: an extended one (nvidia.com/gpu) says which pods are GPU
            # pods, which the pool's scheduling and the pre-flight checks decide by.
            r".*\.(limits|requests)\.[^\[\]/]+",
            r".*\.tolerations\[\d+\]\.(key|value)",
            r".*\.(secret\.secretName|configMap\.name|imagePullSecrets\[\d+\]\.name)",
            r".*\.(secretKeyRef|configMapKeyRef|secretRef|configMapRef)\.name",
        ]
    )
)


def is_value_field(path: str) -> bool:
    """Whether the field at ``path`` (``spec.x.template.spec.containers[0].image``) only
    carries its value to a Kubernetes object, so it may be a pulumi.Output: images, commands
    and their arguments, env values, the namespace, labels' and annotations' values, native
    resource quantities, node selectors, tolerations' keys and values, the names of secrets,
    config maps and service accounts. Everything else shapes the objects."""
    return _VALUE_FIELDS.fullmatch(path) is not None


class Placeholders:
    """The Outputs of one component's arguments, each by the token that stands in for it.

    ``owner`` (the component's type and name) and the field path make each token, so the
    same program gives the same tokens: the graph, and the run identity hashed from it, do
    not change from one `pulumi up` to the next while the program does not.
    """

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.outputs: dict[str, pulumi.Output[Any]] = {}
        """Each Output by its token."""
        self.paths: dict[str, str] = {}
        """Each token's field path, as error messages name it (``spec.x.template...``)."""

    def hide(self, value: Any, path: str) -> Any:
        """``value`` as plain data: Outputs (and awaitables) replaced by tokens, ``*Args``
        objects by mappings with the Kubernetes field names, tuples by lists."""
        if isinstance(value, pulumi.Output) or inspect.isawaitable(value):
            token = (
                "pulumi-input-" + hashlib.sha256(f"{self.owner}\0{path}".encode()).hexdigest()[:12]
            )
            self.outputs[token] = pulumi.Output.from_input(value)
            self.paths[token] = path
            return token
        if _types.is_input_type(type(value)):
            value = _types.input_type_to_dict(value)
        if isinstance(value, Mapping):
            return {key: self.hide(item, _join(path, str(key))) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.hide(item, f"{path}[{index}]") for index, item in enumerate(value)]
        return value

    def refuse_structural(
        self, source: str, is_value: Callable[[str], bool], what: str = "arguments"
    ) -> None:
        """Raise :class:`ConfigError` naming every field that holds an Output but shapes the
        graph (``is_value`` is False for its path)."""
        problems = [
            Problem(
                path,
                "is a pulumi.Output, but this field shapes the objects (kind, version, names, "
                "replica types and counts, transport) and must be known when the program "
                "runs; give it a plain value (Outputs are taken where a Kubernetes object "
                "only carries the value: images, commands, env values, namespace, labels' "
                "values, quantities...)",
            )
            for path in sorted(self.paths.values())
            if not is_value(path)
        ]
        if problems:
            raise ConfigError(source, what, problems)

    def restore(self, value: Any, check: Check | None = None) -> Any:
        """``value`` (the graph's plain data) with each token put back as its Output (see the
        module's docstring); without tokens, ``value`` itself. ``check``: the values of the
        Outputs are checked with it when they resolve, by field path; a problem fails the
        deployment (a ``pulumi.RunError``: no stack trace) naming the component, the field
        and the value."""
        if isinstance(value, str):
            return self._restore_text(value, check)
        if isinstance(value, Mapping):
            return {key: self.restore(item, check) for key, item in value.items()}
        if isinstance(value, list):
            return [self.restore(item, check) for item in value]
        return value

    def _restore_text(self, text: str, check: Check | None) -> Any:
        tokens = TOKEN.findall(text)
        if not tokens or not any(token in self.outputs for token in tokens):
            return text
        if text in self.outputs:
            return self._checked(text, check)
        parts: list[pulumi.Input[str]] = []
        position = 0
        for match in TOKEN.finditer(text):
            if match.group() not in self.outputs:
                continue
            parts += [text[position : match.start()], self._checked(match.group(), check)]
            position = match.end()
        parts.append(text[position:])
        return pulumi.Output.concat(*(part for part in parts if part != ""))

    def _checked(self, token: str, check: Check | None) -> pulumi.Output[Any]:
        output = self.outputs[token]
        if check is None:
            return output
        path = self.paths[token]

        def checked(value: Any) -> Any:
            problem = check(path, value)
            if problem is not None:
                raise pulumi.RunError(
                    f"{self.owner}: {path}: {value!r} (an Output's value): {problem}"
                )
            return value

        return output.apply(checked)


def check_resolved(path: str, value: Any) -> str | None:
    """Why an Output's value does not fit the field at ``path``, by the checks a known value
    of it gets at construction: a string, a quantity (a number too), an image reference,
    the namespace a DNS label, a label's value as the API server checks it."""
    if re.fullmatch(r".*\.(limits|requests)\.[^\[\]/]+", path):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return f"must be a quantity, not {type(value).__name__}"
        try:
            parse(value)
        except QuantityError as error:
            return str(error)
        return None
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    problems: list[str] = []
    if path == "namespace":
        problems = [problem.message for problem in namespace_problems(value, path)]
    elif path.endswith(".image") or path.startswith("images."):
        problems = [problem for problem in [reference_problem(value)] if problem]
    elif re.fullmatch(r"(.*\.)?labels\.[^\[\]]+", path):
        problems = apimachinery.label_value(value)
    return "; ".join(problems) or None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
