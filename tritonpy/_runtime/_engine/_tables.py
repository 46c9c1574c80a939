"""The codecs of one model instance as the hot loops read them: :class:`CodecTables`, built
once from the instance's ``inputs`` and ``outputs`` (``setup()`` may have replaced a codec)."""

from __future__ import annotations

from typing import Dict, FrozenSet, Mapping, Optional, Tuple

from ..codecs.base import BY_CODEC, Codec, DirectSpec, PlainArray
from ._direct import DirectOutputs


class CodecTables:
    """Per input and output, what ``execute()`` needs of its codec, computed once (the hot
    path does no lookups)."""

    def __init__(
        self, inputs: Mapping[str, Codec], outputs: Mapping[str, Codec], batched: bool
    ) -> None:
        self.input_plan: Tuple[Tuple[str, Codec], ...] = tuple(inputs.items())
        self.output_plan: Tuple[Tuple[str, Codec], ...] = tuple(outputs.items())
        self.output_names: FrozenSet[str] = frozenset(outputs)
        # plain Tensors are checked and wrapped without a codec call (Codec._plain_array)
        self.input_entries: Dict[str, Tuple[Codec, Optional[PlainArray]]] = {
            name: (codec, codec._plain_array()) for name, codec in self.input_plan
        }
        self.output_entries: Tuple[Tuple[str, Codec, Optional[PlainArray]], ...] = tuple(
            (name, codec, codec._plain_array()) for name, codec in self.output_plan
        )
        # the inputs that can keep two requests apart (the others' group key is always None)
        self.key_inputs = tuple(
            (name, codec)
            for name, codec in self.input_plan
            if codec.optional or codec._groups_requests()
        )
        # with one output, a request asks for it or for everything: no need to ask which
        self.may_request_fewer = len(self.output_plan) > 1
        # the inputs whose value for a request alone is not the decoded one (ragged="pad"
        # gives a Padded, an Image decodes its rows when merged)
        self.merged_alone: Tuple[Tuple[str, Codec], ...] = tuple(
            (name, codec) for name, codec in self.input_plan if not codec.merge_keeps_one()
        )
        # a request alone, and a merged call, take the direct path (see _direct.py) when
        # every input and output has one
        self.direct_inputs, self.direct_outputs = _direct_tables(
            self.input_plan, self.output_plan, batched
        )


def _direct_tables(
    inputs: Tuple[Tuple[str, Codec], ...], outputs: Tuple[Tuple[str, Codec], ...], batched: bool
) -> Tuple[Optional[Dict[str, DirectSpec]], DirectOutputs]:
    """The direct path's steps for every input and output (see ``_direct.py``), or None when
    some input or output has none."""
    direct_outputs = []
    for name, codec in outputs:
        spec = codec._direct_output(batched)
        if spec is None:
            return None, ()
        direct_outputs.append((name, *spec))
    direct_inputs: Dict[str, DirectSpec] = {}
    for name, codec in inputs:
        spec = codec._direct_input(batched)
        if spec is None:
            return None, ()
        # with batching, a codec's own steps must give what merge() would; the plain arrays of
        # several requests merge only when their shapes agree (else: the general path)
        if batched and (
            codec._groups_requests() if spec[0] == BY_CODEC else not codec.merge_keeps_one()
        ):
            return None, ()
        direct_inputs[name] = spec
    return direct_inputs, tuple(direct_outputs)
