"""The codec base class: how one declared input or output travels between Triton and ``infer``.

A codec knows its Triton data type and dims (for the model configuration) and four runtime
steps, all called by :class:`tritonpy.Model`:

* ``decode(name, tensor, batched)`` turns one request's ``pb_utils.Tensor`` into the value
  ``infer`` sees (raising :class:`~tritonpy.InputError` for bad data);
* ``merge(values)`` joins the decoded values of several requests (rows concatenated);
* ``encode(name, value, batched)`` checks and converts what ``infer`` returned for all rows
  into a wire-ready array (raising :class:`~tritonpy.OutputError` when it does not fit);
* ``to_tensor(name, part, pb)`` wraps one request's share of it into a ``pb_utils.Tensor``.

A codec may also say how its values move without those steps, in one named
:class:`CodecPlan` (:meth:`Codec.plan`): the engine reads it once per model instance.

Write a custom codec by subclassing :class:`ElementCodec` (one Python object per element, like
:class:`~tritonpy.Text`) or :class:`Codec` itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from ..batching import split_rows
from ..dtypes import DType, lookup_dtype
from ..errors import DeclarationError, InputError, OutputError
from ._plan import CodecPlan


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _check_dims(owner: str, dims: Sequence[int]) -> Tuple[int, ...]:
    try:
        result = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise DeclarationError(
            f"{owner}: dims must be a sequence of integers (-1 for a variable size), got {dims!r}"
        ) from None
    for d in result:
        if d < -1 or d == 0:
            raise DeclarationError(
                f"{owner}: every dim must be a positive size or -1 (variable), got {list(result)}"
            )
    return result


def shape_matches(shape: Sequence[int], dims: Sequence[int]) -> bool:
    """True when ``shape`` fits ``dims`` (where -1 matches any size)."""
    if shape == dims:
        return True  # the usual case, one tuple comparison (a torch.Size is a tuple)
    return len(shape) == len(dims) and all(d == -1 or d == s for s, d in zip(shape, dims))


def format_shape(dims: Sequence[Any]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


class Codec(ABC):
    """Base of every codec. ``dtype`` is a Triton data type name (``"FP32"``, ``"BYTES"``...),
    ``dims`` the per-row shape as in ``config.pbtxt`` (-1 = variable).

    ``optional=True`` lets requests omit the input; ``infer`` then gets ``default`` (``None``
    unless given). Giving a ``default`` implies ``optional=True``. Outputs cannot be optional.
    """

    def __init__(
        self,
        dtype: str,
        dims: Sequence[int],
        *,
        optional: bool = False,
        default: Any = MISSING,
    ) -> None:
        self.dtype: DType = lookup_dtype(dtype)
        self.dims: Tuple[int, ...] = _check_dims(type(self).__name__, dims)
        self.optional = bool(optional or default is not MISSING)
        self.default = None if default is MISSING else default

    # -- declarations ------------------------------------------------------------------------
    def config_entry(self, name: str, *, is_input: bool) -> Dict[str, Any]:
        """The ``input``/``output`` entry of the model configuration, as pb_utils'
        ``ModelConfig.add_input``/``add_output`` expect it."""
        entry: Dict[str, Any] = {
            "name": name,
            "data_type": self.dtype.config_name,
            "dims": list(self.dims),
        }
        if is_input and self.optional:
            entry["optional"] = True
        return entry

    def check_output_declaration(self, name: str) -> None:
        if self.optional:
            raise DeclarationError(
                f"output {name!r}: outputs cannot be optional; remove optional=/default= "
                f"from its codec"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dtype.name!r}, {list(self.dims)})"

    # -- inputs ------------------------------------------------------------------------------
    @abstractmethod
    def decode(self, name: str, tensor: Any, batched: bool) -> Any:
        """One request's input tensor -> the value ``infer`` sees for that request."""

    def group_key(self, value: Any) -> Hashable:
        """Requests whose decoded values have different keys are not merged together. The
        default (None) merges everything."""
        return None

    def merge(self, values: Sequence[Any]) -> Any:
        """Join the decoded values of several requests (batched models only)."""
        if len(values) == 1:
            return values[0]
        merged: List[Any] = []
        for value in values:
            merged.extend(value)
        return merged

    def merge_keeps_one(self) -> bool:
        """True when ``merge([value])`` is ``value`` itself, so a request served alone skips
        the call. A subclass that overrides ``merge`` gets False unless it says otherwise."""
        return type(self).merge is Codec.merge

    def missing(self, rows: Optional[int]) -> Any:
        """The value ``infer`` sees for an omitted optional input: ``default`` once per row
        (``rows`` is None for models without batching), or ``None`` when no default was set."""
        if self.default is None:
            return None
        return self.default if rows is None else [self.default] * rows

    @staticmethod
    def rows(value: Any) -> int:
        return len(value)

    # -- outputs -----------------------------------------------------------------------------
    @abstractmethod
    def encode(self, name: str, value: Any, batched: bool) -> Any:
        """What ``infer`` returned for all merged rows -> a wire-ready array (rows first when
        batched). Raise :class:`OutputError` when it does not fit the declaration."""

    def split(self, encoded: Any, counts: Sequence[int]) -> List[Any]:
        return split_rows(encoded, counts)

    def to_tensor(self, name: str, part: Any, pb: Any) -> Any:
        """Wrap one request's share of an encoded output into a ``pb_utils.Tensor``."""
        return pb.Tensor(name, part)

    # -- the plan ----------------------------------------------------------------------------
    def plan(self, batched: bool) -> CodecPlan:
        """How tritonpy moves this codec's values without its general steps (see
        :class:`CodecPlan`), for a model with (``batched``) or without batching; asked once
        per model instance, at ``initialize``. The default keeps the general steps.

        A codec overrides it only where its values are plain arrays or it can take a whole
        request (or call) in one step; keep the plan true to the general steps, and return
        the default for a subclass that overrides them."""
        return CodecPlan(groups_requests=type(self).group_key is not Codec.group_key)


