r"""Tiny attention models trained in numpy: a learned soft dictionary and a copy-from-behind task.

Both models are one attention head and a linear read-out, trained by Adam on
the gradients of :func:`~attention_lib.attention_backward` and the chain rule
through the projections, embeddings and read-out. Everything is float64 and
seeded, so a run is reproducible.

Dimension letters used in the shape comments:

- ``B``        number of sequences in a batch
- ``n``        positions a query can attend to (the stored pairs, or the tokens)
- ``t``        number of queries per sequence (1 for retrieval, ``n`` for the shift task)
- ``d``        size of a token representation (``d_model``)
- ``d_k``      size of a query or key; ``d_v`` size of a value
- ``c``        number of classes of the read-out (values, or tokens)

**Retrieval (content decides).** A sequence stores ``n_pairs`` (key, value)
pairs, one per position, with distinct keys; its embedding is
``key_embed[key] + value_embed[value]``. A final query token names one of the
stored keys (embedding ``query_embed[key]``) and the answer is the value
stored with it. The query attends over the pairs:

.. math::

    \mathbf q = \mathbf x_{\text{query}} W_Q, \quad K = X W_K, \quad V = X W_V, \quad
    \mathbf z = \operatorname{softmax}\bigl(\mathbf q K^{\mathsf T}/\sqrt{d_k}\bigr) V, \quad
    \text{logits} = \mathbf z W_{\text{out}} + \mathbf b_{\text{out}} .

**Shift (position decides).** A sequence of random tokens, each embedded as
``token_embed[token] + PE(position)`` with the fixed sinusoidal positions of
:func:`~attention_lib.sinusoidal_positions`; causal self-attention; at every
position ``p >= shift`` the model must output the token at ``p - shift``.
"""

from __future__ import annotations

import json
import math
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._validation import positive_int
from .attention import scaled_dot_product_attention
from .gradients import attention_backward
from .positions import sinusoidal_positions

__all__ = [
    "Adam",
    "RetrievalData",
    "ShiftData",
    "TrainingResult",
    "export_retrieval_model",
    "load_retrieval_model",
    "make_retrieval_data",
    "make_shift_data",
    "retrieval_forward",
    "retrieval_loss_and_grads",
    "shift_forward",
    "shift_loss_and_grads",
    "train_retrieval",
    "train_shift",
]

EXPORT_FORMAT = "attention-book/retrieval-model/1"
RETRIEVAL_PARAMS = ("key_embed", "value_embed", "query_embed", "w_q", "w_k", "w_v",
                    "w_out", "b_out")
SHIFT_PARAMS = ("token_embed", "w_q", "w_k", "w_v", "w_out", "b_out")


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class RetrievalData:
    """A batch of soft-dictionary sequences (all arrays of int64).

    Attributes
    ----------
    keys : numpy.ndarray, shape (B, n_pairs)
        The stored keys of each sequence, distinct within a sequence.
    values : numpy.ndarray, shape (B, n_pairs)
        The value stored with each key.
    query : numpy.ndarray, shape (B,)
        The key the final query token names (one of the stored keys).
    target : numpy.ndarray, shape (B,)
        The position of the queried pair.
    answer : numpy.ndarray, shape (B,)
        The value to output, ``values[b, target[b]]``.
    """

    keys: np.ndarray
    values: np.ndarray
    query: np.ndarray
    target: np.ndarray
    answer: np.ndarray

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def subset(self, index: ArrayLike) -> RetrievalData:
        """The sequences at ``index`` (an integer array or a boolean mask)."""
        return RetrievalData(self.keys[index], self.values[index], self.query[index],
                             self.target[index], self.answer[index])


