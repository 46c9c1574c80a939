"""Serve the benchmark workloads with PyTriton (``pytriton.triton.Triton`` + ``@batch``), the
same work as the hand-written models, for ``benchmarks/run.py --with-pytriton``.

Run by run.py in its own process (PyTriton starts its own tritonserver)::

    python benchmarks/pytriton_serve.py --http-port 8100 --grpc-port 8101 --metrics-port 8102 \
        --workloads add_sub,image_preprocess

It serves until SIGTERM/SIGINT. Models are named ``<workload>_pytriton``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

SIZE = (224, 224)
MEAN = np.array([0.485, 0.456, 0.406], np.float64)
STD = np.array([0.229, 0.224, 0.225], np.float64)
SCALE = (1.0 / 255.0 / STD).astype(np.float32)
SHIFT = (-MEAN / STD).astype(np.float32)
TOP_K = 5

#: workloads PyTriton serves (it has no ensembles)
SUPPORTED = ("add_sub", "image_preprocess", "postprocess", "text")


def _bind_all(triton: Any, workloads: Sequence[str]) -> None:
    import cv2
    from pytriton import decorators
    from pytriton.model_config import ModelConfig, Tensor

    Infer = Callable[..., Dict[str, Any]]
    batch: Callable[[Infer], Infer] = decorators.batch  # untyped in PyTriton

    @batch
    def add_sub(INPUT0: Any, INPUT1: Any) -> Dict[str, Any]:
        return {"OUTPUT0": INPUT0 + INPUT1, "OUTPUT1": INPUT0 - INPUT1}

    @batch
    def image_preprocess(IMAGE: Any) -> Dict[str, Any]:
        items = IMAGE.reshape(-1)
        out = np.empty((len(items), 3, SIZE[1], SIZE[0]), np.float32)
        for row, item in enumerate(items):
            image = cv2.imdecode(np.frombuffer(item, np.uint8), cv2.IMREAD_COLOR)
            image = cv2.resize(image, SIZE, interpolation=cv2.INTER_LINEAR)
            for channel in range(3):
                plane = out[row, channel]
                np.multiply(image[:, :, 2 - channel], SCALE[channel], out=plane, casting="unsafe")
                plane += SHIFT[channel]
        return {"PIXELS": out}

    @batch
    def postprocess(LOGITS: Any) -> Dict[str, Any]:
        shifted = LOGITS - LOGITS.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        top = np.argpartition(-probs, TOP_K - 1, axis=1)[:, :TOP_K]
        order = np.argsort(-np.take_along_axis(probs, top, axis=1), axis=1, kind="stable")
        ids = np.take_along_axis(top, order, axis=1)
        return {"IDS": ids, "SCORES": np.take_along_axis(probs, ids, axis=1)}

    @batch
    def text(TEXT: Any) -> Dict[str, Any]:
        texts = [item.decode("utf-8") for item in TEXT.reshape(-1)]
        upper = np.array([t.upper().encode("utf-8") for t in texts], dtype=object)
        stats = np.array(
            [
                json.dumps(
                    {"chars": len(t), "words": len(t.split())}, separators=(",", ":")
                ).encode("utf-8")
                for t in texts
            ],
            dtype=object,
        )
        return {"UPPER": upper.reshape(TEXT.shape), "STATS": stats.reshape(TEXT.shape)}

    table: Dict[str, Callable[[], None]] = {
        "add_sub": lambda: triton.bind(
            model_name="add_sub_pytriton",
            infer_func=add_sub,
            inputs=[
                Tensor(name="INPUT0", dtype=np.float32, shape=(4,)),
                Tensor(name="INPUT1", dtype=np.float32, shape=(4,)),
            ],
            outputs=[
                Tensor(name="OUTPUT0", dtype=np.float32, shape=(4,)),
                Tensor(name="OUTPUT1", dtype=np.float32, shape=(4,)),
            ],
            config=ModelConfig(batching=False),
        ),
        "image_preprocess": lambda: triton.bind(
            model_name="image_preprocess_pytriton",
            infer_func=image_preprocess,
            inputs=[Tensor(name="IMAGE", dtype=np.bytes_, shape=(1,))],
            outputs=[Tensor(name="PIXELS", dtype=np.float32, shape=(3, 224, 224))],
            config=ModelConfig(max_batch_size=16),
        ),
        "postprocess": lambda: triton.bind(
            model_name="postprocess_pytriton",
            infer_func=postprocess,
            inputs=[Tensor(name="LOGITS", dtype=np.float32, shape=(1000,))],
            outputs=[
                Tensor(name="IDS", dtype=np.int64, shape=(TOP_K,)),
                Tensor(name="SCORES", dtype=np.float32, shape=(TOP_K,)),
            ],
            config=ModelConfig(max_batch_size=64),
        ),
        "text": lambda: triton.bind(
            model_name="text_pytriton",
            infer_func=text,
            inputs=[Tensor(name="TEXT", dtype=np.bytes_, shape=(1,))],
            outputs=[
                Tensor(name="UPPER", dtype=np.bytes_, shape=(1,)),
                Tensor(name="STATS", dtype=np.bytes_, shape=(1,)),
            ],
            config=ModelConfig(max_batch_size=64),
        ),
    }
    for name in workloads:
        if name in table:
            table[name]()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--workloads", default=",".join(SUPPORTED))
    args = parser.parse_args(argv)
    from pytriton.triton import Triton, TritonConfig

    config = TritonConfig(
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        http_address="127.0.0.1",
        grpc_address="127.0.0.1",
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with Triton(config=config) as triton:
        _bind_all(triton, [w for w in args.workloads.split(",") if w])
        triton.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
