r"""One training loop for every model: seeded batches, the loss and its gradients, clipping,
AdamW at a scheduled learning rate, evaluation, a progress bar.

Each step draws a batch from the loop's generator, computes the loss and every gradient,
scales the gradients down when their global norm exceeds ``clip``, and moves every parameter
by Adam (AdamW with weight decay) at the step's learning rate: constant, or a linear warm-up
followed by a cosine decay,

.. math::

    \eta_t = \eta_{\max}\,\frac{t}{t_w} \quad (t \le t_w), \qquad
    \eta_t = \eta_{\min} + \tfrac12(\eta_{\max} - \eta_{\min})
             \bigl(1 + \cos\bigl(\pi\,\tfrac{t - t_w}{T - t_w}\bigr)\bigr) \quad (t > t_w).

Everything random comes from seeds, so a run is repeatable on one machine. On another CPU
(other BLAS kernels) the first steps' losses agree to rounding, but the differences can grow
over thousands of steps, most after a sudden drop of the loss; in float64 they stay near
:math:`10^{-6}` (measured for the induction model, :func:`~attention_lib.train_induction_model`).
So a stored run is tied to the code by replaying its first steps.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_betas, check_flag, positive_int, real_number

__all__ = ["Adam", "GPTTrainingLog", "clip_by_global_norm", "learning_rate"]

Params = dict[str, np.ndarray]


class Adam:
    r"""The Adam optimiser (Kingma & Ba, 2015) over a dict of float arrays; AdamW with decay.

    Parameters
    ----------
    params : dict of numpy.ndarray
        Float arrays (float32 stays float32), updated in place by :meth:`step`.
    lr : float, default 0.01
        Learning rate, a finite number > 0 (Python or numpy; not a bool). It may be
        changed between steps (a schedule sets ``opt.lr``).
    betas : tuple of float, default (0.9, 0.999)
        Decay rates of the two running averages, each in [0, 1).
    eps : float, default 1e-8
        Added to the root of the second average, a finite number > 0.
    weight_decay : float, default 0
        Decoupled weight decay (Loshchilov & Hutter, 2019): each step also moves
        :math:`\theta` by :math:`-\text{lr}\cdot\text{weight\_decay}\cdot\theta`.
    decay : iterable of str, optional
        The names of the parameters that decay (e.g. the matrices, not the biases);
        by default every parameter when ``weight_decay > 0``.

    Notes
    -----
    For each parameter :math:`\theta` with gradient :math:`g` at step :math:`t`:

    .. math::

        m \leftarrow \beta_1 m + (1-\beta_1) g, \quad
        v \leftarrow \beta_2 v + (1-\beta_2) g^2, \quad
        \theta \leftarrow \theta - \text{lr}\,
        \frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \varepsilon}.

    The step goes against the averaged gradient :math:`m`, divided coordinate by
    coordinate by the root of the averaged square: each entry moves by about
    ``lr`` whatever the scale of its gradient. With weight decay :math:`\lambda` the
    decaying parameters move by
    :math:`-\text{lr}\,\bigl(\hat m / (\sqrt{\hat v} + \varepsilon) + \lambda\theta\bigr)`
    (AdamW: the decay is not part of the gradient that :math:`m` and :math:`v` average).

    Examples
    --------
    >>> params = {"x": np.array([1.0, -2.0])}
    >>> opt = Adam(params, lr=0.1)
    >>> opt.step({"x": np.array([3.0, -0.5])})  # the first step moves each entry by lr
    >>> params["x"]
    array([ 0.9, -1.9])
    """

    def __init__(self, params: dict[str, np.ndarray], lr: float = 0.01,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decay: Iterable[str] | None = None) -> None:
        if not isinstance(params, dict) or not all(
                isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in params.values()):
            raise TypeError(f"params is a {type(params).__name__}; expected a dict of float "
                            "numpy arrays (updated in place)")
        self.lr = real_number(lr, "lr", minimum=0.0, strict_minimum=True)
        self.betas = check_betas(betas)
        self.eps = real_number(eps, "eps", minimum=0.0, strict_minimum=True)
        self.weight_decay = real_number(weight_decay, "weight_decay", minimum=0.0)
        decay = set(params) if decay is None else set(decay)
        unknown = sorted(decay - set(params))
        if unknown:
            raise ValueError(f"decay names {unknown}, which are not parameters; expected "
                             f"names among {sorted(params)}")
        self.decay = decay
        self.params = params
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads: dict[str, Any]) -> None:
        """Update every parameter in place from its gradient (same names, same shapes)."""
        missing = [name for name in self.params if name not in grads]
        if missing:
            raise ValueError(f"grads lacks {missing}; expected one gradient per parameter")
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1.0 - b1**self.t, 1.0 - b2**self.t
        for name, theta in self.params.items():
            g = grads[name]
            if np.shape(g) != theta.shape:
                raise ValueError(f"grads[{name!r}] has shape {np.shape(g)}; expected "
                                 f"{theta.shape}, the shape of the parameter")
            self.m[name] = b1 * self.m[name] + (1.0 - b1) * g
            self.v[name] = b2 * self.v[name] + (1.0 - b2) * g * g
            update = (self.m[name] / c1) / (np.sqrt(self.v[name] / c2) + self.eps)
            if self.weight_decay and name in self.decay:
                update = update + self.weight_decay * theta
            theta -= self.lr * update


def clip_by_global_norm(grads: dict[str, np.ndarray],
                        max_norm: float) -> tuple[dict[str, np.ndarray], float]:
    r"""Scale every gradient down by one factor when their joint norm exceeds ``max_norm``.

    Parameters
    ----------
    grads : dict of numpy.ndarray
    max_norm : float
        A finite number > 0.

    Returns
    -------
    clipped : dict of numpy.ndarray
        ``grads`` times :math:`\min(1, \text{max\_norm} / \lVert g \rVert)`, dtypes kept
        (the same arrays when no scaling is needed).
    norm : float
        :math:`\lVert g \rVert = \sqrt{\sum_k \sum g_k^2}` before clipping.

    Examples
    --------
    >>> clipped, norm = clip_by_global_norm({"a": np.array([3.0]), "b": np.array([4.0])}, 1.0)
    >>> norm, clipped["a"], clipped["b"]
    (5.0, array([0.6]), array([0.8]))
    """
    max_norm = real_number(max_norm, "max_norm", minimum=0.0, strict_minimum=True)
    norm = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if not math.isfinite(norm):
        raise ValueError(f"the gradients' norm is {norm}; expected a finite norm (a NaN or "
                         "an infinity in a gradient)")
    if norm <= max_norm:
        return grads, norm
    scale = max_norm / norm
    return {k: g * g.dtype.type(scale) for k, g in grads.items()}, norm


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


@dataclass
class GPTTrainingLog:
    """What a training run records.

    Attributes
    ----------
    settings : dict
        Every setting of the run (seed, steps, batch size, learning rates, ...).
    train_loss : list of float
        The minibatch loss before each step.
    eval_steps, val_loss : list
        Steps after which the model was evaluated, and what the evaluation gave.
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


