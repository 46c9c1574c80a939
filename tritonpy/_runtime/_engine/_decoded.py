"""One request inside the engine: its decoded values, rows, requested outputs, merge
key and parameters; and the small helpers the plain, async and streaming paths share."""

from __future__ import annotations

import json
from typing import Any, Dict, FrozenSet, Hashable, List, Optional, Sequence, Set

from ..batching import group_indices


class Decoded:
    """One request after decoding: its input values, row count and requested outputs."""

    __slots__ = ("index", "key", "parameters", "requested", "rows", "values")

    def __init__(
        self,
        index: int,
        values: Dict[str, Any],
        rows: int,
        requested: Optional[FrozenSet[str]],
        key: Hashable,
        parameters: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.index = index
        self.values = values
        self.rows = rows
        self.requested = requested  # None: every output
        self.key = key
        self.parameters = parameters  # the request parameters, when infer asks for them


def groups(ready: Sequence[Decoded]) -> List[List[Decoded]]:
    """Requests that can merge, by group key (ragged shapes, optional inputs), in order."""
    return [[ready[i] for i in members] for members in group_indices([r.key for r in ready])]


def request_parameters(request: Any) -> Dict[str, Any]:
    """The request's parameters as a dict (pb_utils hands them over as JSON text)."""
    text = request.parameters()
    parsed = json.loads(text) if text else {}
    return parsed if isinstance(parsed, dict) else {}


def union_requested(
    wanted: Optional[Sequence[Optional[FrozenSet[str]]]],
) -> Optional[FrozenSet[str]]:
    """The outputs any request asked for (``wanted``: each request's, None for every output);
    None when one of them wants every output."""
    if wanted is None:
        return None
    names: Set[str] = set()
    for requested in wanted:
        if requested is None:
            return None
        names |= requested
    return frozenset(names)
