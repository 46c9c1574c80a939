"""The benchmark workloads: per workload, the model variants written into a model repository
(hand-written ``raw``, ``tritonpy``, and where the issue asks for it a ``naive`` hand-written
one; for images also ``raw_malloc``, the raw model with tritonpy's glibc settings) and the
request payloads the load generator sends (for the ``sequence`` workload, in sequences of
:data:`SEQUENCE_LENGTH` requests).

Model files live in ``benchmarks/workloads/models/`` and are copied into
``<repository>/<workload>_<variant>/1/model.py``; the configurations are written here: full
ones for the hand-written models, two lines (+ one CPU instance) for tritonpy, whose
declarations fill the rest by auto-complete; the tritonpy sequence model's is written from
its declarations by ``tritonpy config`` (auto-complete cannot add ``sequence_batching``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ALL_WORKLOADS",
    "LARGE_TENSOR_DIMS",
    "SEQUENCE_LENGTH",
    "STREAM_RESPONSES",
    "Payload",
    "Workload",
    "build_repository",
    "expected_equal",
    "image_jpeg",
    "make_workloads",
]

MODELS_DIR = Path(__file__).resolve().parent / "models"
Payload = Dict[str, NDArray[Any]]

ALL_WORKLOADS = (
    "add_sub",
    "image_preprocess",
    "postprocess",
    "text",
    "large_tensor",
    "stream",
    "ensemble",
    "sequence",
)
#: responses the stream workload's models send per request (one token each)
STREAM_RESPONSES = 16
#: the large-tensor workload's rows: FP32 [1024, 2048], 8 MiB per request in and out
LARGE_TENSOR_DIMS = (1024, 2048)
#: requests per sequence of the sequence workload (perf_analyzer's default length)
SEQUENCE_LENGTH = 20
_INSTANCE = "instance_group [ { count: 1 kind: KIND_CPU } ]\n"
#: tritonpy's image outputs (reduced-size JPEG decoding) agree with raw within this mean
#: absolute difference, in pixel levels of 255
IMAGE_MEAN_ABS_LEVELS = 6.0


@dataclass
class Workload:
    """One workload: ``models`` maps a variant (``raw``, ``naive``, ``tritonpy``) to the model
    name clients call; ``payloads`` are the requests, sent in rotation."""

    name: str
    description: str
    models: Dict[str, str]
    payloads: List[Payload] = field(repr=False)
    #: whether benchmarks/pytriton_serve.py serves this workload (PyTriton has no ensembles)
    pytriton: bool = True
    notes: List[str] = field(default_factory=list)
    #: float outputs of tritonpy may differ from raw by this mean absolute difference (image
    #: preprocessing: reduced-size JPEG decoding, see docs/codecs.md); None: allclose 1e-5
    mean_abs_tolerance: Optional[float] = None
    #: a sequence model's requests per sequence (START on the first, END on the last, a fresh
    #: correlation id each); 0: plain requests
    sequence_length: int = 0
    #: a decoupled model's responses per request (sent over a gRPC stream, measured by
    #: responses per second and the time to the first one); 0: one response per request
    stream_responses: int = 0

    @property
    def variants(self) -> Tuple[str, ...]:
        return tuple(self.models)


# -- payloads ------------------------------------------------------------------------------


def image_jpeg(width: int = 640, height: int = 480, seed: int = 0, quality: int = 90) -> bytes:
    """A photo-like JPEG (smooth gradients, shapes and noise) of ``width`` x ``height``."""
    import cv2

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.empty((height, width, 3), np.float32)
    image[:, :, 0] = 128 + 100 * np.sin(x / 37.0 + seed)
    image[:, :, 1] = 128 + 100 * np.cos(y / 23.0)
    image[:, :, 2] = 128 + 60 * np.sin((x + y) / 51.0)
    for _ in range(12):
        cx, cy, r = rng.integers(0, width), rng.integers(0, height), rng.integers(10, 90)
        color = [float(c) for c in rng.integers(0, 256, 3)]
        cv2.circle(image, (int(cx), int(cy)), int(r), color, -1)
    image += rng.normal(0, 12, image.shape).astype(np.float32)
    ok, data = cv2.imencode(
        ".jpg", np.clip(image, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    assert ok
    return bytes(data.tobytes())


_SENTENCES = [
    "Triton serves Python models",
    "ünïcödé straße café",
    "the quick brown fox jumps over the lazy dog",
    "数据 科学 模型",
    "hello world",
    "a b c d e f g",
    "tritonpy: declarative models",
    "Ελληνικά κείμενα",
]


def _add_sub_payloads() -> List[Payload]:
    rng = np.random.default_rng(1)
    return [
        {
            "INPUT0": rng.random(4, dtype=np.float32),
            "INPUT1": rng.random(4, dtype=np.float32),
        }
        for _ in range(8)
    ]


def _image_payloads() -> List[Payload]:
    return [{"IMAGE": np.array([[image_jpeg(seed=seed)]], dtype=object)} for seed in range(4)]


def _postprocess_payloads() -> List[Payload]:
    rng = np.random.default_rng(2)
    return [{"LOGITS": (rng.standard_normal((1, 1000)) * 3).astype(np.float32)} for _ in range(8)]


def _sequence_payloads() -> List[Payload]:
    rng = np.random.default_rng(3)
    return [{"VALUE": rng.random((1, 4), dtype=np.float32)} for _ in range(8)]


def _large_tensor_payloads() -> List[Payload]:
    """Two 8 MiB requests (a client builds each request once; more would only cost memory)."""
    rng = np.random.default_rng(4)
    return [{"DATA": rng.random((1, *LARGE_TENSOR_DIMS), dtype=np.float32)} for _ in range(2)]


def _stream_payloads() -> List[Payload]:
    rng = np.random.default_rng(5)
    return [{"PROMPT": rng.integers(0, 32000, 16, dtype=np.int64)} for _ in range(8)]


def _text_payloads() -> List[Payload]:
    payloads = []
    for shift in range(4):
        rows = _SENTENCES[shift:] + _SENTENCES[:shift]
        payloads.append({"TEXT": np.array([[s.encode("utf-8")] for s in rows], dtype=object)})
    return payloads


# -- configurations --------------------------------------------------------------------------


def _tensor_list(entries: Sequence[Tuple[str, str, Sequence[int]]]) -> str:
    return ",\n".join(
        f'  {{ name: "{name}" data_type: {dtype} dims: [ {", ".join(str(d) for d in dims)} ] }}'
        for name, dtype, dims in entries
    )


def _raw_config(
    name: str,
    max_batch_size: int,
    inputs: Sequence[Tuple[str, str, Sequence[int]]],
    outputs: Sequence[Tuple[str, str, Sequence[int]]],
    extra: str = "",
    scheduler: str = "dynamic_batching { }\n",
) -> str:
    """A hand-written model's configuration; a batching one gets ``scheduler`` (default
    dynamic batching)."""
    text = (
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: {max_batch_size}\n'
        f"input [\n{_tensor_list(inputs)}\n]\noutput [\n{_tensor_list(outputs)}\n]\n" + _INSTANCE
    )
    if max_batch_size > 0:
        text += scheduler
    return text + extra


def _tritonpy_config(name: str) -> str:
    return f'name: "{name}"\nbackend: "python"\n' + _INSTANCE


#: appended to a hand-written model for its ``raw_malloc`` variant: the two glibc settings
#: ``tp.Model.tune_malloc`` makes (tritonpy/_runtime/_malloc.py), so that a run shows how much
#: of tritonpy's lead is the allocator and how much its decoding
MALLOC_TUNING = """