def check_schedule(steps: Any, lr: Any, min_lr: Any, warmup: Any, weight_decay: Any,
                   clip: Any, betas: Any, eval_every: Any, seed: Any,
                   progress: Any) -> dict[str, Any]:
    """The optimiser's settings checked, by name, in the order a training log records them."""
    steps = positive_int(steps, "steps")
    warmup = positive_int(warmup, "warmup", minimum=0)
    eval_every = positive_int(eval_every, "eval_every")
    seed = positive_int(seed, "seed", minimum=0)
    lr = real_number(lr, "lr", minimum=0.0, strict_minimum=True)
    min_lr = real_number(min_lr, "min_lr", minimum=0.0, maximum=lr)
    weight_decay = real_number(weight_decay, "weight_decay", minimum=0.0)
    clip = real_number(clip, "clip", minimum=0.0, strict_minimum=True)
    beta1, beta2 = check_betas(betas)
    progress = check_flag(progress, "progress")
    return {"steps": steps, "lr": lr, "min_lr": min_lr, "warmup": warmup,
            "weight_decay": weight_decay, "clip": clip, "betas": [beta1, beta2],
            "eval_every": eval_every, "seed": seed, "progress": progress}


class _DisplayLine:
    """A file for tqdm that shows the bar's latest line as one notebook output, updated in
    place: the output a saved notebook keeps (and the website and a plain copy show) is the
    bar's final state, where tqdm's widget bar would leave its first, "0%"."""

    encoding = "utf-8"  # tqdm draws its bar in block characters

    def __init__(self) -> None:
        self._handle = None

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip("\n")  # tqdm writes "\r" + the bar, "\n" at the end
        if not line:
            return
        from IPython.display import display

        if self._handle is None:
            self._handle = display({"text/plain": line}, raw=True, display_id=True)
        else:
            self._handle.update({"text/plain": line}, raw=True)

    def flush(self) -> None:
        pass


