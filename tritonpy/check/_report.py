"""Findings of ``tritonpy check`` and their text and JSON forms.

Example::

    report = check_repository("model_repository")
    print(report.render_text())
    sys.exit(report.exit_code(strict=False))
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Literal, Union

Severity = Literal["error", "warning", "info"]
ERROR: Severity = "error"
WARNING: Severity = "warning"
#: what the check could not decide (never fails the check, even with --strict)
INFO: Severity = "info"


@dataclass(frozen=True)
class Finding:
    """One problem: its rule ``code`` (``TP401``), ``severity``, the ``file`` (relative to the
    repository), the ``field`` inside it (``""`` for the whole file), what is wrong
    (``message``) and how to fix it (``fix``)."""

    code: str
    severity: Severity
    file: str
    field: str
    message: str
    fix: str

    def render(self) -> str:
        """``file [field]: severity CODE: message`` and an indented ``fix:`` line."""
        where = f"{self.file} [{self.field}]" if self.field else self.file
        return f"{where}: {self.severity} {self.code}: {self.message}\n    fix: {self.fix}"

    def to_dict(self) -> Dict[str, str]:
        return asdict(self)


@dataclass
class Report:
    """Every finding of one repository check, in the order the rules found them;
    ``repository`` is the directory checked, or the ``s3://`` URL of which a temporary copy
    was checked."""

    repository: Union[Path, str]
    findings: List[Finding] = field(default_factory=list)

    @property
    def errors(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def infos(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == INFO]

    @property
    def codes(self) -> List[str]:
        """The finding codes, in order (handy in tests)."""
        return [f.code for f in self.findings]

    def exit_code(self, *, strict: bool = False) -> int:
        """1 when there are errors (or, with ``strict``, warnings); else 0."""
        if self.errors or (strict and self.warnings):
            return 1
        return 0

    def summary(self) -> str:
        errors, warnings, infos = len(self.errors), len(self.warnings), len(self.infos)
        line = (
            f"{self.repository}: {errors} error{'s' * (errors != 1)}, "
            f"{warnings} warning{'s' * (warnings != 1)}"
        )
        return line + (f", {infos} info" if infos else "")

    def render_text(self) -> str:
        """Every finding, then a summary line."""
        lines = [finding.render() for finding in self.findings]
        lines.append(self.summary())
        return "\n".join(lines) + "\n"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "repository": str(self.repository),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [finding.to_dict() for finding in self.findings],
        }

    def to_json(self) -> str:
        """The report as JSON: ``repository``, ``errors``, ``warnings``, ``findings``."""
        return json.dumps(self.to_dict(), indent=2)