# raw_malloc: glibc's mmap and trim thresholds, as tritonpy's tune_malloc sets them
import ctypes  # noqa: E402

ctypes.CDLL(None).mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD
ctypes.CDLL(None).mallopt(-1, 64 * 1024 * 1024)  # M_TRIM_THRESHOLD
"""


def _write_model(repo: Path, name: str, source: str, config: str) -> None:
    version = repo / name / "1"
    version.mkdir(parents=True, exist_ok=True)
    if source.endswith("_raw_malloc.py"):
        text = (MODELS_DIR / source.replace("_raw_malloc.py", "_raw.py")).read_text("utf-8")
        (version / "model.py").write_text(text + MALLOC_TUNING, encoding="utf-8")
    else:
        shutil.copyfile(MODELS_DIR / source, version / "model.py")
    (repo / name / "config.pbtxt").write_text(config, encoding="utf-8")


# -- workloads -----------------------------------------------------------------------------

_Spec = Tuple[Sequence[Tuple[str, str, Sequence[int]]], Sequence[Tuple[str, str, Sequence[int]]]]

_SIMPLE: Dict[str, Tuple[str, int, _Spec, Tuple[str, ...], Callable[[], List[Payload]]]] = {
    "add_sub": (
        "FP32 [4] x 2 in, sum and difference out, no batching: per-request overhead",
        0,
        (
            [("INPUT0", "TYPE_FP32", [4]), ("INPUT1", "TYPE_FP32", [4])],
            [("OUTPUT0", "TYPE_FP32", [4]), ("OUTPUT1", "TYPE_FP32", [4])],
        ),
        ("raw", "tritonpy"),
        _add_sub_payloads,
    ),
    "image_preprocess": (
        "JPEG 640x480 -> 224x224 ImageNet-normalised FP32 CHW, max_batch_size 16",
        16,
        ([("IMAGE", "TYPE_STRING", [1])], [("PIXELS", "TYPE_FP32", [3, 224, 224])]),
        ("raw", "raw_malloc", "tritonpy", "naive"),
        _image_payloads,
    ),
    "postprocess": (
        "FP32 [1000] logits -> softmax top-5 ids and scores, max_batch_size 64",
        64,
        (
            [("LOGITS", "TYPE_FP32", [1000])],
            [("IDS", "TYPE_INT64", [5]), ("SCORES", "TYPE_FP32", [5])],
        ),
        ("raw", "tritonpy", "naive"),
        _postprocess_payloads,
    ),
    "text": (
        "8 UTF-8 strings per request -> upper-cased strings + a JSON document per row",
        64,
        (
            [("TEXT", "TYPE_STRING", [1])],
            [("UPPER", "TYPE_STRING", [1]), ("STATS", "TYPE_STRING", [1])],
        ),
        ("raw", "tritonpy"),
        _text_payloads,
    ),
    "large_tensor": (
        "FP32 [1024, 2048] (8 MiB) in -> scaled and shifted 8 MiB out, max_batch_size 4: "
        "the copies of decoding and encoding",
        4,
        (
            [("DATA", "TYPE_FP32", list(LARGE_TENSOR_DIMS))],
            [("SCALED", "TYPE_FP32", list(LARGE_TENSOR_DIMS))],
        ),
        ("raw", "raw_malloc", "tritonpy"),
        _large_tensor_payloads,
    ),
}


def make_workloads(names: Sequence[str]) -> List[str]:
    """Check workload names; return them in the canonical order."""
    unknown = sorted(set(names) - set(ALL_WORKLOADS))
    if unknown:
        raise ValueError(f"unknown workloads {unknown}; choose from {list(ALL_WORKLOADS)}")
    return [name for name in ALL_WORKLOADS if name in names]


def build_repository(
    repo: Path, names: Sequence[str], *, log: Optional[Callable[[str], None]] = None
) -> List[Workload]:
    """Write the models of ``names`` into ``repo``; return the workloads that were built (the
    ensemble is left out, with a message, when the templates cannot be rendered)."""
    say = log or (lambda _message: None)
    built: List[Workload] = []
    for name in make_workloads(names):
        if name == "ensemble":
            workload = _build_ensemble(repo, say)
            if workload is not None:
                built.append(workload)
            continue
        if name == "sequence":
            built.append(_build_sequence(repo))
            continue
        if name == "stream":
            built.append(_build_stream(repo))
            continue
        description, max_batch_size, (inputs, outputs), variants, payloads = _SIMPLE[name]
        models: Dict[str, str] = {}
        for variant in variants:
            model = f"{name}_{variant}"
            source = f"{name}_{variant}.py"
            config = (
                _tritonpy_config(model)
                if variant == "tritonpy"
                else _raw_config(model, max_batch_size, inputs, outputs)
            )
            _write_model(repo, model, source, config)
            models[variant] = model
        # benchmarks/pytriton_serve.py binds the first four workloads only
        workload = Workload(name, description, models, payloads(), pytriton=name != "large_tensor")
        if name == "image_preprocess":
            # 6 of 255 levels, in units of the normalised output (the smallest std)
            workload.mean_abs_tolerance = IMAGE_MEAN_ABS_LEVELS / 255 / 0.225
        built.append(workload)
    return built


#: the sequence workload's scheduler: the oldest strategy, every client's sequence a candidate
#: for the batches (16 clients at most), sequences idle for a minute freed
SEQUENCE_BATCHING = (
    "sequence_batching {\n  max_sequence_idle_microseconds: 60000000\n"
    "  oldest { max_candidate_sequences: 16 }\n}\n"
)


def _build_sequence(repo: Path) -> Workload:
    """A running sum and mean per sequence under the oldest strategy: the hand-written model
    with its whole configuration, the tritonpy model's configuration written from its
    declarations (``tp.Sequence``) by ``tritonpy config``'s library function."""
    from tritonpy.config import sync_config

    inputs = [("VALUE", "TYPE_FP32", [4])]
    outputs = [("SUM", "TYPE_FP32", [4]), ("MEAN", "TYPE_FP32", [4])]
    raw, tritonpy = "sequence_raw", "sequence_tritonpy"
    config = _raw_config(raw, 16, inputs, outputs, scheduler=SEQUENCE_BATCHING)
    _write_model(repo, raw, "sequence_raw.py", config)
    _write_model(repo, tritonpy, "sequence_tritonpy.py", _tritonpy_config(tritonpy))
    sync_config(repo / tritonpy)
    return Workload(
        "sequence",
        f"running sum and mean per sequence, FP32 [4]; oldest strategy, max_batch_size 16, "
        f"sequences of {SEQUENCE_LENGTH} requests",
        {"raw": raw, "tritonpy": tritonpy},
        _sequence_payloads(),
        pytriton=False,
        sequence_length=SEQUENCE_LENGTH,
    )


