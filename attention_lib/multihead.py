"""Multi-head attention: split into heads, attend, concatenate, project.

Dimension letters used in the shape comments:

- ``...``     leading batch axes (broadcast between ``x`` and ``context``)
- ``n_q``     number of queries (positions of ``x``)
- ``n_k``     number of keys and values (positions of ``context``)
- ``h``       number of heads (of queries)
- ``h_kv``    number of key/value heads (``h`` unless grouped-query attention)
- ``g``       query heads per key/value head, ``h / h_kv``
- ``d_kv``    width of the keys (and values) of all key/value heads, ``h_kv * d_head``
- ``d_model`` size of a token representation
- ``d_head``  size of one head's queries, keys and values, ``d_model / h``
  (the ``d_k`` of the scaling factor :math:`1/\\sqrt{d_k}`)

Head ``i`` owns columns ``i*d_head:(i+1)*d_head`` of ``W_Q``, ``W_K``, ``W_V``
and the same rows of ``W_O``: the layout of PyTorch's
``torch.nn.MultiheadAttention``. With grouped-query attention ``W_K`` and ``W_V``
have ``h_kv`` such column blocks, and query head ``i`` uses key/value head
``i // g`` (PyTorch's ``scaled_dot_product_attention(..., enable_gqa=True)``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_bool_mask,
    as_real_array,
    broadcast_shape,
    check_causal_sizes,
    check_flag,
    check_grouped_heads,
    common_float_dtype,
    compute_dtype,
    describe,
    head_size,
    kv_group_size,
    optional_positive_int,
    positive_int,
    raise_if_fully_masked,
    random_generator,
    token_rows,
)
from .attention import causal_mask, scaled_dot_product_attention
from .model.attention import allowed_keys, attention_forward, merge, split
from .model.params import draw_params, fan_in_std

__all__ = ["MultiHeadAttention", "grouped_query_attention", "merge_heads", "split_heads"]

WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O")


def split_heads(x: ArrayLike, num_heads: int) -> np.ndarray:
    r"""Cut the last axis into ``num_heads`` heads and move the heads before the positions.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        One row per position, e.g. the queries :math:`XW_Q` of all heads side by side.
    num_heads : int
        Number of heads ``h``; must divide ``d_model``.

    Returns
    -------
    numpy.ndarray, shape (..., h, n, d_head)
        ``d_head = d_model // h``. Head ``i`` holds columns
        ``i*d_head:(i+1)*d_head`` of ``x``.

    Notes
    -----
    With :math:`x \in \mathbb{R}^{n \times d_{\text{model}}}` and
    :math:`d_{\text{head}} = d_{\text{model}} / h`,

    .. math:: \operatorname{split}(x)[i, t, c] = x[t,\; i\,d_{\text{head}} + c].

    Nothing is computed: the numbers are only regrouped, so that the heads
    become a leading (batch-like) axis for
    :func:`~attention_lib.scaled_dot_product_attention`.
    :func:`merge_heads` undoes it.

    Examples
    --------
    >>> x = np.arange(12.0).reshape(2, 6)   # 2 positions, d_model = 6
    >>> heads = split_heads(x, 3)           # 3 heads of size 2
    >>> heads.shape
    (3, 2, 2)
    >>> heads[1]                            # columns 2:4 of x
    array([[2., 3.],
           [8., 9.]])
    """
    x = as_real_array(x, "x", min_ndim=2)
    num_heads = positive_int(num_heads, "num_heads")
    d_model = x.shape[-1]
    try:
        head_size(d_model, num_heads)
    except ValueError:
        raise ValueError(
            f"x has last axis d_model={d_model} ({describe(x)}), which is not divisible by "
            f"num_heads={num_heads}; expected a multiple of {num_heads}"
        ) from None
    return split(x, num_heads)  # (..., n, d_model) -> (..., h, n, d_head)


def merge_heads(x: ArrayLike) -> np.ndarray:
    r"""Concatenate the heads along the feature axis: the inverse of :func:`split_heads`.

    Parameters
    ----------
    x : array_like, shape (..., h, n, d_head)
        One ``(n, d_head)`` block per head, e.g. the heads' attention outputs.

    Returns
    -------
    numpy.ndarray, shape (..., n, h * d_head)
        Row ``t`` is :math:`[\,x_1[t] \;\; x_2[t] \;\; \cdots \;\; x_h[t]\,]`,
        head 0's features first.

    Notes
    -----
    This is the :math:`\operatorname{Concat}(\text{head}_1, \ldots, \text{head}_h)`
    of multi-head attention:

    .. math:: \operatorname{merge}(x)[t,\; i\,d_{\text{head}} + c] = x[i, t, c].

    Examples
    --------
    >>> heads = np.arange(8.0).reshape(2, 2, 2)   # 2 heads, 2 positions, d_head = 2
    >>> merge_heads(heads)
    array([[0., 1., 4., 5.],
           [2., 3., 6., 7.]])
    >>> np.array_equal(split_heads(merge_heads(heads), 2), heads)
    True
    """
    return merge(as_real_array(x, "x", min_ndim=3))  # (..., h, n, d_head) -> (..., n, h*d_head)


def grouped_query_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    *,
    causal: bool = False,
    mask: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Attention of ``h`` query heads through fewer key/value heads (GQA; MQA with one).

    Parameters
    ----------
    q : array_like, shape (..., h, n_q, d_k)
        Queries of ``h`` heads.
    k : array_like, shape (..., h_kv, n_k, d_k)
        Keys of ``h_kv`` heads; ``h_kv`` must divide ``h``.
    v : array_like, shape (..., h_kv, n_k, d_v)
        Values of the same ``h_kv`` heads. Leading axes before the heads broadcast.
    causal : bool, default False
        As in :func:`~attention_lib.scaled_dot_product_attention` (queries are the
        last ``n_q`` positions when ``n_q < n_k``).
    mask : array_like of bool, optional
        True = may attend; broadcastable to the weights ``(..., h, n_q, n_k)``.

    Returns
    -------
    output : numpy.ndarray, shape (..., h, n_q, d_v)
    weights : numpy.ndarray, shape (..., h, n_q, n_k)

    Notes
    -----
    With :math:`g = h / h_{kv}` query heads per group, query head :math:`i` uses
    key/value head :math:`\lfloor i / g \rfloor`:

    .. math:: \text{head}_i = \operatorname{softmax}\!\Bigl(
              \frac{Q_i K_{\lfloor i/g \rfloor}^{\mathsf T}}{\sqrt{d_k}}\Bigr)
              V_{\lfloor i/g \rfloor},

    the rule of PyTorch's ``scaled_dot_product_attention(..., enable_gqa=True)``.
    The queries are regrouped to ``(..., h_kv, g, n_q, d_k)`` and the keys and
    values get an axis of size 1 that broadcasts over the group, so no key or
    value is copied; the scores, softmax and masks are those of
    :func:`~attention_lib.scaled_dot_product_attention`. With ``h_kv = h`` this is
    multi-head attention; with ``h_kv = 1``, multi-query attention (MQA). A KV
    cache holds ``h_kv`` heads instead of ``h``: ``g`` times less memory.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q = rng.normal(size=(4, 3, 2))                # 4 query heads
    >>> k, v = rng.normal(size=(2, 2, 5, 2))          # 2 key/value heads, 5 keys
    >>> out, w = grouped_query_attention(q, k, v)
    >>> out.shape, w.shape
    ((4, 3, 2), (4, 3, 5))
    >>> from attention_lib import scaled_dot_product_attention
    >>> bool(np.allclose(out[3], scaled_dot_product_attention(q[3], k[1], v[1])[0]))
    True
    """
    qa, ka, va, group = check_grouped_heads(q, k, v)
    h, n_q, d_k = qa.shape[-3:]
    h_kv, n_k = ka.shape[-3:-1]
    lead = qa.shape[:-3]
    # Query head i = a * g + b uses key/value head a: put the group on an axis of its own.
    q_grouped = qa.reshape(*lead, h_kv, group, n_q, d_k)  # (..., h_kv, g, n_q, d_k)
    k_grouped = ka[..., :, None, :, :]  # (..., h_kv, 1, n_k, d_k): a view, no copy
    v_grouped = va[..., :, None, :, :]  # (..., h_kv, 1, n_k, d_v)
    mask_grouped = None if mask is None else _group_mask(mask, qa, ka, va, group, causal)
    out, weights = scaled_dot_product_attention(
        q_grouped, k_grouped, v_grouped, mask_grouped, causal=causal
    )  # (..., h_kv, g, n_q, d_v), (..., h_kv, g, n_q, n_k)
    out = out.reshape(*out.shape[:-4], h, n_q, out.shape[-1])  # (..., h, n_q, d_v)
    weights = weights.reshape(*weights.shape[:-4], h, n_q, n_k)  # (..., h, n_q, n_k)
    return out, weights


