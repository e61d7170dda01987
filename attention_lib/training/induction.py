r"""Two layers make an induction head: an attention-only GPT trained to continue a repeat.

The data (:func:`~attention_lib.make_induction_data`): random tokens in which
one random segment is written twice, back to back, at a random place and with a random
length. The first copy cannot be predicted (its loss stays near :math:`\log V`); the
second can, by the rule "find the earlier occurrence of the current token and predict
the token that followed it". Two heads in two layers implement that rule:

- a *previous-token head* in layer 1 writes, at every position :math:`s`, the token
  at :math:`s - 1` into the residual stream;
- an *induction head* in layer 2, at position :math:`t`, matches its query (the token
  :math:`x_t`) against those keys, so it attends to the position right after the
  earlier copy of :math:`x_t`, and copies the token it finds there.

One layer cannot do it: a head's keys then hold only their own token (rotary positions
add nothing to the residual stream), so no query can ask for "the position whose
*previous* token is mine". And since the distance between the copies changes from
sequence to sequence (8 to 16), as does their place, no head can reach the answer by
position alone. What one layer can still do is spread its bets: over the tokens seen
so far, or over the nine at the possible distances (at best about :math:`\log 9`
nats, against :math:`\log 64` for a guess).

:func:`train_induction_model` trains the model (:func:`~attention_lib.gpt.train.
train_gpt_on_batches`); :func:`induction_scores` measures the heads and the losses on
held-out sequences; :func:`head_ablation_losses` removes one head at a time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._threads import one_blas_thread
from .._validation import check_flag, index_array, positive_int
from ..gpt.train import train_gpt_on_batches
from ..model.config import GPTConfig, check_head_mask, check_params
from ..model.hooks import head_scale_hooks
from ..model.loss import log_softmax
from ..model.stack import stack_forward
from .data import InductionData, make_induction_data

__all__ = ["InductionLog", "InductionScores", "head_ablation_losses", "induction_config",
           "induction_scores", "induction_seed_survey", "train_induction_model",
           "trained_induction_model"]

# The task and the model of the book.
VOCAB_SIZE = 64
LENGTH = 33  # tokens per sequence: the model reads 32 and predicts 32
MIN_PERIOD, MAX_PERIOD = 8, 16
D_MODEL, N_HEADS = 32, 2
INIT_STD = 0.1
STEPS, BATCH_SIZE, LR, MIN_LR, WARMUP = 1500, 32, 3e-3, 3e-4, 100
EVAL_EVERY, EVAL_SEQUENCES = 25, 128
DTYPE = np.float64  # float32 runs differ between CPUs after the phase change (see the notes)
HELD_OUT = 2  # the held-out sequences come from SeedSequence([seed, 2]); training from [.., 1]


def induction_config(n_layers: int = 2) -> GPTConfig:
    """The configuration of the book's induction model.

    Parameters
    ----------
    n_layers : int, default 2

    Returns
    -------
    GPTConfig
        Attention only, rotary positions, 64 tokens, context 32, ``d_model`` 32, 2 heads
        per layer, tied embeddings.

    Examples
    --------
    >>> config = induction_config()
    >>> config.attention_only, config.positions, config.n_layers, config.d_head
    (True, 'rope', 2, 16)
    """
    n_layers = positive_int(n_layers, "n_layers")
    return GPTConfig(vocab_size=VOCAB_SIZE, context=LENGTH - 1, d_model=D_MODEL,
                     n_layers=n_layers, n_heads=N_HEADS, attention_only=True,
                     positions="rope")


@dataclass(frozen=True)
class InductionScores:
    r"""What :func:`induction_scores` measures.

    Attributes
    ----------
    previous_token : numpy.ndarray, shape (n_layers, n_heads)
        Each head's mean weight on the previous position, over every position
        :math:`t \ge 1` of every sequence.
    induction : numpy.ndarray, shape (n_layers, n_heads)
        Each head's mean weight, over the positions of the second copy, on the position
        right after the earlier copy of the current token, :math:`t - L + 1`.
    first_half_loss : float
        Mean loss (nats) of the predictions of the first copy's tokens 2 .. L.
    second_half_loss : float
        Mean loss of the predictions of the second copy's tokens 2 .. L.
    n_sequences : int
    """

    previous_token: np.ndarray
    induction: np.ndarray
    first_half_loss: float
    second_half_loss: float
    n_sequences: int


def _copy_positions(data: InductionData, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Input positions (B, T) that predict the first copy's and the second copy's tokens 2..L.

    Position ``t`` predicts token ``t + 1``: the first copy's tokens ``s + 1 .. s + L - 1``
    are predicted at ``t = s .. s + L - 2``, the second copy's at ``t = s + L .. s + 2L - 2``.
    """
    t = np.arange(T)  # (T,)
    s, L = data.start[:, None], data.period[:, None]  # (B, 1)
    first = (t >= s) & (t <= s + L - 2)  # (B, T)
    second = (t >= s + L) & (t <= s + 2 * L - 2)
    return first, second