def _build_stream(repo: Path) -> Workload:
    """A decoupled model streaming :data:`STREAM_RESPONSES` tokens per request: the
    hand-written model with its whole configuration (decoupled transaction policy), the
    tritonpy model with two lines (its yielding ``infer`` makes auto-complete set decoupled)."""
    raw, tritonpy = "stream_raw", "stream_tritonpy"
    config = _raw_config(
        raw,
        0,
        [("PROMPT", "TYPE_INT64", [16])],
        [("TOKEN", "TYPE_INT64", [1])],
        extra="model_transaction_policy { decoupled: true }\n",
    )
    _write_model(repo, raw, "stream_raw.py", config)
    _write_model(repo, tritonpy, "stream_tritonpy.py", _tritonpy_config(tritonpy))
    return Workload(
        "stream",
        f"decoupled: INT64 [16] prompt -> {STREAM_RESPONSES} responses of one INT64 token over "
        f"a gRPC stream, no batching",
        {"raw": raw, "tritonpy": tritonpy},
        _stream_payloads(),
        pytriton=False,
        stream_responses=STREAM_RESPONSES,
    )


def _build_ensemble(repo: Path, say: Callable[[str], None]) -> Optional[Workload]:
    """The templates' digits ensemble (tritonpy members) against the same ensemble built from
    hand-written members (same weights, same labels)."""
    try:
        from tritonpy.templates import TemplateError, render_digits_ensemble, render_template
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        say(f"ensemble: skipped, tritonpy.templates is not available ({exc})")
        return None
    try:
        digits = render_digits_ensemble(repo, prefix="ensemble_tritonpy", overwrite=True)
    except (TemplateError, ImportError, OSError) as exc:
        say(f"ensemble: skipped, the templates' digits ensemble could not be rendered ({exc})")
        return None
    top_k = 3
    pre, cls, post = (
        f"ensemble_raw_{role}" for role in ("preprocess", "classifier", "postprocess")
    )
    _write_model(
        repo,
        pre,
        "digits_preprocess_raw.py",
        _raw_config(pre, 32, [("IMAGE", "TYPE_STRING", [1])], [("PIXELS", "TYPE_FP32", [1, 8, 8])]),
    )
    _write_model(
        repo,
        cls,
        "digits_classifier_raw.py",
        _raw_config(cls, 64, [("PIXELS", "TYPE_FP32", [1, 8, 8])], [("LOGITS", "TYPE_FP32", [-1])]),
    )
    shutil.copyfile(repo / digits.classifier / "1" / "model.pt", repo / cls / "1" / "model.pt")
    _write_model(
        repo,
        post,
        "digits_postprocess_raw.py",
        _raw_config(
            post,
            64,
            [("LOGITS", "TYPE_FP32", [-1])],
            [
                ("SCORES", "TYPE_FP32", [-1]),
                ("CLASS_IDS", "TYPE_INT64", [-1]),
                ("LABELS", "TYPE_STRING", [-1]),
            ],
            extra=f'parameters {{ key: "top_k" value {{ string_value: "{top_k}" }} }}\n',
        ),
    )
    shutil.copyfile(repo / digits.postprocess / "labels.txt", repo / post / "labels.txt")
    render_template(
        "ensemble_classifier",
        "ensemble_raw",
        repo,
        models={"digits_preprocess": pre, "digits_classifier": cls, "digits_postprocess": post},
        overwrite=True,
    )
    payloads = [{"IMAGE": np.array([[image]], dtype=object)} for image in digits.images[:16]]
    return Workload(
        "ensemble",
        "PNG digit -> preprocess -> torch MLP -> top-3 postprocess (the templates' ensemble)",
        {"raw": "ensemble_raw", "tritonpy": digits.ensemble},
        payloads,
        pytriton=False,
        notes=["tritonpy: model_templates rendered by tritonpy.templates.render_digits_ensemble"],
    )


