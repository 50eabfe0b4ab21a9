"""The Array API namespace holds the standard's sorting, set, scan and indexing functions."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pygpukit as gp
import pygpukit.array_api as xp

NAMES = ("argsort", "cumulative_prod", "cumulative_sum", "diff", "searchsorted", "sort",
         "take_along_axis", "unique_all", "unique_counts", "unique_inverse", "unique_values")


@pytest.mark.parametrize("name", NAMES)
def test_the_namespace_has_the_standard_name(name: str) -> None:
    assert name in xp.__all__
    assert callable(getattr(xp, name))


def test_keyword_only_options_as_the_standard(backend: str) -> None:
    assert inspect.signature(xp.sort).parameters["descending"].kind is (
        inspect.Parameter.KEYWORD_ONLY)
    host = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 7.0, 0.5]], np.float32)
    x = gp.from_numpy(host)
    np.testing.assert_array_equal(xp.sort(x, descending=True).to_numpy(), -np.sort(-host))
    # Stable in both directions: equal keys keep their order.
    np.testing.assert_array_equal(xp.argsort(x, descending=True).to_numpy(),
                                  np.argsort(-host, kind="stable"))
    np.testing.assert_array_equal(
        xp.cumulative_sum(x, axis=1, include_initial=True).to_numpy(),
        np.concatenate([np.zeros((2, 1), np.float32), np.cumsum(host, axis=1)], axis=1))
    with pytest.raises(ValueError, match="axis must be given"):
        xp.cumulative_sum(x)
    v = gp.from_numpy(np.array([1, 4, 9], np.int64))
    pre = gp.from_numpy(np.array([0], np.int64))
    np.testing.assert_array_equal(xp.diff(v, prepend=pre).to_numpy(), [1, 3, 5])
    u = xp.unique_all(gp.from_numpy(np.array([3, 1, 3, 2], np.int64)))
    assert [a.to_numpy().tolist() for a in u] == [[1, 2, 3], [1, 3, 0], [2, 0, 2, 1], [1, 1, 2]]
    assert u._fields == ("values", "indices", "inverse_indices", "counts")
