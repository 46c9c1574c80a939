"""The batching helpers on their own: merge, split, pad, trim, group."""

from __future__ import annotations

import numpy as np
import pytest

from tritonpy import Padded, group_indices, merge_rows, pad_rows, split_rows, trim_padded


def test_merge_single_part_is_not_copied() -> None:
    part = np.arange(6).reshape(2, 3)
    merged, counts = merge_rows([part])
    assert merged is part
    assert counts == [2]


def test_merge_then_split_gives_views_with_the_original_rows() -> None:
    parts = [np.full((n, 2), n, dtype=np.float32) for n in (1, 3, 2)]
    merged, counts = merge_rows(parts)
    assert merged.shape == (6, 2)
    assert counts == [1, 3, 2]
    back = split_rows(merged, counts)
    for original, piece in zip(parts, back):
        np.testing.assert_array_equal(original, piece)
        assert piece.base is merged  # a view, not a copy


def test_split_rows_handles_zero_row_parts() -> None:
    merged = np.arange(3)
    assert [p.tolist() for p in split_rows(merged, [0, 2, 0, 1])] == [[], [0, 1], [], [2]]


def test_pad_rows_one_variable_axis() -> None:
    a = np.array([[1, 2, 3]], dtype=np.int64)
    b = np.array([[4], [5]], dtype=np.int64)
    padded, counts = pad_rows([a, b], axes=[1], pad_value=-1)
    assert counts == [1, 2]
    assert padded.values.tolist() == [[1, 2, 3], [4, -1, -1], [5, -1, -1]]
    assert padded.lengths.tolist() == [3, 1, 1]
    assert padded.mask.tolist() == [[True, True, True], [True, False, False], [True, False, False]]
    assert padded.axes == (1,)


def test_pad_rows_two_variable_axes_and_mask() -> None:
    a = np.ones((1, 2, 3), dtype=np.float32)
    b = np.ones((1, 3, 1), dtype=np.float32)
    padded, _ = pad_rows([a, b], axes=[1, 2])
    assert padded.values.shape == (2, 3, 3)
    assert padded.lengths.tolist() == [[2, 3], [3, 1]]
    assert padded.mask.sum() == 2 * 3 + 3 * 1
    np.testing.assert_array_equal(padded.values * padded.mask, padded.values)


def test_trim_padded_cuts_each_part_back_to_its_longest_row() -> None:
    padded, counts = pad_rows([np.ones((1, 4)), np.ones((2, 2))], axes=[1])
    first, second = split_rows(padded, counts)
    assert isinstance(first, Padded)
    assert trim_padded(first).shape == (1, 4)
    assert trim_padded(second).shape == (2, 2)


def test_group_indices_keeps_first_seen_order() -> None:
    assert group_indices([(3,), (5,), (3,), None]) == [[0, 2], [1], [3]]


@pytest.mark.parametrize("counts", [[1], [2, 2], [5, 0, 1]])
def test_merge_split_round_trip_counts(counts: list[int]) -> None:
    parts = [np.arange(c * 2).reshape(c, 2) for c in counts]
    merged, got = merge_rows(parts)
    assert got == counts
    assert [p.shape[0] for p in split_rows(merged, got)] == counts