def _in_kernel() -> bool:
    """Running in a Jupyter kernel (a notebook), not a terminal or a script."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def progress_bar(total: int, desc: str = "training", unit: str = "step"):
    """A tqdm progress bar: in a notebook a line of text updated in place (its last state
    stays in the saved notebook), elsewhere tqdm's bar on stderr."""
    from tqdm import tqdm

    if _in_kernel():
        return tqdm(total=total, desc=desc, unit=unit, file=_DisplayLine(), ncols=80)
    return tqdm(total=total, desc=desc, unit=unit)


def train_loop(params: Params, loss_and_grads: Callable[[Params, Any], tuple[float, Params]],
               sample: Callable[[np.random.Generator], Any], rng: np.random.Generator, *,
               steps: int, lr: float, log: GPTTrainingLog | None = None,
               min_lr: float | None = None, warmup: int = 0, weight_decay: float = 0.0,
               decay: Iterable[str] | None = None, clip: float | None = None,
               betas: tuple[float, float] = (0.9, 0.999),
               evaluate: Callable[[Params], float] | None = None, eval_every: int = 1,
               progress: bool = False) -> GPTTrainingLog:
    """Train ``params`` in place; the settings are the caller's, already checked.

    Parameters
    ----------
    params : dict of numpy.ndarray
        Updated in place.
    loss_and_grads : callable ``(params, batch) -> (loss, grads)``
    sample : callable ``(rng) -> batch``
        Draws one step's batch from ``rng``.
    rng : numpy.random.Generator
        The batches' generator (seeded by the caller).
    steps, lr, min_lr, warmup
        Steps, and the learning rate: constant ``lr`` when ``min_lr`` is None, else the
        warm-up and cosine schedule of the module's notes.
    weight_decay, decay, betas
        AdamW's settings (:class:`Adam`).
    clip : float, optional
        Clip the gradients' global norm to ``clip`` (:func:`clip_by_global_norm`).
    evaluate, eval_every
        Called every ``eval_every`` steps and after the last; its values go to the log's
        ``val_loss``.
    progress : bool
        A tqdm progress bar with the loss.

    Returns
    -------
    GPTTrainingLog
        ``log`` (or a new one), with the loss before each step.
    """
    log = GPTTrainingLog({}) if log is None else log
    opt = Adam(params, lr=lr, betas=betas, weight_decay=weight_decay, decay=decay)
    bar = None
    if progress:
        bar = progress_bar(steps)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss, grads = loss_and_grads(params, sample(rng))
        log.train_loss.append(loss)
        if clip is not None:
            grads, _ = clip_by_global_norm(grads, clip)
        if min_lr is not None:
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
    return log


def train_scheduled(params: Params, loss_and_grads: Callable[[Params, Any], tuple[float, Params]],
                    sample: Callable[[np.random.Generator], Any], log: GPTTrainingLog,
                    run: dict[str, Any],
                    evaluate: Callable[[Params], float] | None = None) -> Params:
    """:func:`train_loop` with the settings of :func:`check_schedule` (``run``): batches from
    ``SeedSequence([seed, 1])``, weight decay on the matrices and embeddings (not on biases
    and norms), a warm-up then a cosine decay, clipping. Returns ``params``, trained."""
    rng = np.random.default_rng(np.random.SeedSequence([run["seed"], 1]))
    train_loop(params, loss_and_grads, sample, rng, steps=run["steps"], lr=run["lr"], log=log,
               min_lr=run["min_lr"], warmup=run["warmup"], weight_decay=run["weight_decay"],
               decay=[k for k, a in params.items() if a.ndim >= 2],  # matrices, not biases
               clip=run["clip"], betas=tuple(run["betas"]), evaluate=evaluate,
               eval_every=run["eval_every"], progress=run["progress"])
    return params
