"""A task's run: seeded data, initial weights, Adam on minibatches, held-out evaluation.

A task is a :class:`Task`; :func:`train` draws its data and weights, runs the one training
loop (:func:`attention_lib.model.train.train_loop`, constant learning rate, no clipping) and
returns a :class:`TrainingResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._threads import one_blas_thread
from .._validation import check_flag, positive_int, real_number
from ..model.params import draw_params, fan_in_std
from ..model.train import GPTTrainingLog, check_schedule, train_loop, train_scheduled
from .data import unseen

__all__ = ["Task", "TrainingResult", "init_params", "train"]

Params = dict[str, np.ndarray]


@dataclass(frozen=True)
class Task:
    """What the training loop needs to know about a task.

    Attributes
    ----------
    name : str
        Recorded as ``TrainingResult.task`` (``"retrieval"``, ``"shift"``, ...).
    config : dict
        The task's own settings (sizes of the data and the model), recorded in
        ``TrainingResult.config`` after the seed.
    n_distinct : int
        How many different sequences ``make_data`` can draw; named in the error
        when no held-out sequence is left.
    make_data : callable ``(n, rng) -> data``
        ``n`` random sequences. ``data`` supports ``len(data)``, ``data.subset(index)``
        and ``data.rows()`` (one int row per sequence, to drop held-out duplicates).
    init_params : callable ``(rng) -> dict of numpy.ndarray``
        The initial float64 weights (:func:`init_params` gives the usual ones).
    loss_and_grads : callable ``(params, batch) -> (float, dict of numpy.ndarray)``
        The mean loss of a minibatch and one gradient per parameter.
    evaluate : callable ``(params, test) -> (accuracy, target_weight)``
        The held-out accuracy and the mean attention weight on the right position.
    """

    name: str
    config: dict[str, Any]
    n_distinct: int
    make_data: Callable[[int, np.random.Generator], Any]
    init_params: Callable[[np.random.Generator], Params]
    loss_and_grads: Callable[[Params, Any], tuple[float, Params]]
    evaluate: Callable[[Params, Any], tuple[float, float]]


@dataclass
class TrainingResult:
    """What a training run returns.

    Attributes
    ----------
    task : str
        The task's name: ``"retrieval"`` or ``"shift"``.
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


def init_params(shapes: dict[str, tuple[int, ...]], rng: np.random.Generator) -> Params:
    r"""Initial float64 weights: biases zero, embeddings and matrices Gaussian.

    Parameters
    ----------
    shapes : dict of tuple of int
        Shape of every parameter, by name, drawn in this order.
    rng : numpy.random.Generator

    Returns
    -------
    dict of numpy.ndarray

    Notes
    -----
    A name starting with ``b_`` is a bias, zero. A name ending in ``embed`` is a
    table of shape (rows, d), drawn from :math:`\mathcal N(0, 1/d)`; any other
    matrix of shape (fan_in, ...) from :math:`\mathcal N(0, 1/\text{fan\_in})`.

    Examples
    --------
    >>> p = init_params({"w_q": (4, 2), "b_out": (3,)}, np.random.default_rng(0))
    >>> p["w_q"].shape, p["b_out"].tolist()
    ((4, 2), [0.0, 0.0, 0.0])
    """
    return draw_params(shapes, rng, fan_in_std)


def _sized_shapes(shapes: dict[str, tuple[str, ...]], **sizes: int
                  ) -> dict[str, tuple[int, ...]]:
    """``shapes`` written with dimension names, each name replaced by its size in ``sizes``.

    >>> _sized_shapes({"w_q": ("d", "d_k"), "b_out": ("c",)}, d=4, d_k=2, c=3)
    {'w_q': (4, 2), 'b_out': (3,)}
    """
    return {name: tuple(sizes[dim] for dim in shape) for name, shape in shapes.items()}