def _held_out(config: GPTConfig, data: Any, n_sequences: int, seed: int, min_period: int,
              max_period: int) -> InductionData:
    """``data`` checked against the model, or fresh held-out sequences."""
    if data is None:
        n_sequences = positive_int(n_sequences, "n_sequences")
        seed = positive_int(seed, "seed", minimum=0)
        rng = np.random.default_rng(np.random.SeedSequence([seed, HELD_OUT]))
        return make_induction_data(n_sequences, length=config.context + 1,
                                   vocab_size=config.vocab_size, min_period=min_period,
                                   max_period=max_period, rng=rng)
    if not isinstance(data, InductionData):
        raise TypeError(f"data is {type(data).__name__}; expected InductionData "
                        "(from make_induction_data) or None")
    if data.tokens.shape[1] - 1 > config.context:
        raise ValueError(f"data has sequences of {data.tokens.shape[1]} tokens; expected at "
                         f"most context + 1 = {config.context + 1}")
    index_array(data.tokens, config.vocab_size, "data.tokens", ndim=2)  # never wrapped
    return data


def induction_scores(params: dict[str, np.ndarray], config: GPTConfig, *,
                     data: InductionData | None = None, n_sequences: int = 512, seed: int = 0,
                     head_mask: Any = None, min_period: int = MIN_PERIOD,
                     max_period: int = MAX_PERIOD) -> InductionScores:
    r"""Measure every head and the in-context loss on held-out induction sequences.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
    config : GPTConfig
        Any GPT, not only the induction model: the book's language model is measured so
        (chapter 20). The model reads ``tokens[:, :-1]`` of each sequence (``context + 1``
        tokens at most).
    data : InductionData, optional
        The sequences to measure on, of any length up to ``context + 1`` and with tokens
        of the model's vocabulary; ``make_induction_data(n, length=2 * L, min_period=L,
        max_period=L, ...)`` gives random tokens that are one segment written twice and
        nothing else. By default ``n_sequences`` fresh ones of
        :func:`~attention_lib.make_induction_data`, drawn from the generator
        ``default_rng(SeedSequence([seed, 2]))``, a stream no training run draws from
        (the training batches of seed ``s`` come from ``SeedSequence([s, 1])``).
    n_sequences : int, default 512
    seed : int, default 0
    head_mask : array_like, shape (n_layers, n_heads), optional
        Heads to remove (0 or False), as in :func:`~attention_lib.gpt_logits`.
    min_period, max_period : int, default 8 and 16
        The segment lengths of the drawn sequences.

    Returns
    -------
    InductionScores

    Notes
    -----
    With :math:`A^{(l,i)}_{t,u}` the weight head :math:`i` of layer :math:`l` puts on
    position :math:`u` from position :math:`t`, a sequence's first copy starting at
    :math:`s` and the period :math:`L`:

    .. math::

        \text{previous-token}_{l,i} = \operatorname{mean}_{t \ge 1} A^{(l,i)}_{t,\,t-1},
        \qquad
        \text{induction}_{l,i} = \operatorname{mean}_{s+L \le t \le s+2L-2}
            A^{(l,i)}_{t,\,t-L+1},

    both averaged over the sequences too. Position :math:`t - L + 1` holds the token
    that followed the earlier copy of :math:`x_t`: the next token. The losses average
    :math:`-\log p(x_{t+1} \mid x_{\le t})` over :math:`s \le t \le s+L-2` (the first
    copy) and :math:`s+L \le t \le s+2L-2` (the second).

    Examples
    --------
    >>> from attention_lib import init_gpt
    >>> config = induction_config(n_layers=1)
    >>> scores = induction_scores(init_gpt(config, seed=0), config, n_sequences=8)
    >>> scores.previous_token.shape, round(scores.second_half_loss, 1)   # untrained: log 64
    ((1, 2), 4.2)
    """
    dtype = check_params(params, config)
    mask = check_head_mask(head_mask, config, dtype)
    data = _held_out(config, data, n_sequences, seed, min_period, max_period)
    x, y = data.tokens[:, :-1], data.tokens[:, 1:]  # (B, T) each
    hooks = None if mask is None else head_scale_hooks(mask)
    run = stack_forward(params, config, x, hooks=hooks)
    log_p = log_softmax(run.out)  # (B, T, V)
    nll = -np.take_along_axis(log_p, y[..., None], axis=-1)[..., 0].astype(np.float64)  # (B, T)
    first, second = _copy_positions(data, x.shape[1])
    w = np.stack(run.weights)  # (L, B, h, T, T)
    t = np.arange(1, x.shape[1])
    previous = w[:, :, :, t, t - 1].mean(axis=(1, 3), dtype=np.float64)  # (L, h)
    b, t2 = np.nonzero(second)  # every (sequence, position) of the second copy
    picked = w[:, b, :, t2, t2 - data.period[b] + 1]  # (N, L, h): advanced indices first
    induction = picked.mean(axis=0, dtype=np.float64)  # (L, h)
    return InductionScores(previous, induction, float(nll[first].mean()),
                           float(nll[second].mean()), len(data))


