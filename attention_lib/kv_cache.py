r"""A key/value cache for generating one token (or a few) at a time.

When a model generates text it adds one position per step. The keys and values
of the earlier positions do not change, so instead of recomputing them every
step a decoder keeps them in a cache and computes only the newest rows. Each
step then costs :math:`O(n)` (one query against :math:`n` cached keys) instead
of :math:`O(n^2)`.

Dimension letters used in the shape comments:

- ``...``  leading batch / head axes
- ``m``    positions appended at once, ``n`` positions cached so far
- ``n_q``  newest positions that attend (``n_q <= n``)
- ``d_k``  size of a key vector, ``d_v`` size of a value vector
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike

from ._validation import as_real_array, common_float_dtype, describe, positive_int
from .attention import scaled_dot_product_attention

__all__ = ["KVCache"]


class KVCache:
    r"""Keys and values of the positions generated so far, grown in place.

    The first :meth:`append` fixes the leading (batch, head) axes, ``d_k``,
    ``d_v`` and the dtype; later appends must match them. Storage is a
    preallocated buffer whose capacity doubles when it is full, so appending
    ``N`` positions one at a time copies the earlier rows only
    :math:`O(\log N)` times (amortised :math:`O(1)` per position).

    Parameters
    ----------
    initial_capacity : int, default 16
        Positions to allocate room for at the first append (more if that
        append is larger).

    Attributes
    ----------
    reallocations : int
        How many times a buffer was allocated (the first allocation counts).
    capacity : int
        Positions the current buffers can hold before they grow.

    Notes
    -----
    :meth:`attend` computes, for the newest ``n_q`` positions,

    .. math::

        \operatorname{softmax}\!\left(\frac{Q K_{1:n}^{\mathsf T}}{\sqrt{d_k}}
        + M\right) V_{1:n},

    with the causal mask :math:`M` of queries that are the last ``n_q`` of the
    ``n`` cached positions, so the result equals the last ``n_q`` rows of full
    causal attention over all ``n`` positions.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> k, v = rng.normal(size=(2, 5, 4))       # 5 positions, d_k = d_v = 4
    >>> cache = KVCache()
    >>> for t in range(5):
    ...     cache.append(k[t:t + 1], v[t:t + 1])   # one position per step
    >>> len(cache), cache.keys.shape
    (5, (5, 4))
    >>> out, w = cache.attend(k[4:])           # the newest position attends to all
    >>> w.shape
    (1, 5)
    """

    def __init__(self, initial_capacity: int = 16) -> None:
        self._initial_capacity = positive_int(initial_capacity, "initial_capacity")
        self._k: np.ndarray | None = None  # (..., capacity, d_k)
        self._v: np.ndarray | None = None  # (..., capacity, d_v)
        self._length = 0
        self.reallocations = 0

    # ------------------------------------------------------------------ state

    def __len__(self) -> int:
        """Number of positions cached."""
        return self._length

    def __repr__(self) -> str:
        if self._k is None:
            return "KVCache(empty)"
        return (
            f"KVCache({self._length} positions, capacity {self.capacity}, "
            f"leading axes {self._k.shape[:-2]}, d_k={self._k.shape[-1]}, "
            f"d_v={self._v.shape[-1]}, dtype {self._k.dtype})"
        )

    @property
    def capacity(self) -> int:
        """Positions the buffers can hold before the next reallocation (0 when empty)."""
        return 0 if self._k is None else self._k.shape[-2]

    @property
    def dtype(self) -> np.dtype | None:
        """The dtype fixed by the first append (None while empty)."""
        return None if self._k is None else self._k.dtype

    @property
    def keys(self) -> np.ndarray:
        """Read-only view of the cached keys, shape (..., n, d_k)."""
        return self._filled(self._k, "keys")

    @property
    def values(self) -> np.ndarray:
        """Read-only view of the cached values, shape (..., n, d_v)."""
        return self._filled(self._v, "values")

    @property
    def nbytes(self) -> int:
        """Bytes held by the key and value buffers (their full capacity)."""
        if self._k is None:
            return 0
        return int(self._k.nbytes + self._v.nbytes)

    def _filled(self, buffer: np.ndarray | None, name: str) -> np.ndarray:
        if buffer is None:
            raise ValueError(f"the cache is empty; append keys and values before reading {name}")
        # as_strided(writeable=False) gives a view whose flag cannot be set back to
        # writeable (a plain view's can), so callers cannot write into the cache.
        return as_strided(buffer[..., : self._length, :], writeable=False)  # (..., n, d)

    # ----------------------------------------------------------------- append

    def append(self, k: ArrayLike, v: ArrayLike) -> None:
        """Add the keys and values of the newest ``m`` positions.

        Parameters
        ----------
        k, v : array_like, shapes (..., m, d_k) and (..., m, d_v)
            The keys and values of ``m >= 1`` positions at once. The leading axes,
            ``d_k``, ``d_v`` and the dtype (float32 stays float32; integers become
            float64) must match the earlier appends. Keys and values of different dtypes
            are refused when one is floating (the cache would widen silently).

        Examples
        --------
        >>> cache = KVCache()
        >>> cache.append(np.zeros((2, 3, 4)), np.zeros((2, 3, 5)))  # 2 heads, 3 positions
        >>> cache.append(np.ones((2, 1, 4)), np.ones((2, 1, 5)))
        >>> len(cache), cache.values.shape
        (4, (2, 4, 5))
        """
        k = as_real_array(k, "k", min_ndim=2)
        v = as_real_array(v, "v", min_ndim=2)
        if k.shape[:-1] != v.shape[:-1]:
            raise ValueError(
                f"k has {describe(k)} but v has {describe(v)}; expected the same leading "
                "axes and number of positions m (k.shape[:-1] == v.shape[:-1])"
            )
        if k.dtype != v.dtype and "f" in (k.dtype.kind, v.dtype.kind):
            raise TypeError(
                f"k has dtype {k.dtype} but v has dtype {v.dtype}; expected keys and values "
                f"of one dtype (the cache would silently hold {common_float_dtype(k, v)}); "
                "convert one of them with .astype"
            )
        dtype = common_float_dtype(k, v)
        m = k.shape[-2]
        if self._k is None:
            lead = k.shape[:-2]
            capacity = max(self._initial_capacity, m)
            self._k = np.empty((*lead, capacity, k.shape[-1]), dtype=dtype)  # (..., cap, d_k)
            self._v = np.empty((*lead, capacity, v.shape[-1]), dtype=dtype)  # (..., cap, d_v)
            self.reallocations = 1
        else:
            self._check_matches(k, v, dtype)
            if self._length + m > self.capacity:
                self._grow(self._length + m)
        end = self._length + m
        self._k[..., self._length:end, :] = k
        self._v[..., self._length:end, :] = v
        self._length = end

    def _extend(self, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`append` for arrays a model made (checked only for their shapes and dtype,
        the rest through :meth:`append`), then every cached key and value (plain views)."""
        held = self._k
        if (held is None or k.dtype != held.dtype or v.dtype != held.dtype
                or k.shape[:-2] != held.shape[:-2] or v.shape[:-2] != held.shape[:-2]
                or k.shape[-1] != held.shape[-1] or v.shape[-1] != self._v.shape[-1]
                or k.shape[-2] != v.shape[-2]):
            self.append(k, v)  # the first append, or anything odd: the checked way
        else:
            end = self._length + k.shape[-2]
            if end > self.capacity:
                self._grow(end)
            self._k[..., self._length:end, :] = k
            self._v[..., self._length:end, :] = v
            self._length = end
        return self._k[..., :self._length, :], self._v[..., :self._length, :]

    def _check_matches(self, k: np.ndarray, v: np.ndarray, dtype: np.dtype) -> None:
        lead = self._k.shape[:-2]
        for name, a, buffer, letter in (("k", k, self._k, "d_k"), ("v", v, self._v, "d_v")):
            if a.shape[:-2] != lead:
                held = f"leading axes {lead}"
                expected = f"; expected {name}.shape[:-2] == {lead}"
                got = f"leading axes {a.shape[:-2]}"
            elif a.shape[-1] != buffer.shape[-1]:
                held, expected = f"{letter}={buffer.shape[-1]}", ""
                got = f"{letter}={a.shape[-1]}"
            else:
                continue
            raise ValueError(f"{name} has {got} ({describe(a)}); the cache holds {held} from "
                             f"the first append{expected}")
        if dtype != self._k.dtype:
            raise TypeError(
                f"k and v have dtype {dtype} but the cache holds {self._k.dtype} from the "
                f"first append; convert them with .astype(np.{self._k.dtype})"
            )

    def _grow(self, needed: int) -> None:
        """Reallocate to at least ``needed`` positions, doubling the capacity."""
        capacity = max(2 * self.capacity, needed)
        n = self._length
        for attr in ("_k", "_v"):
            old = getattr(self, attr)
            new = np.empty((*old.shape[:-2], capacity, old.shape[-1]), dtype=old.dtype)
            new[..., :n, :] = old[..., :n, :]  # the one copy of the earlier rows
            setattr(self, attr, new)
        self.reallocations += 1

    # ----------------------------------------------------------------- attend

    def attend(self, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Causal attention of the newest ``n_q`` positions over everything cached.

        Parameters
        ----------
        q : array_like, shape (..., n_q, d_k)
            Queries of the last ``n_q`` cached positions (``1 <= n_q <= len(self)``).
            Leading axes broadcast with the cache's.

        Returns
        -------
        output, weights : numpy.ndarray, shapes (..., n_q, d_v) and (..., n_q, n)
            As :func:`~attention_lib.scaled_dot_product_attention` returns them: query
            ``i`` (position ``n - n_q + i``) gives zero weight to later positions.

        Examples
        --------
        >>> cache = KVCache()
        >>> cache.append(np.eye(3), np.arange(3.0).reshape(3, 1))
        >>> out, w = cache.attend(np.ones((2, 3)))     # positions 1 and 2
        >>> w.round(3)
        array([[0.5  , 0.5  , 0.   ],
               [0.333, 0.333, 0.333]])
        """
        if self._k is None:
            raise ValueError("the cache is empty; append the keys and values before attend(q)")
        q = as_real_array(q, "q", min_ndim=2)
        n_q, d_k = q.shape[-2:]
        if d_k != self._k.shape[-1]:
            raise ValueError(
                f"q has d_k={d_k} ({describe(q)}) but the cached keys have "
                f"d_k={self._k.shape[-1]}; expected the same last axis"
            )
        if n_q > self._length:
            raise ValueError(
                f"q has n_q={n_q} queries ({describe(q)}) but the cache holds only "
                f"{self._length} position(s); the queries are the newest positions, so "
                "append their keys and values first (expected n_q <= len(cache))"
            )
        keys = self._k[..., : self._length, :]  # (..., n, d_k), a view
        values = self._v[..., : self._length, :]  # (..., n, d_v), a view
        return scaled_dot_product_attention(q, keys, values, causal=True)
