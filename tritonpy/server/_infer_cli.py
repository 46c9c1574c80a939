"""How ``tritonpy infer`` prints the events of :func:`~tritonpy.client.infer_events`
(the command's side: the library functions never print).

Text: a plain model's outputs, one line each (as before); a stream's responses as they arrive,
each under ``response N``, then ``N response(s), the stream ended with the final flag``. JSON:
one document ``{model, outputs[, sequence]}`` for a plain model; JSON lines for a stream, one
``{model, index, outputs}`` per response as it arrives (``jq -c`` reads them one by one), then
``{model, responses, final}``. Notes (a fresh sequence id chosen) go to stderr.

Example::

    print_infer_events(infer_events("square", {"IN": "[2]"}), as_json=False, model="square")
    # response 0
    # OUT (INT32, shape [1]): [4]
    # response 1
    # OUT (INT32, shape [1]): [4]
    # 2 response(s), the stream ended with the final flag
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any, Dict, Iterable, List, Optional

from .._runtime.errors import TritonRequestError
from ..client import InferEnd, InferEvent, InferNote, InferResponse, format_output


def print_infer_events(
    events: Iterable[InferEvent], *, as_json: bool, model: str, full: bool = False
) -> int:
    """Print ``events`` as they come (see the module documentation); 0 once they all came.
    A stream's error is raised after its responses, and a line saying how many came."""
    count = 0
    plain: Optional[InferResponse] = None
    try:
        for event in events:
            if isinstance(event, InferNote):
                print(f"tritonpy: {event.text}", file=sys.stderr, flush=True)
            elif isinstance(event, InferEnd):
                _print_end(event, plain, as_json=as_json, model=model)
            elif event.streamed:
                _print_streamed(event, as_json=as_json, model=model, full=full)
                count += 1
            elif as_json:  # one document, once the end says which sequence it was
                plain = event
            else:
                _print_outputs(event, full)
    except TritonRequestError:
        if count and not as_json:
            print(f"{count} response(s), then the stream ended with an error:", flush=True)
        raise
    return 0


def _print_outputs(response: InferResponse, full: bool) -> None:
    for output in response.outputs:
        print(format_output(output, full=full), flush=True)


def _print_streamed(response: InferResponse, *, as_json: bool, model: str, full: bool) -> None:
    if as_json:
        document = {"model": model, "index": response.index, "outputs": _json(response)}
        print(json.dumps(document, ensure_ascii=False), flush=True)
        return
    print(f"response {response.index}")
    _print_outputs(response, full)


def _print_end(end: InferEnd, plain: Optional[InferResponse], *, as_json: bool, model: str) -> None:
    if not end.streamed:
        if as_json and plain is not None:
            document: Dict[str, Any] = {"model": model, "outputs": _json(plain)}
            if end.sequence is not None:
                document["sequence"] = asdict(end.sequence)
            print(json.dumps(document, ensure_ascii=False))
        return
    if as_json:
        print(json.dumps({"model": model, "responses": end.count, "final": end.final}))
        return
    how = "ended with the final flag" if end.final else "ended without a final flag"
    print(f"{end.count} response(s), the stream {how}")


def _json(response: InferResponse) -> List[Dict[str, Any]]:
    return [output.to_json() for output in response.outputs]