def make_retrieval_data(
    n_sequences: int,
    *,
    n_pairs: int = 6,
    n_keys: int = 8,
    n_values: int = 8,
    rng: np.random.Generator,
) -> RetrievalData:
    r"""Draw random soft-dictionary sequences.

    Parameters
    ----------
    n_sequences : int
    n_pairs : int, default 6
        Pairs stored per sequence (at most ``n_keys``, since keys are distinct).
    n_keys, n_values : int, default 8
        Sizes of the key and value vocabularies.
    rng : numpy.random.Generator

    Returns
    -------
    RetrievalData
        Arrays of shape (n_sequences, n_pairs) and (n_sequences,).

    Notes
    -----
    Keys are drawn without replacement within a sequence, values with
    replacement, the queried position uniformly:
    :math:`\text{answer}_b = \text{values}_{b,\,\text{target}_b}`.

    Examples
    --------
    >>> data = make_retrieval_data(2, n_pairs=3, rng=np.random.default_rng(0))
    >>> data.keys.shape, data.query.shape
    ((2, 3), (2,))
    >>> bool(np.all(data.keys[np.arange(2), data.target] == data.query))
    True
    """
    n_sequences = positive_int(n_sequences, "n_sequences")
    n_pairs = positive_int(n_pairs, "n_pairs")
    n_keys = positive_int(n_keys, "n_keys")
    n_values = positive_int(n_values, "n_values")
    if n_pairs > n_keys:
        raise ValueError(f"n_pairs={n_pairs} > n_keys={n_keys}; expected n_pairs <= n_keys, "
                         "since the keys of a sequence are distinct")
    keys = np.argsort(rng.random((n_sequences, n_keys)), axis=1)[:, :n_pairs]  # (B, n_pairs)
    values = rng.integers(0, n_values, size=(n_sequences, n_pairs))  # (B, n_pairs)
    target = rng.integers(0, n_pairs, size=n_sequences)  # (B,)
    rows = np.arange(n_sequences)
    return RetrievalData(keys.astype(np.int64), values.astype(np.int64),
                         keys[rows, target].astype(np.int64), target.astype(np.int64),
                         values[rows, target].astype(np.int64))


@dataclass(frozen=True)
class ShiftData:
    """A batch of token sequences for the shift task (int64).

    Attributes
    ----------
    tokens : numpy.ndarray, shape (B, n)
    shift : int
        Position ``p`` must output ``tokens[:, p - shift]`` (for ``p >= shift``).
    """

    tokens: np.ndarray
    shift: int

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def subset(self, index: ArrayLike) -> ShiftData:
        """The sequences at ``index``."""
        return ShiftData(self.tokens[index], self.shift)


def make_shift_data(
    n_sequences: int, *, length: int = 10, n_tokens: int = 8, shift: int = 2,
    rng: np.random.Generator,
) -> ShiftData:
    """Draw uniformly random token sequences for the shift task.

    Parameters
    ----------
    n_sequences : int
    length : int, default 10
        Tokens per sequence; must exceed ``shift``.
    n_tokens : int, default 8
        Vocabulary size.
    shift : int, default 2
    rng : numpy.random.Generator

    Returns
    -------
    ShiftData
        ``tokens`` of shape (n_sequences, length).

    Examples
    --------
    >>> make_shift_data(3, length=5, rng=np.random.default_rng(0)).tokens.shape
    (3, 5)
    """
    n_sequences = positive_int(n_sequences, "n_sequences")
    length = positive_int(length, "length")
    n_tokens = positive_int(n_tokens, "n_tokens")
    shift = positive_int(shift, "shift")
    if shift >= length:
        raise ValueError(f"shift={shift} >= length={length}; expected shift < length")
    tokens = rng.integers(0, n_tokens, size=(n_sequences, length)).astype(np.int64)
    return ShiftData(tokens, shift)


# --------------------------------------------------------------------------- the shared head


