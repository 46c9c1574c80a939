"""How ``tritonpy perf`` and ``tritonpy tune`` measure: :class:`PerfOptions` (one sweep) and
:class:`TuneOptions` (the search, its measurements a nested :class:`PerfOptions`), each option
declared once with its flag and help; and the parsers of the option texts.

Example::

    run_perf("add_sub", "localhost:8001", PerfOptions(concurrency=(1, 4), duration=2.0))
    tune("model_repository/add_sub", TuneOptions(latency_budget_ms=20, max_minutes=2))
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Tuple, get_args

from .._tooling.options import library_only, option
from ..client import IdChoice
from ._inputs import InputSpec, parse_input_option, parse_shape_option
from ._sequences import DEFAULT_SEQUENCE_LENGTH

#: the load engine asked for: ``auto`` takes perf_analyzer when it is on PATH
EngineChoice = Literal["auto", "builtin", "perf_analyzer"]
ENGINES: Tuple[EngineChoice, ...] = get_args(EngineChoice)

_SEQUENCES = "sequence models (sequence_batching; concurrency = sequences live at once)"


def parse_concurrency(text: str) -> Tuple[int, ...]:
    """``"1,4,16"`` as ``(1, 4, 16)`` (``--concurrency``)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected comma-separated positive integers, e.g. 1,4,16"
        )
    return values


def parse_positive(text: str) -> int:
    """A positive integer (``--sequence-length``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer, e.g. 20")
    return value


def parse_id_range(text: str) -> Tuple[int, Optional[int]]:
    """``"START"`` or ``"START:END"`` (END excluded) as ``(start, end or None)``."""
    start, sep, end = text.partition(":")
    try:
        found = (int(start), int(end) if sep and end else None)
    except ValueError:
        found = (0, None)
    if found[0] < 1 or (found[1] is not None and found[1] <= found[0]):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected START or START:END with 1 <= START < END (END excluded), "
            "e.g. 1:1000"
        )
    return found


def input_specs(texts: Sequence[str]) -> Dict[str, InputSpec]:
    """The ``--input NAME=FILE|KIND`` texts as specs by input name."""
    return dict(parse_input_option(text) for text in texts)


def input_shapes(texts: Sequence[str]) -> Dict[str, Tuple[int, ...]]:
    """The ``--shape NAME=d,d`` texts as dims by input name."""
    return dict(parse_shape_option(text) for text in texts)


@dataclass(frozen=True)
class PerfOptions:
    """How to load the model: the concurrencies of the sweep, seconds of warm-up and of
    measurement per point, inputs (see :mod:`tritonpy.perf._inputs`), the engine, and the
    server's pid for CPU accounting (found from the URL's port when the host is local).

    A sequence model gets sequences of ``sequence_length`` requests with fresh correlation
    ids from ``sequence_id_range`` (start, end excluded or None for no bound), numeric or
    strings as ``sequence_ids`` says (``auto``: strings when the CORRID control is
    TYPE_STRING). ``hints`` (what BYTES inputs hold, from the model's declarations) and
    ``timeout`` (per request) have no flag."""

    concurrency: Tuple[int, ...] = option(
        (1, 4, 16),
        parse=parse_concurrency,
        metavar="N,N",
        help="concurrent requests of each point of the sweep (default {default})",
    )
    duration: float = option(5.0, help="seconds measured per point (default {default})")
    warmup: float = option(1.0, help="seconds before each point (default {default})")
    specs: Mapping[str, InputSpec] = option(
        default_factory=dict,
        flags=["--input"],
        metavar="NAME=FILE|KIND",
        convert=input_specs,
        help="what input NAME gets: a file (BYTES: its bytes; numbers: .npy or JSON) or a "
        "kind: image, image:WxH, text, json, zeros, random (repeatable)",
    )
    hints: Mapping[str, str] = library_only(default_factory=dict)
    shapes: Mapping[str, Sequence[int]] = option(
        default_factory=dict,
        flags=["--shape"],
        metavar="NAME=d,d",
        convert=input_shapes,
        help="dims of input NAME without the batch dimension, for -1 dims (repeatable)",
    )
    engine: EngineChoice = option(
        "auto", help="load engine: perf_analyzer when on PATH (auto), or the built-in one"
    )
    server_pid: Optional[int] = option(None, help="pid for server CPU")
    timeout: float = library_only(60.0)
    sequence_length: int = option(
        DEFAULT_SEQUENCE_LENGTH,
        parse=parse_positive,
        metavar="N",
        group=_SEQUENCES,
        help="requests per sequence: START on the first, END on the last (default "
        "{default}, as perf_analyzer)",
    )
    sequence_id_range: Tuple[int, Optional[int]] = option(
        (1, None),
        parse=parse_id_range,
        metavar="START[:END]",
        group=_SEQUENCES,
        help="correlation ids of the sequences, a fresh one each, END excluded (default 1, "
        "no bound)",
    )
    sequence_ids: IdChoice = option(
        "auto",
        group=_SEQUENCES,
        help="numeric or string correlation ids (auto: strings when the CORRID control is "
        "TYPE_STRING)",
    )


def _tune_measure() -> PerfOptions:
    return PerfOptions(duration=2.0, warmup=0.5)


@dataclass(frozen=True)
class TuneOptions:
    """How :func:`~tritonpy.perf._tune.tune` searches: the p99 budget, the time for the
    search, how each configuration is measured (``measure``; shorter points than perf's),
    ``cores`` (the most instances tried; default: this machine's) and ``server_options``
    (keyword arguments of the embedded TritonServer) for library callers."""

    latency_budget_ms: Optional[float] = option(None, help="p99 budget")
    max_minutes: float = option(5.0, help="time for the search")
    measure: PerfOptions = option(
        default_factory=_tune_measure,
        help="how each configuration is measured",
        skip=("warmup", "server_pid"),  # tune's own server; its warm-up as the library's
    )
    cores: Optional[int] = library_only(None)
    server_options: Optional[Mapping[str, Any]] = library_only(None)
