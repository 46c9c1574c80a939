"""The model repository a server should be serving (``probe --repository``, a directory or an
``s3://`` URL): its models are the probe set, and each must be loaded in its newest version.

A server keeps serving what it loaded: after ``tritonpy publish --new-version`` a replica
serves the old version until the model is loaded again (``tritonpy rollout``), and in
explicit model-control mode a model of the repository may never have been loaded. Neither
shows in the server's health, both show here. Warmup samples' ``input_data_file`` are read
from the repository (from a bucket, only the ``warmup/`` folders are copied, to a temporary
directory removed afterwards).

Example::

    with repository_models("s3://127.0.0.1:9000/models/prod") as found:
        found.versions        # {'add_sub': [1, 2], 'preprocess': [1]}
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

from .._runtime.errors import ToolError
from .._tooling.model_dirs import model_directories
from ..storage import StorageError, is_remote, list_objects, parse_s3_url, s3_client

_WARMUP = "warmup"


@dataclass
class RepositoryModels:
    """The repository ``label`` (as given), each model's version folders (``versions``,
    ascending; an empty list when none is visible) and ``files``: a local directory laid
    out as the repository, holding at least the warmup files."""

    label: str
    versions: Dict[str, List[int]] = field(default_factory=dict)
    files: Optional[Path] = None


def _local(root: Path) -> RepositoryModels:
    if not root.is_dir():
        raise ToolError(
            f"--repository {root}: not a directory; expected the server's model repository "
            "(a directory with one folder per model, or its s3:// URL)"
        )
    found = RepositoryModels(str(root), files=root)
    for model in model_directories(root):
        numbers = [int(p.name) for p in model.iterdir() if p.is_dir() and p.name.isdigit()]
        found.versions[model.name] = sorted(numbers)
    return found


def _remote(text: str, scratch: Path) -> RepositoryModels:
    url = parse_s3_url(text)
    client: Any = s3_client(url)
    found = RepositoryModels(str(url), files=scratch)
    for key, _, _ in list_objects(client, url):
        model, slash, rest = key.partition("/")
        if not slash or model.startswith((".", "__")):
            continue  # an object beside the models
        versions = found.versions.setdefault(model, [])
        head, deeper, _ = rest.partition("/")
        if deeper and head.isdigit() and int(head) not in versions:
            versions.append(int(head))
        if head == _WARMUP and deeper:
            target = scratch.joinpath(*key.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                client.download_file(url.bucket, url.key(key), str(target))
            except Exception as exc:  # botocore's errors
                raise StorageError(
                    f"cannot read the warmup file {url.child(key)}: {exc}. Check that the "
                    "credentials may read the bucket (s3:GetObject)."
                ) from exc
    for versions in found.versions.values():
        versions.sort()
    return found


@contextlib.contextmanager
def repository_models(repository: Union[str, Path]) -> Iterator[RepositoryModels]:
    """The models of ``repository`` (a directory or an ``s3://`` URL, read with the AWS_*
    variables as tritonserver reads them); a bucket's warmup files are copied for the
    duration of the block. Raises :class:`~tritonpy.storage.StorageError` when the bucket
    cannot be read."""
    text = str(repository)
    if not is_remote(text):
        yield _local(Path(repository))
        return
    scratch = Path(tempfile.mkdtemp(prefix="tritonpy-probe-"))
    try:
        yield _remote(text, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def expected_version(versions: List[int], config: Dict[str, Any]) -> Optional[int]:
    """The newest of the repository's ``versions`` that the model's version policy (from its
    configuration as the server reports it) serves; None when none is known.

    >>> expected_version([1, 2, 3], {"version_policy": {"specific": {"versions": ["2"]}}})
    2
    >>> expected_version([1, 2], {})
    2
    """
    policy = config.get("version_policy") or {}
    specific = policy.get("specific")
    if specific is not None:
        wanted = {int(v) for v in specific.get("versions", [])}
        versions = [v for v in versions if v in wanted]
    return versions[-1] if versions else None
