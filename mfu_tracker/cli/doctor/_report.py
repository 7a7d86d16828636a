"""The doctor's report: one :class:`Check` row per check, statuses and sections."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List

#: The statuses, worst last.
STATUSES = ("PASS", "SKIP", "WARN", "FAIL")
#: The sections, in the order they run.
SECTIONS = ("environment", "device", "timing", "peak", "counting", "end_to_end")


@dataclass
class Check:
    """One row of the doctor's table."""

    section: str
    name: str
    status: str
    figure: str
    detail: str = ""
    data: Dict[str, Any] = field(default_factory=dict)


class Report:
    """The rows, as the checks add them."""

    def __init__(self) -> None:
        self.checks: List[Check] = []

    def add(self, section: str, name: str, status: str, figure: str, detail: str = "", /,
            **data: Any) -> Check:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        check = Check(section, name, status, figure, detail, data)
        self.checks.append(check)
        return check

    def counts(self) -> Dict[str, int]:
        return {status: sum(c.status == status for c in self.checks) for status in STATUSES}

    def failed(self) -> bool:
        return any(c.status == "FAIL" for c in self.checks)

    def table(self) -> str:
        width = max([len(f"{c.section}/{c.name}") for c in self.checks] + [20])
        lines = [f"{'check':<{width}}  status  figure"]
        for c in self.checks:
            lines.append(f"{c.section + '/' + c.name:<{width}}  {c.status:<6}  {c.figure}")
        notes = [c for c in self.checks if c.status != "PASS" and c.detail]
        if notes:
            lines.append("")
            for c in notes:
                lines.append(f"{c.status} {c.section}/{c.name}: {c.detail}")
        counts = self.counts()
        lines.append("")
        lines.append(", ".join(f"{counts[s]} {s}" for s in STATUSES))
        return "\n".join(lines)

    def to_json(self, header: Dict[str, Any]) -> Dict[str, Any]:
        return {**header, "summary": self.counts(), "checks": [asdict(c) for c in self.checks]}
