r"""Training a GPT: windows of a token stream on the one training loop.

One step of :func:`train_gpt` draws ``batch_size`` windows of ``context + 1`` tokens at
random positions of the training stream (:func:`train_gpt_on_batches` asks a function of
the caller for the step's batch instead), computes the mean next-token loss and its gradients
(:func:`~attention_lib.gpt_loss_and_grads`), clips the gradients to a global norm, and
moves every parameter by AdamW at the step's learning rate, a warm-up then a cosine decay:
the loop of :func:`attention_lib.model.train.train_loop`, whose notes say how far a seeded
run repeats on another CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import float_dtype, index_array, positive_int, positive_scale
from ..model.hooks import check_hooks
from ..model.loss import cross_entropy
from ..model.stack import stack_forward
from ..model.train import GPTTrainingLog, check_schedule, learning_rate, train_scheduled
from .config import GPTConfig, check_params, check_tokens
from .model import init_gpt, loss_and_grads

__all__ = ["GPTTrainingLog", "learning_rate", "lm_windows", "sequence_loss", "train_gpt",
           "train_gpt_on_batches"]


def lm_windows(stream: np.ndarray, starts: np.ndarray, context: int) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """Inputs and targets ``(B, context)`` read from ``stream`` at ``starts``.

    Examples
    --------
    >>> x, y = lm_windows(np.arange(10), np.array([0, 5]), 3)
    >>> x.tolist(), y.tolist()
    ([[0, 1, 2], [5, 6, 7]], [[1, 2, 3], [6, 7, 8]])
    """
    offsets = np.arange(context + 1)
    rows = stream[starts[:, None] + offsets]  # (B, context + 1)
    return rows[:, :-1], rows[:, 1:]


def sequence_loss(params: dict[str, np.ndarray], config: GPTConfig, stream: Any, *,
                  batch_size: int = 32, hooks: Any = None) -> float:
    """Mean next-token loss (nats per token) over a whole stream, read in windows.

    The stream is cut into consecutive windows of ``context + 1`` tokens overlapping by one
    (every token but the first is predicted once, from the earlier tokens of its window).
    ``hooks`` (``{site: function}``, :func:`~attention_lib.hook_sites`) run at every forward
    pass: the loss of the model with its activations read or changed there.

    Examples
    --------
    >>> config = GPTConfig(5, 4, 4, 1, 2)
    >>> round(sequence_loss(init_gpt(config, dtype=np.float64), config, np.arange(5)), 2)
    1.61
    """
    check_params(params, config)
    stream = index_array(stream, config.vocab_size, "stream", ndim=1)  # ids checked, not wrapped
    batch_size = positive_int(batch_size, "batch_size")
    hooks = check_hooks(hooks, config)
    T = config.context
    if stream.size < 2:
        raise ValueError(f"stream has {stream.size} token id; expected at least 2 (the first "
                         "predicts the second)")
    total, count = 0.0, 0
    starts = np.arange(0, stream.size - 1, T)
    for first in range(0, starts.size, batch_size):
        chunk = starts[first:first + batch_size]
        full = chunk[chunk + T < stream.size]
        if full.size:
            x, y = lm_windows(stream, full, T)
            loss, _ = cross_entropy(stack_forward(params, config, x, hooks=hooks).out, y)
            total += loss * y.size
            count += y.size
        for s in chunk[chunk + T >= stream.size]:  # the last, shorter window
            x, y = stream[None, s:-1], stream[None, s + 1:]
            loss, _ = cross_entropy(stack_forward(params, config, x, hooks=hooks).out, y)
            total += loss * y.size
            count += y.size
    return total / count


def train_gpt(config: GPTConfig, train_tokens: Any, val_tokens: Any, *, steps: int,
              batch_size: int = 32, lr: float = 3e-3, min_lr: float = 3e-4, warmup: int = 100,
              weight_decay: float = 0.1, clip: float = 1.0, betas: tuple[float, float] = (0.9,
                                                                                          0.99),
              eval_every: int = 250, eval_windows: int = 64, seed: int = 0,
              dtype: Any = np.float32, progress: bool = True,
              ) -> tuple[dict[str, np.ndarray], GPTTrainingLog]:
    """Train a fresh GPT from ``seed`` on a token stream.

    Parameters
    ----------
    config : GPTConfig
    train_tokens, val_tokens : array_like of int, shape (N,)
        The training stream and the validation stream (ids below ``vocab_size``).
    steps, batch_size : int
        Optimiser steps, and windows per minibatch.
    lr, min_lr, warmup : optional
        Peak and final learning rate, and warm-up steps (see the module's formula).
    weight_decay : float, default 0.1
        Decoupled weight decay (AdamW) on the matrices and embeddings, not on biases and
        layer-norm parameters.
    clip : float, default 1.0
        The gradients are scaled down when their global norm exceeds ``clip``.
    betas : (float, float)
        Adam's decay rates of the first and second moments.
    eval_every, eval_windows : int
        Measure the validation loss every ``eval_every`` steps (and after the last) on
        ``eval_windows`` fixed windows spread evenly over ``val_tokens``.
    seed : int
        Seeds the initial weights (``init_gpt(config, seed)``) and the minibatches. The
        first ``warmup`` steps do not depend on ``steps``, so a short run with the same
        settings repeats the beginning of a long one.
    dtype : {numpy.float32, numpy.float64}
    progress : bool, default True
        Show a progress bar (tqdm) with the loss.

    Returns
    -------
    params : dict of str to numpy.ndarray
        The trained weights, in ``dtype``, named as :func:`~attention_lib.init_gpt` names
        them.
    log : GPTTrainingLog
        The settings (``config`` as :meth:`~attention_lib.GPTConfig.as_dict` records
        it), the minibatch loss before each step and the validation loss at each
        evaluation.
    """
    batch_size = positive_int(batch_size, "batch_size")
    eval_windows = positive_int(eval_windows, "eval_windows")
    run = check_schedule(steps, lr, min_lr, warmup, weight_decay, clip, betas, eval_every,
                         seed, progress)
    dtype = float_dtype(dtype)
    streams = []
    for name, tokens in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
        t = index_array(tokens, config.vocab_size, name, ndim=1)  # (N,), ids checked
        if t.size <= config.context + 1:
            raise ValueError(f"{name} has {t.size} tokens; expected a stream longer than "
                             f"context + 1 = {config.context + 1}")
        streams.append(t)
    train_stream, val_stream = streams
    settings = {"config": config.as_dict(), "steps": run["steps"], "batch_size": batch_size,
                "lr": run["lr"], "min_lr": run["min_lr"], "warmup": run["warmup"],
                "weight_decay": run["weight_decay"], "clip": run["clip"],
                "betas": run["betas"], "eval_every": run["eval_every"],
                "eval_windows": eval_windows, "seed": run["seed"],
                "dtype": dtype.name}
    log = GPTTrainingLog(settings)

    params = init_gpt(config, seed=run["seed"], dtype=dtype)
    val_starts = np.linspace(0, val_stream.size - config.context - 2, eval_windows).astype(int)
    val_x, val_y = lm_windows(val_stream, val_starts, config.context)

    def sample(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        starts = rng.integers(0, train_stream.size - config.context - 1, size=batch_size)
        return lm_windows(train_stream, starts, config.context)

    def evaluate(p: dict[str, np.ndarray]) -> float:
        return cross_entropy(stack_forward(p, config, val_x).out, val_y)[0]

    def step(p: dict[str, np.ndarray], batch: tuple[np.ndarray, np.ndarray]) -> tuple:
        return loss_and_grads(p, config, *batch, dtype)

    return train_scheduled(params, step, sample, log, run, evaluate), log



def train_gpt_on_batches(
    config: GPTConfig,
    sample_batch: Callable[[np.random.Generator], tuple[Any, Any]],
    *,
    steps: int,
    evaluate: Callable[[dict[str, np.ndarray]], float] | None = None,
    lr: float = 3e-3,
    min_lr: float = 3e-4,
    warmup: int = 100,
    weight_decay: float = 0.1,
    clip: float = 1.0,
    betas: tuple[float, float] = (0.9, 0.99),
    eval_every: int = 250,
    seed: int = 0,
    init_std: float = 0.02,
    dtype: Any = np.float32,
    progress: bool = True,
) -> tuple[dict[str, np.ndarray], GPTTrainingLog]:
    """Train a fresh GPT from ``seed`` on batches drawn by ``sample_batch``.

    The loop of :func:`~attention_lib.train_gpt` (same schedule, clipping and AdamW), for
    data that is not a token stream: each step calls ``sample_batch(rng)`` for its inputs
    and targets.

    Parameters
    ----------
    config : GPTConfig
    sample_batch : callable ``(rng) -> (tokens, targets)``
        Draws one minibatch, two int arrays (B, T) with ``T <= context`` (the targets
        usually the tokens shifted by one), from ``rng``, the loop's generator (seeded by
        ``seed``); the same draws then give the same run.
    steps : int
    evaluate : callable ``(params) -> float``, optional
        Called every ``eval_every`` steps and after the last; its values are recorded as
        the log's ``val_loss`` (the parameters it gets must not be changed). Without it
        nothing is evaluated.
    lr, min_lr, warmup, weight_decay, clip, betas, eval_every, dtype, progress
        As in :func:`~attention_lib.train_gpt`.
    seed : int
        Seeds the initial weights and the generator given to ``sample_batch``.
    init_std : float, default 0.02
        Standard deviation of the initial weights (``init_gpt(config, seed, std=...)``).

    Returns
    -------
    params, log
        As in :func:`~attention_lib.train_gpt` (``val_loss`` only with ``evaluate``).

    Examples
    --------
    >>> config = GPTConfig(vocab_size=5, context=4, d_model=8, n_layers=1, n_heads=2)
    >>> def batch(rng):  # every sequence counts up by one: 2, 3, 4, 0, ...
    ...     rows = (rng.integers(0, 5, size=(8, 1)) + np.arange(5)) % 5  # (B, context + 1)
    ...     return rows[:, :-1], rows[:, 1:]
    >>> params, log = train_gpt_on_batches(config, batch, steps=60, lr=3e-2, warmup=5,
    ...                                    progress=False)
    >>> round(log.train_loss[0], 1), log.train_loss[-1] < 0.5   # from log(5) to little
    (1.6, True)
    """
    if not callable(sample_batch):
        raise TypeError(f"sample_batch is {type(sample_batch).__name__}; expected a function "
                        "(rng) -> (tokens, targets)")
    if evaluate is not None and not callable(evaluate):
        raise TypeError(f"evaluate is {type(evaluate).__name__}; expected a function "
                        "(params) -> float, or None")
    run = check_schedule(steps, lr, min_lr, warmup, weight_decay, clip, betas, eval_every,
                         seed, progress)
    init_std = positive_scale(init_std, "init_std")
    dtype = float_dtype(dtype)
    settings = {"config": config.as_dict(), **{k: v for k, v in run.items()
                                                if k != "progress"},
                "init_std": init_std, "dtype": dtype.name}
    log = GPTTrainingLog(settings)
    params = init_gpt(config, seed=run["seed"], dtype=dtype, std=init_std)

    def step(p: dict[str, np.ndarray], batch: tuple[Any, Any]) -> tuple:
        tokens = check_tokens(batch[0], config)
        targets = check_tokens(batch[1], config, "targets")
        if targets.shape != tokens.shape:
            raise ValueError(f"sample_batch gave targets of shape {targets.shape} for tokens "
                             f"{tokens.shape}; expected one target per token")
        return loss_and_grads(p, config, tokens, targets, dtype)

    return train_scheduled(params, step, sample_batch, log, run, evaluate), log
