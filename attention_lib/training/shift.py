r"""The shift task: output the token ``shift`` places back (position decides).

A sequence of random tokens, each embedded as ``token_embed[token] + PE(position)``
with the fixed sinusoidal positions of :func:`~attention_lib.sinusoidal_positions`;
causal self-attention; at every position ``p >= shift`` the model must output the
token at ``p - shift``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import index_array, positive_ints, real_number, weight_arrays
from ..model.layers import embedding_backward
from ..model.loss import cross_entropy
from ..model.readout import readout_backward, readout_forward
from ..positions import sinusoidal_positions
from .data import ShiftData, _shift_sizes, make_shift_data
from .loop import Task, TrainingResult, _sized_shapes, init_params, train

__all__ = ["shift_forward", "shift_loss_and_grads", "shift_task", "train_shift"]

SHIFT_SHAPES = {"token_embed": ("n_tokens", "d"), "w_q": ("d", "d_k"), "w_k": ("d", "d_k"),
                "w_v": ("d", "d_v"), "w_out": ("d_v", "n_tokens"), "b_out": ("n_tokens",)}
SHIFT_PARAMS = tuple(SHIFT_SHAPES)


def _inputs(p: dict[str, np.ndarray], tokens: np.ndarray, base: float) -> np.ndarray:
    """Token embeddings plus sinusoidal positions, (B, n, d)."""
    d = p["token_embed"].shape[1]
    return p["token_embed"][tokens] + sinusoidal_positions(tokens.shape[1], d, base=base)


def shift_forward(
    params: dict[str, ArrayLike], tokens: ArrayLike, *, base: float = 10000.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the shift model: logits at every position and the causal attention weights.

    Parameters
    ----------
    params : dict of array_like
        ``token_embed`` (n_tokens, d), ``w_q``, ``w_k`` (d, d_k), ``w_v`` (d, d_v),
        ``w_out`` (d_v, n_tokens), ``b_out`` (n_tokens,); real and finite. Other
        entries are ignored.
    tokens : array_like of int, shape (B, n)
        Token indices ``0 <= token < n_tokens``; negative indices are refused, not
        wrapped around.
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
    p, dims = weight_arrays(params, SHIFT_SHAPES, "params", extra="ignore")
    tokens = index_array(tokens, dims["n_tokens"], "tokens", ndim=2)
    base = real_number(base, "base", minimum=0.0, strict_minimum=True)
    x = _inputs(p, tokens, base)  # (B, n, d)
    logits, weights, _ = readout_forward(p, x, None, causal=True)  # (B, n, c), (B, 1, n, n)
    return logits, weights[:, 0]


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
    p, dims = weight_arrays(params, SHIFT_SHAPES, "params", extra="ignore")
    if not isinstance(data, ShiftData):
        raise TypeError(f"data is a {type(data).__name__}; expected ShiftData")
    base = real_number(base, "base", minimum=0.0, strict_minimum=True)
    tokens = index_array(data.tokens, dims["n_tokens"], "data.tokens", ndim=2)
    n = tokens.shape[1]
    x = _inputs(p, tokens, base)  # (B, n, d)
    logits, _, saved = readout_forward(p, x, None, causal=True)  # (B, n, c)
    labels = np.zeros_like(tokens)
    labels[:, data.shift:] = tokens[:, : n - data.shift]  # (B, n)
    valid = np.zeros(tokens.shape, dtype=bool)
    valid[:, data.shift:] = True
    loss, d_logits = cross_entropy(logits, labels, valid)
    grads, d_x, _ = readout_backward(p, d_logits, saved)  # x gave the queries, keys, values
    grads["token_embed"] = embedding_backward(np.zeros_like(p["token_embed"]),
                                              p["token_embed"].shape, tokens, d_x)
    return loss, grads


def shift_task(
    *, shift: int = 2, length: int = 10, n_tokens: int = 8, d_model: int = 16, d_k: int = 16,
    base: float = 10000.0,
) -> Task:
    """The shift task as a :class:`~attention_lib.training.Task` for the training loop.

    Parameters
    ----------
    shift : int, default 2
        Position ``p`` outputs the token at ``p - shift``; ``shift < length``.
    length : int, default 10
        Tokens per sequence.
    n_tokens : int, default 8
    d_model, d_k : int, default 16
    base : float, default 10000.0
        Base of the sinusoidal positions added to the token embeddings.

    Returns
    -------
    Task

    Examples
    --------
    >>> task = shift_task(length=3, n_tokens=2, shift=1)
    >>> task.name, task.n_distinct
    ('shift', 8)
    """
    length, n_tokens, shift = _shift_sizes(length, n_tokens, shift)
    d_model, d_k = positive_ints(d_model=d_model, d_k=d_k)
    base = real_number(base, "base", minimum=0.0, strict_minimum=True)
    shapes = _sized_shapes(SHIFT_SHAPES, n_tokens=n_tokens, d=d_model, d_k=d_k, d_v=d_k)
    labelled = np.arange(shift, length)  # the positions with an answer

    def make_data(n: int, rng: np.random.Generator) -> ShiftData:
        return make_shift_data(n, length=length, n_tokens=n_tokens, shift=shift, rng=rng)

    def loss_and_grads(params, batch):
        return shift_loss_and_grads(params, batch, base=base)

    def evaluate(params, test: ShiftData) -> tuple[float, float]:
        logits, weights = shift_forward(params, test.tokens, base=base)  # (B, n, c), (B, n, n)
        right = logits[:, labelled].argmax(axis=-1) == test.tokens[:, labelled - shift]
        return float(np.mean(right)), float(np.mean(weights[:, labelled, labelled - shift]))

    config = dict(shift=shift, length=length, n_tokens=n_tokens, d_model=d_model, d_k=d_k,
                  base=base)
    return Task("shift", config, n_tokens**length, make_data,
                lambda rng: init_params(shapes, rng), loss_and_grads, evaluate)


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
        A non-negative integer.
    shift, length, n_tokens, d_model, d_k, base
        The task and the model, as in :func:`~attention_lib.training.shift_task`.
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
    This is :func:`~attention_lib.training.train` on
    :func:`~attention_lib.training.shift_task`. Token content cannot solve the task (the
    tokens are uniformly random), so the weights must come from the positions:
    :func:`~attention_lib.training.shift_loss_and_grads` gives the gradient.

    Examples
    --------
    >>> result = train_shift(seed=0)
    >>> result.accuracy > 0.9
    True
    """
    task = shift_task(shift=shift, length=length, n_tokens=n_tokens, d_model=d_model, d_k=d_k,
                      base=base)
    return train(task, seed=seed, steps=steps, batch_size=batch_size, lr=lr, n_train=n_train,
                 n_test=n_test)
