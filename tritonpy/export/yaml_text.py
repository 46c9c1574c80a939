"""A small YAML writer for the Kubernetes manifests that ``tritonpy export`` writes.

The manifests are built as plain dicts and lists and written in block style. Strings are always
double-quoted with JSON escapes, which YAML's double-quoted scalars accept unchanged, so a value
such as ``"8000"``, ``"yes"`` or ``"24.10-py3"`` never turns into a number or a boolean; numbers
and booleans are written bare. PyYAML is not a dependency of tritonpy.

Example::

    to_yaml({"kind": "Service", "spec": {"ports": [{"port": 8000}]}})
    # kind: "Service"
    # spec:
    #   ports:
    #     - port: 8000
"""

from __future__ import annotations

import json
import re
from typing import Any, List, Mapping, Sequence

__all__ = ["to_yaml", "to_yaml_documents"]

# keys written bare: Kubernetes field names, label keys (app.kubernetes.io/name), resource names
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return json.dumps(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as a YAML scalar")


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"YAML mapping keys must be strings here, got {key!r}")
    return key if _PLAIN_KEY.match(key) else json.dumps(key)


def _lines(value: Any, indent: int) -> List[str]:
    pad = " " * indent
    if isinstance(value, Mapping):
        if not value:
            return [pad + "{}"]
        out: List[str] = []
        for key, item in value.items():
            if _is_block(item):
                out.append(f"{pad}{_key(key)}:")
                out.extend(_lines(item, indent + 2))
            else:
                out.append(f"{pad}{_key(key)}: {_inline(item)}")
        return out
    if isinstance(value, Sequence) and not isinstance(value, str):
        if not value:
            return [pad + "[]"]
        out = []
        for item in value:
            if _is_block(item):
                nested = _lines(item, indent + 2)
                # the first line of the nested block goes after the dash
                out.append(f"{pad}- {nested[0][indent + 2 :]}")
                out.extend(nested[1:])
            else:
                out.append(f"{pad}- {_inline(item)}")
        return out
    return [pad + _scalar(value)]


def _is_block(value: Any) -> bool:
    is_sequence = isinstance(value, Sequence) and not isinstance(value, str)
    return bool(value) and (isinstance(value, Mapping) or is_sequence)


def _inline(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[]"
    return _scalar(value)


def to_yaml(document: Mapping[str, Any]) -> str:
    """One YAML document (block style, strings double-quoted) for ``document``."""
    return "\n".join(_lines(document, 0)) + "\n"


def to_yaml_documents(documents: Sequence[Mapping[str, Any]], header: str = "") -> str:
    """Several documents separated by ``---``, after ``header`` comment lines (each line of
    ``header`` becomes a ``# ...`` line)."""
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return comment + "---\n".join(to_yaml(document) for document in documents)
