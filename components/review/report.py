"""The Markdown report of a preview diff, shaped for a pull-request comment.

Summary first (counts, then one row per changed resource with the reason), then each diff
folded in a `<details>` block. GitHub refuses comments over 65,536 characters, so the report
is capped: the tables and notes always fit, diffs are added while they fit, and a note says
how many were left out and which command shows them all.
"""

from __future__ import annotations

import re
from pathlib import Path

from trainjobs.review.compare import DEFAULT_MAX_BYTES, OPERATIONS, Comparison, ResourceDiff
from trainjobs.review.properties import format_path
from trainjobs.review.snapshot import metadata_of

_PHRASES = {
    "create": "to create",
    "update": "to update",
    "replace": "to replace",
    "delete": "to delete",
    "same": "unchanged",
}
# Room kept for the truncation note and the footer.
_RESERVE = 700


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _amount(size: int) -> str:
    return f"{size // 1024} KiB" if size % 1024 == 0 else f"{size} bytes"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _fenced(body: str, language: str = "diff") -> str:
    """A code fence longer than any backtick run inside, so content cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{_fenced(body)}\n\n</details>"


def _operation(resource: ResourceDiff) -> str:
    if resource.operation == "same" and resource.ignored:
        return "same (change ignored)"
    return resource.operation


def summary_line(comparison: Comparison) -> str:
    if not comparison.resources:
        return "No resources on either side."
    parts = [f"{n} {_PHRASES[op]}" for op, n in comparison.counts.items() if n]
    verdict = "" if comparison.has_changes else "No changes. "
    return f"{verdict}{len(comparison.resources)} resources: {', '.join(parts)}."


def _ignored_notes(comparison: Comparison) -> list[str]:
    lines = []
    for resource in comparison.with_ignored_changes:
        manifest = resource.resource.manifest or {}
        meta = metadata_of(manifest)
        for change in resource.ignored:
            path = format_path(change.path)
            line = f"- `{resource.label}`: `{path}` is not applied (`ignoreChanges`)"
            if manifest.get("kind") == "StatefulSet" and change.path == ("spec", "replicas"):
                line += (
                    f"; the workers keep their live count. To resize a running job: "
                    f"`kubectl scale statefulset {meta.get('name')} "
                    f"--replicas={change.new} -n {meta.get('namespace', 'default')}`"
                )
            lines.append(line)
    return lines


def render(
    comparison: Comparison,
    *,
    base: str,
    head: str,
    full_command: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    config: list[str] | None = None,
    previews: Path | None = None,
) -> str:
    """The report as Markdown, at most `max_bytes` UTF-8 bytes (0: no cap)."""
    limit = max_bytes or float("inf")
    parts = [
        f"### trainjobs preview diff: stack `{comparison.stack}`",
        f"`{base}` → `{head}`. {summary_line(comparison)}",
        "| operation | resources |\n| --- | ---: |\n"
        + "\n".join(f"| {op} | {comparison.counts[op]} |" for op in OPERATIONS),
    ]
    notable = comparison.notable
    if notable:
        rows = ["| resource | operation | why |", "| --- | --- | --- |"]
        table_budget = limit / 2
        used = sum(_size(row) + 1 for row in rows)
        for index, resource in enumerate(notable):
            row = f"| `{resource.label}` | {_operation(resource)} | {_cell(resource.reason)} |"
            if used + _size(row) + 1 > table_budget:
                rows.append(
                    f"| {len(notable) - index} more | | left out of this table; "
                    f"`{_cell(full_command)}` lists every resource |"
                )
                break
            rows.append(row)
            used += _size(row) + 1
        parts.append("\n".join(rows))
    ignored = _ignored_notes(comparison)
    if ignored:
        parts.append(
            "**Changes Pulumi will not apply.** These properties are in the resource's "
            "`ignoreChanges`, so the engine keeps their current value (a real `pulumi "
            "preview` shows the resource as unchanged):\n" + "\n".join(ignored)
        )
    if config:
        parts.append("**Stack config**\n" + "\n".join(f"- {line}" for line in config))

    blocks = [
        _details(f"<code>{_operation(r)}</code> {r.label}", text)
        for r in notable
        if (text := r.unified_diff())
    ]
    if comparison.outputs_diff:
        blocks.append(_details("stack outputs", comparison.outputs_diff))
    used = sum(_size(part) + 2 for part in parts)
    omitted = 0
    for block in blocks:
        if used + _size(block) + 2 + _RESERVE > limit:
            omitted += 1
            continue
        parts.append(block)
        used += _size(block) + 2
    if omitted:
        where = f", or compare the YAML files in `{previews}/base` and `{previews}/head`"
        parts.append(
            f"**{omitted} of {len(blocks)} diffs omitted** to keep this report under "
            f"{_amount(max_bytes)}. See every diff: `{full_command}`"
            + (where if previews else "")
            + "."
        )
    parts.append(
        "<sub>Offline: the Pulumi program evaluated under the SDK's mock runtime and classified "
        "with pulumi-kubernetes' replace-on-change rules. Drift on the cluster and secret "
        "values are not visible.</sub>"
    )
    return "\n\n".join(parts)
