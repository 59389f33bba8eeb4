"""Text from a cluster or a pod, made safe to print on a terminal.

Names, condition reasons and messages, termination reasons and log lines come from an API
server or a program nobody here wrote. Printed raw, their control characters drive the
terminal: ESC sequences clear the screen or set its title, OSC 52 writes the clipboard, a
carriage return or backspace overwrites what was printed before, and bidirectional
overrides show text in another order than it is. :func:`escape` shows every such
character as a visible escape (``\\x1b``, ``\\u202e``) instead, so the text is still
readable and nothing in it is acted on. Everything printed from a cluster or a pod goes
through it; JSON output needs nothing more (``json.dumps`` escapes control characters).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
"""Every control character but the tab (Unicode category Cc), and the format characters
that reorder or break the displayed text (bidirectional marks and overrides, line and
paragraph separators)."""


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character (C0 and C1 controls, DEL, ESC, CR, BEL...) and
    bidirectional override shown as a visible escape; tabs stay. With ``keep_newlines``,
    ``\\n`` stays too (a multi-line report whose every line was built here)."""
    if keep_newlines:
        return "\n".join(escape(line) for line in text.split("\n"))
    return _UNSAFE.sub(_shown, text)