class ElementCodec(Codec):
    """A codec that turns every element of a TYPE_STRING tensor into one Python object.

    With batching, ``infer`` gets a list with one entry per row; an entry is the decoded
    object when ``dims == [1]`` (the usual case) and a nested list following ``dims``
    otherwise. Without batching, ``infer`` gets the object (``dims == [1]``) or the nested list.
    Subclasses implement :meth:`decode_element` and :meth:`encode_element`.

    Example, a codec for comma-separated values::

        class CSV(tp.ElementCodec):
            def decode_element(self, data: bytes) -> list[str]:
                return data.decode().split(",")

            def encode_element(self, value: list[str]) -> bytes:
                return ",".join(value).encode()
    """

    #: what a valid element is, for error messages ("UTF-8 text", "JSON")
    describes = "bytes"
    #: True when one element is itself an array (images): an ndarray returned for the output
    #: is then a batch of elements, not a nested list of them
    array_elements = False

    def __init__(
        self, dims: Sequence[int] = (1,), *, optional: bool = False, default: Any = MISSING
    ) -> None:
        super().__init__("BYTES", dims, optional=optional, default=default)
        self._single = self.dims == (1,)

    @abstractmethod
    def decode_element(self, data: bytes) -> Any:
        """Bytes of one element -> the Python object. Raise ValueError (or InputError) when
        the data is not valid; tritonpy adds the input name and position."""

    @abstractmethod
    def encode_element(self, value: Any) -> bytes:
        """One Python object -> its bytes. Raise TypeError/ValueError when it cannot be
        encoded; tritonpy adds the output name and position."""

    # -- inputs ------------------------------------------------------------------------------
    def decode(self, name: str, tensor: Any, batched: bool) -> Any:
        array = tensor.as_numpy()
        items = array.reshape(-1).tolist()
        try:
            decoded = self._decode_all(items)
        except Exception:
            # again one by one: the element that fails is named (or its error raised as is)
            decoded = self._decode_each(name, items, batched)
        if self._single:
            if batched:
                return decoded  # one element per row
            return decoded[0] if len(decoded) == 1 else decoded
        shaped = np.empty(len(decoded), dtype=object)
        shaped[:] = decoded
        return shaped.reshape(array.shape).tolist()

    def _decode_all(self, items: List[Any]) -> List[Any]:
        """Every element decoded, or any exception (``decode`` then decodes them one by one
        to name the element that fails). A codec may do it without a call per element."""
        decode_element = self.decode_element
        return [decode_element(data) for data in items]

    def _decode_each(self, name: str, items: List[Any], batched: bool) -> List[Any]:
        decoded: List[Any] = []
        decode_element = self.decode_element
        for position, data in enumerate(items):
            try:
                decoded.append(decode_element(data))
            except (InputError, ValueError, TypeError) as exc:
                where = f"row {position}" if batched and self._single else f"element {position}"
                raise self.element_error(name, where, data, exc) from None
        return decoded

    def element_error(self, name: str, where: str, data: Any, exc: Exception) -> InputError:
        """The request's error for an element ``decode_element`` refused (``where``: "row 3")."""
        detail = (
            str(exc)
            if isinstance(exc, InputError)
            else f"expected {self.describes}, got {_preview(data)} ({exc})"
        )
        return InputError(f"input {name!r}, {where}: {detail}", input_name=name)

    # -- outputs -----------------------------------------------------------------------------
    def encode(self, name: str, value: Any, batched: bool) -> NDArray[Any]:
        if isinstance(value, np.ndarray):
            if not self.array_elements and shape_matches(
                value.shape[1:] if batched else value.shape, self.dims
            ):
                # already shaped as declared (e.g. labels[ids]): encode the elements in place
                # of walking nested lists
                return self._encode_flat(name, value)
            value = self._rows_of(value, batched)
        if batched:
            if not isinstance(value, (list, tuple)):
                raise OutputError(
                    f"output {name!r}: expected a list with one entry per row, got "
                    f"{type(value).__name__}; return a list (e.g. [result] for one row)"
                )
            rows = value
        else:
            rows = [value] if self._single else value
        if self._single:
            out = np.empty((len(rows), 1), dtype=object)
            out[:, 0] = self._encode_all(name, rows)
            return out if batched else out.reshape(1)
        depth = len(self.dims) + (1 if batched else 0)
        flat, shape = _flatten(name, rows if batched else value, depth)
        out = np.empty(len(flat), dtype=object)
        out[:] = self._encode_all(name, flat)
        out = out.reshape(shape)
        if not shape_matches(shape[1:] if batched else shape, self.dims):
            expected = format_shape(["rows", *self.dims] if batched else self.dims)
            raise OutputError(
                f"output {name!r}: expected nested lists of shape {expected}, got "
                f"{format_shape(shape)}"
            )
        return out

    def _encode_flat(self, name: str, array: NDArray[Any]) -> NDArray[Any]:
        flat = array.reshape(-1).tolist()
        out = np.empty(len(flat), dtype=object)
        out[:] = self._encode_all(name, flat)
        return out.reshape(array.shape)

    def _encode_all(self, name: str, items: Sequence[Any]) -> List[bytes]:
        """Every element encoded; an error names the output and the element's position."""
        encode_element = self.encode_element
        try:
            return [bytes(encode_element(item)) for item in items]
        except (TypeError, ValueError):
            # again one by one, to name the element in the error
            return [
                self._encode_one(name, encode_element, item, position)
                for position, item in enumerate(items)
            ]

    def _rows_of(self, array: NDArray[Any], batched: bool) -> Any:
        """An array returned for an element output, as the lists ``encode`` walks: a batch of
        array elements (e.g. N x H x W x C images) splits into its rows; object/str arrays
        become (nested) lists, a trailing ``[1]`` dimension dropped."""
        if self.array_elements:
            return list(array) if batched else array
        if self._single and array.ndim == (2 if batched else 1) and array.shape[-1] == 1:
            array = array.reshape(-1)
        if batched or not self._single:
            return array.tolist()
        flat = array.reshape(-1).tolist()
        return flat[0] if len(flat) == 1 else flat

    def _encode_one(self, name: str, encode_element: Any, item: Any, position: int) -> bytes:
        try:
            return bytes(encode_element(item))
        except (TypeError, ValueError) as exc:
            raise OutputError(
                f"output {name!r}, element {position}: cannot encode {type(item).__name__} "
                f"as {self.describes}: {exc}"
            ) from None


def _preview(data: Any, limit: int = 24) -> str:
    if isinstance(data, (bytes, bytearray)):
        shown = bytes(data[:limit])
        more = "..." if len(data) > limit else ""
        return f"{len(data)} bytes {shown!r}{more}"
    return type(data).__name__


def _flatten(name: str, value: Any, depth: int) -> Tuple[List[Any], Tuple[int, ...]]:
    """Flatten ``depth`` levels of nested lists, checking they are rectangular."""
    level: List[Any] = [value]
    shape: List[int] = []
    for _ in range(depth):
        sizes = set()
        following: List[Any] = []
        for node in level:
            if isinstance(node, np.ndarray):
                node = node.tolist()
            if not isinstance(node, (list, tuple)):
                raise OutputError(
                    f"output {name!r}: expected nested lists {depth} levels deep, found "
                    f"{type(node).__name__} at level {len(shape)}"
                )
            sizes.add(len(node))
            following.extend(node)
        if len(sizes) > 1:
            raise OutputError(
                f"output {name!r}: rows of different lengths {sorted(sizes)} at level "
                f"{len(shape)}; every row of one output must have the same shape"
            )
        shape.append(sizes.pop() if sizes else 0)
        level = following
    return level, tuple(shape)
