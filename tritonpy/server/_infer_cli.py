"""``tritonpy infer``: the command (its options, one request through
:func:`~tritonpy.client.infer_events`) and how it prints the events (the command's side: the
library functions never print).

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

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Dict, Iterable, List, Optional

from .._runtime.errors import TritonRequestError
from .._tooling import cli as shared
from ..client import InferEnd, InferEvent, InferNote, InferResponse, format_output


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``infer`` subcommand on ``subparsers``."""
    summary = "send one inference request and print the outputs"
    # a request's error prints as the server gave it: "[INVALID_ARG] ..." from the model
    failures = shared.Failures(bare=(TritonRequestError,))
    parser = shared.add_command(subparsers, "infer", cmd_infer, help=summary, failures=failures)
    parser.add_argument("model", metavar="MODEL", help="the model's name in the repository")
    shared.add_server_address(parser, default_url="localhost:8001", bare_protocol="grpc")
    for flag, short, dest, metavar, text in (
        ("--input", "-i", "inputs", "NAME=VALUE", "an input (repeat for each)"),
        ("--output", "-o", "outputs", "NAME", "an output to request (default: all)"),
    ):
        parser.add_argument(
            flag, short, dest=dest, action="append", default=[], metavar=metavar, help=text
        )
    parser.add_argument(
        "--model-version",
        metavar="N",
        type=int,
        default=None,
        help="the version to ask, for a model served in several versions (default: the one "
        "its version_policy picks, the newest)",
    )
    shared.add_timeout(parser, 60.0, "request timeout")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--full", action="store_true", help="print every element of every output (no '...')"
    )
    shown.add_argument(
        "--json",
        action="store_true",
        help="print the outputs as one JSON object: {model, outputs: [{name, datatype, shape, "
        "data}]} (BYTES as text, or {base64: ...} when not UTF-8), with 'sequence' for a "
        "sequence model; a decoupled model's stream as JSON lines, one {model, index, "
        "outputs} per response as it arrives, then {model, responses, final}",
    )
    parser.add_argument(
        "--sequence-id",
        metavar="ID",
        default=None,
        help="sequence models: the request's correlation id, a number or a string (default: a "
        "fresh id, sent with START and END: a one-request sequence)",
    )
    parser.add_argument(
        "--sequence-start", action="store_true", help="the first request of the sequence (START)"
    )
    parser.add_argument(
        "--sequence-end", action="store_true", help="the last request of the sequence (END)"
    )


def cmd_infer(args: argparse.Namespace) -> int:
    """Send one request to MODEL and print each output's name, datatype, shape and value (summarised
    by numpy for large tensors; --full prints every element, --json prints JSON). Each --input is
    NAME=VALUE, read by the input's datatype in the model's configuration: a BYTES input
    (tp.Text, tp.JSON, tp.Bytes, tp.Image) gets one row, @FILE the file's bytes, any other VALUE
    its UTF-8 text exactly as written, so NAME='{"a": 1}' or NAME='[1, 2]' sends that JSON
    document to a tp.JSON input; any other input takes a JSON number or list, a tensor of its
    datatype. A batch dimension of 1 is added for batching models. A decoupled model streams:
    each response is printed as it arrives ('response N'), then how many came and whether the
    stream ended with its final flag (over HTTP generate_stream: flat JSON values, no sequence
    id; gRPC carries everything). A sequence model takes --sequence-id ID with
    --sequence-start / --sequence-end, to drive a sequence request by request; without them a
    request is a one-request sequence with a fresh id (START and END), as stderr says. A bare
    host:port --url is gRPC (default localhost:8001), unlike tritonpy probe's (HTTP, the port of
    Kubernetes probes)."""
    from ..client import SequenceOptions, infer_events, sequence_id_from_text, split_assignment

    values = dict(split_assignment(text) for text in args.inputs)
    sequence_id = None if args.sequence_id is None else sequence_id_from_text(args.sequence_id)
    sequence = SequenceOptions(sequence_id, args.sequence_start, args.sequence_end)
    events = infer_events(
        args.model,
        values,
        outputs=args.outputs or None,
        sequence=sequence,
        version="" if args.model_version is None else str(args.model_version),
        **shared.options(args, "url protocol timeout"),
    )
    return print_infer_events(events, as_json=args.json, full=args.full, model=args.model)


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
