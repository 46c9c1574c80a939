"""What :func:`tritonpy.storage.publish` did (or, for a dry run, would do), and the lines the
``tritonpy publish`` command prints.

Example::

    result = publish("out/model_repository", "s3://models/prod", new_version=True)
    result.new_versions          # {'preprocess': 3}
    print(result.summary)        # published 2 model(s) to s3://models/prod: 3 uploaded ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List


def human_size(count: int) -> str:
    """``count`` bytes for people.

    >>> human_size(512), human_size(1001), human_size(9_000_000), human_size(1_250_000_000)
    ('512 B', '1.0 kB', '9.0 MB', '1.25 GB')
    """
    if count < 1000:
        return f"{count} B"
    if count < 1_000_000:
        return f"{count / 1e3:.1f} kB"
    return f"{count / 1e6:.1f} MB" if count < 1e9 else f"{count / 1e9:.2f} GB"


def _versions(numbers: List[int]) -> str:
    return " ".join(map(str, numbers)) if numbers else "none"


@dataclass
class PublishResult:
    """One publication to ``url`` (the ``s3://`` URL as tritonserver takes it).

    ``models`` the models published; ``uploaded``, ``unchanged`` (same ETag: skipped) and
    ``deleted`` the object keys below ``url`` (``add_sub/1/model.py``; a folder marker ends
    in ``/``); ``versions`` each published model's version folders in the bucket afterwards;
    ``new_versions`` the number each model's published version got (``new_version=True``);
    ``bytes_uploaded`` and ``seconds``; ``dry_run`` when nothing was written (the lists say
    what would be); ``server_environments`` the models whose ``EXECUTION_ENV_PATH`` is a folder
    the servers hold themselves (``export --env-layout image``: in the image), not published.
    """

    url: str
    models: List[str] = field(default_factory=list)
    uploaded: List[str] = field(default_factory=list)
    unchanged: List[str] = field(default_factory=list)
    deleted: List[str] = field(default_factory=list)
    versions: Dict[str, List[int]] = field(default_factory=dict)
    new_versions: Dict[str, int] = field(default_factory=dict)
    server_environments: Dict[str, str] = field(default_factory=dict)
    bytes_uploaded: int = 0
    seconds: float = 0.0
    dry_run: bool = False

    @property
    def summary(self) -> str:
        """One line: what was published where, the counts, the bytes and the time."""
        verb = "would publish" if self.dry_run else "published"
        uploaded = "to upload" if self.dry_run else "uploaded"
        deleted = "to delete" if self.dry_run else "deleted"
        line = (
            f"{verb} {len(self.models)} model(s) to {self.url}: {len(self.uploaded)} "
            f"{uploaded} ({human_size(self.bytes_uploaded)}), {len(self.unchanged)} unchanged, "
            f"{len(self.deleted)} {deleted}"
        )
        if self.dry_run:
            return line + " (dry run: nothing written)"
        return line + f" in {self.seconds:.1f} s"

    def lines(self) -> List[str]:
        """The summary, a line per model (its new version, the versions in the bucket), and
        for a dry run every object it would upload or delete."""
        lines = [self.summary]
        for name in self.models:
            new = self.new_versions.get(name)
            version = f"new version {new}, " if new is not None else ""
            lines.append(
                f"  {name}: {version}versions in the bucket: {_versions(self.versions[name])}"
            )
            if name in self.server_environments:
                lines.append(
                    f"  {name}: environment {self.server_environments[name]} must exist on "
                    "every server (the image's), it is not in the bucket"
                )
        if self.dry_run:
            lines += [f"  upload {key}" for key in self.uploaded]
            lines += [f"  delete {key}" for key in self.deleted]
        return lines

    def to_dict(self) -> Dict[str, Any]:
        """Every field, JSON-ready."""
        return {
            "url": self.url,
            "models": self.models,
            "uploaded": self.uploaded,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "versions": self.versions,
            "new_versions": self.new_versions,
            "server_environments": self.server_environments,
            "bytes_uploaded": self.bytes_uploaded,
            "seconds": round(self.seconds, 3),
            "dry_run": self.dry_run,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)
