"""The per-request cost of keeping a sequence's state, in process (no server, one core): the
sequence workload's hand-written and tritonpy models (``benchmarks/workloads/models/
sequence_*.py``) loaded in tritonpy's harness and timed on prepared requests of 16 sequences
of 20 requests (START on the first, END on the last), one request a call (one sequence live
at a time) and one request of each live sequence a call (the oldest strategy's batches at 16
clients), in microseconds per request:

- ``state alone``: the bookkeeping without the tensors: raw's dict keyed by correlation id
  (START creates, a lookup and a timestamp per request, END deletes, the idle sweep's check
  per call) against tritonpy's ``SequenceStore`` as its engine runs it per call and request
  (``evict_idle``, ``sequence_of``, and at END ``close`` and ``end_sequence``);
- ``execute()``: each model's whole ``execute()``, inputs to responses.

    python benchmarks/sequence_cost.py              # ~5 s

Example::

    for row in run_sequence_costs(repo, workload, seconds=0.5):
        print(row.name, row.us_per_request)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.workloads import Payload, Workload, build_repository

__all__ = ["LIVE", "SequenceCost", "main", "render_sequence_costs", "run_sequence_costs"]

#: sequences of one cycle, live at once in the merged calls (the load's 16 clients)
LIVE = 16
START, END = 1, 2  # request.flags(), a bitmask


@dataclass(frozen=True)
class SequenceCost:
    """One timed case: ``variant`` (raw or tritonpy), ``part`` (``state alone`` or
    ``execute()``), requests per call, and the microseconds per request (the fastest of the
    repeats)."""

    variant: str
    part: str
    per_call: int
    us_per_request: float

    @property
    def name(self) -> str:
        calls = "one request a call" if self.per_call == 1 else f"{self.per_call} sequences a call"
        return f"{self.variant}: {self.part}, {calls}"


def _requests(harness: Any, payloads: Sequence[Payload], length: int, per_call: int) -> List[Any]:
    """One cycle's ``execute()`` arguments: :data:`LIVE` sequences of ``length`` requests,
    ``per_call`` of them live at once, each call holding one request of each live one."""
    from tritonpy.testing import fake_pb_utils as pb

    outputs = [entry["name"] for entry in harness.config["output"]]

    def request(sequence_id: int, index: int) -> Any:
        flags = (START if index == 0 else 0) | (END if index == length - 1 else 0)
        payload = payloads[(sequence_id + index) % len(payloads)]
        built = pb.InferenceRequest(
            correlation_id=sequence_id,
            inputs=[pb.Tensor(name, array) for name, array in payload.items()],
            requested_output_names=outputs,
            model_name=harness.name,
            flags=flags,
        )
        built.set_decoupled(False)
        return built

    calls = []
    for first in range(1, LIVE + 1, per_call):
        for index in range(length):
            calls.append([request(sid, index) for sid in range(first, first + per_call)])
    return calls


def _best_us(cycle: Callable[[], Any], requests: int, seconds: float) -> float:
    """Microseconds per request of ``cycle`` (``requests`` requests), the fastest of
    repeats filling about ``seconds``: on a shared machine the minimum is the cost."""
    cycle()  # warm: the first cycle creates every state once
    best, deadline = float("inf"), time.perf_counter() + seconds
    while True:
        start = time.perf_counter()
        cycle()
        now = time.perf_counter()
        best = min(best, now - start)
        if now >= deadline:
            return best * 1e6 / requests


def _executed(harness: Any, calls: List[Any]) -> Callable[[], None]:
    """A cycle of the model's whole ``execute()`` (an error response stops the timing)."""
    execute = harness.model.execute

    def cycle() -> None:
        for call in calls:
            for response in execute(call):
                if response.has_error():
                    raise RuntimeError(f"{harness.name}: {response.error().message()}")

    return cycle