def _group_mask(mask: ArrayLike, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                group: int, causal: bool) -> np.ndarray:
    """The mask, broadcastable to (..., h, n_q, n_k), regrouped to (..., h_kv or 1, g or 1, ...).

    A query row the mask (and ``causal``) leaves with no key is reported by head and query.
    """
    m = as_bool_mask(mask)
    causal = check_flag(causal, "causal")
    h, n_q = q.shape[-3:-1]
    h_kv, n_k = k.shape[-3:-1]
    target = (*np.broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3]), h, n_q, n_k)
    shape = broadcast_shape(target, m.shape)
    if shape is None or shape[-3:] != (h, n_q, n_k):
        raise ValueError(
            f"mask has {describe(m)}; expected a shape broadcastable to the weights "
            f"(..., h, n_q, n_k) = {target}"
        )
    allowed = m & causal_mask(n_q, n_k) if causal else m  # (..., n_q, n_k) or broadcastable
    empty = ~np.broadcast_to(allowed, shape).any(axis=-1)  # (..., h, n_q)
    raise_if_fully_masked(empty, "query row(s) with no key", where="(..., head, query) ",
                          remedy="Expected a mask that leaves every query at least one key")
    m = m.reshape((1,) * max(0, 3 - m.ndim) + m.shape)  # (..., h or 1, n_q or 1, n_k or 1)
    if m.shape[-3] == 1:
        return m[..., None, :, :]  # (..., 1, 1, n_q, n_k): the same for every head
    return m.reshape(*m.shape[:-3], h_kv, group, *m.shape[-2:])  # (..., h_kv, g, n_q, n_k)


