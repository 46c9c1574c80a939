"""Hostile bytes found by the codec fuzz (tests/runtime/test_codec_fuzz.py), sent to the real
tritonserver: each request gets the same INVALID_ARG code and message as under ModelHarness,
over HTTP and gRPC, and the model keeps answering.

One server for the module: the conformance models cf_strings (Text, Bytes, JSON) and cf_image
(Image, max_pixels 1,000,000).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable, Dict, Iterator, Tuple

import numpy as np
import pytest

from tritonpy._runtime.errors import TritonRequestError
from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

CONFORMANCE_MODELS = Path(__file__).parent / "conformance_models"


def column(value: bytes) -> np.ndarray:
    return np.array([[value]], dtype=object)


def strings(text: bytes = b"ok", raw: bytes = b"raw", doc: bytes = b"{}") -> Dict[str, np.ndarray]:
    return {"TEXT": column(text), "RAW": column(raw), "DOC": column(doc)}


def bmp_header(width: int, height: int) -> bytes:
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, 0, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 54, 0, 0, 54) + info


CASES: Dict[str, Tuple[str, Dict[str, np.ndarray], str]] = {
    "json-nested-too-deep": ("cf_strings", strings(doc=b"[" * 100_000), "nested deeper"),
    "json-invalid-utf8": ("cf_strings", strings(doc=b'"\xff"'), "expected a UTF-8 JSON"),
    "text-invalid-utf8": ("cf_strings", strings(text=b"\xc3\x28"), "expected UTF-8 text"),
    "image-bmp-bomb": ("cf_image", {"IMAGE": column(bmp_header(30_000, 30_000))}, "exceeds"),
    "image-pgm-bomb": ("cf_image", {"IMAGE": column(b"P5\n30000 30000\n255\n")}, "exceeds"),
    "image-truncated": ("cf_image", {"IMAGE": column(b"\x89PNG\r\n\x1a\n\x00")}, "could not"),
}


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = repository_builder(
        tmp_path_factory.mktemp("hostile") / "repo",
        "cf_strings",
        "cf_image",
        source=CONFORMANCE_MODELS,
    )
    return triton_server_factory(repo)


@pytest.fixture(scope="module")
def harnesses() -> Iterator[Dict[str, ModelHarness]]:
    loaded = {name: ModelHarness(CONFORMANCE_MODELS / name) for name in ("cf_strings", "cf_image")}
    yield loaded
    for harness in loaded.values():
        harness.close()


def refusal(call: Callable[[], object]) -> TritonRequestError:
    with pytest.raises(TritonRequestError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_input_is_the_same_invalid_arg_on_the_server(
    server: TritonServer, harnesses: Dict[str, ModelHarness], protocol: str, case: str
) -> None:
    model, inputs, fragment = CASES[case]
    want = refusal(lambda: harnesses[model].infer(inputs))
    assert want.code == "INVALID_ARG" and fragment in want.message, want
    client = InferClient(server.http_url if protocol == "http" else server.grpc_url, protocol)
    try:
        got = refusal(lambda: client.infer(model, inputs, None))
        assert (got.code, got.message) == (want.code, want.message)
        # the model is still there for the next request
        if model == "cf_strings":
            upper = {o.name: o.array for o in client.infer(model, strings(), None)}["UPPER"]
            assert upper.tolist() == [[b"OK"]]
    finally:
        client.close()
