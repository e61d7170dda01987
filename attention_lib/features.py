r"""Reading a sparse autoencoder's features: how often they fire, what they cost the model,
where they fire, and what holding one at a value does to the text the model writes.

The autoencoder itself, its training and the book's stored one are in
:mod:`attention_lib.sparse_autoencoder`. Here:

- :func:`feature_frequencies` (how often each feature fires: alive and dead features) and
  :func:`reconstruction_error` (the squared error relative to the rows' spread);
- :func:`sae_spliced_loss`: the language model's loss with the reconstruction in place of
  the activation, beside the loss of the model as it is and with the site ablated;
- where a feature fires most strongly: :func:`~attention_lib.top_activating_contexts` of
  ``sae.feature(x, j)``, as for a neuron;
- :func:`feature_clamp_hooks`: hooks that hold one feature at a value at every position
  while the rest of the activation (and the autoencoder's error) stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import as_real_array, describe, index, positive_int, real_number
from .model.config import GPTConfig, check_params
from .sparse_autoencoder import SparseAutoencoder, _check_site

__all__ = ["SplicedLoss", "feature_clamp_hooks", "feature_frequencies",
           "reconstruction_error", "sae_spliced_loss"]

def _check_sae(sae: Any) -> SparseAutoencoder:
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae is {type(sae).__name__}; expected a SparseAutoencoder")
    return sae


def feature_frequencies(sae: SparseAutoencoder, activations: Any, *,
                        batch_size: int = 8192) -> np.ndarray:
    """How often each feature fires: the fraction of rows where it is > 0.

    Parameters
    ----------
    sae : SparseAutoencoder
    activations : array_like, shape (N, d)
    batch_size : int, default 8192
        Rows encoded at once (memory, not the result).

    Returns
    -------
    numpy.ndarray, float64, shape (m,)
        A feature is *alive* on these rows when its frequency is > 0, *dead* when it never
        fires: ``(feature_frequencies(...) > 0).mean()`` is the fraction alive. The mean
        of the frequencies times m is the mean number of features firing per row.

    Examples
    --------
    >>> eye = np.eye(2)
    >>> sae = SparseAutoencoder(np.hstack([eye, -eye]), np.zeros(4), np.vstack([eye, -eye]),
    ...                         np.zeros(2))
    >>> feature_frequencies(sae, [[1.0, 2.0], [3.0, -1.0]]).tolist()
    [1.0, 0.5, 0.0, 0.5]
    """
    sae = _check_sae(sae)
    x = sae._rows(as_real_array(activations, "activations", min_ndim=2))
    batch_size = positive_int(batch_size, "batch_size")
    rows = x.reshape(-1, x.shape[-1])
    fired = np.zeros(sae.n_features)
    for first in range(0, rows.shape[0], batch_size):
        fired += (sae.encode(rows[first:first + batch_size]) > 0).sum(axis=0)
    return fired / rows.shape[0]


def reconstruction_error(sae: SparseAutoencoder, activations: Any) -> float:
    r"""The squared error of the reconstruction relative to the rows' own spread.

    Parameters
    ----------
    sae : SparseAutoencoder
    activations : array_like, shape (N, d)

    Returns
    -------
    float
        :math:`\sum_n \lVert\mathbf x_n - \hat{\mathbf x}_n\rVert^2 \big/
        \sum_n \lVert\mathbf x_n - \bar{\mathbf x}\rVert^2`, with :math:`\bar{\mathbf x}`
        the mean row: 0 for a perfect reconstruction, 1 for one no better than the mean
        (1 minus the fraction of variance explained).

    Examples
    --------
    >>> eye = np.eye(2)
    >>> sae = SparseAutoencoder(np.hstack([eye, -eye]), np.zeros(4), np.vstack([eye, -eye]),
    ...                         np.zeros(2))
    >>> reconstruction_error(sae, [[1.0, 2.0], [3.0, -1.0]])
    0.0
    """
    sae = _check_sae(sae)
    x = sae._rows(as_real_array(activations, "activations", min_ndim=2))
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    error, spread = 0.0, 0.0
    mean = rows.mean(axis=0)
    for first in range(0, rows.shape[0], 8192):
        chunk = rows[first:first + 8192]
        error += float(((chunk - sae.reconstruct(chunk)) ** 2).sum())
        spread += float(((chunk - mean) ** 2).sum())
    if spread == 0:
        raise ValueError("activations has identical rows; the relative error needs rows "
                         "that differ")
    return error / spread


@dataclass(frozen=True)
class SplicedLoss:
    """A language model's loss with a sparse autoencoder spliced in, and its references.

    Attributes
    ----------
    clean : float
        The model as it is (nats per token).
    spliced : float
        With the site's activation replaced by its reconstruction.
    mean_ablated : float
        With the site's activation replaced by its mean over every position of the stream.
    zero_ablated : float
        With the site's activation replaced by zeros.
    """

    clean: float
    spliced: float
    mean_ablated: float
    zero_ablated: float

    @property
    def recovered(self) -> float:
        """(mean_ablated - spliced) / (mean_ablated - clean): the fraction of the loss
        that mean ablation loses and the reconstruction keeps (1 is perfect)."""
        return (self.mean_ablated - self.spliced) / (self.mean_ablated - self.clean)


def sae_spliced_loss(params: dict[str, np.ndarray], config: GPTConfig,
                     sae: SparseAutoencoder, stream: Any, *, batch_size: int = 32,
                     ) -> SplicedLoss:
    r"""The model's loss on a stream with the autoencoder's reconstruction in place of its site.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64.
    config : GPTConfig
    sae : SparseAutoencoder
        Of a site of this model (``sae.site``) whose width is ``d_model``.
    stream : array_like of int, shape (N,)
        Token ids, ``N >= 2``.
    batch_size : int, default 32
        Windows run at once.

    Returns
    -------
    SplicedLoss
        ``clean``, ``spliced``, ``mean_ablated`` and ``zero_ablated``: four
        :func:`~attention_lib.sequence_loss` of the stream (nats per token).

    Notes
    -----
    At every position, the hook at ``sae.site`` hands the model
    :math:`\hat{\mathbf x} = \operatorname{decode}(\operatorname{encode}(\mathbf x))`
    instead of :math:`\mathbf x`; the rest of the model runs as it is. The references put
    in its place the mean :math:`\bar{\mathbf x}` of the site over every position of this
    stream (read by :func:`~attention_lib.stream_activations`), or zeros. A good
    autoencoder's loss is close to the clean one, far below the ablations';
    :attr:`SplicedLoss.recovered` says how close on the scale of mean ablation.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 8, 2, 1, 1)
    >>> eye = np.eye(2)
    >>> sae = SparseAutoencoder(np.hstack([eye, -eye]), np.zeros(4), np.vstack([eye, -eye]),
    ...                         np.zeros(2), site="blocks.0.resid_post")
    >>> out = sae_spliced_loss(init_gpt(config, dtype=np.float64), config, sae, np.arange(9))
    >>> bool(np.isclose(out.spliced, out.clean))
    True
    """
    from .gpt.train import sequence_loss
    from .interpret import stream_activations

    check_params(params, config)
    sae = _check_sae(sae)
    _check_site(sae.site, config)
    if sae.w_enc.shape[0] != config.d_model:
        raise ValueError(f"sae reads rows of width {sae.w_enc.shape[0]}; the site "
                         f"{sae.site!r} has width d_model={config.d_model}")
    mean = stream_activations(params, config, stream, sae.site, batch_size=batch_size
                              ).mean(axis=0, dtype=np.float64)

    def loss(hook: Callable[[np.ndarray], np.ndarray] | None) -> float:
        hooks = None if hook is None else {sae.site: hook}
        return sequence_loss(params, config, stream, batch_size=batch_size, hooks=hooks)

    return SplicedLoss(clean=loss(None), spliced=loss(sae.reconstruct),
                       mean_ablated=loss(lambda x: np.broadcast_to(mean, x.shape)),
                       zero_ablated=loss(np.zeros_like))


def feature_clamp_hooks(sae: SparseAutoencoder, feature: int, value: float,
                        ) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    r"""Hooks that hold one feature at a value at every position, keeping the rest.

    Parameters
    ----------
    sae : SparseAutoencoder
    feature : int
        j, in ``0 .. m - 1``.
    value : float
        What the feature is held at, a finite number >= 0 (a feature is a relu).

    Returns
    -------
    dict of str to callable
        ``{sae.site: hook}``, for :func:`~attention_lib.generate`,
        :func:`~attention_lib.sequence_loss` or any forward pass with ``hooks=``. The hook
        maps the site's array (..., T, d) to one of the same shape and dtype.

    Notes
    -----
    With :math:`f_j(\mathbf x) = \operatorname{relu}\bigl((\mathbf x - \mathbf b_{dec})
    \cdot W_{enc}[:, j] + b_{enc, j}\bigr)` and :math:`\mathbf w_j = W_{dec}[j]`, the hook
    writes at each position

    .. math::

        \mathbf x \;\leftarrow\; \mathbf x + \bigl(v - f_j(\mathbf x)\bigr)\,\mathbf w_j :

    the reconstruction with feature :math:`j` at :math:`v` instead of its own value, plus
    the autoencoder's error :math:`\mathbf x - \hat{\mathbf x}`, which is left as it was.
    Clamping a feature to its own value changes nothing. Computed in float64 and returned
    in the array's dtype.

    Examples
    --------
    >>> eye = np.eye(2)
    >>> sae = SparseAutoencoder(np.hstack([eye, -eye]), np.zeros(4), np.vstack([eye, -eye]),
    ...                         np.zeros(2))
    >>> hooks = feature_clamp_hooks(sae, 0, 5.0)
    >>> hooks["blocks.1.resid_post"](np.array([[1.0, -2.0], [-1.0, 3.0]])).tolist()
    [[5.0, -2.0], [4.0, 3.0]]
    """
    sae = _check_sae(sae)
    j = index(feature, sae.n_features, "feature")
    v = real_number(value, "value", minimum=0.0)
    d = sae.w_enc.shape[0]
    w_enc = np.asarray(sae.w_enc[:, j], dtype=np.float64)  # (d,)
    w_dec = np.asarray(sae.w_dec[j], dtype=np.float64)  # (d,)
    b_dec = np.asarray(sae.b_dec, dtype=np.float64)
    b_enc = float(sae.b_enc[j])

    def hook(x: np.ndarray) -> np.ndarray:
        if x.shape[-1] != d:
            raise ValueError(f"the site {sae.site!r} holds {describe(x)}; the autoencoder "
                             f"reads rows of width {d}")
        x64 = x.astype(np.float64, copy=False)
        f = np.maximum((x64 - b_dec) @ w_enc + b_enc, 0.0)  # (..., T)
        return (x64 + (v - f)[..., None] * w_dec).astype(x.dtype, copy=False)

    return {sae.site: hook}
