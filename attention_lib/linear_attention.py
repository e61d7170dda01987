r"""Linear attention: a kernel instead of the softmax, in time linear in the sequence length.

Katharopoulos et al. (2020), "Transformers are RNNs", replace the similarity
:math:`\exp(q \cdot k / \sqrt{d_k})` of softmax attention by a product of
feature maps, :math:`\phi(q) \cdot \phi(k)`, with :math:`\phi > 0`. The output
of query :math:`i` is then

.. math::

    z_i = \frac{\sum_j \phi(q_i)^{\mathsf T} \phi(k_j)\, v_j^{\mathsf T}}
               {\sum_j \phi(q_i)^{\mathsf T} \phi(k_j)}
        = \frac{\phi(q_i)^{\mathsf T} \bigl(\sum_j \phi(k_j)\, v_j^{\mathsf T}\bigr)}
               {\phi(q_i)^{\mathsf T} \sum_j \phi(k_j)},

and the two sums do not depend on :math:`i`: one ``d_k x d_v`` matrix and one
``d_k`` vector replace the ``n_q x n_k`` matrix of weights, so the cost is
:math:`O(n\, d_k d_v)` instead of :math:`O(n^2 d)`. Under the causal rule the
sums become prefix sums over the keys up to each query, and computing them token
by token is a recurrent network whose state is that matrix and that vector:
constant memory per step, like a KV cache that never grows. It is another model,
not an approximation of softmax attention: the weights
:math:`\phi(q_i) \cdot \phi(k_j) / \sum_l \phi(q_i) \cdot \phi(k_l)` are not a softmax.

The dimension letters of the shape comments are those of :mod:`attention_lib.attention`,
and ``c``, the positions in one chunk of the causal prefix sums.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import attention_operands, check_flag, first_true, one_of

__all__ = ["linear_attention", "linear_attention_recurrent"]

FEATURE_MAPS = ("elu+1",)

# Positions per chunk of the causal prefix sums: a chunk holds c x d_k x d_v numbers.
_CHUNK = 64


def _elu_plus_one(x: np.ndarray) -> np.ndarray:
    """:math:`\\phi(x) = \\operatorname{elu}(x) + 1`: ``x + 1`` for ``x > 0``, ``exp(x)`` else."""
    with np.errstate(under="ignore"):  # exp of a very negative x is 0
        return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # exp of x <= 0: no overflow


def _features(q: ArrayLike, k: ArrayLike, v: ArrayLike, causal: bool
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.dtype]:
    """phi(q), phi(k) and v in the dtype they are computed in, and the dtype of the result."""
    q, k, v, _, out_dtype = attention_operands(q, k, v, causal=causal)
    return _elu_plus_one(q), _elu_plus_one(k), v, out_dtype


def _divide(numerator: np.ndarray, denominator: np.ndarray, row0: int = 0) -> np.ndarray:
    """``numerator / denominator[..., None]`` for (..., c, d_v) and (..., c), or a ValueError
    where a sum overflowed or the normaliser underflowed to 0 (naming query ``row0 + row``)."""
    if not (np.isfinite(numerator).all() and np.isfinite(denominator).all()):
        bad = ~np.isfinite(denominator) | ~np.isfinite(numerator).all(axis=-1)  # (..., c)
        what = f"the sums of phi(q) . phi(k) overflow {numerator.dtype}"
        expected = "inputs whose features x + 1 multiply without overflow"
    elif not (denominator > 0).all():
        bad = ~(denominator > 0)  # (..., c)
        what = "the normaliser phi(q) . sum phi(k) underflowed to 0"
        expected = "queries and keys whose features exp(x) (for x <= 0) do not all vanish"
    else:
        return numerator / denominator[..., None]
    count, first = first_true(bad)
    first = (*first[:-1], row0 + first[-1])
    raise ValueError(f"{what} for {count} query row(s), the first at (..., query) index "
                     f"{first}; expected {expected} (rescale them, or use float64)")


def linear_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: bool = True,
    feature_map: str = "elu+1",
) -> np.ndarray:
    r"""Linear attention (Katharopoulos et al. 2020): the kernelised form, all queries at once.

    Parameters
    ----------
    q, k, v : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        Queries, keys and values with the checks and dtypes of
        :func:`~attention_lib.scaled_dot_product_attention` (float16 is computed in float32).
    causal : bool, default True
        Query ``i`` sees only the keys ``j <= i`` (with ``n_q < n_k`` the queries
        are the last ``n_q`` positions, as in :func:`~attention_lib.causal_mask`).
    feature_map : {"elu+1"}, default "elu+1"
        The feature map :math:`\phi`, applied to every entry: ``"elu+1"`` is
        :math:`\phi(x) = \operatorname{elu}(x) + 1`, i.e. :math:`x + 1` for
        :math:`x > 0` and :math:`e^x` otherwise (positive, so every normaliser is),
        the map of the paper.

    Returns
    -------
    numpy.ndarray, shape (..., n_q, d_v)
        The output (there is no matrix of weights to return: it is never formed).
        Equal to :func:`linear_attention_recurrent` under ``causal`` up to rounding.

    Notes
    -----
    .. math::

        z_i = \frac{\phi(q_i)^{\mathsf T} S_i}{\phi(q_i)^{\mathsf T} u_i}, \qquad
        S_i = \sum_{j \in J_i} \phi(k_j)\, v_j^{\mathsf T}, \qquad
        u_i = \sum_{j \in J_i} \phi(k_j),

    with :math:`J_i` every key, or under ``causal`` the keys up to query
    :math:`i`'s position. Without the causal rule :math:`S` and :math:`u` are
    the same for every query: :math:`S = \phi(K)^{\mathsf T} V`. Under it they
    are prefix sums, computed here chunk by chunk of 64 positions (a
    ``cumsum`` inside a chunk, the running total carried to the next), so that
    memory stays :math:`O(64\, d_k d_v)` per batch entry. There is no
    :math:`1/\sqrt{d_k}`: the feature map, not a temperature, shapes the weights.

    Examples
    --------
    >>> q, k, v = np.random.default_rng(0).normal(size=(3, 6, 4))
    >>> out = linear_attention(q, k, v)
    >>> out.shape
    (6, 4)
    >>> bool(np.allclose(out, linear_attention_recurrent(q, k, v)))
    True
    >>> bool(np.allclose(out[0], v[0]))     # the first query sees only the first key
    True
    """
    causal = check_flag(causal, "causal")
    one_of(feature_map, "feature_map", FEATURE_MAPS)
    phi_q, phi_k, v, out_dtype = _features(q, k, v, causal)
    with np.errstate(all="ignore"):  # overflow and underflow are reported by _divide
        return _kernelised(phi_q, phi_k, v, causal).astype(out_dtype, copy=False)


def _kernelised(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray, causal: bool
                ) -> np.ndarray:
    """The sums of :func:`linear_attention` on the features, all at once or by prefix."""
    if not causal:
        s = np.swapaxes(phi_k, -1, -2) @ v  # (..., d_k, n_k) @ (..., n_k, d_v) -> (..., d_k, d_v)
        u = phi_k.sum(axis=-2)  # (..., d_k)
        numerator = phi_q @ s  # (..., n_q, d_k) @ (..., d_k, d_v) -> (..., n_q, d_v)
        denominator = np.einsum("...id,...d->...i", phi_q, u)  # (..., n_q)
        return _divide(numerator, denominator)

    n_q, n_k = phi_q.shape[-2], phi_k.shape[-2]
    offset = n_k - n_q  # query i sits at position i + offset
    # The keys before the first query's position: a prefix every query sees.
    s = np.swapaxes(phi_k[..., :offset, :], -1, -2) @ v[..., :offset, :]  # (..., d_k, d_v)
    u = phi_k[..., :offset, :].sum(axis=-2)  # (..., d_k)
    outputs = []
    for c0 in range(0, n_q, _CHUNK):
        keys = slice(offset + c0, offset + min(c0 + _CHUNK, n_q))  # this chunk's own keys
        pk, vc = phi_k[..., keys, :], v[..., keys, :]  # (..., c, d_k), (..., c, d_v)
        # S_i for each position of the chunk: the total so far plus the chunk's prefix.
        outer = pk[..., :, :, None] * vc[..., :, None, :]  # (..., c, d_k, d_v)
        s_prefix = s[..., None, :, :] + np.cumsum(outer, axis=-3)  # (..., c, d_k, d_v)
        u_prefix = u[..., None, :] + np.cumsum(pk, axis=-2)  # (..., c, d_k)
        pq = phi_q[..., c0:c0 + pk.shape[-2], :]  # (..., c, d_k)
        numerator = np.einsum("...cd,...cde->...ce", pq, s_prefix)  # (..., c, d_v)
        denominator = np.einsum("...cd,...cd->...c", pq, u_prefix)  # (..., c)
        outputs.append(_divide(numerator, denominator, c0))
        s, u = s_prefix[..., -1, :, :], u_prefix[..., -1, :]  # carried to the next chunk
    return np.concatenate(outputs, axis=-2)  # (..., n_q, d_v)


def linear_attention_recurrent(q: ArrayLike, k: ArrayLike, v: ArrayLike) -> np.ndarray:
    r"""Causal linear attention token by token: an RNN with a ``d_k x d_v`` state.

    Parameters
    ----------
    q, k, v : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        As in :func:`linear_attention`; ``n_q <= n_k``, the queries being the last
        ``n_q`` positions (the first ``n_k - n_q`` keys and values are a prefix,
        read into the state before the first query).

    Returns
    -------
    numpy.ndarray, shape (..., n_q, d_v)
        Equal to ``linear_attention(q, k, v, causal=True)`` (feature map
        ``"elu+1"``) up to rounding.

    Notes
    -----
    The state is a matrix :math:`S` (``d_k x d_v``) and a vector :math:`u`
    (``d_k``), both zero at the start. Token :math:`t` adds its key and value,
    then its query reads:

    .. math::

        S_t = S_{t-1} + \phi(k_t)\, v_t^{\mathsf T}, \qquad
        u_t = u_{t-1} + \phi(k_t), \qquad
        z_t = \frac{\phi(q_t)^{\mathsf T} S_t}{\phi(q_t)^{\mathsf T} u_t}.

    Memory does not grow with the number of tokens (a KV cache grows by one key
    and one value per token), and each step costs :math:`O(d_k d_v)`, whatever
    the position. The price: everything the past says is squeezed into
    :math:`S`, so a token cannot be looked up by content as exactly as softmax
    attention can.

    Examples
    --------
    >>> q = k = np.zeros((3, 2)); v = np.array([[1.0], [2.0], [6.0]])
    >>> linear_attention_recurrent(q, k, v)   # phi(0) = 1: the running mean of v
    array([[1. ],
           [1.5],
           [3. ]])
    """
    phi_q, phi_k, v, out_dtype = _features(q, k, v, causal=True)
    n_q, d_k = phi_q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    offset = n_k - n_q  # query i sits at position i + offset
    state_batch = np.broadcast_shapes(phi_k.shape[:-2], v.shape[:-2])
    s = np.zeros((*state_batch, d_k, d_v), dtype=v.dtype)  # (..., d_k, d_v), the state S
    u = np.zeros((*state_batch, d_k), dtype=v.dtype)  # (..., d_k), the normaliser's state
    outputs = []
    for t in range(n_k):
        with np.errstate(all="ignore"):  # overflow and underflow are reported by _divide
            s = s + phi_k[..., t, :, None] * v[..., t, None, :]  # S += phi(k_t) v_t^T
            u = u + phi_k[..., t, :]  # u += phi(k_t)
            if t < offset:  # a key of the prefix: no query at this position
                continue
            pq = phi_q[..., t - offset, :]  # (..., d_k), the query at position t reads
            numerator = np.einsum("...d,...de->...e", pq, s)[..., None, :]  # (..., 1, d_v)
            denominator = np.einsum("...d,...d->...", pq, u)[..., None]  # (..., 1)
        outputs.append(_divide(numerator, denominator, t - offset)[..., 0, :])  # (..., d_v)
    return np.stack(outputs, axis=-2).astype(out_dtype, copy=False)  # (..., n_q, d_v)
