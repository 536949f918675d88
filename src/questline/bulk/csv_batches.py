"""Cutting a checked CSV file into requests of at most N teams, for the import command.

A batch is the file's own header line(s) followed by the original lines of its teams'
records, byte for byte (quoting and spelling kept), every row of a team in the same
batch. Each batch knows which line of the file each of its lines came from, so a
problem the server reports for ``line 3`` of a batch is shown as the file's line.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass

from questline.bulk.schemas import BulkPlan, LineSpan

_LINE = re.compile(r"^line (\d+)")


@dataclass(frozen=True, slots=True)
class Batch:
    number: int
    """1-based."""
    team_names: list[str]
    body: bytes
    file_lines: list[int]
    """``file_lines[k - 1]``: the file's line that is the batch's line ``k``."""

    def file_line(self, batch_line: int) -> int:
        if 1 <= batch_line <= len(self.file_lines):
            return self.file_lines[batch_line - 1]
        return batch_line

    def in_file_terms(self, field: str) -> str:
        """``line 3: email`` of this batch → ``line 1207: email`` of the file."""
        return _LINE.sub(lambda m: f"line {self.file_line(int(m.group(1)))}", field, count=1)


def split(plan: BulkPlan, *, batch_size: int) -> list[Batch]:
    """The plan's teams in batches of at most ``batch_size`` teams, in file order."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if plan.header is None:
        raise ValueError("only a CSV plan can be split into CSV batches")
    lines = io.StringIO(plan.text, newline="").readlines()
    batches: list[Batch] = []
    for start in range(0, len(plan.teams), batch_size):
        teams = plan.teams[start : start + batch_size]
        spans = [plan.header, *(span for team in teams for span in team.spans)]
        body, file_lines = _assemble(lines, spans)
        batches.append(
            Batch(
                number=len(batches) + 1,
                team_names=[t.name for t in teams],
                body=body.encode("utf-8"),
                file_lines=file_lines,
            )
        )
    return batches


def _assemble(lines: Sequence[str], spans: Sequence[LineSpan]) -> tuple[str, list[int]]:
    parts: list[str] = []
    file_lines: list[int] = []
    for span in spans:
        chunk = lines[span.first - 1 : span.last]
        parts.extend(chunk)
        file_lines.extend(range(span.first, span.last + 1))
        if chunk and not chunk[-1].endswith(("\n", "\r")):
            parts.append("\r\n")  # the file's last line had no line end
    return "".join(parts), file_lines
