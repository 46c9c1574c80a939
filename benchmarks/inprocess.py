"""The in-process limit: the same numpy/OpenCV work as the models, called directly in a loop on
one core, no server, no serialization. Each entry is the time of one request's work.

Example::

    for row in run_inprocess(["image_preprocess"], seconds=1.0):
        print(row.name, row.ms_per_item, row.items_per_s)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

__all__ = ["InProcessResult", "run_inprocess"]

SIZE = (224, 224)
MEAN = np.array([0.485, 0.456, 0.406], np.float64)
STD = np.array([0.229, 0.224, 0.225], np.float64)
SCALE = (1.0 / 255.0 / STD).astype(np.float32)
SHIFT = (-MEAN / STD).astype(np.float32)


@dataclass
class InProcessResult:
    workload: str
    name: str
    ms_per_item: float

    @property
    def items_per_s(self) -> float:
        return 1000.0 / self.ms_per_item if self.ms_per_item > 0 else float("inf")


def _time(fn: Callable[[], Any], seconds: float) -> float:
    """Milliseconds per call of ``fn``, repeated for about ``seconds`` (after a warm-up)."""
    for _ in range(3):
        fn()
    calls, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        fn()
        calls += 1
        now = time.perf_counter()
        if now >= deadline:
            return (now - start) * 1000.0 / calls


def _fused_chw(image: Any, out: Any) -> None:
    for channel in range(3):
        plane = out[channel]
        np.multiply(image[:, :, 2 - channel], SCALE[channel], out=plane, casting="unsafe")
        plane += SHIFT[channel]


def _image_cases() -> Dict[str, Callable[[], Any]]:
    import cv2

    from .workloads import image_jpeg

    data = np.frombuffer(image_jpeg(seed=0), np.uint8)
    decoded = cv2.imdecode(data, cv2.IMREAD_COLOR)
    resized = cv2.resize(decoded, SIZE, interpolation=cv2.INTER_LINEAR)
    out = np.empty((3, SIZE[1], SIZE[0]), np.float32)
    mean32, std32 = MEAN.astype(np.float32), STD.astype(np.float32)

    def naive_normalise() -> Any:
        x = np.stack([resized[:, :, ::-1]]).astype(np.float32) / 255.0
        return np.ascontiguousarray(((x - mean32) / std32).transpose(0, 3, 1, 2))

    def whole() -> None:
        image = cv2.imdecode(data, cv2.IMREAD_COLOR)
        _fused_chw(cv2.resize(image, SIZE, interpolation=cv2.INTER_LINEAR), out)

    return {
        "decode+resize+fused normalise (the limit)": whole,
        "  decode (cv2.imdecode)": lambda: cv2.imdecode(data, cv2.IMREAD_COLOR),
        "  resize to 224x224": lambda: cv2.resize(decoded, SIZE, interpolation=cv2.INTER_LINEAR),
        "  fused normalise into CHW": lambda: _fused_chw(resized, out),
        "  naive stack/255/-mean/std/transpose": naive_normalise,
    }


def _cases(workload: str) -> Dict[str, Callable[[], Any]]:
    if workload == "add_sub":
        a, b = np.ones(4, np.float32), np.full(4, 2, np.float32)
        return {"add + subtract": lambda: (a + b, a - b)}
    if workload == "image_preprocess":
        return _image_cases()
    if workload == "postprocess":
        logits = np.random.default_rng(0).standard_normal((1, 1000)).astype(np.float32)

        def top5() -> Any:
            shifted = logits - logits.max(axis=1, keepdims=True)
            probs = np.exp(shifted)
            probs /= probs.sum(axis=1, keepdims=True)
            top = np.argpartition(-probs, 4, axis=1)[:, :5]
            order = np.argsort(-np.take_along_axis(probs, top, axis=1), axis=1, kind="stable")
            ids = np.take_along_axis(top, order, axis=1)
            return ids, np.take_along_axis(probs, ids, axis=1)

        return {"softmax + top-5, one row": top5}
    if workload == "text":
        from .workloads import _SENTENCES

        rows = [s.encode("utf-8") for s in _SENTENCES]

        def text() -> Any:
            texts = [item.decode("utf-8") for item in rows]
            upper = [t.upper().encode("utf-8") for t in texts]
            stats = [
                json.dumps({"chars": len(t), "words": len(t.split())}, separators=(",", ":"))
                for t in texts
            ]
            return upper, stats

        return {"8 strings: decode, upper, JSON": text}
    if workload == "large_tensor":
        from .workloads import LARGE_TENSOR_DIMS

        data = np.random.default_rng(4).random((1, *LARGE_TENSOR_DIMS), dtype=np.float32)

        def scale() -> Any:
            scaled = np.multiply(data, 0.5, dtype=np.float32)
            scaled += 0.25
            return scaled

        def copy() -> Any:
            return data.copy()

        return {"scale + shift, 8 MiB": scale, "one copy of 8 MiB (memcpy)": copy}
    return {}


def run_inprocess(workloads: Sequence[str], seconds: float = 1.0) -> List[InProcessResult]:
    """Time each workload's work in this process (the ensemble has no in-process entry)."""
    results = []
    for workload in workloads:
        for name, fn in _cases(workload).items():
            results.append(InProcessResult(workload, name, _time(fn, seconds)))
    return results
