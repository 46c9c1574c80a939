"""The demo: the digits ensemble served by a real tritonserver.

It renders ``preprocess -> torch classifier -> postprocess`` from the model templates (training
the classifier on scikit-learn's bundled digits, a few seconds), starts the embedded
tritonserver on that repository, sends every held-out digit image as PNG bytes through the
ensemble with tritonclient, and reports labels, accuracy and latency.

Run it with ``bash scripts/demo.sh`` (sets everything up) or ``python -m tritonpy.demo``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

import numpy as np

from ._runtime.errors import MissingDependencyError
from ._tooling.cli import Subparsers, add_command

if TYPE_CHECKING:
    from .client import InferClient, ModelSignature, WireProtocol

__all__ = [
    "DemoResult",
    "Prediction",
    "add_arguments",
    "add_parser",
    "main",
    "run",
    "run_demo",
]


@dataclass(frozen=True)
class Prediction:
    """One answer of the ensemble."""

    truth: int
    labels: List[str]
    scores: List[float]
    latency_ms: float

    @property
    def correct(self) -> bool:
        return bool(self.labels) and self.labels[0] == str(self.truth)


@dataclass(frozen=True)
class DemoResult:
    repository: Path
    ensemble: str
    models: List[str]
    predictions: List[Prediction]
    wall_seconds: float
    training_accuracy: float

    @property
    def accuracy(self) -> float:
        return sum(p.correct for p in self.predictions) / max(len(self.predictions), 1)

    def latency_ms(self, quantile: float) -> float:
        return float(np.quantile([p.latency_ms for p in self.predictions], quantile))

    @property
    def throughput(self) -> float:
        return len(self.predictions) / self.wall_seconds if self.wall_seconds else 0.0


def run_demo(
    repository: Path,
    *,
    protocol: WireProtocol = "grpc",
    concurrency: int = 4,
    limit: Optional[int] = None,
    progress: Callable[[str], None] = lambda message: None,
) -> DemoResult:
    """Render the digits ensemble into ``repository`` (replacing it), serve it, query it."""
    from .server import TritonServer
    from .templates import render_digits_ensemble

    if repository.exists():
        shutil.rmtree(repository)
    progress(f"rendering the digits ensemble into {repository} (training the classifier)")
    rendered = render_digits_ensemble(repository)
    images, labels = rendered.images, rendered.labels
    if limit is not None:
        images, labels = images[:limit], labels[:limit]

    progress("starting tritonserver (the nvidia-pytriton wheel's, CPU only)")
    with TritonServer(repository, startup_timeout=180) as server:
        models = server.models_ready()
        progress(f"ready: {', '.join(models)} at grpc {server.grpc_url}, http {server.http_url}")
        url = server.grpc_url if protocol == "grpc" else server.http_url
        progress(
            f"sending {len(images)} held-out digits as PNG ({protocol}, {concurrency} at once)"
        )
        sender = _Sender(url, protocol, rendered.ensemble, images, labels)
        started = time.perf_counter()
        predictions = sender.send_all(concurrency)
        wall = time.perf_counter() - started
    return DemoResult(
        repository=repository,
        ensemble=rendered.ensemble,
        models=models,
        predictions=predictions,
        wall_seconds=wall,
        training_accuracy=rendered.holdout_accuracy,
    )


class _Sender:
    """Sends every image through the ensemble from a few threads, each with its own client;
    the first failure is raised once all threads have ended."""

    def __init__(
        self,
        url: str,
        protocol: WireProtocol,
        ensemble: str,
        images: Sequence[bytes],
        labels: Sequence[int],
    ) -> None:
        self.url, self.protocol, self.ensemble = url, protocol, ensemble
        self.images, self.labels = images, labels
        self.predictions: List[Optional[Prediction]] = [None] * len(images)
        self.failures: List[BaseException] = []
        self._next_index = iter(range(len(images)))
        self._lock = threading.Lock()

    def send_all(self, concurrency: int) -> List[Prediction]:
        threads = [threading.Thread(target=self._work) for _ in range(max(concurrency, 1))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self.failures:
            raise self.failures[0]
        return [p for p in self.predictions if p is not None]

    def _work(self) -> None:
        from .client import InferClient

        client = InferClient(self.url, self.protocol)
        try:
            signature = client.signature(self.ensemble)
            while True:
                with self._lock:
                    index = next(self._next_index, None)
                if index is None:
                    return
                self.predictions[index] = self._predict(client, signature, index)
        except BaseException as exc:  # reported after the threads end
            self.failures.append(exc)
        finally:
            client.close()

    def _predict(self, client: InferClient, signature: ModelSignature, index: int) -> Prediction:
        request = {"IMAGE": np.array([[self.images[index]]], dtype=object)}
        started = time.perf_counter()
        outputs = client.infer(self.ensemble, request, ["LABELS", "SCORES"], signature=signature)
        elapsed = (time.perf_counter() - started) * 1000
        by_name = {o.name: o.array for o in outputs}
        return Prediction(
            truth=self.labels[index],
            labels=[b.decode() for b in by_name["LABELS"][0]],
            scores=[float(s) for s in by_name["SCORES"][0]],
            latency_ms=elapsed,
        )


def _digit_art(png: bytes) -> List[str]:
    import cv2

    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
    shades = " .:-=+*#%@"
    return ["".join(shades[int(v) * (len(shades) - 1) // 255] * 2 for v in row) for row in image]


DESCRIPTION = (
    "Render the digits ensemble from the model templates (training its classifier on "
    "scikit-learn's digits, a few seconds), serve it in a real tritonserver, send every "
    "held-out digit as PNG and report accuracy and latency. Needs "
    "'tritonpy[server,torch,image]' and scikit-learn."
)

#: what the demo imports beyond numpy (import names, see tritonpy._runtime._optional.KNOWN)
REQUIRED_MODULES = ("pytriton", "tritonclient.grpc", "google.protobuf", "torch", "cv2", "sklearn")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the demo's options on ``parser`` (``python -m tritonpy.demo`` and
    ``tritonpy demo`` share them)."""
    parser.add_argument(
        "--repo",
        type=Path,
        help="where to render the model repository (replaced; default: a temporary directory, "
        "removed at the end)",
    )
    parser.add_argument("--protocol", choices=("grpc", "http"), default="grpc", help="default grpc")
    parser.add_argument(
        "--concurrency", type=int, default=4, help="requests in flight at once (default 4)"
    )
    parser.add_argument("--limit", type=int, help="send only the first N held-out digits")
    parser.add_argument("--keep", action="store_true", help="keep the rendered repository")


