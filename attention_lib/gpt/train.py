r"""Training a GPT: batches, AdamW with warm-up and cosine decay, clipping.

One step of :func:`train_gpt` draws ``batch_size`` windows of ``context + 1`` tokens at
random positions of the training stream (:func:`train_gpt_on_batches` asks a function of
the caller for the step's batch instead), computes the mean next-token loss and its gradients
(:func:`~attention_lib.gpt_loss_and_grads`), clips the gradients to a global norm, and
moves every parameter by AdamW at the step's learning rate:

.. math::

    \eta_t = \eta_{\max}\,\frac{t}{t_w} \quad (t \le t_w), \qquad
    \eta_t = \eta_{\min} + \tfrac12(\eta_{\max} - \eta_{\min})
             \bigl(1 + \cos\bigl(\pi\,\tfrac{t - t_w}{T - t_w}\bigr)\bigr) \quad (t > t_w).

Everything random is drawn from one seed, so a run is repeatable on one machine. On another
CPU (other BLAS kernels) the first steps' losses agree to float32 rounding, but the
differences can grow over thousands of steps, most after a sudden drop of the loss; in
float64 they stay near :math:`10^{-6}` (measured for the induction model,
:func:`~attention_lib.train_induction_model`). So a stored run is tied to the code by
replaying its first steps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_flag, index_array, positive_int, real_number
from ..training.optim import Adam, clip_by_global_norm
from .config import GPTConfig, check_params
from .model import _forward, cross_entropy, gpt_loss_and_grads, init_gpt

__all__ = ["GPTTrainingLog", "learning_rate", "lm_windows", "sequence_loss", "train_gpt",
           "train_gpt_on_batches"]


def learning_rate(step: int, *, lr: float, warmup: int, steps: int,
                  min_lr: float = 0.0) -> float:
    """The learning rate of step ``step`` (1-based): linear warm-up, then cosine decay.

    Examples
    --------
    >>> [round(learning_rate(t, lr=1.0, warmup=2, steps=4), 3) for t in (1, 2, 3, 4)]
    [0.5, 1.0, 0.5, 0.0]
    """
    if step <= warmup:
        return lr * step / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * min(1.0, progress)))


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
                  batch_size: int = 32) -> float:
    """Mean next-token loss (nats per token) over a whole stream, read in windows.

    The stream is cut into consecutive windows of ``context + 1`` tokens overlapping by one
    (every token but the first is predicted once, from the earlier tokens of its window).

    Examples
    --------
    >>> config = GPTConfig(5, 4, 4, 1, 2)
    >>> round(sequence_loss(init_gpt(config, dtype=np.float64), config, np.arange(5)), 2)
    1.61
    """
    check_params(params, config)
    stream = np.asarray(stream, dtype=np.int64)
    T = config.context
    if stream.ndim != 1 or stream.size < 2:
        raise ValueError(f"stream has shape {stream.shape}; expected at least 2 token ids")
    total, count = 0.0, 0
    starts = np.arange(0, stream.size - 1, T)
    for first in range(0, starts.size, batch_size):
        chunk = starts[first:first + batch_size]
        full = chunk[chunk + T < stream.size]
        if full.size:
            x, y = lm_windows(stream, full, T)
            loss, _ = cross_entropy(_forward(params, config, x, keep=False)[0], y)
            total += loss * y.size
            count += y.size
        for s in chunk[chunk + T >= stream.size]:  # the last, shorter window
            x, y = stream[None, s:-1], stream[None, s + 1:]
            loss, _ = cross_entropy(_forward(params, config, x, keep=False)[0], y)
            total += loss * y.size
            count += y.size
    return total / count


@dataclass
class GPTTrainingLog:
    """What :func:`train_gpt` records.

    Attributes
    ----------
    settings : dict
        Every argument of the run (seed, steps, batch size, learning rates, ...).
    train_loss : list of float
        The minibatch loss before each step.
    eval_steps, val_loss : list
        Steps after which the validation loss was measured, and the losses.
    seconds : float
        Wall-clock time (depends on the machine; not part of the result).
    """

    settings: dict[str, Any]
    train_loss: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (losses rounded to 6 decimals)."""
        return {"settings": self.settings,
                "train_loss": [round(x, 6) for x in self.train_loss],
                "eval_steps": list(self.eval_steps),
                "val_loss": [round(x, 6) for x in self.val_loss],
                "seconds": round(self.seconds, 1)}


def _check_schedule(steps: int, lr: float, min_lr: float, warmup: int, weight_decay: float,
                    clip: float, betas: tuple[float, float], eval_every: int, seed: int,
                    progress: bool) -> dict[str, Any]:
    """The optimiser's settings checked, by name, in the order :func:`train_gpt` records them."""
    steps = positive_int(steps, "steps")
    warmup = positive_int(warmup, "warmup", minimum=0)
    eval_every = positive_int(eval_every, "eval_every")
    seed = positive_int(seed, "seed", minimum=0)
    lr = real_number(lr, "lr", minimum=0.0, strict_minimum=True)
    min_lr = real_number(min_lr, "min_lr", minimum=0.0, maximum=lr)
    weight_decay = real_number(weight_decay, "weight_decay", minimum=0.0)
    clip = real_number(clip, "clip", minimum=0.0, strict_minimum=True)
    beta1, beta2 = (real_number(b, "betas", minimum=0.0, maximum=1.0) for b in betas)
    progress = check_flag(progress, "progress")
    return {"steps": steps, "lr": lr, "min_lr": min_lr, "warmup": warmup,
            "weight_decay": weight_decay, "clip": clip, "betas": [beta1, beta2],
            "eval_every": eval_every, "seed": seed, "progress": progress}