def _raw_state(harness: Any, calls: List[Any]) -> Callable[[], None]:
    """A cycle of the hand-written model's state handling alone (the lines of its
    ``execute()`` that are not the tensors')."""
    states: Dict[Any, List[Any]] = {}
    next_sweep = [0.0]

    def cycle() -> None:
        for call in calls:
            now = time.monotonic()
            if now >= next_sweep[0]:
                next_sweep[0] = now + 1.0  # a cycle is shorter: no sweep inside it
            for request in call:
                corrid, flags = request.correlation_id(), request.flags()
                if flags & START:
                    state = states[corrid] = [0.0, 0, now]
                else:
                    state = states.get(corrid)
                    if state is None:
                        continue
                state[2] = now
                if flags & END:
                    del states[corrid]

    return cycle


def _tritonpy_state(harness: Any, calls: List[Any]) -> Callable[[], None]:
    """A cycle of tritonpy's state handling alone: its ``SequenceStore`` as the plain-tensor
    sequence path (``execute_plain_sequences``) runs it per call (idle eviction) and per
    request (a continuing request's sequence found in one lookup, START through
    ``sequence_of``, and closed after END)."""
    from tritonpy._runtime._engine._sequences import end_sequence, evict_idle, sequence_of
    from tritonpy._runtime._engine.engine import engine_of

    engine = engine_of(harness.model)
    store = engine.sequences
    open_ = store.open

    def cycle() -> None:
        for call in calls:
            now = store.clock()
            if open_ and next(iter(open_.values())).last_seen <= now - store.idle_timeout_s:
                evict_idle(engine, now)
            for request in call:
                info = open_.get(request.correlation_id())
                flags = request.flags()
                if info is None or flags & START:
                    info = sequence_of(engine, request, now)
                else:
                    info.start = False
                    info.last_seen = now
                    open_.move_to_end(info.id)
                    info.end = flags & END != 0
                if info.end:
                    store.close(info)
                    end_sequence(engine, info, evicted=False)

    return cycle


_CYCLES = {
    ("raw", "state alone"): _raw_state,
    ("tritonpy", "state alone"): _tritonpy_state,
    ("raw", "execute()"): _executed,
    ("tritonpy", "execute()"): _executed,
}


def _cost(model_dir: Path, workload: Workload, key: Any, per_call: int, seconds: float) -> float:
    from tritonpy.testing import ModelHarness

    with ModelHarness(model_dir) as harness:
        calls = _requests(harness, workload.payloads, workload.sequence_length, per_call)
        cycle = _CYCLES[key](harness, calls)
        # the harness's fake pb_utils stays installed while the model's code runs, as the
        # harness itself does around every call
        with harness._running():
            return _best_us(cycle, LIVE * workload.sequence_length, seconds)


def run_sequence_costs(repo: Path, workload: Workload, seconds: float = 1.0) -> List[SequenceCost]:
    """Time the sequence workload's state handling and whole ``execute()`` per request, raw
    and tritonpy, one request a call and :data:`LIVE` a call (``repo``: the repository
    ``build_repository`` wrote, ``seconds``: per case)."""
    rows = []
    for per_call in (1, LIVE):
        for variant, part in _CYCLES:
            model_dir = repo / workload.models[variant]
            us = _cost(model_dir, workload, (variant, part), per_call, seconds)
            rows.append(SequenceCost(variant, part, per_call, us))
    return rows


def render_sequence_costs(rows: Sequence[SequenceCost]) -> List[str]:
    """One line per case, tritonpy's with its difference to raw's in the same calls."""
    raw = {(r.part, r.per_call): r.us_per_request for r in rows if r.variant == "raw"}
    lines = []
    for row in rows:
        extra = ""
        base = raw.get((row.part, row.per_call))
        if row.variant != "raw" and base is not None:
            extra = f"  ({row.us_per_request - base:+.2f} us against raw)"
        lines.append(f"{row.name:<46} {row.us_per_request:8.2f} us/request{extra}")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/sequence_cost.py", description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="per case (default 1)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tritonpy-seqcost-") as tmp:
        (workload,) = build_repository(Path(tmp), ["sequence"])
        for line in render_sequence_costs(run_sequence_costs(Path(tmp), workload, args.seconds)):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
