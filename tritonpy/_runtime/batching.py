"""Batching helpers: merge the rows of several requests, split results back, pad or group
ragged rows.

tritonpy's :class:`~tritonpy.Model` uses these for you; they are public because hand-written
``TritonPythonModel`` code and custom codecs need the same operations.

>>> import numpy as np
>>> merged, counts = merge_rows([np.zeros((2, 3)), np.ones((1, 3))])
>>> merged.shape, counts
((3, 3), [2, 1])
>>> [part.shape for part in split_rows(merged, counts)]
[(2, 3), (1, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Hashable, List, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray


def merge_rows(arrays: Sequence[NDArray[Any]]) -> Tuple[NDArray[Any], List[int]]:
    """Concatenate arrays along their first (row) axis; return the merged array and the row
    count of each part. One part is returned as is: no copy."""
    counts = [int(a.shape[0]) for a in arrays]
    if len(arrays) == 1:
        return arrays[0], counts
    return np.concatenate(arrays, axis=0), counts


def split_rows(array: Any, counts: Sequence[int]) -> List[Any]:
    """Split ``array`` (ndarray, torch tensor, list, anything sliceable) along its first axis
    into consecutive parts of ``counts`` rows. Arrays give views, not copies."""
    parts: List[Any] = []
    start = 0
    for count in counts:
        parts.append(array[start : start + count])
        start += count
    return parts


@dataclass(frozen=True)
class Padded:
    """Ragged rows padded to a common shape, with the true lengths.

    ``values`` has shape ``[rows, *max_shape]``; ``lengths`` has shape ``[rows]`` when the rows
    vary along one axis, or ``[rows, k]`` when they vary along the ``k`` axes named in
    ``axes`` (row axis = 0).

    Example: token ids of three requests with 5, 2 and 3 tokens (one row each)::

        padded.values   # int64 [3, 5], zeros after each row's tokens
        padded.lengths  # [5, 2, 3]
        padded.mask     # bool [3, 5], True where a value is real
    """

    values: NDArray[Any]
    lengths: NDArray[Any]
    axes: Tuple[int, ...] = (1,)

    @property
    def mask(self) -> NDArray[Any]:
        """Boolean mask, True where ``values`` holds real (not padding) data. For rows that
        vary along several axes the mask covers every varying axis."""
        # (rows, k) spelt out: -1 cannot be inferred for zero rows
        lengths = self.lengths.reshape(len(self.lengths), len(self.axes))
        shape = self.values.shape
        mask = np.ones(shape, dtype=bool)
        for column, axis in enumerate(self.axes):
            positions = np.arange(shape[axis]).reshape(
                [1] + [-1 if a == axis else 1 for a in range(1, len(shape))]
            )
            limit = lengths[:, column].reshape([-1] + [1] * (len(shape) - 1))
            mask &= positions < limit
        return mask

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __getitem__(self, item: slice) -> Padded:
        return Padded(self.values[item], self.lengths[item], self.axes)


def pad_rows(
    arrays: Sequence[NDArray[Any]], axes: Sequence[int], pad_value: Any = 0
) -> Tuple[Padded, List[int]]:
    """Pad arrays whose rows differ along ``axes`` (1-based, counting the row axis as 0) to the
    largest size of each axis, and concatenate them. Returns the :class:`Padded` batch and the
    row count of each part.

    >>> import numpy as np
    >>> padded, counts = pad_rows([np.ones((1, 3)), np.ones((2, 1))], axes=[1])
    >>> padded.values.shape, padded.lengths.tolist(), counts
    ((3, 3), [3, 1, 1], [1, 2])
    """
    counts = [int(a.shape[0]) for a in arrays]
    ndim = arrays[0].ndim
    target = list(arrays[0].shape)
    for axis in axes:
        target[axis] = max(int(a.shape[axis]) for a in arrays)
    target[0] = sum(counts)
    values = np.full(target, pad_value, dtype=arrays[0].dtype)
    lengths = np.empty((target[0], len(axes)), dtype=np.int64)
    start = 0
    for array, count in zip(arrays, counts):
        index: List[Any] = [slice(start, start + count)]
        index += [slice(0, array.shape[a]) for a in range(1, ndim)]
        values[tuple(index)] = array
        lengths[start : start + count] = [array.shape[a] for a in axes]
        start += count
    if len(axes) == 1:
        lengths = lengths[:, 0]
    return Padded(values, lengths, tuple(axes)), counts


def trim_padded(part: Padded) -> NDArray[Any]:
    """Cut a (per-request) slice of a padded batch back to the largest true length of its
    rows along each padded axis."""
    lengths = part.lengths.reshape(len(part.lengths), len(part.axes))  # zero rows too
    index: List[Any] = [slice(None)] * part.values.ndim
    for column, axis in enumerate(part.axes):
        keep = int(lengths[:, column].max()) if len(lengths) else part.values.shape[axis]
        index[axis] = slice(0, keep)
    trimmed: NDArray[Any] = part.values[tuple(index)]
    return trimmed


def group_indices(keys: Sequence[Hashable]) -> List[List[int]]:
    """Group positions by equal keys, keeping first-seen order.

    >>> group_indices([(3,), (5,), (3,)])
    [[0, 2], [1]]
    """
    groups: Dict[Hashable, List[int]] = {}
    for position, key in enumerate(keys):
        groups.setdefault(key, []).append(position)
    return list(groups.values())
