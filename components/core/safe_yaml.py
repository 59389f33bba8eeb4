"""YAML read as the API server reads it, bounded in size, depth and alias expansion.

A hostile file cannot exhaust time or memory, and what a person would misread (a key given
twice) is refused.

- Size: at most :data:`MAX_BYTES`, the API server's own limit on a request body
  (kubernetes ``staging/src/k8s.io/apiserver/pkg/server/config.go``, ``NewConfig``:
  ``MaxRequestBodyBytes: 3 * 1024 * 1024``).
- Text: UTF-8 only (a byte-order mark is allowed), as JSON and Kubernetes' YAML decoder require.
- Depth and size after aliases: PyYAML builds an alias as a reference to the anchored value,
  so a "billion laughs" file of a few hundred bytes loads in microseconds and explodes later,
  in whatever walks it (validation, rendering, ``json.dumps``). Every node is therefore
  measured as if its aliases were expanded, before anything is built from it; a recursive
  alias (a value that contains itself) is refused outright.
- Duplicate keys: PyYAML keeps the last one silently; Kubernetes' strict decoding refuses them
  (sigs.k8s.io/yaml ``UnmarshalStrict``: ``key "x" already set in map``). A key given twice
  with different values is refused; one that repeats the same value loses nothing and is
  accepted, as the operators of the time accepted pytorch-operator's own example (its pod
  specs say ``restartPolicy: OnFailure`` twice).
- Values stay JSON values: a timestamp-looking scalar is a string (go-yaml, which the API
  server uses, decodes it as one), and tags that build other types (``!!binary``, ``!!set``,
  ``!!timestamp``...) are refused.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100
"""Nesting levels; a pod template needs about 12, and Python's recursion limit is 1000."""
MAX_VALUES = 100_000
"""Values (scalars, lists, mappings) after aliases are expanded; a large job spec has 2,000."""


class LimitExceeded(Exception):
    """The document is larger, deeper or more repetitive than a job spec may be."""


_JSON_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:merge",
    "tag:yaml.org,2002:value",
}


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1's implicit types without timestamps (those stay strings, as in go-yaml)."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}


class _Checks:
    """The bounds and refusals above, over whichever parser produces the events."""

    _depth = 0
    _nodes = 0
    _aliased = False

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        # The composer recurses once per level: stop before Python's recursion limit does.
        self._depth += 1
        self._nodes += 1
        if self.check_event(yaml.events.AliasEvent):  # type: ignore[attr-defined]
            self._aliased = True
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1  # type: ignore[attr-defined]
                raise LimitExceeded(
                    f"line {line}: nested more than {MAX_DEPTH} levels deep; a job spec needs "
                    "far fewer"
                )
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1

    def compose_document(self) -> Node:
        self._nodes, self._aliased = 0, False
        node = super().compose_document()  # type: ignore[misc]
        # Without aliases every value is a node of its own, and composing bounded the depth:
        # only a document with aliases, or with too many values, needs to be measured.
        if self._aliased or self._nodes > MAX_VALUES:
            _check_expanded(node)
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        if node.tag not in _JSON_TAGS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"tag {node.tag!r} is not allowed: a job spec holds only strings, numbers, "
                "booleans, null, lists and mappings",
                node.start_mark,
            )
        return super().construct_object(node, deep)  # type: ignore[misc]

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            _check_duplicate_keys(self, node)
        return super().construct_mapping(node, deep)  # type: ignore[misc]


class _Loader(
    _Checks,
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    yaml.constructor.SafeConstructor,
    _Resolver,
):
    """PyYAML in pure Python: its error messages are the ones users see."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        _Resolver.__init__(self)


_CParser: Any = getattr(getattr(yaml, "_yaml", None), "CParser", None)
"""libyaml's scanner and parser (PyYAML's C extension), when PyYAML was built with it."""

if _CParser is not None:

    class _FastLoader(
        _Checks,
        yaml.composer.Composer,  # before CParser: nodes are composed, and checked, in Python
        _CParser,
        yaml.constructor.SafeConstructor,
        _Resolver,
    ):
        """libyaml's events (about ten times faster than PyYAML's pure-Python scanner and
        parser), composed and constructed in Python with every check of :class:`_Checks`."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            _Resolver.__init__(self)


def _check_duplicate_keys(loader: Any, node: MappingNode) -> None:
    first: dict[Any, tuple[int, Node]] = {}
    for key_node, value_node in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, ScalarNode):
            continue
        key = loader.construct_object(key_node)
        if key not in first:
            first[key] = (key_node.start_mark.line + 1, value_node)
            continue
        line, earlier = first[key]
        same = loader.construct_object(earlier, deep=True) == loader.construct_object(
            value_node, deep=True
        )
        if not same:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key {key!r} is given twice with different values (first at line {line}); "
                "keep one",
                key_node.start_mark,
            )


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_expanded(root: Node | None) -> None:
    """Refuse a document whose aliases, expanded, make it too large or too deep, or that
    contains itself. Iterative, and each distinct node is measured once, so this costs time
    in proportion to the file, not to its expansion."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        if leaving:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            heights[key] = 1 + max((heights[id(child)] for child in children), default=0)
            entered.discard(key)
            line = node.start_mark.line + 1
            if sizes[key] > MAX_VALUES:
                raise LimitExceeded(
                    f"line {line}: this value holds more than {MAX_VALUES} values once its "
                    "aliases are expanded; a job spec may hold at most that many"
                )
            if heights[key] > MAX_DEPTH:
                raise LimitExceeded(
                    f"line {line}: nested more than {MAX_DEPTH} levels deep once its aliases "
                    "are expanded; a job spec needs far fewer"
                )
            continue
        if key in sizes:
            continue
        if key in entered:
            raise LimitExceeded(
                f"line {node.start_mark.line + 1}: an alias refers to a value that contains "
                "it, which would repeat forever"
            )
        entered.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def load_all(text: str) -> list[Any]:
    """Every document of ``text``; raises :class:`LimitExceeded` or ``yaml.YAMLError``.

    libyaml parses when it is there; a text it refuses is parsed again in pure Python, whose
    messages are the ones users (and the tests) see.
    """
    if _CParser is not None:
        try:
            return _documents(_FastLoader(text))
        except yaml.YAMLError:
            pass
    return _documents(_Loader(text))


def _documents(loader: Any) -> list[Any]:
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
        return documents
    finally:
        loader.dispose()


def decode(data: bytes) -> str:
    """UTF-8 text (a leading byte-order mark is dropped); raises ``UnicodeDecodeError``."""
    return data.decode("utf-8-sig")


def describe(error: yaml.YAMLError) -> str:
    """A YAML error on one line: what went wrong and where."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return str(error)
    parts = []
    for text, mark in ((error.context, error.context_mark), (error.problem, error.problem_mark)):
        if text is None:
            continue
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        parts.append(f"{text}{where}")
    return ": ".join(parts)