def add_parser(subparsers: Subparsers) -> None:
    """Declare the ``tritonpy demo`` subcommand on ``subparsers`` (the options of
    :func:`add_arguments`, the summary and :data:`DESCRIPTION`)."""
    summary = "serve the digits ensemble in a real tritonserver and query it"
    parser = add_command(subparsers, "demo", run, help=summary, description=DESCRIPTION)
    add_arguments(parser)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m tritonpy.demo [options]``; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m tritonpy.demo", description=DESCRIPTION)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except MissingDependencyError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed options (see :func:`add_arguments`); print the report and
    return the exit status: 0, 1 when it failed, 2 when accuracy is below 0.9."""
    from ._runtime._optional import require

    require(*REQUIRED_MODULES, feature="the demo")

    def say(message: str) -> None:
        print(f"==> {message}", flush=True)

    temporary = args.repo is None
    repository = args.repo or Path(tempfile.mkdtemp(prefix="tritonpy-demo-")) / "models"
    try:
        result = run_demo(
            repository,
            protocol=args.protocol,
            concurrency=args.concurrency,
            limit=args.limit,
            progress=say,
        )
    except Exception as exc:  # a demo shows the error, not a traceback
        print(f"demo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if temporary and not args.keep:
            shutil.rmtree(repository.parent, ignore_errors=True)

    from .templates import digits_holdout

    images, _ = digits_holdout()
    print("\nA few answers (the image, the truth, the ensemble's top labels and scores):")
    for index, prediction in enumerate(result.predictions[:3]):
        top = ", ".join(f"{lbl}:{s:.2f}" for lbl, s in zip(prediction.labels, prediction.scores))
        mark = "ok" if prediction.correct else "WRONG"
        print("\n".join(_digit_art(images[index])))
        print(f"truth {prediction.truth} -> {top}  [{mark}]\n")
    wrong = [p for p in result.predictions if not p.correct]
    print(f"models served        : {', '.join(result.models)}")
    print(
        f"held-out digits      : {len(result.predictions)} sent through '{result.ensemble}' "
        f"({args.protocol})"
    )
    print(f"accuracy (server)    : {result.accuracy:.3f}  ({len(wrong)} wrong)")
    print(f"accuracy (training)  : {result.training_accuracy:.3f}  (all held-out digits, in torch)")
    print(
        f"latency per request  : p50 {result.latency_ms(0.5):.2f} ms, "
        f"p99 {result.latency_ms(0.99):.2f} ms"
    )
    print(
        f"throughput           : {result.throughput:.0f} images/s at concurrency {args.concurrency}"
    )
    if not temporary or args.keep:
        print(f"repository kept at   : {repository}")
    return 0 if result.accuracy >= 0.9 else 2


if __name__ == "__main__":
    sys.exit(main())