def _train_loop(config: GPTConfig, params: dict[str, np.ndarray],
                sample: Callable[[np.random.Generator], tuple[Any, Any]],
                evaluate: Callable[[dict[str, np.ndarray]], float] | None,
                log: GPTTrainingLog, *,
                steps: int, lr: float, min_lr: float, warmup: int, weight_decay: float,
                clip: float, betas: list[float], eval_every: int, seed: int,
                progress: bool,
                loss_and_grads: Callable[[dict[str, np.ndarray], Any, Any],
                                         tuple[float, dict[str, np.ndarray]]] | None = None,
                ) -> dict[str, np.ndarray]:
    """The loop both trainers share: a batch, the loss and gradients, clipping, AdamW.

    ``loss_and_grads(params, x, y)``, when given, replaces the GPT's loss (a model of
    another shape on the same loop: the encoder of :mod:`attention_lib.training.coreference`,
    the encoder-decoder of :mod:`attention_lib.training.translation`).
    """
    batch_rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    opt = Adam(params, lr=lr, betas=(betas[0], betas[1]), weight_decay=weight_decay,
               decay=[k for k, a in params.items() if a.ndim >= 2])  # matrices, not biases

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="training", unit="step")
    start = time.perf_counter()
    for step in range(1, steps + 1):
        x, y = sample(batch_rng)
        loss, grads = (gpt_loss_and_grads(params, config, x, y) if loss_and_grads is None
                       else loss_and_grads(params, x, y))
        log.train_loss.append(loss)
        grads, _ = clip_by_global_norm(grads, clip)
        opt.lr = learning_rate(step, lr=lr, warmup=warmup, steps=steps, min_lr=min_lr)
        opt.step(grads)
        if evaluate is not None and (step % eval_every == 0 or step == steps):
            log.eval_steps.append(step)
            log.val_loss.append(evaluate(params))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}",
                            val=f"{log.val_loss[-1]:.3f}" if log.val_loss else "-")
    if bar is not None:
        bar.close()
    log.seconds = time.perf_counter() - start
    return params


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
    log : GPTTrainingLog
    """
    batch_size = positive_int(batch_size, "batch_size")
    eval_windows = positive_int(eval_windows, "eval_windows")
    run = _check_schedule(steps, lr, min_lr, warmup, weight_decay, clip, betas, eval_every,
                          seed, progress)
    streams = []
    for name, tokens in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
        t = index_array(tokens, config.vocab_size, name, ndim=1)  # (N,), ids checked
        if t.size <= config.context + 1:
            raise ValueError(f"{name} has {t.size} tokens; expected a stream longer than "
                             f"context + 1 = {config.context + 1}")
        streams.append(t)
    train_stream, val_stream = streams
    settings = {"config": dict(vars(config)), "steps": run["steps"], "batch_size": batch_size,
                "lr": run["lr"], "min_lr": run["min_lr"], "warmup": run["warmup"],
                "weight_decay": run["weight_decay"], "clip": run["clip"],
                "betas": run["betas"], "eval_every": run["eval_every"],
                "eval_windows": eval_windows, "seed": run["seed"],
                "dtype": np.dtype(dtype).name}
    log = GPTTrainingLog(settings)

    params = init_gpt(config, seed=run["seed"], dtype=dtype)
    val_starts = np.linspace(0, val_stream.size - config.context - 2, eval_windows).astype(int)
    val_x, val_y = lm_windows(val_stream, val_starts, config.context)

    def sample(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        starts = rng.integers(0, train_stream.size - config.context - 1, size=batch_size)
        return lm_windows(train_stream, starts, config.context)

    def evaluate(p: dict[str, np.ndarray]) -> float:
        return cross_entropy(_forward(p, config, val_x, keep=False)[0], val_y)[0]

    return _train_loop(config, params, sample, evaluate, log, **run), log


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
    params : dict of str to numpy.ndarray
    log : GPTTrainingLog

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
    run = _check_schedule(steps, lr, min_lr, warmup, weight_decay, clip, betas, eval_every,
                          seed, progress)
    init_std = real_number(init_std, "init_std", minimum=0.0, strict_minimum=True)
    settings = {"config": dict(vars(config)), **{k: v for k, v in run.items()
                                                  if k != "progress"},
                "init_std": init_std, "dtype": np.dtype(dtype).name}
    log = GPTTrainingLog(settings)
    params = init_gpt(config, seed=run["seed"], dtype=dtype, std=init_std)

    return _train_loop(config, params, sample_batch, evaluate, log, **run), log
