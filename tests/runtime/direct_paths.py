"""Helpers of the direct-path tests (test_direct_codecs.py, test_direct_strings.py): the
answers of a model's direct and general paths to the same calls, and the answers of the
direct path alone. ``answer`` turns a response into what the client gets."""

from __future__ import annotations

from typing import Any, Callable, List, Type

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness

Answer = Callable[[Any], Any]


def both(model: Type[tp.Model], calls: List[List[Any]], answer: Answer) -> List[Any]:
    """The answers of the direct and of the general paths, one execute() per call."""
    results = []
    for direct in (True, False):
        with ModelHarness(model) as harness:
            assert engine_of(harness.model).direct_inputs is not None  # the model qualifies
            if not direct:
                engine_of(harness.model).direct_inputs = None
            results.append([[answer(r) for r in harness.model.execute(call)] for call in calls])
    return results


def without_fallback(model: Type[tp.Model], calls: List[List[Any]], answer: Answer) -> List[Any]:
    """The answers to good ``calls`` with every step of the general paths made to fail: the
    direct path alone answered them."""

    def fail(*args: Any) -> Any:
        raise AssertionError("the general path was taken")

    with ModelHarness(model) as harness:
        engine = engine_of(harness.model)
        engine.compute_alone = fail  # type: ignore[method-assign]
        engine.execute_merged = fail  # type: ignore[method-assign]
        engine.respond = fail  # type: ignore[method-assign]
        engine.split = fail  # type: ignore[method-assign]
        return [[answer(r) for r in harness.model.execute(call)] for call in calls]
