"""Kubernetes resource quantities (``500m``, ``2Gi``, ``1e3``) read as the API server reads them.

The grammar, suffixes and error texts are apimachinery's (kubernetes ``staging/src/k8s.io/
apimachinery/pkg/api/resource/quantity.go``: ``parseQuantityString``, ``ParseQuantity``, and
``suffix.go``). Values are exact decimals: a huge exponent such as ``1e999999999`` costs
nothing, as it costs Go's ``inf.Dec`` nothing. (The Kubernetes Python client's
``parse_quantity`` is not the server's grammar: it takes ``NaN``, ``Infinity`` and ``1_000``
and refuses ``e3``, which the server reads as 0.)
"""

from __future__ import annotations

import math
import re
from decimal import Context, Decimal, localcontext

SPLIT_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_PATTERN}'"
SUFFIX_WRONG = "unable to parse quantity's suffix"

# The scanner of parseQuantityString: sign, digits, an optional fraction, then the suffix
# (letters of the suffix alphabet, an optional sign, digits). Anything else is ErrFormatWrong.
_SCANNED = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL_SUFFIXES["E"] = 18
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT32 = (-(2**31), 2**31 - 1)
# Exact arithmetic over any exponent an int32 allows.
_CONTEXT = Context(prec=200, Emax=10**9, Emin=-(10**9))


class QuantityError(ValueError):
    """Not a quantity; the message is the API server's."""


def parse(value: str | int | float) -> Decimal:
    """The quantity's exact value; raises :class:`QuantityError` with apimachinery's message.

    JSON numbers are read from their text, as ``Quantity.UnmarshalJSON`` reads them."""
    text = str(value).strip() if isinstance(value, str) else _number_text(value)
    if not text:
        raise QuantityError(FORMAT_WRONG)
    scanned = _SCANNED.fullmatch(text)
    if scanned is None:
        raise QuantityError(FORMAT_WRONG)
    sign, whole, fraction, suffix = scanned.groups()
    exponent = _exponent(suffix)
    with localcontext(_CONTEXT):
        number = Decimal(f"{sign}{whole or '0'}.{fraction or '0'}")
        if suffix in _BINARY_SUFFIXES:
            return number * (2 ** _BINARY_SUFFIXES[suffix])
        return number.scaleb(exponent)


def _number_text(value: int | float) -> str:
    # JSON has no booleans, NaN or infinities among its numbers.
    if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
        raise QuantityError(FORMAT_WRONG)
    return str(value)


def _exponent(suffix: str) -> int:
    """``suffixer.interpret``: a decimal SI suffix, a binary one, or ``e``/``E`` and an int32."""
    if suffix in _DECIMAL_SUFFIXES:
        return _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 0
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[-+]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
        if _INT32[0] <= exponent <= _INT32[1]:
            return exponent
    raise QuantityError(SUFFIX_WRONG)


def whole_units(value: str | int | float) -> int:
    """A valid quantity of a resource counted in whole units (GPUs), as an int."""
    return int(parse(value))


def is_integer(value: Decimal) -> bool:
    return value == value.to_integral_value()
