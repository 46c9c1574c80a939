"""What publishing one model changes in the bucket, decided before anything is written: the
objects to upload (every other file first, ``config.pbtxt`` last), those already there (same
size and ETag), the version each local version folder becomes, and the objects to delete.

Example::

    plan = plan_model(model, remote, PlanOptions(new_version=True, keep_versions=2))
    plan.target_version, plan.versions_after       # (4, [3, 4])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from .._tooling.model_dirs import CONFIG_FILE
from ._etags import unchanged
from ._local import LocalFile, LocalModel

#: an object below a model's folder: its ETag and size
RemoteObject = Tuple[str, int]


@dataclass(frozen=True)
class PlanOptions:
    """publish's choices (see :func:`tritonpy.storage.publish`)."""

    new_version: bool = False
    keep_versions: Optional[int] = None
    prune: bool = False


@dataclass(frozen=True)
class Upload:
    """``rel`` (below the model's folder) written from ``source``; a folder marker (an empty
    version folder, ``"1/"``) has no source."""

    rel: str
    source: Optional[LocalFile]

    @property
    def size(self) -> int:
        return self.source.size if self.source is not None else 0


@dataclass
class ModelPlan:
    """One model's changes: ``first`` then ``config`` uploads, ``unchanged`` and ``deletes``
    (keys below the model's folder), ``versions_after`` in the bucket, and
    ``target_version`` (what the newest local version folder is published as, with
    ``new_version``)."""

    name: str
    first: List[Upload] = field(default_factory=list)
    config: Optional[Upload] = None
    unchanged: List[str] = field(default_factory=list)
    deletes: List[str] = field(default_factory=list)
    versions_after: List[int] = field(default_factory=list)
    target_version: Optional[int] = None

    @property
    def uploads(self) -> List[Upload]:
        """Every upload, in the order they are written."""
        return [*self.first, *([self.config] if self.config else [])]


def version_of(rel: str) -> Optional[int]:
    """The version folder ``rel`` lies in (``"3/model.py"`` -> 3; ``"3/"`` -> 3), else None."""
    head, slash, _ = rel.partition("/")
    return int(head) if slash and head.isdigit() else None


def _targets(
    model: LocalModel, remote_versions: Set[int], new_version: bool
) -> Tuple[Dict[str, Optional[LocalFile]], Optional[int]]:
    """Each key to write (below the model's folder) and its source (None: a folder marker),
    and the number the newest local version became (``new_version``)."""
    local = model.versions
    top, renamed = (local[-1] if local else None), None
    if new_version and top is not None:
        newest = max(remote_versions, default=0)
        renamed = top if top > newest else newest + 1
    targets: Dict[str, Optional[LocalFile]] = {}
    for item in model.files:
        version = version_of(item.rel)
        if renamed is not None and version is not None:
            if version != top:
                continue  # with new_version only the newest local version is published
            targets[f"{renamed}/{item.rel.partition('/')[2]}"] = item
        else:
            targets[item.rel] = item
    for version in model.empty_versions:
        if renamed is None:
            targets[f"{version}/"] = None
        elif version == top:
            targets[f"{renamed}/"] = None
    return targets, renamed


def plan_model(
    model: LocalModel, remote: Dict[str, RemoteObject], options: PlanOptions
) -> ModelPlan:
    """The changes publishing ``model`` makes, given the objects under its folder in the
    bucket (``remote``: key below the folder -> (ETag, size), folder markers included)."""
    remote_versions = {v for rel in remote if (v := version_of(rel)) is not None}
    targets, renamed = _targets(model, remote_versions, options.new_version)
    published = {v for rel in targets if (v := version_of(rel)) is not None}
    every = sorted(remote_versions | published)
    kept = every if options.keep_versions is None else every[-options.keep_versions :]
    dropped = set(every) - set(kept)
    plan = ModelPlan(model.name, versions_after=kept, target_version=renamed)
    for rel, source in sorted(targets.items()):
        if version_of(rel) in dropped:
            continue  # deleted right after: not worth uploading
        found = remote.get(rel)
        same = found is not None and (
            source is None or unchanged(source.path, source.size, found[0], found[1])
        )
        if same:
            plan.unchanged.append(rel)
        elif rel == CONFIG_FILE:
            plan.config = Upload(rel, source)
        else:
            plan.first.append(Upload(rel, source))
    doomed = (rel for rel in remote if _deleted(rel, targets, dropped, published, options))
    plan.deletes = sorted(doomed)
    return plan


def _deleted(
    rel: str,
    targets: Dict[str, Optional[LocalFile]],
    dropped: Set[int],
    published: Set[int],
    options: PlanOptions,
) -> bool:
    version = version_of(rel)
    if version in dropped:
        return True  # keep_versions: beyond the newest N
    if not options.prune or rel in targets or rel.endswith("/"):
        return False
    # prune: what the local folder lacks, outside the version folders left as they were
    return version is None or version in published