def expected_equal(
    name: str,
    left: Mapping[str, NDArray[Any]],
    right: Mapping[str, NDArray[Any]],
    mean_abs: Optional[float] = None,
) -> List[str]:
    """Differences between two variants' outputs for the same request ([] when they agree);
    float outputs agree within 1e-5, or within ``mean_abs`` mean absolute difference."""
    problems = []
    for key in sorted(set(left) | set(right)):
        if key not in left or key not in right:
            problems.append(f"{name}: output {key} missing from one variant")
            continue
        a, b = np.asarray(left[key]), np.asarray(right[key])
        if a.shape != b.shape:
            problems.append(f"{name}: output {key} shapes {a.shape} vs {b.shape}")
        elif a.dtype.kind in "fc" and mean_abs is not None:
            difference = float(np.abs(a - b).mean())
            if difference > mean_abs:
                problems.append(
                    f"{name}: output {key} mean absolute difference {difference:.4f} > "
                    f"{mean_abs:.4f}"
                )
        elif a.dtype.kind in "fc":
            if not np.allclose(a, b, rtol=1e-5, atol=1e-5):
                problems.append(f"{name}: output {key} values differ (max {np.abs(a - b).max()})")
        elif a.dtype == object or b.dtype == object:
            aa = [bytes(x) for x in a.reshape(-1)]
            bb = [bytes(x) for x in b.reshape(-1)]
            if aa != bb:
                problems.append(f"{name}: output {key} values differ")
        elif not np.array_equal(a, b):
            problems.append(f"{name}: output {key} values differ")
    return problems
