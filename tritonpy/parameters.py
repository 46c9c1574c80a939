"""Parsers for ``config.pbtxt`` parameters, for :meth:`tritonpy.Model.parameter`'s ``cast``.

Triton hands every parameter over as a string; these turn the usual shapes of values into
Python values and raise ``ValueError`` with a readable reason (``Model.parameter`` turns that
into a :class:`~tritonpy.DeclarationError` naming the model and the key).

Example::

    def setup(self):
        self.size = self.parameter("size", (224, 224), cast=tp.parameters.size)
        self.mean = self.parameter("mean", (0.0,), cast=tp.parameters.floats)
        self.top_k = self.parameter("top_k", 5, cast=tp.parameters.positive_int)
        self.iou = self.parameter("iou_threshold", 0.45, cast=tp.parameters.fraction)
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple, TypeVar

__all__ = ["boolean", "floats", "fraction", "non_negative_int", "positive_int", "size"]

Number = TypeVar("Number", int, float)


def size(text: str) -> Tuple[int, int]:
    """``"224x160"`` -> (224, 160) as (width, height); ``"224"`` -> (224, 224)."""
    width, _, height = text.strip().lower().partition("x")
    try:
        result = (int(width), int(height or width))
    except ValueError:
        raise ValueError("expected WIDTHxHEIGHT such as 224x224, or one number") from None
    if min(result) < 1:
        raise ValueError("expected positive sizes")
    return result


def floats(text: str) -> Tuple[float, ...]:
    """``"0.485, 0.456, 0.406"`` -> (0.485, 0.456, 0.406)."""
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError("expected comma-separated numbers such as 0.5,0.5,0.5") from None


def positive_int(text: str) -> int:
    """``"5"`` -> 5; zero, negative and non-integers are refused."""
    return _number_in(text, int, 1, None, "a positive integer")


def non_negative_int(text: str) -> int:
    """``"0"`` -> 0, ``"100"`` -> 100 (e.g. a limit where 0 means none); negative and
    non-integers are refused."""
    return _number_in(text, int, 0, None, "an integer >= 0")


def fraction(text: str) -> float:
    """``"0.45"`` -> 0.45, for thresholds and probabilities: a number from 0 to 1."""
    return _number_in(text, float, 0.0, 1.0, "a number from 0 to 1 such as 0.5")


def _number_in(
    text: str, kind: Callable[[str], Number], low: Number, high: Optional[Number], expected: str
) -> Number:
    """``kind(text)`` when it lies from ``low`` to ``high`` (None: no upper bound), else a
    ValueError saying what was ``expected``."""
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"expected {expected}") from None
    if not (low <= value and (high is None or value <= high)):  # NaN is refused too
        raise ValueError(f"expected {expected}")
    return value


def boolean(text: str) -> bool:
    """``true/false``, ``yes/no``, ``on/off``, ``1/0`` (any case) -> bool."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise ValueError("expected true or false")