def head_ablation_losses(params: dict[str, np.ndarray], config: GPTConfig, *,
                         data: InductionData | None = None, n_sequences: int = 512,
                         seed: int = 0, min_period: int = MIN_PERIOD,
                         max_period: int = MAX_PERIOD) -> tuple[np.ndarray, np.ndarray]:
    """The first- and second-copy losses with one head removed, for every head.

    Parameters
    ----------
    params, config, data, n_sequences, seed, min_period, max_period
        As in :func:`induction_scores` (every head is measured on the same sequences).

    Returns
    -------
    first_half_loss, second_half_loss : numpy.ndarray, shape (n_layers, n_heads)
        Entry ``[l, i]`` is the loss with head ``i`` of layer ``l`` removed (its output
        set to zero before the output projection), the other heads as trained.

    Examples
    --------
    >>> config = induction_config(n_layers=1)
    >>> from attention_lib import init_gpt
    >>> first, second = head_ablation_losses(init_gpt(config), config, n_sequences=8)
    >>> second.shape
    (1, 2)
    """
    check_params(params, config)
    data = _held_out(config, data, n_sequences, seed, min_period, max_period)
    first = np.zeros((config.n_layers, config.n_heads))
    second = np.zeros_like(first)
    for layer in range(config.n_layers):
        for head in range(config.n_heads):
            mask = np.ones((config.n_layers, config.n_heads), dtype=bool)
            mask[layer, head] = False
            scores = induction_scores(params, config, data=data, head_mask=mask)
            first[layer, head] = scores.first_half_loss
            second[layer, head] = scores.second_half_loss
    return first, second


@dataclass
class InductionLog:
    """What :func:`train_induction_model` records.

    Attributes
    ----------
    train_loss : numpy.ndarray, shape (steps,)
        The minibatch loss (every position) before each step.
    eval_steps : numpy.ndarray, shape (k,)
        The steps after which the held-out sequences were measured.
    first_half_loss, second_half_loss : numpy.ndarray, shape (k,)
        The held-out losses on the first and the second copy (:func:`induction_scores`).
    previous_token, induction : numpy.ndarray, shape (k, n_layers, n_heads)
        Every head's held-out scores at those steps.
    settings : dict
        Every setting of the run.
    seconds : float
        Wall-clock training time (depends on the machine; not part of the result).
    """

    train_loss: np.ndarray
    eval_steps: np.ndarray
    first_half_loss: np.ndarray
    second_half_loss: np.ndarray
    previous_token: np.ndarray
    induction: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def phase_change_step(self) -> int | None:
        r"""The first measured step at which the second copy's loss is below :math:`\tfrac12\log V`.

        Returns None when the loss never got there (no induction head formed).
        """
        half = 0.5 * math.log(self.settings["config"]["vocab_size"])
        below = np.nonzero(self.second_half_loss < half)[0]
        return int(self.eval_steps[below[0]]) if below.size else None


