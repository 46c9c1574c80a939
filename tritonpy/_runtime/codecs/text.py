"""``Text`` and ``Bytes``: TYPE_STRING elements as ``str`` or ``bytes``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ._plan import CODEC, NUMPY, CodecPlan
from .base import MISSING, ElementCodec, shape_matches

#: the element types pb_utils.Tensor serialises by itself: bytes as they are, str as UTF-8
#: (the real stub's serialize_byte_tensor, run when the tensor is built)
STUB_ENCODED_TYPES = frozenset((str, bytes))
_OBJECT: np.dtype[Any] = np.dtype(object)


class _PassesStrings(ElementCodec):
    """An element codec whose ``encode_element`` gives the same bytes as the stub for str and
    bytes: an object array of those, already shaped as declared (``labels[ids]``), goes to
    ``pb_utils.Tensor`` as it is instead of being encoded twice. A subclass with its own
    ``encode_element`` gets every element through it."""

    def __init__(self, dims: Sequence[int] = (1,), **kwargs: Any) -> None:
        super().__init__(dims, **kwargs)
        self._stub_encodes = type(self).encode_element in (
            Text.encode_element,
            Bytes.encode_element,
        )

    def encode(self, name: str, value: Any, batched: bool) -> Any:
        if (
            self._stub_encodes
            and batched
            and type(value) is list
            and set(map(type, value)) <= STUB_ENCODED_TYPES
        ):
            # one str/bytes per row (``[t.upper() for t in TEXT]``): the stub encodes them
            rows = self._rows_array(value, len(value))
            if rows is not None:
                return rows
        if (
            self._stub_encodes
            and type(value) is np.ndarray
            and value.dtype == object
            and value.flags.c_contiguous
            and shape_matches(value.shape[1:] if batched else value.shape, self.dims)
            and set(map(type, value.flat)) <= STUB_ENCODED_TYPES
        ):
            return value
        return super().encode(name, value, batched)

    # -- the plan (see CodecPlan) ----------------------------------------------------------------
    def plan(self, batched: bool) -> CodecPlan:
        fields = self._written(batched)
        if self._decodes_requests(batched):
            fields.update(
                read=CODEC, decode_one=self._decode_alone, decode_many=self._decode_merged
            )
        return replace(super().plan(batched), **fields)

    def _decodes_requests(self, batched: bool) -> bool:
        """Whether a batched request (or call) of dims [1] decodes in one call."""
        own = type(self)
        return (
            batched
            and self._single
            and not self.optional
            and own.decode is ElementCodec.decode
            and own.merge is ElementCodec.merge
            and self._decodes_in_one_pass()
        )

    def _decodes_in_one_pass(self) -> bool:
        """Whether ``_decode_all`` decodes without a call per element (Text and Bytes as
        they are, not a subclass with its own ``decode_element``)."""
        return False

    def _decode_alone(self, name: str, tensor: Any, batched: bool) -> Any:
        """``decode(name, tensor, True)`` of a batched input of dims [1]: one value per row."""
        return self._decode_all(tensor.as_numpy().reshape(-1).tolist())

    def _decode_merged(self, name: str, tensors: Sequence[Any]) -> Any:
        """``merge`` of every request's ``decode``, and the rows of each."""
        merged: List[Any] = []
        counts: List[int] = []
        for tensor in tensors:
            items = tensor.as_numpy().reshape(-1).tolist()
            counts.append(len(items))
            merged.extend(items)
        return self._decode_all(merged), counts

    def _rows_array(self, value: List[Any], rows: Optional[int]) -> Any:
        """A list with one element per row (batched, dims [1]) as the object array ``encode``
        would give when its elements are ``str``/``bytes`` (the direct path checks them
        next), else None."""
        if rows is None or len(value) != rows or not self._single:
            return None
        out = np.empty((rows, 1), dtype=object)
        try:
            out[:, 0] = value
        except Exception:  # rows of lists (a shape to refuse): the general path words it
            return None
        return out

    def _written(self, batched: bool) -> Dict[str, Any]:
        """The plan's output fields: an object array of str/bytes as it is (the stub encodes
        them), or, with batching and dims [1], a list of rows."""
        own = type(self)
        if (
            not self._stub_encodes
            or own.encode is not _PassesStrings.encode
            or own.to_tensor is not _PassesStrings.to_tensor
            or own.split is not ElementCodec.split
        ):
            return {}
        rows = self._rows_array if batched and self._single else None
        return {"write": NUMPY, "dtype": _OBJECT, "dims": self.dims, "to_array": rows}

    def to_tensor(self, name: str, part: Any, pb: Any) -> Any:
        try:
            return pb.Tensor(name, part)
        except Exception:
            # a str the stub cannot encode (a lone surrogate, from errors="surrogateescape"):
            # encoding here names the element in the error
            if part.dtype != object:
                raise
            return pb.Tensor(name, self._encode_flat(name, part))


class Text(_PassesStrings):
    """UTF-8 text: each TYPE_STRING element becomes a ``str``; ``str`` values go back out as
    UTF-8. Invalid UTF-8 in a request is an ``INVALID_ARG`` naming the input and element.

    Example::

        inputs = {"TEXT": tp.Text()}            # TYPE_STRING, dims [1]
        outputs = {"UPPER": tp.Text()}

        def infer(self, TEXT):                  # with batching: a list, one str per row
            return {"UPPER": [t.upper() for t in TEXT]}
    """

    describes = "UTF-8 text"

    def __init__(
        self,
        dims: Sequence[int] = (1,),
        *,
        optional: bool = False,
        default: Any = MISSING,
        errors: str = "strict",
    ) -> None:
        super().__init__(dims, optional=optional, default=default)
        #: codec error handler of ``bytes.decode`` ("strict" refuses invalid UTF-8)
        self.errors = errors

    def decode_element(self, data: bytes) -> str:
        return data.decode("utf-8", self.errors)

    def _decode_all(self, items: List[Any]) -> List[Any]:
        if type(self).decode_element is not Text.decode_element:
            return super()._decode_all(items)
        errors = self.errors  # (no call per element: this runs for every request)
        return [data.decode("utf-8", errors) for data in items]

    def _decodes_in_one_pass(self) -> bool:
        return type(self).decode_element is Text.decode_element

    def encode_element(self, value: Any) -> bytes:
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, bytes):
            return value
        raise TypeError(f"expected str, got {type(value).__name__}")


class Bytes(_PassesStrings):
    """Raw bytes: each TYPE_STRING element as ``bytes``, exactly as sent (trailing NULs kept).
    Outputs accept ``bytes``, ``bytearray``, ``memoryview`` and ``str`` (encoded as UTF-8)."""

    describes = "bytes"

    def decode_element(self, data: bytes) -> bytes:
        return data

    def _decode_all(self, items: List[Any]) -> List[Any]:
        if type(self).decode_element is not Bytes.decode_element:
            return super()._decode_all(items)
        return items

    def _decodes_in_one_pass(self) -> bool:
        return type(self).decode_element is Bytes.decode_element

    def encode_element(self, value: Any) -> bytes:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, str):
            return value.encode("utf-8")
        raise TypeError(f"expected bytes, got {type(value).__name__}")
