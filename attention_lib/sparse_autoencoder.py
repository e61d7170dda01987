r"""Sparse autoencoders: the residual stream of the book's model read as many sparse features.

A sparse autoencoder (Bricken et al., 2023, "Towards Monosemanticity"; Cunningham et al.,
2023, "Sparse Autoencoders Find Highly Interpretable Features in Language Models") rewrites
an activation :math:`\mathbf x \in \mathbb R^d` of one hook site as a non-negative
combination of :math:`m > d` learned directions, few of which are non-zero at a time:

.. math::

    \mathbf f = \operatorname{relu}\bigl((\mathbf x - \mathbf b_{dec}) W_{enc}
    + \mathbf b_{enc}\bigr) \in \mathbb R^m, \qquad
    \hat{\mathbf x} = \mathbf f\, W_{dec} + \mathbf b_{dec}.

- :class:`SparseAutoencoder` holds the weights and the training record;
  :func:`train_sparse_autoencoder` trains one on rows of activations (Adam, float64, the
  gradient written out by hand in :func:`sae_loss_and_grads`);
- :func:`sae_training_windows` and :func:`window_activations` give the rows the stored
  autoencoder was trained on, and :func:`trained_sparse_autoencoder` reads it from the
  package's data (``tools/sparse_autoencoder.py`` writes it);
- :mod:`attention_lib.features` measures it (how often each feature fires, the model's
  loss with the reconstruction spliced in), shows where a feature fires, and steers the
  model by holding one feature at a value while it writes.

Row vectors throughout: feature ``j`` reads the column ``w_enc[:, j]`` and writes the row
``w_dec[j]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import (
    as_real_array,
    describe,
    index,
    index_array,
    positive_int,
    positive_scale,
    real_number,
)
from .model.config import GPTConfig, check_params
from .model.hooks import hook_sites
from .model.stack import stack_forward
from .model.train import Adam

__all__ = ["SparseAutoencoder", "sae_loss_and_grads", "sae_training_windows",
           "train_sparse_autoencoder", "trained_sparse_autoencoder", "window_activations"]

SAE_FILE = "sparse_autoencoder.npz"
_WEIGHTS = ("w_enc", "b_enc", "w_dec", "b_dec")
_LOG = ("loss", "reconstruction", "l1", "l0")


@dataclass(frozen=True, eq=False)
class SparseAutoencoder:
    """A sparse autoencoder of one hook site, and how it was trained.

    Attributes
    ----------
    w_enc : numpy.ndarray, shape (d, m)
        The encoder: column ``j`` is what feature ``j`` reads.
    b_enc : numpy.ndarray, shape (m,)
    w_dec : numpy.ndarray, shape (m, d)
        The decoder: row ``j`` is what feature ``j`` writes (unit norm after training).
    b_dec : numpy.ndarray, shape (d,)
        Subtracted before encoding, added back after decoding.
    site : str
        The hook site whose activations it reads (e.g. ``"blocks.1.resid_post"``).
    log : dict of str to numpy.ndarray
        Per training step: ``"loss"``, ``"reconstruction"``, ``"l1"`` (the mean L1 norm of
        the features) and ``"l0"`` (the mean number of features firing), each measured on
        the step's batch before the step.
    settings : dict
        The settings it was trained with (empty for one built by hand).
    """

    w_enc: np.ndarray
    b_enc: np.ndarray
    w_dec: np.ndarray
    b_dec: np.ndarray
    site: str = "blocks.1.resid_post"
    log: dict[str, np.ndarray] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        w_enc = as_real_array(self.w_enc, "w_enc", min_ndim=2)
        if w_enc.ndim != 2:
            raise ValueError(f"w_enc has {describe(w_enc)}; expected (d, m)")
        d, m = w_enc.shape
        shapes = {"b_enc": (m,), "w_dec": (m, d), "b_dec": (d,)}
        for name, shape in shapes.items():
            a = as_real_array(getattr(self, name), name)
            if a.shape != shape:
                raise ValueError(f"{name} has {describe(a)}; expected {shape} for w_enc of "
                                 f"shape (d, m) = {(d, m)}")
        if not isinstance(self.site, str):
            raise TypeError(f"site={self.site!r}; expected the name of a hook site")

    @property
    def n_features(self) -> int:
        """m, the number of features."""
        return self.w_enc.shape[1]

    def encode(self, x: Any) -> np.ndarray:
        """Features ``relu((x - b_dec) @ w_enc + b_enc)``, shape (..., m), of x (..., d)."""
        x = self._rows(x)
        return np.maximum((x - self.b_dec) @ self.w_enc + self.b_enc, 0.0)

    def decode(self, f: Any) -> np.ndarray:
        """The reconstruction ``f @ w_dec + b_dec``, shape (..., d), of features f (..., m)."""
        f = as_real_array(f, "f")
        if f.shape[-1] != self.n_features:
            raise ValueError(f"f has {describe(f)}; expected (..., m) with m = "
                             f"{self.n_features}")
        return f @ self.w_dec + self.b_dec

    def reconstruct(self, x: Any) -> np.ndarray:
        """``decode(encode(x))``, shape (..., d)."""
        return self.decode(self.encode(x))

    def feature(self, x: Any, j: int) -> np.ndarray:
        """Feature ``j`` alone, ``relu((x - b_dec) @ w_enc[:, j] + b_enc[j])``, shape (...,)."""
        x = self._rows(x)
        j = index(j, self.n_features, "feature")
        return np.maximum((x - self.b_dec) @ self.w_enc[:, j] + self.b_enc[j], 0.0)

    def _rows(self, x: Any) -> np.ndarray:
        x = as_real_array(x, "x")
        if x.shape[-1] != self.w_enc.shape[0]:
            raise ValueError(f"x has {describe(x)}; expected (..., d) with d = "
                             f"{self.w_enc.shape[0]}")
        return x


def sae_loss_and_grads(sae: SparseAutoencoder, x: Any, *, l1: float,
                       ) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    r"""The training loss of a batch of rows and its gradient with respect to every weight.

    Parameters
    ----------
    sae : SparseAutoencoder
    x : array_like, shape (B, d)
        A batch of activations.
    l1 : float
        The weight of the sparsity penalty, >= 0.

    Returns
    -------
    parts : dict of str to float
        ``"loss"``, ``"reconstruction"``, ``"l1"`` (the mean L1 norm of the features,
        unweighted) and ``"l0"`` (the mean number of features > 0 per row).
    grads : dict of str to numpy.ndarray
        ``"w_enc"``, ``"b_enc"``, ``"w_dec"``, ``"b_dec"``: the gradient of ``"loss"``, each
        of its weight's shape, float64.

    Notes
    -----
    With :math:`\mathbf z_b = (\mathbf x_b - \mathbf b_{dec}) W_{enc} + \mathbf b_{enc}`,
    :math:`\mathbf f_b = \operatorname{relu}(\mathbf z_b)` and
    :math:`\hat{\mathbf x}_b = \mathbf f_b W_{dec} + \mathbf b_{dec}`, the loss of a batch of
    :math:`B` rows is the squared error summed over the :math:`d` coordinates and the L1
    norm summed over the :math:`m` features, both averaged over the rows:

    .. math::

        L = \frac1B \sum_b \lVert \mathbf x_b - \hat{\mathbf x}_b\rVert^2
          + \lambda\, \frac1B \sum_b \lVert \mathbf f_b\rVert_1 .

    Backwards, with :math:`\mathbf e_b = \hat{\mathbf x}_b - \mathbf x_b`:
    :math:`\partial L/\partial \hat{\mathbf x}_b = 2\mathbf e_b / B`,
    :math:`\partial L/\partial W_{dec} = \sum_b \mathbf f_b^{\mathsf T}\, 2\mathbf e_b/B`,
    :math:`\partial L/\partial \mathbf z_b = (2\mathbf e_b W_{dec}^{\mathsf T} + \lambda)/B
    \odot [\mathbf z_b > 0]`, and :math:`\mathbf b_{dec}` collects
    :math:`\sum_b 2\mathbf e_b/B` from the decoder less
    :math:`\sum_b (\partial L/\partial \mathbf z_b) W_{enc}^{\mathsf T}` from the encoder.

    Examples
    --------
    >>> eye = np.eye(2)
    >>> sae = SparseAutoencoder(np.hstack([eye, -eye]), np.zeros(4), np.vstack([eye, -eye]),
    ...                         np.zeros(2))
    >>> parts, grads = sae_loss_and_grads(sae, [[1.0, -2.0]], l1=0.5)
    >>> parts["reconstruction"], parts["l1"], parts["loss"]
    (0.0, 3.0, 1.5)
    >>> grads["b_enc"].tolist()
    [0.5, 0.0, 0.0, 0.5]
    """
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae is {type(sae).__name__}; expected a SparseAutoencoder")
    x = sae._rows(x)
    if x.ndim != 2:
        raise ValueError(f"x has {describe(x)}; expected a batch of rows (B, d)")
    l1 = real_number(l1, "l1", minimum=0.0)
    w_enc, b_enc, w_dec, b_dec = (np.asarray(getattr(sae, k), dtype=np.float64)
                                  for k in _WEIGHTS)
    x = x.astype(np.float64, copy=False)
    B = x.shape[0]
    centred = x - b_dec  # (B, d)
    z = centred @ w_enc + b_enc  # (B, m)
    f = np.maximum(z, 0.0)
    error = f @ w_dec + b_dec - x  # (B, d): x_hat - x
    reconstruction = float((error * error).sum() / B)
    sparsity = float(f.sum() / B)  # f >= 0: |f| = f
    d_out = 2.0 * error / B  # (B, d)
    d_z = (d_out @ w_dec.T + l1 / B) * (z > 0)  # (B, m)
    grads = {"w_enc": centred.T @ d_z, "b_enc": d_z.sum(axis=0), "w_dec": f.T @ d_out,
             "b_dec": d_out.sum(axis=0) - d_z.sum(axis=0) @ w_enc.T}
    parts = {"loss": reconstruction + l1 * sparsity, "reconstruction": reconstruction,
             "l1": sparsity, "l0": float((z > 0).sum() / B)}
    return parts, grads


def _batches(n_rows: int, batch_size: int, buffer: int, rng: np.random.Generator,
             ) -> Iterator[np.ndarray]:
    """Row indices of each step's batch, for ever (see train_sparse_autoencoder's notes)."""
    n_buffers = -(-n_rows // buffer)
    epoch = 0
    while True:
        order = np.arange(n_buffers) if epoch == 0 else rng.permutation(n_buffers)
        for k in order:
            rows = k * buffer + rng.permutation(min(buffer, n_rows - k * buffer))
            for first in range(0, rows.size - batch_size + 1, batch_size):
                yield rows[first:first + batch_size]
        epoch += 1


def train_sparse_autoencoder(activations: Any, n_features: int, *, l1: float, steps: int,
                             batch_size: int = 1024, buffer: int = 8192, lr: float = 1e-3,
                             seed: int = 0, site: str = "blocks.1.resid_post",
                             progress: bool = False) -> SparseAutoencoder:
    r"""Train a sparse autoencoder on rows of activations.

    Parameters
    ----------
    activations : array_like, shape (N, d)
        One row per position (e.g. from :func:`window_activations`), in the order the
        buffers read them (see Notes); ``N >= batch_size``.
    n_features : int
        m, the number of features.
    l1 : float
        The weight of the sparsity penalty (:func:`sae_loss_and_grads`), >= 0.
    steps : int
        Optimiser steps.
    batch_size : int, default 1024
        Rows per step.
    buffer : int, default 8192
        Rows shuffled together (a multiple of ``batch_size``).
    lr : float, default 1e-3
        Adam's learning rate (betas 0.9, 0.999), constant.
    seed : int, default 0
        Seeds the initial weights and the shuffles.
    site : str, default "blocks.1.resid_post"
        The hook site the activations come from (recorded, not checked here).
    progress : bool, default False
        Show a progress bar (tqdm).

    Returns
    -------
    SparseAutoencoder
        float64 arrays holding float32 numbers (the weights rounded once, after the last
        step, so that a float32 file stores them exactly); ``log`` holds one entry per
        step, ``settings`` these arguments.

    Notes
    -----
    The rows are read in buffers of ``buffer`` consecutive rows, each shuffled afresh and
    cut into batches (a last batch shorter than ``batch_size`` is skipped): the first
    epoch takes the buffers in order, each later epoch in a random order. So the first
    ``k`` steps read only the first ``ceil(k * batch_size / buffer) * buffer`` rows, and a
    run of fewer steps repeats the beginning of a longer one exactly: nothing depends on
    ``steps``.

    Initial weights: the decoder rows are random directions of unit norm, the encoder
    their transpose (:math:`W_{enc} = W_{dec}^{\mathsf T}`), :math:`\mathbf b_{enc} = 0`,
    and :math:`\mathbf b_{dec}` the mean of the first buffer's rows. Each step computes the
    loss and gradient of :func:`sae_loss_and_grads`, takes the component along each
    decoder row out of that row's gradient,
    :math:`\mathbf g_j \leftarrow \mathbf g_j - (\mathbf g_j\cdot\mathbf w_j)\,\mathbf w_j`,
    moves every weight by Adam, and scales each decoder row back to unit norm (Bricken
    et al., 2023). With unit rows a feature cannot make its L1 penalty small by growing its
    decoder row and shrinking its activation. Everything is float64, so a seeded run
    repeats on another CPU up to last-bit differences of the matrix products; the rounding
    to float32 at the end leaves the decoder rows of unit norm to about 1e-7.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(512, 4))
    >>> sae = train_sparse_autoencoder(x, 8, l1=0.01, steps=30, batch_size=64, buffer=128)
    >>> sae.w_enc.shape, sae.log["loss"].shape
    ((4, 8), (30,))
    >>> bool(np.allclose(np.linalg.norm(sae.w_dec, axis=1), 1))
    True
    >>> bool(sae.log["loss"][-5:].mean() < sae.log["loss"][:5].mean())
    True
    """
    x = as_real_array(activations, "activations", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"activations has {describe(x)}; expected rows (N, d)")
    m = positive_int(n_features, "n_features")
    l1 = real_number(l1, "l1", minimum=0.0)
    steps = positive_int(steps, "steps")
    batch_size = positive_int(batch_size, "batch_size")
    buffer = positive_int(buffer, "buffer")
    lr = positive_scale(lr, "lr")
    seed = positive_int(seed, "seed", minimum=0)
    if buffer % batch_size:
        raise ValueError(f"buffer={buffer}; expected a multiple of batch_size={batch_size}")
    if x.shape[0] < batch_size:
        raise ValueError(f"activations has {x.shape[0]} rows; expected at least "
                         f"batch_size={batch_size}")
    settings = {"n_features": m, "l1": l1, "steps": steps, "batch_size": batch_size,
                "buffer": buffer, "lr": lr, "seed": seed}
    rng = np.random.default_rng(seed)
    d = x.shape[1]
    w_dec = rng.normal(size=(m, d))
    w_dec /= np.linalg.norm(w_dec, axis=1, keepdims=True)
    weights = {"w_enc": w_dec.T.copy(), "b_enc": np.zeros(m), "w_dec": w_dec,
               "b_dec": x[:buffer].mean(axis=0, dtype=np.float64)}
    opt = Adam(weights, lr=lr)
    log: dict[str, list[float]] = {k: [] for k in _LOG}
    batches = _batches(x.shape[0], batch_size, buffer, rng)
    bar = _progress(steps, progress)
    for _ in range(steps):
        sae = SparseAutoencoder(**weights, site=site)
        batch = x[next(batches)].astype(np.float64)  # (B, d)
        parts, grads = sae_loss_and_grads(sae, batch, l1=l1)
        w = weights["w_dec"]
        grads["w_dec"] -= (grads["w_dec"] * w).sum(axis=1, keepdims=True) * w
        opt.step(grads)
        weights["w_dec"] /= np.linalg.norm(weights["w_dec"], axis=1, keepdims=True)
        for k in _LOG:
            log[k].append(parts[k])
        bar(parts)
    rounded = {k: v.astype(np.float32).astype(np.float64) for k, v in weights.items()}
    return SparseAutoencoder(**rounded, site=site,
                             log={k: np.array(v) for k, v in log.items()}, settings=settings)


def _progress(steps: int, show: bool) -> Callable[[dict[str, float]], None]:
    if not show:
        return lambda parts: None
    from tqdm.auto import tqdm

    bar = tqdm(total=steps)

    def update(parts: dict[str, float]) -> None:
        bar.set_postfix(loss=f"{parts['loss']:.4f}", l0=f"{parts['l0']:.1f}", refresh=False)
        bar.update()
        if bar.n == steps:
            bar.close()
    return update


def sae_training_windows(n_tokens: int, context: int, n_windows: int, *, seed: int = 0,
                         ) -> np.ndarray:
    """Where the windows of a sparse autoencoder's training rows start, in training order.

    Parameters
    ----------
    n_tokens : int
        Length of the token stream.
    context : int
        Window length, the model's context.
    n_windows : int
        How many windows, at most the ``n_tokens // context`` the stream holds.
    seed : int, default 0

    Returns
    -------
    numpy.ndarray of int64, shape (n_windows,)
        Starts, multiples of ``context``: the first ``n_windows`` of a seeded permutation of
        the whole windows ``0, context, 2 context, ...`` (those of
        :func:`~attention_lib.stream_activations` and :func:`~attention_lib.sequence_loss`).
        A smaller ``n_windows`` gives the beginning of the same order.

    Examples
    --------
    >>> starts = sae_training_windows(1000, 10, 5)
    >>> starts.shape, bool((starts % 10 == 0).all()), bool((starts == sae_training_windows(
    ...     1000, 10, 8)[:5]).all())
    ((5,), True, True)
    """
    n_tokens = positive_int(n_tokens, "n_tokens")
    context = positive_int(context, "context")
    whole = n_tokens // context
    n_windows = positive_int(n_windows, "n_windows")
    if n_windows > whole:
        raise ValueError(f"n_windows={n_windows}; the stream of {n_tokens} tokens holds "
                         f"{whole} whole windows of {context}")
    seed = positive_int(seed, "seed", minimum=0)
    order = np.random.default_rng(seed).permutation(whole)[:n_windows]
    return order.astype(np.int64) * context


def window_activations(params: dict[str, np.ndarray], config: GPTConfig, stream: Any,
                       starts: Any, site: str, *, batch_size: int = 64) -> np.ndarray:
    """What a site holds at every position of some windows of a token stream, in float64.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters; the forward pass runs on float64 copies.
    config : GPTConfig
    stream : array_like of int, shape (N,)
        Token ids.
    starts : array_like of int, shape (W,)
        Window starts, each window ``stream[s:s + context]`` inside the stream.
    site : str
        A site with one row of width ``d_model`` per position (``"embed"``, a block's
        ``resid_pre``, ``attn.out``, ``resid_mid``, ``ff.out`` or ``resid_post``).
    batch_size : int, default 64
        Windows run at once (memory, not the result).

    Returns
    -------
    numpy.ndarray, float64, shape (W * context, d_model)
        Rows ``w * context + t`` are position ``t`` of window ``w``, in the order of
        ``starts``.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 4, 8, 2, 2, d_ff=16)
    >>> a = window_activations(init_gpt(config), config, np.arange(20) % 10, [8, 0],
    ...                        "blocks.0.resid_post")
    >>> a.shape, a.dtype
    ((8, 8), dtype('float64'))
    """
    check_params(params, config)
    tokens = index_array(stream, config.vocab_size, "stream", ndim=1)
    starts = np.asarray(starts)
    if starts.ndim != 1 or starts.size == 0 or starts.dtype.kind not in "iu":
        raise ValueError(f"starts has {describe(starts)}; expected window starts (W,), ints")
    T = config.context
    if starts.min() < 0 or starts.max() + T > tokens.size:
        raise ValueError(f"starts range over {starts.min()}..{starts.max()}; expected windows "
                         f"of {T} tokens inside the stream of {tokens.size}")
    _check_site(site, config)
    batch_size = positive_int(batch_size, "batch_size")
    p64 = {name: np.asarray(a, dtype=np.float64) for name, a in params.items()}
    out = np.empty((starts.size * T, config.d_model))
    for first in range(0, starts.size, batch_size):
        chunk = starts[first:first + batch_size]
        rows = out[first * T:(first + chunk.size) * T]

        def keep(x: np.ndarray, rows: np.ndarray = rows) -> None:
            rows[:] = x.reshape(-1, config.d_model)
            raise _Enough  # the layers after the site are not needed

        try:
            stack_forward(p64, config, tokens[chunk[:, None] + np.arange(T)],
                          hooks={site: keep})
        except _Enough:
            pass
    return out


class _Enough(Exception):
    """Raised by window_activations' hook once it holds the site's rows."""


_ROW_SITES = ("resid_pre", "attn.out", "resid_mid", "ff.out", "resid_post")


def _check_site(site: Any, config: GPTConfig) -> str:
    if not isinstance(site, str) or site not in hook_sites(config) or not (
            site == "embed" or site.split(".", 2)[-1] in _ROW_SITES):
        raise ValueError(f"site={site!r}; expected a site of hook_sites(config) with one row "
                         "of width d_model per position, e.g. 'blocks.1.resid_post'")
    return site


def trained_sparse_autoencoder() -> SparseAutoencoder:
    """The book's sparse autoencoder of the Shakespeare model, read from the package's data.

    ``attention_lib/data/sparse_autoencoder.npz``, written by
    ``tools/sparse_autoencoder.py``, holds the weights (float32: the float32 numbers that
    :func:`train_sparse_autoencoder` returns), the training log and the settings
    of the run: the site, the training windows (:func:`sae_training_windows` of the
    training text, ``n_windows`` and ``window_seed``) and the arguments of
    :func:`train_sparse_autoencoder`.

    Returns
    -------
    SparseAutoencoder
        float64 weights; ``log`` and ``settings`` as trained.

    Examples
    --------
    >>> sae = trained_sparse_autoencoder()
    >>> sae.site, sae.w_enc.shape[0], len(sae.log["loss"]) == sae.settings["steps"]
    ('blocks.1.resid_post', 128, True)
    """
    import io
    from importlib import resources

    data = resources.files("attention_lib").joinpath("data", SAE_FILE).read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        stored = {name: arrays[name] for name in arrays.files}
    missing = [k for k in (*_WEIGHTS, "site") if k not in stored]
    if missing:
        raise ValueError(f"{SAE_FILE} has no {missing[0]!r}; expected the weights "
                         f"{list(_WEIGHTS)} and the site")
    log = {k[len("log."):]: stored.pop(k) for k in list(stored) if k.startswith("log.")}
    if sorted(log) != sorted(_LOG) or any(a.ndim != 1 for a in log.values()):
        raise ValueError(f"{SAE_FILE} has the log {sorted(log)}; expected the training log "
                         f"{sorted(_LOG)}, one entry per step")
    settings = {k[len("settings."):]: stored.pop(k).item() for k in list(stored)
                if k.startswith("settings.")}
    if settings.get("steps") != len(log["loss"]):
        raise ValueError(f"{SAE_FILE}: settings.steps={settings.get('steps')} but the training "
                         f"log has {len(log['loss'])} steps")
    return SparseAutoencoder(*(stored[k].astype(np.float64) for k in _WEIGHTS),
                             site=str(stored["site"]), log=log, settings=settings)
