r"""Feed-forward neurons: what each responds to, what removing it costs, and what the
feed-forward layers do against attention.

A GPT's feed-forward layer computes :math:`\operatorname{act}(x W_1 + b_1)\, W_2 + b_2` at
every position; a *neuron* is one entry of the hidden layer, ``(layer, index)``, read at the
hook site ``"blocks.l.ff.hidden"`` (after the activation, :func:`~attention_lib.hook_sites`).
Three readings of a trained model:

- :func:`top_activating_contexts`: the positions of a text where a score (a neuron's
  activation, from :func:`~attention_lib.stream_activations`) is largest, each with the
  text around it (:class:`Context`);
- :func:`neuron_ablation_loss`: the next-token loss with a set of neurons removed;
  :func:`single_neuron_costs`: what removing each neuron alone adds, for hundreds of them;
- :func:`sublayer_ablation_losses`: the loss with each block's attention output, or its
  feed-forward output, removed, and with all of one kind removed (:class:`SublayerAblation`).

*Removing* is mean-ablation by default: the activation is replaced at every position by its
mean over the training text (:func:`activation_means`), which keeps what the part writes on
average; ``mode="zero"`` sets it to 0. Every loss is in nats per token, over the windows in
which :func:`~attention_lib.sequence_loss` reads a stream.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._contexts import Context, top_activating_contexts
from ._threads import one_blas_thread
from ._validation import array_of_shape, describe, index_array, one_of, positive_int
from ._validation.core import _asarray
from .gpt.config import GPTConfig
from .gpt.train import lm_windows, sequence_loss
from .interpret import _check_model
from .model.hooks import capture_hooks
from .model.layers import norm_forward
from .model.loss import cross_entropy
from .model.stack import block_forward, read_out, stack_forward

__all__ = ["Context", "SublayerAblation", "activation_means", "neuron_ablation_loss",
           "single_neuron_costs", "sublayer_ablation_losses", "top_activating_contexts"]

MODES = ("mean", "zero")
MEAN_SITES = ("attn.out", "ff.hidden", "ff.out")
# _ONE_THREAD: every pass here runs with one BLAS thread per call (products of a few
# thousand rows by 128 or 512). Measured on a 2-core host loaded by other work: two BLAS
# threads ran the book's model 5 to 15 times slower than one.


def _check_ff_model(params: Any, config: Any) -> np.dtype:
    """A GPT with feed-forward layers; its parameters' dtype."""
    dtype = _check_model(params, config)
    if config.attention_only:
        raise ValueError("config has attention_only=True: the model has no feed-forward "
                         "layers; expected a model with them")
    return dtype


def _loss_stream(stream: Any, config: GPTConfig) -> np.ndarray:
    """``stream`` as int64 ids of shape (N,), N >= 2."""
    tokens = index_array(stream, config.vocab_size, "stream", ndim=1)
    if tokens.size < 2:
        raise ValueError(f"stream has {tokens.size} token id; expected at least 2 (the first "
                         "predicts the second)")
    return tokens


def _check_neurons(neurons: Any, config: GPTConfig) -> np.ndarray:
    """``neurons`` as int64 (n, 2) rows ``(layer, index)``, n >= 0, each in range."""
    a = _asarray(neurons, "neurons")
    if a.size == 0 and a.ndim <= 2:
        return np.zeros((0, 2), dtype=np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"neurons has dtype {a.dtype}; expected integer (layer, index) pairs")
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"neurons has {describe(a)}; expected a list of (layer, index) pairs, "
                         "shape (n, 2) (a list even for one neuron: [(3, 17)])")
    for column, what, n in ((0, "layer", config.n_layers), (1, "index", config.d_ff)):
        bad = (a[:, column] < 0) | (a[:, column] >= n)
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"neurons[{row}] = {tuple(a[row].tolist())} has the {what} "
                             f"{a[row, column]}; expected a {what} from 0 to {n - 1} "
                             f"(the model has {config.n_layers} layers of {config.d_ff} "
                             "neurons)")
    return a.astype(np.int64, copy=False)


def _mode(mode: Any, means: Any) -> str:
    mode = one_of(mode, "mode", MODES)
    if mode == "mean" and means is None:
        raise ValueError("mode='mean' needs means: the mean activations over the training "
                         "text, from activation_means(params, config, train_ids); or give "
                         "mode='zero'")
    return mode


