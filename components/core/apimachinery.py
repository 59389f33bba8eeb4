"""Kubernetes' rules for names and values (apimachinery's validators), with their messages.

Each function returns the messages the API server gives for ``value`` (empty when valid),
word for word, so a user who searches for one finds Kubernetes' own documentation. The rules
and texts are those of kubernetes ``staging/src/k8s.io/apimachinery/pkg/util/validation/
validation.go`` and ``pkg/api/validate/content/{dns,kube,identifier,path}.go``.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
LABEL_KEY_NAME_MAX = 63

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_LABEL_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _LABEL_KEY + ")?"
_CONFIG_MAP_KEY = "[-._a-zA-Z0-9]+"


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: the rule, examples, and the regex itself."""
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def max_length(length: int) -> str:
    return f"must be no more than {length} characters"


def _matches(pattern: str, value: str) -> bool:
    # Go's regexp anchors with ^...$ and has no multiline mode: fullmatch is the same.
    return re.fullmatch(pattern, value) is not None


def dns1123_label(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(max_length(DNS1123_LABEL_MAX))
    if not _matches(_DNS1123_LABEL, value):
        if _matches(_DNS1123_SUBDOMAIN, value):
            errors.append("must not contain dots")
        else:
            errors.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or '-', and must start and end with an alphanumeric character",
                    _DNS1123_LABEL,
                    "my-name",
                    "123-abc",
                )
            )
    return errors


def dns1035_label(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(max_length(DNS1123_LABEL_MAX))
    if not _matches(_DNS1035_LABEL, value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1035 label must consist of lower case alphanumeric characters or "
                "'-', start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL,
                "my-name",
                "abc-123",
            )
        )
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_length(DNS1123_SUBDOMAIN_MAX))
    if not _matches(_DNS1123_SUBDOMAIN, value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN,
                "example.com",
            )
        )
    return errors


def qualified_name(value: str) -> list[str]:
    """A label key (``IsQualifiedName``): an optional DNS subdomain prefix and ``/``, a name."""
    errors: list[str] = []
    parts = value.split("/")
    rule = (
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character"
    )
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {message}" for message in dns1123_subdomain(prefix)]
    else:
        return [
            "a valid label key "
            + _regex_error(rule, _LABEL_KEY, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > LABEL_KEY_NAME_MAX:
        errors.append(f"name part {max_length(LABEL_KEY_NAME_MAX)}")
    if not _matches(_LABEL_KEY, name):
        errors.append("name part " + _regex_error(rule, _LABEL_KEY, "MyName", "my.name", "123-abc"))
    return errors


def label_value(value: str) -> list[str]:
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(max_length(LABEL_VALUE_MAX))
    if not _matches(_LABEL_VALUE, value):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


def env_var_name(value: str) -> list[str]:
    """``IsRelaxedEnvVarName``: the rule since Kubernetes 1.34 (RelaxedEnvironmentVariable-
    Validation, GA), which accepts every name the older C-identifier-like rule did."""
    errors = []
    if not value:
        errors.append("environment variable name must be non-empty")
    if any(not (" " <= char <= "~") or char == "=" for char in value):
        errors.append(
            "a valid environment variable name must consist only of printable ASCII "
            "characters other than '='"
        )
    return errors


def config_map_key(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_length(DNS1123_SUBDOMAIN_MAX))
    if not _matches(_CONFIG_MAP_KEY, value):
        errors.append(
            _regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                _CONFIG_MAP_KEY,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    return errors + _chdir_prefix(value)


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def port_number(value: int) -> list[str]:
    return [] if 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


def port_name(value: str) -> list[str]:
    """``IsValidPortName``: an IANA service name."""
    errors = []
    if len(value) > 15:
        errors.append(max_length(15))
    if not _matches("[-a-z0-9]+", value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def path_segment_name(value: str) -> list[str]:
    """``IsPathSegmentName``: a name that is safe as one segment of a REST or etcd path."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in value]


def local_descending_path(value: str) -> list[str]:
    """``validateLocalDescendingPath``: relative, and no ``..`` element."""
    errors = []
    if value.startswith("/"):
        errors.append("must be a relative path")
    if ".." in value.split("/"):
        errors.append("must not contain '..'")
    return errors


def local_non_reserved_path(value: str) -> list[str]:
    """``ValidateLocalNonReservedPath``: a descending path that does not start with ``..``."""
    errors = local_descending_path(value)
    if value.startswith("..") and not value.startswith("../"):
        errors.append("must not start with '..'")
    return errors
