r"""The soft dictionary: a query looks up the value stored with a key (content decides).

A sequence stores ``n_pairs`` (key, value) pairs, one per position, with distinct
keys; its embedding is ``key_embed[key] + value_embed[value]``. A final query
token names one of the stored keys (embedding ``query_embed[key]``) and the
answer is the value stored with it. The query attends over the pairs:

.. math::

    \mathbf q = \mathbf x_{\text{query}} W_Q, \quad K = X W_K, \quad V = X W_V, \quad
    \mathbf z = \operatorname{softmax}\bigl(\mathbf q K^{\mathsf T}/\sqrt{d_k}\bigr) V, \quad
    \text{logits} = \mathbf z W_{\text{out}} + \mathbf b_{\text{out}} .
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_flag, index_array, positive_ints, weight_arrays
from ..model.layers import embedding_backward
from ..model.loss import cross_entropy
from ..model.readout import readout_backward, readout_forward
from .data import RetrievalData, _retrieval_sizes, make_retrieval_data
from .loop import Task, TrainingResult, _sized_shapes, init_params, train

__all__ = ["retrieval_forward", "retrieval_loss_and_grads", "retrieval_task", "train_retrieval"]

RETRIEVAL_SHAPES = {"key_embed": ("n_keys", "d"), "value_embed": ("n_values", "d"),
                    "query_embed": ("n_keys", "d"), "w_q": ("d", "d_k"), "w_k": ("d", "d_k"),
                    "w_v": ("d", "d_v"), "w_out": ("d_v", "n_values"), "b_out": ("n_values",)}
RETRIEVAL_PARAMS = tuple(RETRIEVAL_SHAPES)


def _params(params: Any) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    return weight_arrays(params, RETRIEVAL_SHAPES, "params", extra="ignore")


def _inputs(p: dict[str, np.ndarray], keys: np.ndarray, values: np.ndarray,
            query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs' inputs (B, n, d) and the query's (B, 1, d)."""
    x_kv = p["key_embed"][keys] + p["value_embed"][values]  # (B, n_pairs, d)
    x_q = p["query_embed"][query][:, None, :]  # (B, d) -> (B, 1, d)
    return x_q, x_kv