def train_induction_model(n_layers: int = 2, seed: int = 0, *, steps: int = STEPS,
                          dtype: Any = DTYPE, progress: bool = False,
                          return_log: bool = False) -> tuple[Any, ...]:
    r"""Train the book's attention-only GPT on induction sequences.

    Parameters
    ----------
    n_layers : int, default 2
        Two layers form an induction head; one layer cannot (the control).
    seed : int, default 0
        Seeds the initial weights and the training batches.
    steps : int, default 1500
    dtype : {numpy.float64, numpy.float32}, default float64
        The precision of the weights and of the training. In float64 a run gives the same
        numbers on every CPU to about six digits; see the notes for float32.
    progress : bool, default False
        Show a progress bar.
    return_log : bool, default False
        Also return the :class:`InductionLog`.

    Returns
    -------
    params : dict of str to numpy.ndarray
        In ``dtype``.
    config : GPTConfig
        :func:`induction_config` of ``n_layers``.
    log : InductionLog
        Only with ``return_log``: the training loss of every step and, every 25 steps,
        the held-out losses and head scores (128 sequences, ``seed=0`` of
        :func:`induction_scores`).

    Notes
    -----
    Each step draws 32 fresh sequences of :func:`~attention_lib.make_induction_data`
    (33 tokens of 64, a segment of 8 to 16 tokens written twice) and trains on the
    next-token loss of every position, with AdamW (learning rate :math:`3\cdot10^{-3}`
    after 100 warm-up steps, cosine decay to :math:`3\cdot10^{-4}`, weight decay 0.1,
    clipping at norm 1) from weights of standard deviation 0.1
    (:func:`~attention_lib.gpt.train.train_gpt_on_batches`). The two-layer model sits on
    a plateau near :math:`\log 64` for a few hundred steps, then its loss on the second
    copy falls within about a hundred steps: a previous-token head has formed in layer 1
    and an induction head in layer 2. :func:`induction_seed_survey` holds what six seeds
    reached (the step of the fall, the final losses and head scores). One layer (seeds 0
    to 3) ends at 3.25 to 3.27 on the second copy. A run takes about 25 s of one core
    (float64; the BLAS is held to one thread meanwhile, since products this small only
    lose time to more).

    Training amplifies rounding differences. Measured with OpenBLAS's AVX-512, AVX2 and
    AVX kernels (``OPENBLAS_CORETYPE``) and numpy's AVX-512 loops on and off: in float64
    the held-out losses and scores after 1,500 steps agree to about :math:`10^{-6}`; in
    float32 the first few hundred steps agree to float32 rounding, but by the end the
    losses, head scores and ablation losses differ by up to about 0.01 (0.1 for a head
    that matters little), so float32 numbers are robust to one decimal only.

    Examples
    --------
    >>> params, config = train_induction_model(n_layers=1, steps=3)
    >>> config.n_layers, params["wte"].shape
    (1, (64, 32))
    """
    config = induction_config(n_layers)
    seed = positive_int(seed, "seed", minimum=0)
    steps = positive_int(steps, "steps")
    return_log = check_flag(return_log, "return_log")
    held_out = _held_out(config, None, EVAL_SEQUENCES, 0, MIN_PERIOD, MAX_PERIOD)
    measured: list[InductionScores] = []

    def sample(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        batch = make_induction_data(BATCH_SIZE, length=LENGTH, vocab_size=VOCAB_SIZE,
                                    min_period=MIN_PERIOD, max_period=MAX_PERIOD, rng=rng)
        return batch.tokens[:, :-1], batch.tokens[:, 1:]  # (B, T) inputs and targets

    def evaluate(params: dict[str, np.ndarray]) -> float:
        measured.append(induction_scores(params, config, data=held_out))
        return measured[-1].second_half_loss

    with one_blas_thread():  # products this small only lose time to more BLAS threads
        params, gpt_log = train_gpt_on_batches(
            config, sample, steps=steps, evaluate=evaluate, lr=LR, min_lr=MIN_LR,
            warmup=WARMUP, eval_every=EVAL_EVERY, seed=seed, init_std=INIT_STD, dtype=dtype,
            progress=progress)
    if not return_log:
        return params, config
    settings = dict(gpt_log.settings, batch_size=BATCH_SIZE, length=LENGTH,
                    min_period=MIN_PERIOD, max_period=MAX_PERIOD,
                    eval_sequences=EVAL_SEQUENCES)
    log = InductionLog(
        train_loss=np.array(gpt_log.train_loss),
        eval_steps=np.array(gpt_log.eval_steps),
        first_half_loss=np.array([m.first_half_loss for m in measured]),
        second_half_loss=np.array([m.second_half_loss for m in measured]),
        previous_token=np.stack([m.previous_token for m in measured]),
        induction=np.stack([m.induction for m in measured]),
        settings=settings, seconds=gpt_log.seconds)
    return params, config, log


MODEL_FILE = "induction_model.npz"


def trained_induction_model() -> tuple[dict[str, np.ndarray], GPTConfig]:
    r"""Chapter 20's two-layer model as trained there (seed 0), read from the package's data.

    ``attention_lib/data/induction_model.npz`` holds the float64 weights that
    ``train_induction_model(n_layers=2, seed=0)`` returns, written by
    ``tools/induction_seeds.py``. Chapter 20 trains the model in the page and checks that
    its weights are these; later chapters read them instead of training again.

    Returns
    -------
    params : dict of str to numpy.ndarray
        float64, checked against the configuration (names, shapes, finite).
    config : GPTConfig
        :func:`induction_config` of 2 layers.

    Examples
    --------
    >>> params, config = trained_induction_model()
    >>> config.n_layers, config.n_heads, params["wte"].shape, params["wte"].dtype
    (2, 2, (64, 32), dtype('float64'))
    """
    import io
    from importlib import resources

    data = resources.files("attention_lib").joinpath("data", MODEL_FILE).read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        params = {name: arrays[name] for name in arrays.files}
    config = induction_config(2)
    if check_params(params, config) != np.float64:
        raise ValueError(f"{MODEL_FILE}: the stored weights are not float64")
    return params, config


SURVEY_FILE = "induction_seeds.json"
SURVEY_FIELDS = {"seed": int, "phase_change_step": (int, type(None)), "first_half_loss": float,
                 "second_half_loss": float, "previous_token": float, "induction": float,
                 "seconds": float}


def induction_seed_survey() -> list[dict[str, Any]]:
    r"""The two-layer model trained from several seeds: what each run reached.

    Read from the package's data (``attention_lib/data/induction_seeds.json``, written by
    ``tools/induction_seeds.py``, which calls :func:`train_induction_model` with
    ``return_log=True`` for each seed). The test suite trains one of the seeds again and
    checks its row.

    Returns
    -------
    list of dict
        One per seed, in order: ``seed``; ``phase_change_step``, the first measured step
        at which the held-out loss on the second copy was below :math:`\tfrac12\log 64`
        (:meth:`InductionLog.phase_change_step`, None if never); after the last step,
        ``first_half_loss`` and ``second_half_loss`` (nats per token on the held-out
        sequences), ``previous_token`` (the best previous-token score of layer 1),
        ``induction`` (the best induction score of layer 2); and ``seconds``, the time
        the run took on the machine the file names.

    Examples
    --------
    >>> rows = induction_seed_survey()
    >>> rows[0]["seed"], rows[0]["phase_change_step"] is not None
    (0, True)
    """
    from importlib import resources

    text = resources.files("attention_lib").joinpath("data", SURVEY_FILE).read_text("utf-8")
    rows = json.loads(text)["seeds"]
    for row in rows:
        if set(row) != set(SURVEY_FIELDS) or not all(
                isinstance(row[k], t) and not isinstance(row[k], bool)
                for k, t in SURVEY_FIELDS.items()):
            raise ValueError(f"{SURVEY_FILE}: a row does not have the fields "
                             f"{sorted(SURVEY_FIELDS)} with their types: {row}")
    return rows
