"""The build record beside the archives (``MODEL_DIR/.tritonpy-env.json``): what each archive
was built from, so an unchanged spec, Python and release skip the rebuild.

Example::

    key = build_key({"spec": spec.digest, "python": "3.10", "release": "24.10"})
    if not is_up_to_date(model_dir, archive, key):
        ...  # build, then:
    write_record(model_dir, archive, key, {"python": "3.10"})
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Mapping

from .._tooling.archives import staging_file
from .._tooling.digests import file_sha256

RECORD_NAME = ".tritonpy-env.json"


def build_key(inputs: Mapping[str, Any]) -> str:
    """A stable hash of the build inputs.

    >>> build_key({"python": "3.10"}) == build_key({"python": "3.10"})
    True
    """
    return hashlib.sha256(json.dumps(dict(inputs), sort_keys=True).encode()).hexdigest()


def read_record(model_dir: Path) -> Dict[str, Dict[str, Any]]:
    """Archive name -> record entry; empty when there is no (readable) record."""
    try:
        data = json.loads((model_dir / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    archives = data.get("archives") if isinstance(data, dict) else None
    return dict(archives) if isinstance(archives, dict) else {}


def is_up_to_date(model_dir: Path, archive: Path, key: str) -> bool:
    """True when ``archive`` exists, was recorded with ``key`` and is unchanged since (same
    size and modification time)."""
    entry = read_record(model_dir).get(archive.name)
    if not entry or entry.get("key") != key:
        return False
    try:
        info = archive.stat()
    except OSError:
        return False
    return bool(info.st_size == entry.get("size") and info.st_mtime_ns == entry.get("mtime_ns"))


def write_record(model_dir: Path, archive: Path, key: str, details: Mapping[str, Any]) -> Path:
    """Record ``archive`` (built with ``key``) atomically; return the record's path."""
    records = read_record(model_dir)
    info = archive.stat()
    records[archive.name] = {
        **details,
        "key": key,
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "sha256": file_sha256(archive),
    }
    path = model_dir / RECORD_NAME
    text = json.dumps({"archives": records}, indent=2, sort_keys=True) + "\n"
    with staging_file(path) as partial:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    return path
