"""Quantities are read with the API server's grammar: what it takes is taken with its exact
value, what it refuses is refused with its message."""

from __future__ import annotations

from decimal import Decimal

import pytest

from trainjobs.core import quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("2Gi", Decimal(2 * 1024**3)),
        ("1e3", Decimal(1000)),
        ("1.5", Decimal("1.5")),
        (8, Decimal(8)),
        (0.25, Decimal("0.25")),
        ("e3", Decimal(0)),  # no digits: apimachinery's scanner reads a zero
        ("1.G", Decimal(10**9)),
        (" 2 ", Decimal(2)),
    ],
)
def test_what_the_api_server_takes_has_its_exact_value(text, value):
    assert quantity.parse(text) == value


def test_a_huge_exponent_costs_nothing():
    assert quantity.parse("1e999999999") == Decimal("1e999999999")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", quantity.FORMAT_WRONG),
        ("1.2.3", quantity.FORMAT_WRONG),
        ("", quantity.FORMAT_WRONG),
        (float("nan"), quantity.FORMAT_WRONG),
        (True, quantity.FORMAT_WRONG),
        ("1ki", quantity.SUFFIX_WRONG),
        ("1e", quantity.SUFFIX_WRONG),
        ("1e2147483648", quantity.SUFFIX_WRONG),
    ],
)
def test_what_the_api_server_refuses_is_refused_with_its_message(text, message):
    with pytest.raises(quantity.QuantityError) as raised:
        quantity.parse(text)
    assert str(raised.value) == message