def train(
    task: Task, *, seed: int = 0, steps: int = 1500, batch_size: int = 64, lr: float = 0.02,
    n_train: int = 4000, n_test: int = 1000,
) -> TrainingResult:
    """Train a task with Adam on seeded minibatches and evaluate it on held-out sequences.

    Parameters
    ----------
    task : Task
    seed : int, default 0
        A non-negative integer. It seeds four independent streams: the training
        sequences, the initial weights, the minibatches and the held-out sequences.
    steps, batch_size : int
        Adam steps, and sequences per minibatch (drawn with replacement).
    lr : float, default 0.02
        Adam's learning rate: a finite number > 0 (Python or numpy; not a bool).
    n_train, n_test : int
        Training sequences, and held-out sequences drawn apart (those that equal a
        training sequence are dropped; if none is left, a ``ValueError`` says why).

    Returns
    -------
    TrainingResult

    Notes
    -----
    The same task and arguments give the same result, bit for bit, on one machine.

    Examples
    --------
    >>> from attention_lib.training import retrieval_task
    >>> result = train(retrieval_task(), seed=0, steps=3)
    >>> result.task, result.losses.shape, result.config["seed"]
    ('retrieval', (3,), 0)
    """
    if not isinstance(task, Task):
        raise TypeError(f"task is a {type(task).__name__}; expected a training.Task")
    seed = positive_int(seed, "seed", minimum=0, what="it seeds the data and the weights")
    steps = positive_int(steps, "steps")
    batch_size = positive_int(batch_size, "batch_size")
    lr = real_number(lr, "lr", minimum=0.0, strict_minimum=True)
    n_train = positive_int(n_train, "n_train")
    n_test = positive_int(n_test, "n_test")
    config = {"seed": seed, **task.config, "steps": steps, "batch_size": batch_size, "lr": lr,
              "n_train": n_train, "n_test": n_test}

    data_seq, init_seq, batch_seq, test_seq = np.random.SeedSequence(seed).spawn(4)
    train_data = task.make_data(n_train, np.random.default_rng(data_seq))
    test = task.make_data(n_test, np.random.default_rng(test_seq))
    test = test.subset(unseen(test.rows(), train_data.rows()))
    if len(test) == 0:
        sizes = ", ".join(f"{k}={v}" for k, v in task.config.items())
        raise ValueError(
            f"no held-out sequence is left: all n_test={n_test} test sequences also occur among "
            f"the n_train={n_train} training sequences, since the {task.name} task with {sizes} "
            f"has only {task.n_distinct} distinct sequence(s); expected sizes with many more "
            "distinct sequences than n_train (larger vocabularies or longer sequences), or a "
            "smaller n_train")
    params = task.init_params(np.random.default_rng(init_seq))
    initial = {k: v.copy() for k, v in params.items()}

    def sample(rng: np.random.Generator) -> Any:
        return train_data.subset(rng.integers(0, len(train_data), size=batch_size))

    log = train_loop(params, task.loss_and_grads, sample, np.random.default_rng(batch_seq),
                     steps=steps, lr=lr)
    accuracy, target_weight = task.evaluate(params, test)
    return TrainingResult(task.name, params, initial, np.array(log.train_loss),
                          float(accuracy), float(target_weight), test, config, log.seconds)


def train_small_model(params: Params, loss_and_grads: Callable[[Params, Any], tuple[float, Params]],
                      data: Any, size: int, *, seed: Any, steps: Any, progress: Any,
                      settings: dict[str, Any]) -> tuple[Params, dict[str, Any]]:
    r"""Train a small float64 model of chapters 21 and 22 on its fixed examples.

    Each step draws 64 of the ``size`` examples of ``data`` (``data.subset(index)``) and
    follows ``loss_and_grads(params, batch)`` with AdamW (learning rate :math:`3 \cdot
    10^{-3}` after 100 warm-up steps, cosine decay to :math:`3 \cdot 10^{-4}`, weight decay
    0.01, clipping at norm 1), with one BLAS thread (products this small only lose time to
    more). Returns the weights rounded to float32 numbers (kept as float64 arrays), so that
    a page can receive them exactly in four bytes each, and the log: ``"train_loss"``,
    ``"settings"`` (``settings`` and the optimiser's), ``"seconds"``.
    """
    steps = positive_int(steps, "steps")
    run = check_schedule(steps, 3e-3, 3e-4, 100, 0.01, 1.0, (0.9, 0.99), steps,
                         positive_int(seed, "seed", minimum=0), check_flag(progress, "progress"))
    settings = {**settings, **{k: v for k, v in run.items() if k != "progress"},
                "batch_size": SMALL_BATCH, "dtype": "float64"}
    log = GPTTrainingLog(settings)

    def sample(rng: np.random.Generator) -> Any:
        return data.subset(rng.integers(0, size, size=SMALL_BATCH))

    with one_blas_thread():
        params = train_scheduled(params, loss_and_grads, sample, log, run)
    params = {k: a.astype(np.float32).astype(np.float64) for k, a in params.items()}
    return params, {"train_loss": np.array(log.train_loss), "settings": settings,
                    "seconds": log.seconds}


SMALL_BATCH = 64  # examples per step of train_small_model
