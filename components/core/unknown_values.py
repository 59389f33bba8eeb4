"""The token that stands in the pure graph for a value a program gives as a Pulumi Output.

Such a value is known only when it resolves (trainjobs.deploy.placeholders puts the Output
back in the objects, and checks its value then); a check that must read a value, such as a
quantity's, leaves a token to that later check.
"""

from __future__ import annotations

import re
from typing import Any

TOKEN = re.compile(r"pulumi-input-[0-9a-f]{12}")
"""Lower-case letters, digits and dashes (a DNS label, an image name, a label value), never
written by a user by chance."""


def is_unknown(value: Any) -> bool:
    """Whether ``value`` is a token: an Output's value, not known yet."""
    return isinstance(value, str) and TOKEN.fullmatch(value) is not None
