"""The merged path of ``Model.execute``: several requests of one call decoded, merged into one
``infer`` call per group, and the result split back into one response per request.

A request served alone never comes here (``Model._serve_alone`` is the hot path); this mixin
holds what only merging needs, including the isolation of a failing group (each member run
alone, so that a poison request fails on its own).
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Dict,
    FrozenSet,
    Hashable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

import numpy as np

from ._declarations import PARAMETERS_ARGUMENT
from ._decoded import Decoded, groups, union_requested
from .codecs.base import Codec, PlainArray
from .errors import InputError, OutputError
from .response import Response, make_inference_response


class MergedExecution:
    """Mixin of :class:`tritonpy.Model`: decoding a whole call, running merged groups,
    encoding and splitting their outputs."""

    _pb: Any
    _builtin: Any
    _input_plan: Tuple[Tuple[str, Codec], ...]
    _output_plan: Tuple[Tuple[str, Codec], ...]
    _output_entries: Tuple[Tuple[str, Codec, Optional[PlainArray]], ...]
    _wants_parameters: ClassVar[bool]
    _merge: bool
    _merges_directly: bool
    _key_inputs: Tuple[Tuple[str, Codec], ...]
    _may_request_fewer: bool
    batched: bool
    logger: Any
    model_name: str

    if TYPE_CHECKING:  # defined by Model; declared here for the type checker only

        def _decode(self, index: int, request: Any, keyed: bool = True) -> Decoded: ...
        def _decode_present(
            self, inputs: Sequence[Any]
        ) -> Optional[Tuple[Dict[str, Any], int]]: ...
        def _requested_of(self, request: Any) -> Optional[FrozenSet[str]]: ...
        def _cancelled_response(self) -> Any: ...
        def _refused(self, exc: InputError) -> Any: ...
        def _internal_error(self, exc: BaseException, during: str) -> Any: ...
        def _timed_infer(self, values: Dict[str, Any]) -> Any: ...
        def _one_values(self, item: Decoded) -> Dict[str, Any]: ...
        def _finish_one(self, item: Decoded, result: Any, responses: List[Any]) -> None: ...
        def _check_result(self, result: Any) -> None: ...
        def _check_not_needed(
            self, name: str, needed: Optional[FrozenSet[str]], result: Mapping[str, Any]
        ) -> None: ...
        def _cancellation_checked(self) -> bool: ...

    def _execute_merged(self, requests: Sequence[Any]) -> List[Any]:
        """Several requests of one ``execute()`` call, merged where they can be."""
        if self._merges_directly and not self._cancellation_checked():
            # (Model.execute has tried _merge_direct first)
            direct = self._merge_directly(requests)
            if direct is not None:
                return direct
        responses, ready = self._decode_all(requests)
        if len(ready) > 1:
            for members in groups(ready):
                self._run_group(members, responses)
        else:
            for item in ready:
                self._run_one(item, responses)
        return responses

    def _merge_directly(self, requests: Sequence[Any]) -> Optional[List[Any]]:
        """The usual merged call in one pass, for models whose requests carry no parameters:
        every request sends each input once, all of them merge into one ``infer`` call (or,
        when their ragged shapes differ, one per group). None as soon as a request is anything
        else; the general path then decides, and words the errors."""
        decode_present = self._decode_present
        decoded: List[Tuple[Dict[str, Any], int]] = []
        key_inputs = self._key_inputs
        keys: List[Hashable] = []
        for request in requests:
            try:
                one = decode_present(request.inputs())
            except Exception:
                return None
            if one is None:
                return None
            decoded.append(one)
            if key_inputs:  # (every input is there: the key of _decode without absent ones)
                values = one[0]
                keys.append(tuple([codec.group_key(values[name]) for name, codec in key_inputs]))
        wanted = [self._requested_of(r) for r in requests] if self._may_request_fewer else None
        if keys and keys.count(keys[0]) != len(keys):
            return self._run_groups(decoded, keys, wanted)
        counts = [rows for _, rows in decoded]
        responses: List[Any] = [None] * len(requests)
        try:
            # merging may fail for one request (an Image decodes its rows here)
            merged = {
                name: codec.merge([values[name] for values, _ in decoded])
                for name, codec in self._input_plan
            }
            if self._builtin is not None:
                self._builtin.batch_rows(sum(counts))
            result = self._timed_infer(merged)
            self._split(result, counts, wanted, range(len(requests)), responses)
            return responses
        except Exception as exc:
            return self._isolate(requests, f"{type(exc).__name__}: {exc}")

    def _run_groups(
        self,
        decoded: List[Tuple[Dict[str, Any], int]],
        keys: List[Hashable],
        wanted: Optional[List[Optional[FrozenSet[str]]]],
    ) -> List[Any]:
        """Decoded requests whose group keys differ: one merged call per group, as the general
        path runs them."""
        ready = [
            Decoded(index, values, rows, None if wanted is None else wanted[index], keys[index])
            for index, (values, rows) in enumerate(decoded)
        ]
        responses: List[Any] = [None] * len(ready)
        for members in groups(ready):
            self._run_group(members, responses)
        return responses

    def _isolate(self, requests: Sequence[Any], failure: str) -> List[Any]:
        """After a merged call of all ``requests`` failed: as _run_group does, each request
        alone, so that only the bad ones fail."""
        responses, ready = self._decode_all(requests)
        self._log_isolation(len(ready), failure)
        for item in ready:
            self._run_one(item, responses)
        return responses

    def _decode_all(self, requests: Sequence[Any]) -> Tuple[List[Any], List[Decoded]]:
        """Decode every request: (responses with the refused ones filled, the decoded)."""
        responses: List[Any] = [None] * len(requests)
        ready: List[Decoded] = []
        check = self._cancellation_checked()
        for index, request in enumerate(requests):
            if check and request.is_cancelled():
                responses[index] = self._cancelled_response()
                continue
            try:
                ready.append(self._decode(index, request))
            except InputError as exc:
                responses[index] = self._refused(exc)
            except Exception as exc:
                responses[index] = self._internal_error(exc, "decoding the inputs")
        return responses, ready

    def _run_group(self, members: List[Decoded], responses: List[Any]) -> None:
        if len(members) == 1:
            self._run_one(members[0], responses)
            return
        try:
            merged = self._merged_values(members)
            self._split_group(members, self._timed_infer(merged), responses)
            return
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
        # Isolate the culprit: run each request alone so only the bad ones fail. (Outside the
        # except block, so their tracebacks are not chained to the merged failure.)
        self._log_isolation(len(members), failure)
        for member in members:
            self._run_one(member, responses)

    def _merged_values(self, members: List[Decoded]) -> Dict[str, Any]:
        merged = {
            name: None
            if members[0].values[name] is None
            else codec.merge([m.values[name] for m in members])
            for name, codec in self._input_plan
        }
        if self._wants_parameters:
            merged[PARAMETERS_ARGUMENT] = [m.parameters for m in members for _ in range(m.rows)]
        if self._builtin is not None:
            self._builtin.batch_rows(sum(m.rows for m in members))
        return merged

    def _split_group(self, members: List[Decoded], result: Any, responses: List[Any]) -> None:
        wanted = [m.requested for m in members]
        self._split(
            result, [m.rows for m in members], wanted, [m.index for m in members], responses
        )

    def _split(
        self,
        result: Any,
        counts: List[int],
        wanted: Optional[List[Optional[FrozenSet[str]]]],
        indices: Sequence[int],
        responses: List[Any],
    ) -> None:
        """The merged ``result`` of the requests at ``indices`` (``counts`` rows each; the
        outputs each asked for in ``wanted``, None: all of them) encoded once and split back
        into one response per request."""
        parameters: Optional[Mapping[str, Any]] = None
        if type(result) is not dict and isinstance(result, Response):
            result, parameters = result.outputs, result.parameters
        encoded = self._encode(result, union_requested(wanted), sum(counts))
        # each encoded output split once; every request then takes its part of each (a plain
        # Tensor's part goes to pb_utils.Tensor without the codec call)
        columns = [
            (name, codec, plain is not None, codec.split(encoded[name], counts))
            for name, codec, plain in self._output_entries
            if name in encoded
        ]
        pb = self._pb
        Tensor = pb.Tensor
        for position, index in enumerate(indices):
            requested = None if wanted is None else wanted[position]
            tensors = []
            for name, codec, plain, parts in columns:  # (a loop: no comprehension call)
                if requested is None or name in requested:
                    part = parts[position]
                    tensors.append(
                        Tensor(name, part)
                        if plain and type(part) is np.ndarray
                        else codec.to_tensor(name, part, pb)
                    )
            responses[index] = (
                make_inference_response(pb, tensors, parameters)
                if parameters
                else pb.InferenceResponse(output_tensors=tensors)
            )

    def _log_isolation(self, count: int, failure: str) -> None:
        self.logger.log_verbose(
            f"{self.model_name}: merged batch of {count} requests failed ({failure}); "
            f"running them one by one"
        )

    def _run_one(self, item: Decoded, responses: List[Any]) -> None:
        try:
            self._finish_one(item, self._timed_infer(self._one_values(item)), responses)
        except InputError as exc:
            responses[item.index] = self._refused(exc)
        except Exception as exc:
            responses[item.index] = self._internal_error(exc, "running infer()")

    def _encode(self, result: Any, needed: Optional[FrozenSet[str]], rows: int) -> Dict[str, Any]:
        self._check_result(result)
        encoded: Dict[str, Any] = {}
        batched = self.batched
        for name, codec in self._output_plan:
            if name not in result:
                self._check_not_needed(name, needed, result)
                continue
            value = codec.encode(name, result[name], batched)
            if batched and len(value) != rows:
                raise rows_error(name, rows, value)
            encoded[name] = value
        return encoded


def rows_error(name: str, rows: int, value: Any) -> OutputError:
    """An output with another number of rows than its request(s) sent."""
    return OutputError(
        f"output {name!r}: expected {rows} rows (one per input row), got "
        f"{len(value)}; infer() must return one row per input row"
    )
