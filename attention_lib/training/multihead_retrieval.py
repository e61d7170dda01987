r"""The soft dictionary with several heads: shared keys and values, linear attention, a window.

The task is the soft dictionary of :mod:`.retrieval` (``n_pairs`` stored (key, value)
pairs, a query naming one key, the answer the value stored with it). The model has
``h`` query heads of size ``d_head`` and ``h_kv`` key/value heads: query head
:math:`i` reads key/value head :math:`\lfloor i / g \rfloor`, :math:`g = h / h_{kv}`
(grouped-query attention, :func:`~attention_lib.grouped_query_attention`; ``h_kv = h``
is multi-head attention, ``h_kv = 1`` multi-query attention). The heads' outputs are
concatenated and read out linearly:

.. math::

    \mathbf q^{(i)} = \mathbf x_{\text{query}} W_Q^{(i)}, \quad
    K^{(a)} = X W_K^{(a)}, \quad V^{(a)} = X W_V^{(a)}, \quad
    \mathbf z^{(i)} = \operatorname{attend}\bigl(\mathbf q^{(i)}, K^{(\lfloor i/g \rfloor)},
    V^{(\lfloor i/g \rfloor)}\bigr), \quad
    \text{logits} = \sum_i \mathbf z^{(i)} W_{\text{out}}^{(i)} + \mathbf b_{\text{out}} .

``attend`` is softmax attention (optionally through a window: the query sees only the
last ``window`` pairs) or linear attention, the kernelised form of
:func:`~attention_lib.linear_attention` with :math:`\phi = \operatorname{elu} + 1`.

A stored value may be a code of ``n_symbols`` symbols (a four-digit number has four),
each with a table of embeddings of its own, and the model answers all of them: the
more symbols, the more a pair's value vector must carry, and with fewer key/value heads
it has fewer numbers to carry them in (``h_kv d_head`` per pair).

Dimension letters used in the shape comments:

- ``B``       number of sequences in a batch
- ``n``       stored pairs (the positions a query attends to)
- ``d``       size of a token representation (``d_model``)
- ``h``       query heads; ``h_kv`` key/value heads; ``g = h / h_kv`` query heads per group
- ``e``       size of one head's queries, keys and values (``d_head``)
- ``f``       symbols per stored value (``n_symbols``)
- ``c``       number of symbol values (classes of each symbol's read-out)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _validation as check
from ..masks import sliding_window_mask
from ..model.layers import embedding_backward
from ..model.loss import cross_entropy
from ..model.readout import readout_backward, readout_forward
from .data import RetrievalData, _retrieval_sizes
from .loop import Task, TrainingResult, _sized_shapes, init_params, train
from .retrieval import retrieval_sampler

__all__ = ["multihead_retrieval_forward", "multihead_retrieval_loss_and_grads",
           "multihead_retrieval_task", "train_multihead_retrieval"]

ATTENTIONS = ("softmax", "linear")

MULTIHEAD_SHAPES = {"key_embed": ("n_keys", "d"), "value_embed": ("f", "n_values", "d"),
                    "query_embed": ("n_keys", "d"), "w_q": ("d", "h", "e"),
                    "w_k": ("d", "h_kv", "e"), "w_v": ("d", "h_kv", "e"),
                    "w_out": ("h", "e", "f", "n_values"), "b_out": ("f", "n_values")}


def _params(params: Any) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    p, dims = check.weight_arrays(params, MULTIHEAD_SHAPES, "params", extra="ignore")
    check.kv_group_size(dims["h"], dims["h_kv"], heads="query heads (params['w_q'] axis 1)",
                  kv_heads="key/value heads (params['w_k'] axis 1)")
    return p, dims


def _options(attention: Any, window: Any) -> tuple[str, int | None]:
    attention = check.one_of(attention, "attention", ATTENTIONS)
    if window is not None:
        window = check.positive_int(window, "window", what="the number of pairs the query sees")
        if attention != "softmax":
            raise ValueError(f"window={window} with attention={attention!r}; a window is a "
                             "mask on the softmax, so expected attention='softmax' or no window")
    return attention, window


def _window_mask(n: int, window: int | None) -> np.ndarray | None:
    """The query's row of a sliding window over the n pairs and the query: (1, n) or None."""
    if window is None:
        return None
    # The query is position n after the pairs 0..n-1; it sees itself and window pairs before it.
    return sliding_window_mask(1, n + 1, window + 1)[:, :n]  # (1, n + 1) -> (1, n)