def _head_forward(
    params: dict[str, np.ndarray], x_q: np.ndarray, x_kv: np.ndarray, causal: bool
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """One attention head and a read-out: logits (B, t, c), weights (B, t, n), cache."""
    q = x_q @ params["w_q"]  # (B, t, d) @ (d, d_k) -> (B, t, d_k)
    k = x_kv @ params["w_k"]  # (B, n, d_k)
    v = x_kv @ params["w_v"]  # (B, n, d_v)
    z, weights = scaled_dot_product_attention(q, k, v, causal=causal)  # (B, t, d_v), (B, t, n)
    logits = z @ params["w_out"] + params["b_out"]  # (B, t, c)
    cache = {"x_q": x_q, "x_kv": x_kv, "q": q, "k": k, "v": v, "z": z}
    return logits, weights, cache


def _cross_entropy(
    logits: np.ndarray, labels: np.ndarray, valid: np.ndarray
) -> tuple[float, np.ndarray]:
    """Mean cross-entropy over the valid entries and its gradient with respect to the logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (B, t, c)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (B, t, c)
    count = int(valid.sum())
    picked = np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]  # (B, t)
    loss = -float(picked[valid].sum()) / count
    d_logits = np.exp(log_p)  # softmax, (B, t, c)
    np.put_along_axis(d_logits, labels[..., None],
                      np.take_along_axis(d_logits, labels[..., None], axis=-1) - 1.0, axis=-1)
    d_logits *= valid[..., None] / count
    return loss, d_logits


def _head_backward(
    params: dict[str, np.ndarray], cache: dict[str, np.ndarray], d_logits: np.ndarray,
    causal: bool,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Gradients of the head's weights, and of its two inputs x_q (B, t, d) and x_kv (B, n, d)."""
    z = cache["z"]
    grads = {
        "w_out": np.einsum("btv,btc->vc", z, d_logits),  # (d_v, c)
        "b_out": d_logits.sum(axis=(0, 1)),  # (c,)
    }
    d_z = d_logits @ params["w_out"].T  # (B, t, c) @ (c, d_v) -> (B, t, d_v)
    d_q, d_k, d_v = attention_backward(cache["q"], cache["k"], cache["v"], d_z, causal=causal)
    grads["w_q"] = np.einsum("btd,bte->de", cache["x_q"], d_q)  # (d, d_k)
    grads["w_k"] = np.einsum("bnd,bne->de", cache["x_kv"], d_k)  # (d, d_k)
    grads["w_v"] = np.einsum("bnd,bne->de", cache["x_kv"], d_v)  # (d, d_v)
    d_x_q = d_q @ params["w_q"].T  # (B, t, d)
    d_x_kv = d_k @ params["w_k"].T + d_v @ params["w_v"].T  # (B, n, d)
    return grads, d_x_q, d_x_kv


def _scatter(table_shape: tuple[int, ...], index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Sum the gradient ``rows`` (..., d) into a table of ``table_shape`` at ``index`` (...)."""
    grad = np.zeros(table_shape)
    np.add.at(grad, index.reshape(-1), rows.reshape(-1, table_shape[1]))  # (B*n, d) rows
    return grad


def _check_params(params: dict[str, Any], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not isinstance(params, dict):
        raise TypeError(f"params has type {type(params).__name__}; expected a dict of arrays")
    missing = [name for name in names if name not in params]
    if missing:
        raise ValueError(f"params lacks {missing}; expected the arrays {list(names)}")
    return {name: np.asarray(params[name], dtype=np.float64) for name in names}


# --------------------------------------------------------------------------- retrieval model


def retrieval_forward(
    params: dict[str, ArrayLike], keys: ArrayLike, values: ArrayLike, query: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the soft-dictionary model: answer logits and the query's attention weights.

    Parameters
    ----------
    params : dict of array_like
        ``key_embed`` (n_keys, d), ``value_embed`` (n_values, d), ``query_embed``
        (n_keys, d), ``w_q``, ``w_k`` (d, d_k), ``w_v`` (d, d_v), ``w_out``
        (d_v, n_values), ``b_out`` (n_values,).
    keys, values : array_like of int, shape (B, n_pairs)
    query : array_like of int, shape (B,)

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
    p = _check_params(params, RETRIEVAL_PARAMS)
    keys = np.asarray(keys)
    values = np.asarray(values)
    query = np.asarray(query)
    if keys.ndim != 2 or values.shape != keys.shape or query.shape != keys.shape[:1]:
        raise ValueError(f"keys {keys.shape}, values {values.shape}, query {query.shape}; "
                         "expected keys and values of shape (B, n_pairs) and query (B,)")
    x_kv = p["key_embed"][keys] + p["value_embed"][values]  # (B, n_pairs, d)
    x_q = p["query_embed"][query][:, None, :]  # (B, d) -> (B, 1, d)
    logits, weights, _ = _head_forward(p, x_q, x_kv, causal=False)
    return logits[:, 0], weights[:, 0]  # (B, 1, c) -> (B, c), (B, 1, n) -> (B, n)


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
    p = _check_params(params, RETRIEVAL_PARAMS)
    x_kv = p["key_embed"][data.keys] + p["value_embed"][data.values]  # (B, n, d)
    x_q = p["query_embed"][data.query][:, None, :]  # (B, 1, d)
    logits, _, cache = _head_forward(p, x_q, x_kv, causal=False)  # (B, 1, c)
    labels = data.answer[:, None]  # (B, 1)
    loss, d_logits = _cross_entropy(logits, labels, np.ones(labels.shape, dtype=bool))
    grads, d_x_q, d_x_kv = _head_backward(p, cache, d_logits, causal=False)
    grads["key_embed"] = _scatter(p["key_embed"].shape, data.keys, d_x_kv)
    grads["value_embed"] = _scatter(p["value_embed"].shape, data.values, d_x_kv)
    grads["query_embed"] = _scatter(p["query_embed"].shape, data.query, d_x_q)
    return loss, grads


# --------------------------------------------------------------------------- shift model


def shift_forward(
    params: dict[str, ArrayLike], tokens: ArrayLike, *, base: float = 10000.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the shift model: logits at every position and the causal attention weights.

    Parameters
    ----------
    params : dict of array_like
        ``token_embed`` (n_tokens, d), ``w_q``, ``w_k`` (d, d_k), ``w_v`` (d, d_v),
        ``w_out`` (d_v, n_tokens), ``b_out`` (n_tokens,).
    tokens : array_like of int, shape (B, n)
    base : float, default 10000.0
        Base of the sinusoidal positions.

    Returns
    -------
    logits : numpy.ndarray, shape (B, n, n_tokens)
    weights : numpy.ndarray, shape (B, n, n)
        Causal attention weights (zero above the diagonal).

    Notes
    -----
    .. math::

        X = E[\text{tokens}] + PE, \quad
        A = \operatorname{softmax}\bigl(X W_Q (X W_K)^{\mathsf T}/\sqrt{d_k} + M\bigr), \quad
        \text{logits} = A X W_V W_{\text{out}} + \mathbf b_{\text{out}},

    with :math:`M` the causal mask.

    Examples
    --------
    >>> params = train_shift(seed=0, steps=1).initial_params
    >>> logits, w = shift_forward(params, [[1, 2, 3, 4]])
    >>> logits.shape, w.shape
    ((1, 4, 8), (1, 4, 4))
    """
    p = _check_params(params, SHIFT_PARAMS)
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens has shape {tokens.shape}; expected (B, n)")
    d = p["token_embed"].shape[1]
    x = p["token_embed"][tokens] + sinusoidal_positions(tokens.shape[1], d, base=base)  # (B,n,d)
    logits, weights, _ = _head_forward(p, x, x, causal=True)
    return logits, weights


def shift_loss_and_grads(
    params: dict[str, ArrayLike], data: ShiftData, *, base: float = 10000.0
) -> tuple[float, dict[str, np.ndarray]]:
    r"""Mean cross-entropy of the shift model over the positions ``p >= shift``, and its gradient.

    Parameters
    ----------
    params : dict of array_like
        As in :func:`~attention_lib.shift_forward`.
    data : ShiftData
    base : float, default 10000.0

    Returns
    -------
    loss : float
    grads : dict of numpy.ndarray

    Notes
    -----
    The label at position :math:`p` is the token at :math:`p - \text{shift}`;
    the first ``shift`` positions have no label and do not count. The token
    embedding gets the gradient of both the query side and the key/value side,
    since both are the same :math:`X`.

    Examples
    --------
    >>> data = make_shift_data(4, rng=np.random.default_rng(0))
    >>> params = train_shift(seed=0, steps=1).initial_params
    >>> loss, grads = shift_loss_and_grads(params, data)
    >>> grads["token_embed"].shape
    (8, 16)
    """
    p = _check_params(params, SHIFT_PARAMS)
    tokens = data.tokens
    n = tokens.shape[1]
    d = p["token_embed"].shape[1]
    x = p["token_embed"][tokens] + sinusoidal_positions(n, d, base=base)  # (B, n, d)
    logits, _, cache = _head_forward(p, x, x, causal=True)  # (B, n, c)
    labels = np.zeros_like(tokens)
    labels[:, data.shift:] = tokens[:, : n - data.shift]  # (B, n)
    valid = np.zeros(tokens.shape, dtype=bool)
    valid[:, data.shift:] = True
    loss, d_logits = _cross_entropy(logits, labels, valid)
    grads, d_x_q, d_x_kv = _head_backward(p, cache, d_logits, causal=True)
    grads["token_embed"] = _scatter(p["token_embed"].shape, tokens, d_x_q + d_x_kv)
    return loss, grads


# --------------------------------------------------------------------------- training


class Adam:
    r"""The Adam optimiser (Kingma & Ba, 2015) over a dict of float64 arrays.

    Parameters
    ----------
    params : dict of numpy.ndarray
        Updated in place by :meth:`step`.
    lr : float, default 0.01
    betas : tuple of float, default (0.9, 0.999)
    eps : float, default 1e-8

    Notes
    -----
    For each parameter :math:`\theta` with gradient :math:`g` at step :math:`t`:

    .. math::

        m \leftarrow \beta_1 m + (1-\beta_1) g, \quad
        v \leftarrow \beta_2 v + (1-\beta_2) g^2, \quad
        \theta \leftarrow \theta - \text{lr}\,
        \frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \varepsilon}.

    Examples
    --------
    >>> params = {"x": np.array([1.0, -2.0])}
    >>> opt = Adam(params, lr=0.1)
    >>> opt.step({"x": np.array([3.0, -0.5])})  # the first step moves each entry by lr
    >>> params["x"]
    array([ 0.9, -1.9])
    """

    def __init__(self, params: dict[str, np.ndarray], lr: float = 0.01,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        if not (isinstance(lr, int | float) and lr > 0 and math.isfinite(lr)):
            raise ValueError(f"lr={lr!r}; expected a positive learning rate")
        if not (len(betas) == 2 and all(0.0 <= b < 1.0 for b in betas)):
            raise ValueError(f"betas={betas!r}; expected two numbers in [0, 1)")
        self.params, self.lr, self.betas, self.eps = params, float(lr), betas, float(eps)
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads: dict[str, np.ndarray]) -> None:
        """Update every parameter in place from its gradient."""
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1.0 - b1**self.t, 1.0 - b2**self.t
        for name, theta in self.params.items():
            g = grads[name]
            self.m[name] = b1 * self.m[name] + (1.0 - b1) * g
            self.v[name] = b2 * self.v[name] + (1.0 - b2) * g * g
            theta -= self.lr * (self.m[name] / c1) / (np.sqrt(self.v[name] / c2) + self.eps)


@dataclass
class TrainingResult:
    """What a training run returns.

    Attributes
    ----------
    task : str
        ``"retrieval"`` or ``"shift"``.
    params, initial_params : dict of numpy.ndarray
        The trained weights and the weights before the first step.
    losses : numpy.ndarray, shape (steps,)
        Training loss (mean cross-entropy of each minibatch) before each step.
    accuracy : float
        Fraction of held-out answers the trained model gets right.
    target_weight : float
        Mean attention weight on the correct position over the held-out answers.
    test : RetrievalData or ShiftData
        The held-out sequences (none of them occurs in the training set).
    config : dict
        Every setting of the run (seed, sizes, steps, learning rate, ...).
    seconds : float
        Wall-clock training time (varies with the machine; not part of the result).
    """

    task: str
    params: dict[str, np.ndarray]
    initial_params: dict[str, np.ndarray]
    losses: np.ndarray
    accuracy: float
    target_weight: float
    test: Any
    config: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def _init(shapes: dict[str, tuple[int, ...]], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Weights from N(0, 1/fan_in) (biases zero; embeddings N(0, 1/d))."""
    params = {}
    for name, shape in shapes.items():
        if name.startswith("b_"):
            params[name] = np.zeros(shape)
        else:
            fan = shape[1] if name.endswith("embed") else shape[0]
            params[name] = rng.normal(0.0, 1.0 / math.sqrt(fan), size=shape)
    return params


def _unseen(test_rows: np.ndarray, train_rows: np.ndarray) -> np.ndarray:
    """Boolean mask of the test rows (2-D int arrays) that do not occur among the train rows."""
    seen = {row.tobytes() for row in np.ascontiguousarray(train_rows)}
    return np.array([row.tobytes() not in seen for row in np.ascontiguousarray(test_rows)])


def _train(loss_and_grads, params, train_data, *, steps, batch_size, lr, rng):
    """Adam on random minibatches of ``train_data``: returns the per-step losses."""
    opt = Adam(params, lr=lr)
    losses = np.empty(steps)
    for step in range(steps):
        batch = train_data.subset(rng.integers(0, len(train_data), size=batch_size))
        losses[step], grads = loss_and_grads(params, batch)
        opt.step(grads)
    return losses


def train_retrieval(
    *,
    seed: int = 0,
    n_pairs: int = 6,
    n_keys: int = 8,
    n_values: int = 8,
    d_model: int = 16,
    d_k: int = 16,
    steps: int = 1500,
    batch_size: int = 64,
    lr: float = 0.02,
    n_train: int = 4000,
    n_test: int = 1000,
) -> TrainingResult:
    r"""Build the soft-dictionary data from ``seed``, train the one-head model, evaluate it.

    Parameters
    ----------
    seed : int, default 0
        Seeds the data, the initial weights and the minibatches.
    n_pairs : int, default 6
        Stored (key, value) pairs per sequence.
    n_keys, n_values : int, default 8
        Vocabulary sizes (keys are named ``a, b, ...``, values ``0, 1, ...``).
    d_model, d_k : int, default 16
        Size of the embeddings, and of the queries, keys and values.
    steps, batch_size, lr : int, int, float
        Adam steps, sequences per minibatch, learning rate.
    n_train, n_test : int
        Training sequences, and held-out sequences drawn apart (any that
        happens to equal a training sequence is dropped).

    Returns
    -------
    TrainingResult
        ``accuracy`` and ``target_weight`` measured on the held-out sequences.

    Notes
    -----
    The loss is the cross-entropy of the answer; the gradient comes from
    :func:`~attention_lib.training.retrieval_loss_and_grads`. ``target_weight`` is the mean of
    :math:`a_{b,\,\text{target}_b}`, the attention weight of the query on the
    pair it names.

    Examples
    --------
    >>> result = train_retrieval(seed=0)
    >>> result.accuracy >= 0.95, result.target_weight >= 0.9
    (True, True)
    """
    config = dict(seed=seed, n_pairs=n_pairs, n_keys=n_keys, n_values=n_values,
                  d_model=d_model, d_k=d_k, steps=steps, batch_size=batch_size, lr=lr,
                  n_train=n_train, n_test=n_test)
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        raise TypeError(f"seed={seed!r}; expected an integer")
    for name in ("d_model", "d_k", "steps", "batch_size", "n_train", "n_test"):
        positive_int(config[name], name)
    if n_keys > len(string.ascii_lowercase):
        raise ValueError(f"n_keys={n_keys}; expected at most 26 (keys are named a-z)")
    data_seq, init_seq, batch_seq, test_seq = np.random.SeedSequence(seed).spawn(4)
    sizes = dict(n_pairs=n_pairs, n_keys=n_keys, n_values=n_values)
    train_data = make_retrieval_data(n_train, rng=np.random.default_rng(data_seq), **sizes)
    test = make_retrieval_data(n_test, rng=np.random.default_rng(test_seq), **sizes)
    rows = lambda d: np.column_stack([d.keys, d.values, d.query])  # noqa: E731
    test = test.subset(_unseen(rows(test), rows(train_data)))
    params = _init({"key_embed": (n_keys, d_model), "value_embed": (n_values, d_model),
                    "query_embed": (n_keys, d_model), "w_q": (d_model, d_k),
                    "w_k": (d_model, d_k), "w_v": (d_model, d_k),
                    "w_out": (d_k, n_values), "b_out": (n_values,)},
                   np.random.default_rng(init_seq))
    initial = {k: v.copy() for k, v in params.items()}
    start = time.perf_counter()
    losses = _train(retrieval_loss_and_grads, params, train_data, steps=steps,
                    batch_size=batch_size, lr=lr, rng=np.random.default_rng(batch_seq))
    seconds = time.perf_counter() - start
    logits, weights = retrieval_forward(params, test.keys, test.values, test.query)
    accuracy = float(np.mean(logits.argmax(axis=-1) == test.answer))
    target_weight = float(np.mean(weights[np.arange(len(test)), test.target]))
    return TrainingResult("retrieval", params, initial, losses, accuracy, target_weight,
                          test, config, seconds)


def train_shift(
    *,
    seed: int = 0,
    shift: int = 2,
    length: int = 10,
    n_tokens: int = 8,
    d_model: int = 16,
    d_k: int = 16,
    base: float = 10000.0,
    steps: int = 1500,
    batch_size: int = 32,
    lr: float = 0.02,
    n_train: int = 4000,
    n_test: int = 500,
) -> TrainingResult:
    r"""Train the one-head model to output the token ``shift`` places back; evaluate it.

    Parameters
    ----------
    seed : int, default 0
    shift : int, default 2
    length : int, default 10
        Tokens per sequence.
    n_tokens : int, default 8
    d_model, d_k : int, default 16
    base : float, default 10000.0
        Base of the sinusoidal positions added to the token embeddings.
    steps, batch_size, lr, n_train, n_test
        As in :func:`train_retrieval`.

    Returns
    -------
    TrainingResult
        ``accuracy`` over the labelled positions (``p >= shift``) of the
        held-out sequences, ``target_weight`` the mean weight of those
        positions' queries on position ``p - shift``.

    Notes
    -----
    Token content cannot solve the task (the tokens are uniformly random), so
    the weights must come from the positions:
    :func:`~attention_lib.training.shift_loss_and_grads` gives the gradient.

    Examples
    --------
    >>> result = train_shift(seed=0)
    >>> result.accuracy > 0.9
    True
    """
    config = dict(seed=seed, shift=shift, length=length, n_tokens=n_tokens, d_model=d_model,
                  d_k=d_k, base=base, steps=steps, batch_size=batch_size, lr=lr,
                  n_train=n_train, n_test=n_test)
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        raise TypeError(f"seed={seed!r}; expected an integer")
    for name in ("d_model", "d_k", "steps", "batch_size", "n_train", "n_test"):
        positive_int(config[name], name)
    data_seq, init_seq, batch_seq, test_seq = np.random.SeedSequence(seed).spawn(4)
    sizes = dict(length=length, n_tokens=n_tokens, shift=shift)
    train_data = make_shift_data(n_train, rng=np.random.default_rng(data_seq), **sizes)
    test = make_shift_data(n_test, rng=np.random.default_rng(test_seq), **sizes)
    test = test.subset(_unseen(test.tokens, train_data.tokens))
    params = _init({"token_embed": (n_tokens, d_model), "w_q": (d_model, d_k),
                    "w_k": (d_model, d_k), "w_v": (d_model, d_k),
                    "w_out": (d_k, n_tokens), "b_out": (n_tokens,)},
                   np.random.default_rng(init_seq))
    initial = {k: v.copy() for k, v in params.items()}

    def loss_and_grads(p, batch):
        return shift_loss_and_grads(p, batch, base=base)

    start = time.perf_counter()
    losses = _train(loss_and_grads, params, train_data, steps=steps, batch_size=batch_size,
                    lr=lr, rng=np.random.default_rng(batch_seq))
    seconds = time.perf_counter() - start
    logits, weights = shift_forward(params, test.tokens, base=base)  # (B, n, c), (B, n, n)
    pos = np.arange(shift, length)  # the labelled positions
    accuracy = float(np.mean(logits[:, pos].argmax(axis=-1) == test.tokens[:, pos - shift]))
    target_weight = float(np.mean(weights[:, pos, pos - shift]))
    return TrainingResult("shift", params, initial, losses, accuracy, target_weight, test,
                          config, seconds)


# --------------------------------------------------------------------------- export


def export_retrieval_model(result: TrainingResult, path: str | Path) -> Path:
    """Write a trained soft-dictionary model to a small JSON file.

    Parameters
    ----------
    result : TrainingResult
        From :func:`train_retrieval`.
    path : str or pathlib.Path
        Where to write; parent folders must exist.

    Returns
    -------
    pathlib.Path
        The path written.

    Notes
    -----
    The file holds ``format``, ``config``, the ``vocabulary`` (key names
    ``a, b, ...`` and value names ``0, 1, ...``), the measured ``accuracy`` and
    ``target_weight``, and ``params``: every array as nested lists of floats
    (``repr`` precision, so the round trip is exact). The forward pass of
    :func:`retrieval_forward` needs nothing else:
    ``x = key_embed[k] + value_embed[v]``, ``q = query_embed[query] @ w_q``,
    weights ``softmax(q (x w_k)^T / sqrt(d_k))``, logits
    ``weights @ x @ w_v @ w_out + b_out``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> result = train_retrieval(seed=0, steps=5)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = export_retrieval_model(result, pathlib.Path(tmp) / "model.json")
    ...     params, info = load_retrieval_model(path)
    >>> info["vocabulary"]["keys"][:3], params["w_q"].shape
    (['a', 'b', 'c'], (16, 16))
    """
    if not isinstance(result, TrainingResult) or result.task != "retrieval":
        task = getattr(result, "task", None)
        raise TypeError(f"result is a {type(result).__name__} (task {task!r}); expected the "
                        "TrainingResult of train_retrieval")
    cfg = result.config
    doc = {
        "format": EXPORT_FORMAT,
        "config": cfg,
        "vocabulary": {"keys": list(string.ascii_lowercase[: cfg["n_keys"]]),
                       "values": [str(i) for i in range(cfg["n_values"])]},
        "accuracy": result.accuracy,
        "target_weight": result.target_weight,
        "params": {name: result.params[name].tolist() for name in RETRIEVAL_PARAMS},
    }
    path = Path(path)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def load_retrieval_model(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a model written by :func:`export_retrieval_model`.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    params : dict of numpy.ndarray
        Ready for :func:`retrieval_forward`.
    info : dict
        Everything else in the file (``format``, ``config``, ``vocabulary``,
        ``accuracy``, ``target_weight``).

    Examples
    --------
    See :func:`export_retrieval_model`.
    """
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if doc.get("format") != EXPORT_FORMAT:
        raise ValueError(f"{path} has format {doc.get('format')!r}; expected {EXPORT_FORMAT!r}")
    params = {name: np.array(doc["params"][name], dtype=np.float64) for name in RETRIEVAL_PARAMS}
    info = {k: v for k, v in doc.items() if k != "params"}
    return params, info
