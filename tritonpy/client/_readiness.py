"""Ask a running server over HTTP (stdlib urllib, no tritonclient) whether it and its models
are ready."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import List, Optional


@dataclass(frozen=True)
class ModelStatus:
    """One entry of ``POST /v2/repository/index``.

    ``state`` is ``READY``, ``UNAVAILABLE``, ``LOADING``, ``UNLOADING`` or ``""`` (not loaded,
    in explicit model-control mode); ``reason`` explains ``UNAVAILABLE``.
    """

    name: str
    version: str
    state: str
    reason: str = ""


def health_ready(http_url: str, timeout: float = 2.0) -> Optional[bool]:
    """``True`` when ``GET /v2/health/ready`` answers 200, ``False`` on another HTTP status,
    ``None`` when nothing answers.

    Example::

        health_ready("http://127.0.0.1:8000")   # True
    """
    try:
        with urllib.request.urlopen(f"{http_url}/v2/health/ready", timeout=timeout) as resp:
            return bool(resp.status == 200)
    except urllib.error.HTTPError:
        return False
    except (OSError, ValueError):
        return None


def repository_index(http_url: str, timeout: float = 5.0) -> List[ModelStatus]:
    """The models of the repository with their state and reason.

    Raises ``OSError`` (``urllib.error.URLError``) when the server does not answer.

    Example::

        [m.name for m in repository_index(url) if m.state == "READY"]
    """
    request = urllib.request.Request(
        f"{http_url}/v2/repository/index",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        entries = json.loads(resp.read().decode("utf-8"))
    return [
        ModelStatus(
            name=str(e.get("name", "")),
            version=str(e.get("version", "")),
            state=str(e.get("state", "")),
            reason=str(e.get("reason", "")),
        )
        for e in entries
    ]


def model_inputs(http_url: str, model: str, timeout: float = 2.0) -> List[str]:
    """The input names of ``model`` (``GET /v2/models/<model>``); empty when the server does
    not answer.

    Example::

        model_inputs("http://127.0.0.1:8000", "add_sub")   # ['INPUT0', 'INPUT1']
    """
    try:
        with urllib.request.urlopen(f"{http_url}/v2/models/{model}", timeout=timeout) as resp:
            metadata = json.loads(resp.read().decode("utf-8"))
    except (OSError, ValueError):
        return []
    return [str(i.get("name", "")) for i in metadata.get("inputs", []) if isinstance(i, dict)]