def _digits(codes: np.ndarray, n_symbols: int, n_values: int) -> np.ndarray:
    """The symbols of each stored code, least significant first: (...) -> (..., f)."""
    return (codes[..., None] // n_values ** np.arange(n_symbols)) % n_values


def _forward(p: dict[str, np.ndarray], keys: np.ndarray, values: np.ndarray,
             query: np.ndarray, attention: str, window: int | None
             ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Logits (B, f, c), each head's weights (B, h, n) and what the backward pass needs."""
    n_symbols, n_values = p["value_embed"].shape[:2]
    symbols = _digits(values, n_symbols, n_values)  # (B, n, f)
    rows = np.arange(n_symbols) * n_values + symbols  # (B, n, f): rows of the (f*c, d) table
    x_value = p["value_embed"].reshape(n_symbols * n_values, -1)[rows].sum(axis=-2)  # (B, n, d)
    x_kv = p["key_embed"][keys] + x_value  # (B, n, d)
    x_q = p["query_embed"][query][:, None, :]  # (B, 1, d)
    logits, weights, saved = readout_forward(
        p, x_q, x_kv, n_heads=p["w_q"].shape[1], n_kv_heads=p["w_k"].shape[1],
        mask=_window_mask(keys.shape[1], window), kind=attention)  # (B, 1, f c), (B, h, 1, n)
    logits = logits.reshape(len(keys), n_symbols, n_values)  # (B, f, c)
    return logits, weights[:, :, 0, :], (saved, rows)


def _codes(values: ArrayLike, dims: dict[str, int], name: str = "values") -> np.ndarray:
    """Stored codes: ints from 0 to n_values**n_symbols - 1, shape (B, n_pairs)."""
    return check.index_array(values, dims["n_values"] ** dims["f"], name, ndim=2)


def multihead_retrieval_forward(
    params: dict[str, ArrayLike], keys: ArrayLike, values: ArrayLike, query: ArrayLike, *,
    attention: str = "softmax", window: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the multi-head soft dictionary: answer logits and every head's weights.

    Parameters
    ----------
    params : dict of array_like
        ``key_embed`` (n_keys, d), ``value_embed`` (n_symbols, n_values, d),
        ``query_embed`` (n_keys, d), ``w_q`` (d, h, d_head), ``w_k`` and ``w_v``
        (d, h_kv, d_head), ``w_out`` (h, d_head, n_symbols, n_values), ``b_out``
        (n_symbols, n_values); real and finite, with ``h_kv`` dividing ``h``. Other
        entries are ignored.
    keys : array_like of int, shape (B, n_pairs)
        Key indices ``0 <= key < n_keys``.
    values : array_like of int, shape (B, n_pairs)
        The stored values, each a code of ``n_symbols`` symbols from ``0`` to
        ``n_values - 1``, written as one number in base ``n_values`` (least
        significant symbol first): ``0 <= value < n_values**n_symbols``. With one
        symbol, a value is its symbol.
    query : array_like of int, shape (B,)
        The looked-up key (negative indices are refused, not wrapped around).
    attention : {"softmax", "linear"}, default "softmax"
        Softmax attention, or linear attention with :math:`\phi = \operatorname{elu} + 1`.
    window : int, optional
        Softmax only: the query sees only the last ``window`` pairs (the query's row of
        :func:`~attention_lib.sliding_window_mask` over the pairs and the query).

    Returns
    -------
    logits : numpy.ndarray, shape (B, n_symbols, n_values)
        The logits of each symbol of the answer.
    weights : numpy.ndarray, shape (B, h, n_pairs)
        Each query head's weights over the pairs (rows sum to one). For linear
        attention, :math:`\phi(q) \cdot \phi(k_j) / \sum_l \phi(q) \cdot \phi(k_l)`.

    Notes
    -----
    A stored pair is embedded as the key's row plus one row per symbol of its value,
    :math:`\mathbf x = E_{\text{key}}[k] + \sum_s E_{\text{value}}^{(s)}[c_s]`. Query head
    :math:`i` reads key/value head :math:`\lfloor i / g \rfloor`, :math:`g = h / h_{kv}`,
    as in :func:`~attention_lib.grouped_query_attention`:

    .. math::

        \text{logits} = \sum_{i=1}^{h} \operatorname{attend}\bigl(
        E_{\text{query}}[q] W_Q^{(i)},\, X W_K^{(\lfloor i/g \rfloor)},\,
        X W_V^{(\lfloor i/g \rfloor)}\bigr)\, W_{\text{out}}^{(i)}
        + \mathbf b_{\text{out}} .

    Examples
    --------
    >>> result = train_multihead_retrieval(seed=0, n_heads=4, n_kv_heads=2, steps=2)
    >>> logits, w = multihead_retrieval_forward(result.params, [[0, 1, 2]], [[5, 6, 7]], [1])
    >>> logits.shape, w.shape
    ((1, 1, 8), (1, 4, 3))
    """
    p, dims = _params(params)
    attention, window = _options(attention, window)
    keys = check.index_array(keys, dims["n_keys"], "keys", ndim=2)
    values = _codes(values, dims)
    query = check.index_array(query, dims["n_keys"], "query", ndim=1)
    if values.shape != keys.shape or query.shape != keys.shape[:1]:
        raise ValueError(f"keys {keys.shape}, values {values.shape}, query {query.shape}; "
                         "expected keys and values of shape (B, n_pairs) and query (B,)")
    logits, weights, _ = _forward(p, keys, values, query, attention, window)
    return logits, weights


def multihead_retrieval_loss_and_grads(
    params: dict[str, ArrayLike], data: RetrievalData, *, attention: str = "softmax",
    window: int | None = None,
) -> tuple[float, dict[str, np.ndarray]]:
    r"""Mean cross-entropy of the multi-head soft dictionary on ``data`` and its gradient.

    Parameters
    ----------
    params : dict of array_like
        As in :func:`~attention_lib.multihead_retrieval_forward`.
    data : RetrievalData
        Its values are codes below ``n_values**n_symbols``.
    attention : {"softmax", "linear"}, default "softmax"
    window : int, optional
        Softmax only, as in :func:`~attention_lib.multihead_retrieval_forward`.

    Returns
    -------
    loss : float
        The cross-entropy of each symbol of the answer, averaged over the symbols and
        the sequences.
    grads : dict of numpy.ndarray
        One gradient per parameter, same shapes.

    Notes
    -----
    The backward pass runs the read-out, then each group's attention backward with the
    group's query heads on an axis of their own and its key and value broadcast over it
    (so their gradients are summed over the group: the chain rule of the sharing), then
    the projections and the embedding rows. Softmax attention uses
    :func:`~attention_lib.attention_backward`; linear attention its kernelised form,
    with :math:`S = \sum_j \phi(k_j) v_j^{\mathsf T}`, :math:`u = \sum_j \phi(k_j)`,
    :math:`z = S^{\mathsf T} \phi(q) / \phi(q)^{\mathsf T} u` and
    :math:`r = \phi(q)^{\mathsf T} u`:

    .. math::

        d\phi(q) = \frac{S\, dz - (dz \cdot z)\, u}{r}, \quad
        dS = \frac{\phi(q)\, dz^{\mathsf T}}{r}, \quad
        du = -\frac{(dz \cdot z)\, \phi(q)}{r}, \quad
        d\phi(k_j) = dS\, v_j + du, \quad dv_j = dS^{\mathsf T} \phi(k_j),

    then :math:`dq = d\phi(q) \odot \phi'(q)` and :math:`dk = d\phi(k) \odot \phi'(k)`:
    no ``n x n`` array, like the forward pass.

    Examples
    --------
    >>> from attention_lib.training import make_retrieval_data
    >>> data = make_retrieval_data(4, rng=np.random.default_rng(0))
    >>> params = train_multihead_retrieval(seed=0, steps=1).initial_params
    >>> loss, grads = multihead_retrieval_loss_and_grads(params, data)
    >>> round(loss, 1), grads["w_k"].shape
    (2.1, (16, 4, 4))
    """
    p, dims = _params(params)
    attention, window = _options(attention, window)
    if not isinstance(data, RetrievalData):
        raise TypeError(f"data is a {type(data).__name__}; expected RetrievalData")
    _codes(data.values, dims, "data.values")
    check.index_array(data.keys, dims["n_keys"], "data.keys", ndim=2)
    check.index_array(data.query, dims["n_keys"], "data.query", ndim=1)
    _codes(data.answer[:, None], dims, "data.answer")
    return _loss_and_grads(p, data, attention, window)


def _loss_and_grads(p: dict[str, np.ndarray], data: RetrievalData, attention: str,
                    window: int | None) -> tuple[float, dict[str, np.ndarray]]:
    """:func:`multihead_retrieval_loss_and_grads` on checked inputs (the training loop's own)."""
    logits, _, (saved, rows) = _forward(p, data.keys, data.values, data.query, attention,
                                        window)
    f, c, d = p["value_embed"].shape
    labels = _digits(data.answer, f, c)  # (B, f)
    loss, d_logits = cross_entropy(logits, labels)
    grads, d_x_q, d_x_kv = readout_backward(p, d_logits.reshape(len(labels), 1, f * c), saved)
    grads["key_embed"] = embedding_backward(np.zeros_like(p["key_embed"]),
                                            p["key_embed"].shape, data.keys, d_x_kv)
    # a pair's gradient goes to the row of each of its symbols
    per_symbol = np.broadcast_to(d_x_kv[:, :, None, :], (*rows.shape, d))  # (B, n, f, d)
    grads["value_embed"] = embedding_backward(np.zeros_like(p["value_embed"]), (f * c, d),
                                              rows, per_symbol)
    grads["query_embed"] = embedding_backward(np.zeros_like(p["query_embed"]),
                                              p["query_embed"].shape, data.query, d_x_q)
    return loss, grads


def multihead_retrieval_task(
    *, n_heads: int = 4, n_kv_heads: int | None = None, d_head: int = 4,
    attention: str = "softmax", window: int | None = None, n_pairs: int = 6, n_keys: int = 8,
    n_values: int = 8, n_symbols: int = 1, d_model: int = 16,
) -> Task:
    r"""The multi-head soft dictionary as a :class:`~attention_lib.training.Task`.

    Parameters
    ----------
    n_heads : int, default 4
        Query heads ``h``.
    n_kv_heads : int, optional
        Key/value heads ``h_kv``, dividing ``n_heads``; defaults to ``n_heads``
        (multi-head attention). 1 is multi-query attention.
    d_head : int, default 4
        Size of each head's queries, keys and values.
    attention : {"softmax", "linear"}, default "softmax"
    window : int, optional
        Softmax only: the query sees only the last ``window`` pairs.
    n_pairs : int, default 6
        Stored pairs per sequence, at most ``n_keys``.
    n_keys : int, default 8
        Size of the key vocabulary.
    n_values : int, default 8
        Size of the symbol vocabulary of the values.
    n_symbols : int, default 1
        Symbols per stored value (a code such as a four-digit number has 4); the model
        answers every one of them.
    d_model : int, default 16
        Size of the embeddings.

    Returns
    -------
    Task
        Its ``evaluate`` gives the held-out accuracy (the fraction of answer symbols
        right) and the mean, over heads and sequences, of the weight on the pair the
        query names.

    Examples
    --------
    >>> task = multihead_retrieval_task(n_heads=4, n_kv_heads=1)
    >>> task.name, task.config["n_kv_heads"], task.config["attention"]
    ('multihead_retrieval', 1, 'softmax')
    """
    n_pairs, n_keys, n_values = _retrieval_sizes(n_pairs, n_keys, n_values)
    n_heads, d_head, d_model, n_symbols = check.positive_ints(n_heads=n_heads, d_head=d_head,
                                                        d_model=d_model, n_symbols=n_symbols)
    n_kv_heads = check.optional_positive_int(n_kv_heads, "n_kv_heads", n_heads)
    check.kv_group_size(n_heads, n_kv_heads, heads="n_heads", kv_heads="n_kv_heads")
    attention, window = _options(attention, window)
    n_codes = n_values**n_symbols
    sizes = dict(n_keys=n_keys, n_values=n_values, d=d_model, h=n_heads, h_kv=n_kv_heads,
                 e=d_head, f=n_symbols, he=n_heads * d_head, fc=n_symbols * n_values)
    # init_params draws a matrix from N(0, 1/rows) and a table from N(0, 1/d): the read-out
    # is drawn as one (h d_head, f c) matrix, the symbols' tables as one (f c, d) table.
    flat = _sized_shapes({**MULTIHEAD_SHAPES, "value_embed": ("fc", "d"),
                          "w_out": ("he", "fc"), "b_out": ("fc",)}, **sizes)
    shapes = _sized_shapes(MULTIHEAD_SHAPES, **sizes)

    make_data = retrieval_sampler(n_pairs, n_keys, n_codes)

    def init(rng: np.random.Generator) -> dict[str, np.ndarray]:
        params = init_params(flat, rng)
        return {name: params[name].reshape(shapes[name]) for name in shapes}

    def loss_and_grads(params, batch):  # the loop's own arrays: checked once, by init
        return _loss_and_grads(params, batch, attention, window)

    def evaluate(params, test: RetrievalData) -> tuple[float, float]:
        logits, weights = multihead_retrieval_forward(params, test.keys, test.values,
                                                      test.query, attention=attention,
                                                      window=window)
        right = logits.argmax(axis=-1) == _digits(test.answer, n_symbols, n_values)  # (B, f)
        on_target = weights[np.arange(len(test)), :, test.target]  # (B, h)
        return float(right.mean()), float(on_target.mean())

    config = dict(n_pairs=n_pairs, n_keys=n_keys, n_values=n_values, n_symbols=n_symbols,
                  d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, d_head=d_head,
                  attention=attention, window=window)
    n_distinct = math.perm(n_keys, n_pairs) * n_codes**n_pairs * n_pairs
    return Task("multihead_retrieval", config, n_distinct, make_data, init, loss_and_grads,
                evaluate)


def train_multihead_retrieval(
    *, seed: int = 0, n_heads: int = 4, n_kv_heads: int | None = None, d_head: int = 4,
    attention: str = "softmax", window: int | None = None, n_pairs: int = 6, n_keys: int = 8,
    n_values: int = 8, n_symbols: int = 1, d_model: int = 16, steps: int = 1500,
    batch_size: int = 64, lr: float = 0.02, n_train: int = 4000, n_test: int = 1000,
) -> TrainingResult:
    r"""Train the multi-head soft dictionary (query heads sharing key/value heads) from ``seed``.

    Parameters
    ----------
    seed : int, default 0
        A non-negative integer; seeds the data, the initial weights and the minibatches.
    n_heads, n_kv_heads, d_head : int
        Query heads, key/value heads (default ``n_heads``; must divide it) and the size
        of each head's queries, keys and values.
    attention : {"softmax", "linear"}, default "softmax"
    window : int, optional
        Softmax only: the query sees only the last ``window`` pairs.
    n_pairs, n_keys, n_values, n_symbols, d_model : int
        As in :func:`~attention_lib.training.multihead_retrieval_task`.
    steps, batch_size, lr, n_train, n_test
        As in :func:`~attention_lib.training.train`.

    Returns
    -------
    TrainingResult
        ``accuracy``, the fraction of answer symbols right on the held-out sequences,
        and ``target_weight``, the mean weight of the query heads on the pair the query
        names.

    Notes
    -----
    This is :func:`~attention_lib.training.train` on
    :func:`~attention_lib.training.multihead_retrieval_task`. With ``n_heads=1``,
    ``d_head=d_model``, one symbol and softmax attention the model is chapter 10's
    :func:`~attention_lib.train_retrieval` (with its own initial weights). A decoder
    would cache ``2 n_kv_heads d_head`` numbers per token: all the model keeps of a
    stored pair is its key and value there.

    Examples
    --------
    >>> result = train_multihead_retrieval(seed=0, n_heads=4, n_kv_heads=1)
    >>> result.accuracy > 0.9, result.params["w_k"].shape
    (True, (16, 1, 4))
    """
    task = multihead_retrieval_task(n_heads=n_heads, n_kv_heads=n_kv_heads, d_head=d_head,
                                    attention=attention, window=window, n_pairs=n_pairs,
                                    n_keys=n_keys, n_values=n_values, n_symbols=n_symbols,
                                    d_model=d_model)
    return train(task, seed=seed, steps=steps, batch_size=batch_size, lr=lr, n_train=n_train,
                 n_test=n_test)