def _site_means(means: Any, site: str, shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    """The means of one site, (n_layers, width), from ``activation_means``'s dict (or, for the
    neurons, an array of that shape)."""
    if isinstance(means, Mapping):
        if site not in means:
            raise ValueError(f"means has the keys {sorted(means)}; expected {site!r} among "
                             "them (the dict of activation_means)")
        a = array_of_shape(means[site], f"means[{site!r}]", shape,
                           what="(n_layers, width)")
    elif site == "ff.hidden":
        a = array_of_shape(means, "means", shape, what="(n_layers, d_ff)")
    else:
        raise TypeError(f"means is {type(means).__name__}; expected the dict of "
                        "activation_means (with 'attn.out' and 'ff.out')")
    return a.astype(dtype)


def _neuron_targets(mode: str, means: Any, config: GPTConfig, dtype: np.dtype) -> np.ndarray:
    """What each neuron is set to, (n_layers, d_ff): its mean, or 0."""
    shape = (config.n_layers, config.d_ff)
    return (np.zeros(shape, dtype=dtype) if mode == "zero"
            else _site_means(means, "ff.hidden", shape, dtype))


def _loss_windows(stream: np.ndarray, T: int, batch_size: int,
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Inputs and targets (B, T) of :func:`~attention_lib.sequence_loss`'s windows, in its
    order: consecutive windows of ``T + 1`` tokens overlapping by one, the last shorter."""
    starts = np.arange(0, stream.size - 1, T)
    for first in range(0, starts.size, batch_size):
        chunk = starts[first:first + batch_size]
        full = chunk[chunk + T < stream.size]
        if full.size:
            yield lm_windows(stream, full, T)
        for s in chunk[chunk + T >= stream.size]:
            yield stream[None, s:-1], stream[None, s + 1:]


def _summed_loss(logits: np.ndarray, targets: np.ndarray) -> float:
    """The next-token loss summed over the positions (nats)."""
    loss, _ = cross_entropy(logits, targets)
    return loss * targets.size


def _tail(params: dict[str, np.ndarray], config: GPTConfig, x: np.ndarray, first: int,
          hooks: Any = None) -> np.ndarray:
    """The logits from the stream ``x`` (B, T, d) entering block ``first`` (``n_layers``: the
    final norm)."""
    for layer in range(first, config.n_layers):
        x = block_forward(x, params, config, f"blocks.{layer}.", hooks=hooks,
                          site=f"blocks.{layer}.")[0]
    final, _ = norm_forward(config.norm, x, params, "ln_f")
    return read_out(params, config, final)


def _constant(value: np.ndarray) -> Any:
    """A hook that writes ``value`` (broadcast) at every position."""
    def hook(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(value.astype(a.dtype, copy=False), a.shape)
    return hook


# --------------------------------------------------------------------------- means


def activation_means(params: dict[str, np.ndarray], config: GPTConfig, stream: Any, *,
                     windows: int | None = None, batch_size: int = 32,
                     ) -> dict[str, np.ndarray]:
    r"""Each neuron's and each sublayer's mean activation over a text: what mean-ablation
    writes in their place.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64.
    config : GPTConfig
        A configuration with feed-forward layers and without cross-attention.
    stream : array_like of int, shape (N,)
        Token ids of the reference text: the training text (``model.encode(train_text)``).
    windows : int, optional
        Read only this many windows of ``context`` tokens, spread evenly over the stream
        (the first at its start, the last at its end), instead of every position. Measured
        on the book's model (a loaded 2-core machine): its whole training text (988,470
        characters) took 139 s, 512 windows 5 s, and the single neurons' costs from the
        two sets of means differed by less than 0.0001 nats.
    batch_size : int, default 32
        Windows run at once (memory, not the result).

    Returns
    -------
    dict of str to numpy.ndarray
        In the parameters' dtype: ``"ff.hidden"`` (n_layers, d_ff), every neuron's mean
        (site ``"blocks.l.ff.hidden"``); ``"attn.out"`` and ``"ff.out"`` (n_layers,
        d_model), the mean output of each block's attention and feed-forward sublayer
        (sites ``"blocks.l.attn.out"``, ``"blocks.l.ff.out"``, biases included). Give it
        as ``means`` to the ablations of this module.

    Notes
    -----
    With :math:`a_p` a site's activation at position :math:`p` of the windows read,

    .. math::

        \bar a = \frac{1}{P} \sum_{p} a_p,

    summed in float64. Without ``windows`` the stream is read as
    :func:`~attention_lib.stream_activations` reads it: consecutive windows of
    ``context`` tokens, every position once, the last window shorter. With ``windows``,
    full windows start at ``round(j (N - T) / (windows - 1))``, ``j = 0 .. windows - 1``.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 4, 8, 2, 2, d_ff=16)
    >>> means = activation_means(init_gpt(config), config, np.arange(20) % 10)
    >>> {site: a.shape for site, a in means.items()}
    {'attn.out': (2, 8), 'ff.hidden': (2, 16), 'ff.out': (2, 8)}
    """
    dtype = _check_ff_model(params, config)
    tokens = index_array(stream, config.vocab_size, "stream", ndim=1)
    batch_size = positive_int(batch_size, "batch_size")
    T = config.context
    starts = np.arange(0, tokens.size, T)  # every position once, the last window shorter
    if windows is not None and positive_int(windows, "windows") < starts.size:
        starts = np.round(np.linspace(0, tokens.size - T, windows)).astype(np.int64)
    L = config.n_layers
    sites = [f"blocks.{layer}.{s}" for layer in range(L) for s in MEAN_SITES]
    sums, count = {site: 0.0 for site in sites}, 0
    full = starts[starts + T <= tokens.size]
    batches = [tokens[full[i:i + batch_size, None] + np.arange(T)]
               for i in range(0, full.size, batch_size)]  # (B, T) each
    batches += [tokens[None, s:] for s in starts[starts + T > tokens.size]]
    with one_blas_thread():  # see _ONE_THREAD
        for x in batches:
            seen: dict[str, np.ndarray] = {}
            stack_forward(params, config, x, hooks=capture_hooks(seen, sites))
            for site in sites:
                sums[site] = sums[site] + seen[site].sum(axis=(0, 1), dtype=np.float64)
            count += x.size
    means = {s: np.stack([sums[f"blocks.{layer}.{s}"] for layer in range(L)]) / count
             for s in MEAN_SITES}  # (L, width) each, float64
    return {s: a.astype(dtype) for s, a in means.items()}


# --------------------------------------------------------------------------- neurons


def _neuron_hooks(pairs: np.ndarray, targets: np.ndarray) -> dict[str, Any]:
    """Hooks that set each neuron of ``pairs`` to its target at every position."""
    hooks = {}
    for layer in np.unique(pairs[:, 0]).tolist():
        idx = np.unique(pairs[pairs[:, 0] == layer, 1])

        def hook(a: np.ndarray, idx: np.ndarray = idx, to: np.ndarray = targets[layer]) -> Any:
            a = a.copy()
            a[..., idx] = to[idx]  # (..., T, n) <- (n,)
            return a

        hooks[f"blocks.{layer}.ff.hidden"] = hook
    return hooks


def neuron_ablation_loss(params: dict[str, np.ndarray], config: GPTConfig, stream: Any,
                         neurons: Any, *, mode: str = "mean", means: Any = None,
                         batch_size: int = 32) -> float:
    r"""The next-token loss of a text with a set of feed-forward neurons removed.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64.
    config : GPTConfig
        A configuration with feed-forward layers and without cross-attention.
    stream : array_like of int, shape (N,)
        Token ids, ``N >= 2``: the validation text, or a slice of it.
    neurons : sequence of (int, int), or int array of shape (n, 2)
        The neurons ``(layer, index)`` to remove together, layers from 0; ``index`` a unit of
        the hidden layer, ``0 .. d_ff - 1``. Empty: nothing removed.
    mode : {"mean", "zero"}, default "mean"
        Set each neuron's activation at every position to its mean over the reference text
        (``means``), or to 0.
    means : dict or array_like, shape (n_layers, d_ff)
        The result of :func:`activation_means` on the training text (its ``"ff.hidden"``
        is read), or the neurons' means as an array. Needed with ``mode="mean"``; not read
        with ``mode="zero"``.
    batch_size : int, default 32
        Windows run at once (memory, not the result).

    Returns
    -------
    float
        Mean next-token loss in nats per token, over the windows of
        :func:`~attention_lib.sequence_loss` (the same number for an empty set).

    Notes
    -----
    For a neuron :math:`(l, i)` the hidden activation :math:`h^{(l)}_{p,i}` at every
    position :math:`p` is replaced, by a hook at ``"blocks.l.ff.hidden"``, with

    .. math::

        h^{(l)}_{p,i} \leftarrow \bar h^{(l)}_i \ \ (\text{mean}) \quad\text{or}\quad 0
        \ \ (\text{zero}),

    and the whole model runs on. Neither value is "off". A GELU neuron of the book's model
    mostly rests a little below 0 (a GELU is never below about -0.17) and now and then
    fires strongly; its mean keeps what it writes on average, so the loss measures what it
    says about the particular text. For a neuron that fires rarely, the mean lies between
    rest and firing: compare with ``mode="zero"``. The cost of the set is this loss minus
    the clean :func:`~attention_lib.sequence_loss`; :func:`single_neuron_costs` gives each
    neuron's cost alone, faster.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt, sequence_loss
    >>> config = GPTConfig(10, 4, 8, 2, 2, d_ff=16)
    >>> params, ids = init_gpt(config, dtype=np.float64), np.arange(20) % 10
    >>> loss = neuron_ablation_loss(params, config, ids, [(0, 3), (1, 5)], mode="zero")
    >>> bool(loss != sequence_loss(params, config, ids))
    True
    >>> means = activation_means(params, config, ids)  # in a chapter: on the training text
    >>> mean_loss = neuron_ablation_loss(params, config, ids, [(0, 3)], means=means)
    >>> neuron_ablation_loss(params, config, ids, [], means=means) == sequence_loss(
    ...     params, config, ids)
    True
    """
    dtype = _check_ff_model(params, config)
    tokens = _loss_stream(stream, config)
    pairs = _check_neurons(neurons, config)
    mode = _mode(mode, means)
    targets = _neuron_targets(mode, means, config, dtype)
    batch_size = positive_int(batch_size, "batch_size")
    with one_blas_thread():  # see _ONE_THREAD
        return sequence_loss(params, config, tokens, batch_size=batch_size,
                             hooks=_neuron_hooks(pairs, targets) or None)


def single_neuron_costs(params: dict[str, np.ndarray], config: GPTConfig, stream: Any,
                        neurons: Any, *, mode: str = "mean", means: Any = None,
                        batch_size: int = 32) -> np.ndarray:
    r"""What removing each neuron alone adds to the next-token loss.

    Parameters
    ----------
    params, config, stream, mode, means, batch_size
        As in :func:`neuron_ablation_loss`.
    neurons : sequence of (int, int), or int array of shape (n, 2)
        The neurons ``(layer, index)``, each removed on its own (e.g. every neuron of the
        last layer: ``[(3, i) for i in range(512)]``).

    Returns
    -------
    numpy.ndarray, float64, shape (n,)
        Entry ``j``: ``neuron_ablation_loss(..., [neurons[j]], ...)`` minus the clean loss
        ``sequence_loss(params, config, stream)``, in nats per token (up to rounding).
        Mostly positive; a neuron whose removal helps on this text costs less than 0.

    Notes
    -----
    Removing neuron :math:`(l, i)` changes the feed-forward output of block :math:`l` by
    one row of its second matrix, and the residual stream leaving the block by the same
    amount (a pre-norm model):

    .. math::

        x^{(l)}_p \leftarrow x^{(l)}_p + \bigl(\bar h^{(l)}_i - h^{(l)}_{p,i}\bigr)\,
        W_2^{(l)}[i, :]

    (:math:`0` in place of :math:`\bar h` with ``mode="zero"``). So one clean pass keeps
    each needed layer's stream :math:`x^{(l)}` and hidden layer, and each neuron runs only
    the blocks after its own: for a neuron of the last block, only the final norm and
    the read-out. Measured on the book's model (4 layers; 16,385 characters): a neuron of
    the last block costs about a fiftieth of a forward pass (all 512 of them, 10 s on a
    loaded 2-core machine), one of the first block three quarters of one (take a shorter
    text for many neurons of early blocks). A post-norm model (whose norm follows the sum)
    runs the whole model once per neuron, as :func:`neuron_ablation_loss` does.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 4, 8, 2, 2, d_ff=16)
    >>> params, ids = init_gpt(config, dtype=np.float64), np.arange(20) % 10
    >>> costs = single_neuron_costs(params, config, ids, [(0, 3), (1, 5)], mode="zero")
    >>> costs.shape
    (2,)
    >>> alone = neuron_ablation_loss(params, config, ids, [(1, 5)], mode="zero")
    >>> bool(np.isclose(costs[1], alone - sequence_loss(params, config, ids)))
    True
    """
    dtype = _check_ff_model(params, config)
    tokens = _loss_stream(stream, config)
    pairs = _check_neurons(neurons, config)
    mode = _mode(mode, means)
    targets = _neuron_targets(mode, means, config, dtype)
    batch_size = positive_int(batch_size, "batch_size")
    if pairs.shape[0] == 0:
        return np.zeros(0)
    with one_blas_thread():  # see _ONE_THREAD
        if config.norm_position != "pre":
            clean = sequence_loss(params, config, tokens, batch_size=batch_size)
            return np.array([sequence_loss(params, config, tokens, batch_size=batch_size,
                                           hooks=_neuron_hooks(pair[None], targets)) - clean
                             for pair in pairs])
        return _costs_from_the_stream(params, config, tokens, pairs, targets, batch_size)


def _costs_from_the_stream(params: dict[str, np.ndarray], config: GPTConfig,
                           tokens: np.ndarray, pairs: np.ndarray, targets: np.ndarray,
                           batch_size: int) -> np.ndarray:
    """:func:`single_neuron_costs` of a pre-norm model: each neuron's change added to the
    stream leaving its block, and only the later blocks run again."""
    second = "w_down" if config.ffn == "swiglu" else "w2"
    layers = np.unique(pairs[:, 0]).tolist()
    sites = [f"blocks.{layer}.{s}" for layer in layers for s in ("ff.hidden", "resid_post")]
    clean, totals, count = 0.0, np.zeros(pairs.shape[0]), 0
    for x, y in _loss_windows(tokens, config.context, batch_size):
        seen: dict[str, np.ndarray] = {}
        clean += _summed_loss(stack_forward(params, config, x,
                                            hooks=capture_hooks(seen, sites)).out, y)
        for j, (layer, i) in enumerate(pairs.tolist()):
            b = f"blocks.{layer}."
            change = targets[layer, i] - seen[b + "ff.hidden"][..., i]  # (B, T)
            stream_out = seen[b + "resid_post"] + change[..., None] * params[b + "ff." + second][i]
            totals[j] += _summed_loss(_tail(params, config, stream_out, layer + 1), y)
        count += y.size
    return (totals - clean) / count


# --------------------------------------------------------------------------- sublayers


@dataclass(frozen=True)
class SublayerAblation:
    """The next-token loss with each sublayer removed (the result of
    :func:`sublayer_ablation_losses`).

    Attributes
    ----------
    mode : str
        ``"mean"`` (each removed output replaced by its mean over the reference text) or
        ``"zero"``.
    clean : float
        The loss of the model as it is (nats per token).
    attn, ff : numpy.ndarray, float64, shape (n_layers,)
        Entry ``l``: the loss with the attention output (``attn``) or the feed-forward
        output (``ff``) of block ``l`` removed, and everything else as it is.
    all_attn, all_ff : float
        The loss with every block's attention output removed at once, or every block's
        feed-forward output.
    attn_norm, ff_norm : numpy.ndarray, float64, shape (n_layers,)
        The mean Euclidean norm, per position, of what each block's attention and
        feed-forward sublayer writes into the residual stream in the clean run.
    n_tokens : int
        The number of predicted tokens the losses are means over.
    """

    mode: str
    clean: float
    attn: np.ndarray
    ff: np.ndarray
    all_attn: float
    all_ff: float
    attn_norm: np.ndarray
    ff_norm: np.ndarray
    n_tokens: int


def sublayer_ablation_losses(params: dict[str, np.ndarray], config: GPTConfig, stream: Any,
                             *, mode: str = "mean", means: Any = None,
                             batch_size: int = 32) -> SublayerAblation:
    r"""How much of the model's work its attention and its feed-forward layers do, measured
    by removing them.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64.
    config : GPTConfig
        A configuration with feed-forward layers and without cross-attention.
    stream : array_like of int, shape (N,)
        Token ids, ``N >= 2``: the validation text, or a slice of it.
    mode : {"mean", "zero"}, default "mean"
        Replace a removed sublayer's output at every position by its mean over the reference
        text (``means``), or by 0.
    means : dict
        The result of :func:`activation_means` on the training text (its ``"attn.out"`` and
        ``"ff.out"`` are read). Needed with ``mode="mean"``; not read with ``mode="zero"``.
    batch_size : int, default 32
        Windows run at once (memory, not the result).

    Returns
    -------
    SublayerAblation
        The clean loss, the loss with each sublayer removed and with all of one kind removed,
        in nats per token over the windows of :func:`~attention_lib.sequence_loss`; the
        mean norm of what each sublayer writes.

    Notes
    -----
    Block :math:`l` of a pre-norm model adds two outputs to the residual stream,
    :math:`x \leftarrow x + A_l(N(x))` then :math:`x \leftarrow x + F_l(N(x))`. Removing a
    sublayer replaces its output, at the hook site ``"blocks.l.attn.out"`` or
    ``"blocks.l.ff.out"`` (biases included), at every position:

    .. math::

        A_l(\cdot)_p \leftarrow \bar A_l \ \ (\text{mean}) \quad\text{or}\quad 0
        \ \ (\text{zero}),

    with :math:`\bar A_l` its mean over the training text. Mean-ablation is the default:
    a sublayer writes a sizeable constant part on every position (its bias, and what it
    writes whatever the text), which the later norms and layers were trained to expect;
    zeroing removes that too and pushes the stream where the model never was, so part
    of a zero-ablation's cost is the shock, not the loss of what the sublayer computes.
    Mean-ablation keeps the average and removes what the sublayer says about this
    particular text. Removing all attention leaves each position with its own token
    (and the learned position): at best a bigram model
    (:func:`~attention_lib.ngram_loss`), and a model trained with attention does worse.

    A loss says what the model cannot do without a part, not what the part does alone
    (two parts that can stand in for each other each cost little); ``attn_norm`` and
    ``ff_norm`` say how much each writes. One clean pass keeps the stream entering every
    block; each ablation runs from the first block it changes.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt, sequence_loss
    >>> config = GPTConfig(10, 4, 8, 2, 2, d_ff=16)
    >>> params, ids = init_gpt(config, dtype=np.float64), np.arange(20) % 10
    >>> result = sublayer_ablation_losses(params, config, ids, mode="zero")
    >>> result.attn.shape, result.ff.shape, result.n_tokens
    ((2,), (2,), 19)
    >>> bool(np.isclose(result.clean, sequence_loss(params, config, ids)))
    True
    """
    dtype = _check_ff_model(params, config)
    tokens = _loss_stream(stream, config)
    mode = _mode(mode, means)
    batch_size = positive_int(batch_size, "batch_size")
    L, d = config.n_layers, config.d_model
    if mode == "mean":
        written = {kind: _site_means(means, f"{kind}.out", (L, d), dtype)
                   for kind in ("attn", "ff")}
    else:
        written = {kind: np.zeros((L, d), dtype=dtype) for kind in ("attn", "ff")}
    variants = ([("attn", [layer]) for layer in range(L)] + [("ff", [layer]) for layer in range(L)]
                + [("attn", list(range(L))), ("ff", list(range(L)))])
    sites = [f"blocks.{layer}.{s}" for layer in range(L)
             for s in ("resid_pre", "attn.out", "ff.out")]
    clean, totals, count = 0.0, np.zeros(len(variants)), 0
    norms = {kind: np.zeros(L) for kind in ("attn", "ff")}
    with one_blas_thread():  # see _ONE_THREAD
        for x, y in _loss_windows(tokens, config.context, batch_size):
            seen: dict[str, np.ndarray] = {}
            clean += _summed_loss(stack_forward(params, config, x,
                                                hooks=capture_hooks(seen, sites)).out, y)
            for kind in ("attn", "ff"):
                for layer in range(L):
                    out = seen[f"blocks.{layer}.{kind}.out"].astype(np.float64)  # (B, T, d)
                    norms[kind][layer] += np.sqrt((out * out).sum(axis=-1)).sum()
            for v, (kind, layers) in enumerate(variants):
                hooks = {f"blocks.{layer}.{kind}.out": _constant(written[kind][layer])
                         for layer in layers}
                first = layers[0]
                logits = _tail(params, config, seen[f"blocks.{first}.resid_pre"], first, hooks)
                totals[v] += _summed_loss(logits, y)
            count += y.size
    losses = totals / count
    return SublayerAblation(mode, clean / count, losses[:L], losses[L:2 * L],
                            float(losses[2 * L]), float(losses[2 * L + 1]),
                            norms["attn"] / count, norms["ff"] / count, count)