def retrieval_forward(
    params: dict[str, ArrayLike], keys: ArrayLike, values: ArrayLike, query: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the soft-dictionary model: answer logits and the query's attention weights.

    Parameters
    ----------
    params : dict of array_like
        ``key_embed`` (n_keys, d), ``value_embed`` (n_values, d), ``query_embed``
        (n_keys, d), ``w_q``, ``w_k`` (d, d_k), ``w_v`` (d, d_v), ``w_out``
        (d_v, n_values), ``b_out`` (n_values,); real and finite. Other entries are ignored.
    keys, values : array_like of int, shape (B, n_pairs)
        Key indices ``0 <= key < n_keys`` and value indices ``0 <= value < n_values``.
    query : array_like of int, shape (B,)
        The looked-up key, ``0 <= query < n_keys``. Negative indices are refused, not
        wrapped around.

    Returns
    -------
    logits : numpy.ndarray, shape (B, n_values)
    weights : numpy.ndarray, shape (B, n_pairs)
        Attention of the query over the stored pairs; rows sum to one.

    Notes
    -----
    .. math::

        X = E_{\text{key}}[\text{keys}] + E_{\text{value}}[\text{values}], \quad
        \mathbf a = \operatorname{softmax}\bigl(E_{\text{query}}[q] W_Q (X W_K)^{\mathsf T}
        / \sqrt{d_k}\bigr), \quad
        \text{logits} = \mathbf a X W_V W_{\text{out}} + \mathbf b_{\text{out}} .

    Examples
    --------
    >>> result = train_retrieval(seed=0, steps=5)
    >>> logits, w = retrieval_forward(result.params, [[0, 1, 2]], [[5, 6, 7]], [1])
    >>> logits.shape, w.shape
    ((1, 8), (1, 3))
    """
    p, dims = _params(params)
    keys = index_array(keys, dims["n_keys"], "keys", ndim=2)
    values = index_array(values, dims["n_values"], "values", ndim=2)
    query = index_array(query, dims["n_keys"], "query", ndim=1)
    if values.shape != keys.shape or query.shape != keys.shape[:1]:
        raise ValueError(f"keys {keys.shape}, values {values.shape}, query {query.shape}; "
                         "expected keys and values of shape (B, n_pairs) and query (B,)")
    x_q, x_kv = _inputs(p, keys, values, query)
    logits, weights, _ = readout_forward(p, x_q, x_kv)  # (B, 1, c), (B, 1, 1, n)
    return logits[:, 0], weights[:, 0, 0]  # (B, c), (B, n)


def retrieval_loss_and_grads(
    params: dict[str, ArrayLike], data: RetrievalData
) -> tuple[float, dict[str, np.ndarray]]:
    r"""Mean cross-entropy of the soft-dictionary model on ``data`` and its gradient.

    Parameters
    ----------
    params : dict of array_like
        As in :func:`~attention_lib.retrieval_forward`.
    data : RetrievalData

    Returns
    -------
    loss : float
    grads : dict of numpy.ndarray
        One gradient per parameter, same shapes.

    Notes
    -----
    .. math:: L = -\frac1B \sum_b \log \operatorname{softmax}(\text{logits}_b)_{a_b}

    with :math:`a_b` the answer of sequence :math:`b`;
    the backward pass is the read-out, then
    :func:`~attention_lib.attention_backward`, then the projections, then the
    embedding rows that were used (summed where a row is used more than once).

    Examples
    --------
    >>> data = make_retrieval_data(4, rng=np.random.default_rng(0))
    >>> params = train_retrieval(seed=0, steps=1).initial_params
    >>> loss, grads = retrieval_loss_and_grads(params, data)
    >>> round(loss, 1), grads["w_q"].shape
    (2.1, (16, 16))
    """
    p, dims = _params(params)
    if not isinstance(data, RetrievalData):
        raise TypeError(f"data is a {type(data).__name__}; expected RetrievalData")
    _check_data(data, dims)
    x_q, x_kv = _inputs(p, data.keys, data.values, data.query)  # (B, 1, d), (B, n, d)
    logits, _, saved = readout_forward(p, x_q, x_kv)  # (B, 1, c)
    loss, d_logits = cross_entropy(logits, data.answer[:, None])  # labels (B, 1)
    grads, d_x_q, d_x_kv = readout_backward(p, d_logits, saved)
    for name, ids, d_rows in (("key_embed", data.keys, d_x_kv),
                              ("value_embed", data.values, d_x_kv),
                              ("query_embed", data.query, d_x_q)):
        grads[name] = embedding_backward(np.zeros_like(p[name]), p[name].shape, ids, d_rows)
    return loss, grads


def _check_data(data: RetrievalData, dims: dict[str, int], n_values: int | None = None) -> None:
    """The ids of ``data`` checked against the model's tables (never wrapped around)."""
    n_values = dims["n_values"] if n_values is None else n_values
    index_array(data.keys, dims["n_keys"], "data.keys", ndim=2)
    index_array(data.query, dims["n_keys"], "data.query", ndim=1)
    index_array(data.values, n_values, "data.values", ndim=2)
    index_array(data.answer, n_values, "data.answer", ndim=1)


def retrieval_sampler(n_pairs: int, n_keys: int, n_values: int
                      ) -> Callable[[int, np.random.Generator], RetrievalData]:
    """A task's ``make_data``: ``n`` soft-dictionary sequences of these sizes from ``rng``."""
    return functools.partial(_draw, n_pairs=n_pairs, n_keys=n_keys, n_values=n_values)


def _draw(n: int, rng: np.random.Generator, **sizes: int) -> RetrievalData:
    return make_retrieval_data(n, rng=rng, **sizes)


def retrieval_task(
    *, n_pairs: int = 6, n_keys: int = 8, n_values: int = 8, d_model: int = 16, d_k: int = 16,
    tie_kv: bool = False,
) -> Task:
    r"""The soft dictionary as a :class:`~attention_lib.training.Task` for the training loop.

    Parameters
    ----------
    n_pairs : int, default 6
        Stored (key, value) pairs per sequence, at most ``n_keys``.
    n_keys, n_values : int, default 8
        Vocabulary sizes (keys are named ``a, b, ...``, so at most 26 of them).
    d_model, d_k : int, default 16
        Size of the embeddings, and of the queries, keys and values.
    tie_kv : bool, default False
        Use one matrix for keys and values: ``w_v`` starts equal to ``w_k`` and both
        take the sum of their gradients, so :math:`W_V = W_K` throughout training.

    Returns
    -------
    Task

    Examples
    --------
    >>> task = retrieval_task(n_pairs=2, n_keys=3, n_values=2)
    >>> task.name, task.n_distinct  # 3 * 2 key orders, 2**2 values, 2 queried positions
    ('retrieval', 48)
    """
    n_pairs, n_keys, n_values = _retrieval_sizes(n_pairs, n_keys, n_values)
    d_model, d_k = positive_ints(d_model=d_model, d_k=d_k)
    tie_kv = check_flag(tie_kv, "tie_kv")
    if n_keys > len(string.ascii_lowercase):
        raise ValueError(f"n_keys={n_keys}; expected at most 26 (keys are named a-z)")
    shapes = _sized_shapes(RETRIEVAL_SHAPES, n_keys=n_keys, n_values=n_values, d=d_model,
                          d_k=d_k, d_v=d_k)

    make_data = retrieval_sampler(n_pairs, n_keys, n_values)

    def init(rng: np.random.Generator) -> dict[str, np.ndarray]:
        params = init_params(shapes, rng)
        if tie_kv:
            params["w_v"] = params["w_k"].copy()
        return params

    def loss_and_grads(params, batch):
        loss, grads = retrieval_loss_and_grads(params, batch)
        if tie_kv:  # one matrix used twice: its gradient is the sum of both uses
            grads["w_k"] = grads["w_v"] = grads["w_k"] + grads["w_v"]
        return loss, grads

    def evaluate(params, test: RetrievalData) -> tuple[float, float]:
        logits, weights = retrieval_forward(params, test.keys, test.values, test.query)
        accuracy = float(np.mean(logits.argmax(axis=-1) == test.answer))
        target_weight = float(np.mean(weights[np.arange(len(test)), test.target]))
        return accuracy, target_weight

    config = dict(n_pairs=n_pairs, n_keys=n_keys, n_values=n_values, d_model=d_model, d_k=d_k,
                  tie_kv=tie_kv)
    n_distinct = math.perm(n_keys, n_pairs) * n_values**n_pairs * n_pairs
    return Task("retrieval", config, n_distinct, make_data, init, loss_and_grads, evaluate)


def train_retrieval(
    *, seed: int = 0, n_pairs: int = 6, n_keys: int = 8, n_values: int = 8, d_model: int = 16,
    d_k: int = 16, steps: int = 1500, batch_size: int = 64, lr: float = 0.02,
    n_train: int = 4000, n_test: int = 1000, tie_kv: bool = False,
) -> TrainingResult:
    r"""Build the soft-dictionary data from ``seed``, train the one-head model, evaluate it.

    Parameters
    ----------
    seed : int, default 0
        A non-negative integer; seeds the data, the initial weights and the minibatches.
    n_pairs : int, default 6
        Stored (key, value) pairs per sequence.
    n_keys, n_values : int, default 8
        Vocabulary sizes (keys are named ``a, b, ...``, values ``0, 1, ...``).
    d_model, d_k : int, default 16
        Size of the embeddings, and of the queries, keys and values.
    steps, batch_size, lr : int, int, float
        Adam steps, sequences per minibatch, learning rate (a finite number > 0).
    n_train, n_test : int
        Training sequences, and held-out sequences drawn apart (any that
        happens to equal a training sequence is dropped).
    tie_kv : bool, default False
        Train with :math:`W_V = W_K` (one matrix for keys and values), as in
        :func:`~attention_lib.training.retrieval_task`.

    Returns
    -------
    TrainingResult
        ``accuracy`` and ``target_weight`` measured on the held-out sequences.

    Notes
    -----
    This is :func:`~attention_lib.training.train` on
    :func:`~attention_lib.training.retrieval_task`. The loss is the cross-entropy of the
    answer; the gradient comes from :func:`~attention_lib.training.retrieval_loss_and_grads`.
    ``target_weight`` is the mean of :math:`a_{b,\,\text{target}_b}`, the attention weight
    of the query on the pair it names.

    Examples
    --------
    >>> result = train_retrieval(seed=0)
    >>> result.accuracy >= 0.95, result.target_weight >= 0.9
    (True, True)
    """
    task = retrieval_task(n_pairs=n_pairs, n_keys=n_keys, n_values=n_values, d_model=d_model,
                          d_k=d_k, tie_kv=tie_kv)
    return train(task, seed=seed, steps=steps, batch_size=batch_size, lr=lr, n_train=n_train,
                 n_test=n_test)