class MultiHeadAttention:
    r"""Multi-head scaled dot-product attention with its four weight matrices.

    Parameters
    ----------
    d_model : int
        Size of a token representation (the last axis of the input).
    num_heads : int
        Number of heads ``h``; must divide ``d_model``.
    num_kv_heads : int, optional
        Number of key/value heads ``h_kv`` (grouped-query attention, see
        :func:`grouped_query_attention`); must divide ``num_heads``. Defaults to
        ``num_heads`` (every head its own keys and values); 1 is multi-query
        attention.
    rng : numpy.random.Generator, optional
        Source of the initial weights; defaults to ``np.random.default_rng()``
        (unseeded). Pass a seeded generator for reproducible weights.

    Attributes
    ----------
    d_model, num_heads, num_kv_heads : int
    d_head : int
        ``d_model // num_heads``: the size of one head's queries, keys and
        values, i.e. the :math:`d_k` of the scale :math:`1/\sqrt{d_k}`.
    W_Q : numpy.ndarray, shape (d_model, d_model)
        Query projections of all heads side by side: head ``i`` uses columns
        ``i*d_head:(i+1)*d_head``.
    W_K, W_V : numpy.ndarray, shape (d_model, num_kv_heads * d_head)
        Key and value projections of the key/value heads, laid out alike
        (``(d_model, d_model)`` by default).
    W_O : numpy.ndarray, shape (d_model, d_model)
        Output projection; rows ``i*d_head:(i+1)*d_head`` act on head ``i``.

    Notes
    -----
    With :math:`W_Q^{(i)}, W_K^{(i)}, W_V^{(i)}` the column blocks of head
    :math:`i` and :math:`W_O^{(i)}` the matching row block of :math:`W_O`,

    .. math::

        \text{head}_i &= \operatorname{Attention}\bigl(X W_Q^{(i)},\;
                          C W_K^{(i)},\; C W_V^{(i)}\bigr), \\
        \operatorname{MultiHead}(X, C) &=
            \operatorname{Concat}(\text{head}_1, \ldots, \text{head}_h)\, W_O
            = \sum_{i=1}^{h} \text{head}_i\, W_O^{(i)},

    where :math:`C = X` for self-attention and the context (e.g. an
    encoder's output) for cross-attention. The weights are drawn
    independently from :math:`\mathcal N(0, 1/d_{\text{model}})` (standard
    deviation :math:`1/\sqrt{d_{\text{model}}}`), so that a query, key or
    value coordinate of an input with unit-variance coordinates has unit
    variance too. There are no bias terms, so the layer has exactly
    :math:`4 d_{\text{model}}^2` parameters whatever the number of heads
    (with :math:`h_{kv}` key/value heads,
    :math:`2 d_{\text{model}}^2 + 2 d_{\text{model}} h_{kv} d_{\text{head}}`).
    The weights are stored in float64 and cast to the input's floating
    dtype on every call (float32 stays float32; float16 is computed in float32
    and returned as float16).

    Examples
    --------
    >>> mha = MultiHeadAttention(8, 2, rng=np.random.default_rng(0))
    >>> mha.d_head, mha.W_Q.shape, mha.num_parameters
    (4, (8, 8), 256)
    >>> x = np.random.default_rng(1).normal(size=(5, 8))        # 5 tokens
    >>> out, w = mha(x)                                          # self-attention
    >>> out.shape, w.shape
    ((5, 8), (2, 5, 5))
    >>> memory = np.random.default_rng(2).normal(size=(7, 8))   # 7 other tokens
    >>> out, w = mha(x, memory)                                  # cross-attention
    >>> out.shape, w.shape
    ((5, 8), (2, 5, 7))
    >>> gqa = MultiHeadAttention(8, 4, num_kv_heads=2, rng=np.random.default_rng(0))
    >>> gqa.W_K.shape, gqa.num_parameters, gqa(x)[1].shape       # 4 query heads, 2 kv heads
    ((8, 4), 192, (4, 5, 5))
    """

    def __init__(
        self, d_model: int, num_heads: int, *, num_kv_heads: int | None = None,
        rng: np.random.Generator | None = None
    ) -> None:
        d_model = positive_int(d_model, "d_model")
        num_heads = positive_int(num_heads, "num_heads")
        d_head = head_size(d_model, num_heads)
        num_kv_heads = optional_positive_int(num_kv_heads, "num_kv_heads", num_heads)
        kv_group_size(num_heads, num_kv_heads)
        rng = random_generator(rng, optional=True)
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_head = d_head
        d_kv = num_kv_heads * d_head  # d_model unless grouped-query attention
        # Drawn in this order, N(0, 1/d_model), so a given seed always gives the same four.
        self.W_Q, self.W_K, self.W_V, self.W_O = draw_params(
            {"W_Q": (d_model, d_model),  # (d_model, h * d_head)
             "W_K": (d_model, d_kv),  # (d_model, h_kv * d_head)
             "W_V": (d_model, d_kv),  # (d_model, h_kv * d_head)
             "W_O": (d_model, d_model)},  # (h * d_head, d_model)
            rng, fan_in_std).values()

    def __repr__(self) -> str:
        kv = "" if self.num_kv_heads == self.num_heads else f", num_kv_heads={self.num_kv_heads}"
        return (f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}{kv}, "
                f"d_head={self.d_head})")

    def parameters(self) -> dict[str, np.ndarray]:
        """The four weight matrices by name: ``{"W_Q": ..., "W_K": ..., "W_V": ..., "W_O": ...}``.

        Examples
        --------
        >>> mha = MultiHeadAttention(4, 2, rng=np.random.default_rng(0))
        >>> {name: w.shape for name, w in mha.parameters().items()}
        {'W_Q': (4, 4), 'W_K': (4, 4), 'W_V': (4, 4), 'W_O': (4, 4)}
        """
        return {name: getattr(self, name) for name in WEIGHT_NAMES}

    @property
    def num_parameters(self) -> int:
        """Total number of weights, the sum of the four matrices' sizes (``4 * d_model**2``
        unless there are fewer key/value heads).

        Examples
        --------
        >>> MultiHeadAttention(6, 3, rng=np.random.default_rng(0)).num_parameters
        144
        """
        return sum(int(np.asarray(w).size) for w in self.parameters().values())

    def _weights(self, dtype: np.dtype) -> dict[str, np.ndarray]:
        """The four matrices in ``dtype``, each checked to have its shape."""
        out = {}
        d_kv = self.num_kv_heads * self.d_head
        for name, w in self.parameters().items():
            w = as_real_array(w, name, min_ndim=2)
            if name in ("W_K", "W_V") and d_kv != self.d_model:
                expected, shape = "(d_model, num_kv_heads * d_head)", (self.d_model, d_kv)
            else:
                expected, shape = "(d_model, d_model)", (self.d_model, self.d_model)
            if w.shape != shape:
                raise ValueError(f"{name} has {describe(w)}; expected shape {expected} = {shape}")
            out[name] = w.astype(dtype, copy=False)
        return out

    def __call__(
        self,
        x: ArrayLike,
        context: ArrayLike | None = None,
        *,
        causal: bool = False,
        mask: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        r"""Attend from ``x`` to ``context`` (or to ``x`` itself) with every head.

        Parameters
        ----------
        x : array_like, shape (..., n_q, d_model)
            The sequence that asks: its rows give the queries.
        context : array_like, shape (..., n_k, d_model), optional
            The sequence that answers: its rows give the keys and values.
            Defaults to ``x`` (self-attention); another sequence gives
            cross-attention (``n_k`` may differ from ``n_q``). Leading axes of
            ``x`` and ``context`` are broadcast together.
        causal : bool, default False
            Query ``i`` may attend only to keys ``j <= i + n_k - n_q`` (see
            :func:`~attention_lib.causal_mask`), in every head.
        mask : array_like of bool, optional
            True means "may attend". Either broadcastable to ``(..., n_q, n_k)``
            and shared by every head (a head axis is inserted before the last
            two axes), or, with exactly one axis more than that, of shape
            ``(..., h, n_q, n_k)``: one mask per head. It may not add batch
            axes that ``x`` and ``context`` do not have. Combined with
            ``causal`` by logical and.

        Returns
        -------
        output : numpy.ndarray, shape (..., n_q, d_model)
            :math:`\operatorname{Concat}(\text{head}_1, \ldots, \text{head}_h)\, W_O`.
        weights : numpy.ndarray, shape (..., h, n_q, n_k)
            Each head's attention weights; every row sums to one.

        Examples
        --------
        >>> mha = MultiHeadAttention(4, 2, rng=np.random.default_rng(0))
        >>> x = np.ones((2, 3, 4), dtype=np.float32)    # batch of 2, 3 tokens
        >>> out, w = mha(x, causal=True)
        >>> out.shape, w.shape, out.dtype
        ((2, 3, 4), (2, 2, 3, 3), dtype('float32'))
        >>> w[0, 0]                                     # equal keys: uniform over the visible ones
        array([[1.        , 0.        , 0.        ],
               [0.5       , 0.5       , 0.        ],
               [0.33333334, 0.33333334, 0.33333334]], dtype=float32)
        """
        x = token_rows(x, "x", self.d_model)
        context = x if context is None else token_rows(context, "context", self.d_model)
        causal = check_flag(causal, "causal")
        n_q, n_k = x.shape[-2], context.shape[-2]
        batch = broadcast_shape(x.shape[:-2], context.shape[:-2])
        if batch is None:
            raise ValueError(
                f"the leading (batch) axes of x {x.shape[:-2]} and context "
                f"{context.shape[:-2]} do not broadcast; expected shapes numpy can broadcast"
            )
        head_mask = None
        if mask is not None:
            head_mask = self._head_mask(mask, batch, n_q, n_k)

        dtype = common_float_dtype(x, context)  # of the result: float32 stays float32
        work = compute_dtype(dtype)  # float16 is computed in float32
        w = self._weights(work)
        self_attention = context is x
        x = x.astype(work, copy=False)
        context = x if self_attention else context.astype(work, copy=False)
        if causal:
            check_causal_sizes(n_q, n_k)
        _raise_if_a_row_sees_nothing(allowed_keys(n_q, n_k, causal=causal, window=None,
                                                  mask=head_mask), batch, self.num_heads)
        layer = {"w_q": w["W_Q"], "w_k": w["W_K"], "w_v": w["W_V"], "w_o": w["W_O"]}
        output, weights, _ = attention_forward(
            x, layer, "", n_heads=self.num_heads, n_kv_heads=self.num_kv_heads,
            memory=None if self_attention else context, causal=causal, mask=head_mask,
        )  # (..., n_q, d_model), (..., h, n_q, n_k): Concat(head_1, ..., head_h) W_O
        return output.astype(dtype, copy=False), weights.astype(dtype, copy=False)

    def _head_mask(
        self, mask: ArrayLike, batch: tuple[int, ...], n_q: int, n_k: int
    ) -> np.ndarray:
        """The boolean mask as (..., h or 1, n_q, n_k): shared by the heads, or one per head.

        A mask with at most ``len(batch) + 2`` axes is shared by every head (a
        head axis is inserted); one with exactly ``len(batch) + 3`` axes has its
        own head axis (size ``h`` or 1) before the last two.
        """
        m = as_bool_mask(mask)
        h = self.num_heads
        per_head = m.ndim == len(batch) + 3
        target = (*batch, h, n_q, n_k) if per_head else (*batch, n_q, n_k)
        if broadcast_shape(target, m.shape) != target:
            raise ValueError(
                f"mask has {describe(m)}; expected a shape broadcastable to the scores "
                f"(..., n_q, n_k) = {(*batch, n_q, n_k)} (one mask shared by all heads) or "
                f"(..., h, n_q, n_k) = {(*batch, h, n_q, n_k)} (one mask per head), "
                "without batch axes that x and context do not have"
            )
        if per_head:
            return m  # (..., h or 1, n_q, n_k)
        m = m.reshape((1,) * max(0, 2 - m.ndim) + m.shape)  # (..., n_q or 1, n_k or 1)
        return m[..., None, :, :]  # (..., n_q, n_k) -> (..., 1, n_q, n_k): same for every head


def _raise_if_a_row_sees_nothing(allowed: np.ndarray | None, batch: tuple[int, ...],
                                 h: int) -> None:
    """A query row that the mask (and ``causal``) leaves with no key has no softmax: raise,
    naming the (..., head, query) of the first."""
    if allowed is None:
        return
    empty = ~allowed.any(axis=-1)  # (..., h or 1, n_q)
    shape = np.broadcast_shapes(empty.shape, (*batch, 1, 1))
    raise_if_fully_masked(np.broadcast_to(empty, shape), "query row(s) with no key",
                          where="(..., head, query) ",
                          remedy="Expected a mask that leaves every query at least one key")
