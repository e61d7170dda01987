r"""Latent key/value attention: multi-head latent attention (MLA) of DeepSeek-V2, made small.

A KV cache keeps, per token and layer, ``2 h d_head`` numbers (keys and values of
every head); grouped-query attention shares them between heads. DeepSeek-V2
(DeepSeek-AI 2024) caches instead one small *latent* vector per token,
:math:`c = x W_{DKV}` of size :math:`d_c \ll h\, d_{\text{head}}`, and rebuilds
every head's keys and values from it with up-projections:

.. math::

    c_j = x_j W_{DKV}, \qquad k^{(i)}_j = c_j W_{UK}^{(i)}, \qquad
    v^{(i)}_j = c_j W_{UV}^{(i)} .

Nothing forces the rebuild: since
:math:`q^{(i)} \cdot k^{(i)}_j = (q^{(i)} W_{UK}^{(i)\mathsf T}) \cdot c_j`,
:math:`W_{UK}` can be folded into the query side, and since the head's output
:math:`\sum_j a_{ij}\, c_j W_{UV}^{(i)}` goes through :math:`W_O^{(i)}`,
:math:`W_{UV}^{(i)} W_O^{(i)}` can be folded into one matrix: the heads attend to
the latents themselves, and keys and values are never formed (the "absorbed"
form). This module leaves out DeepSeek-V2's decoupled rotary key: a rotation that
depends on the positions of query and key sits between :math:`W_Q` and
:math:`W_{UK}^{\mathsf T}` and would stop the folding, so the model adds to every
token a small extra key (``d_rope = 64`` numbers, shared by the heads) that carries
RoPE alone. Without positions, as here, both forms are exact.
:func:`~attention_lib.latent_kv_cache_bytes` counts the cache.

Dimension letters used in the shape comments:

- ``...``      leading batch axes
- ``n``        number of positions
- ``d_model``  size of a token representation
- ``h``        number of heads; ``d_head`` size of a query or key, ``d_v`` of a value
- ``d_c``      size of the latent ``c`` (the cache per token and layer)
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    check_flag,
    common_float_dtype,
    compute_dtype,
    head_size,
    optional_positive_int,
    positive_int,
    positive_ints,
    random_generator,
    token_rows,
    weight_arrays,
)
from .attention import scaled_dot_product_attention
from .multihead import merge_heads, split_heads

__all__ = ["latent_kv_attention", "latent_kv_parameters"]

# The matrices of one layer and their shapes (h*d_head: every head's columns side by side).
PARAMETER_SHAPES = {
    "W_Q": ("d_model", "h*d_head"),
    "W_DKV": ("d_model", "d_c"),
    "W_UK": ("d_c", "h*d_head"),
    "W_UV": ("d_c", "h*d_v"),
    "W_O": ("h*d_v", "d_model"),
}


def latent_kv_parameters(
    d_model: int,
    n_heads: int,
    d_latent: int,
    *,
    d_head: int | None = None,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    r"""Random weights of one latent key/value attention layer, for :func:`latent_kv_attention`.

    Parameters
    ----------
    d_model : int
    n_heads : int
        Number of heads ``h``.
    d_latent : int
        Size ``d_c`` of the latent each token keeps in the cache.
    d_head : int, optional
        Size of each head's queries, keys and values; defaults to ``d_model // n_heads``
        (then ``n_heads`` must divide ``d_model``).
    rng : numpy.random.Generator, optional
        Source of the weights; unseeded by default.

    Returns
    -------
    dict of numpy.ndarray (float64)
        ``W_Q`` (d_model, h d_head), ``W_DKV`` (d_model, d_c), ``W_UK`` (d_c, h d_head),
        ``W_UV`` (d_c, h d_head), ``W_O`` (h d_head, d_model).

    Notes
    -----
    Each matrix is drawn from :math:`\mathcal N(0, 1/\text{rows})`, so that unit-variance
    inputs give unit-variance outputs at every step, as in
    :class:`~attention_lib.MultiHeadAttention`.

    Examples
    --------
    >>> params = latent_kv_parameters(16, 4, 6, rng=np.random.default_rng(0))
    >>> {name: w.shape for name, w in params.items()}
    {'W_Q': (16, 16), 'W_DKV': (16, 6), 'W_UK': (6, 16), 'W_UV': (6, 16), 'W_O': (16, 16)}
    """
    d_model, n_heads, d_latent = positive_ints(d_model=d_model, n_heads=n_heads,
                                               d_latent=d_latent)
    if d_head is None:
        d_head = head_size(d_model, n_heads, heads="n_heads")
    d_head = optional_positive_int(d_head, "d_head", d_head)
    rng = random_generator(rng, optional=True)
    sizes = {"d_model": d_model, "d_c": d_latent, "h*d_head": n_heads * d_head,
             "h*d_v": n_heads * d_head}
    return {name: rng.normal(0.0, 1.0 / math.sqrt(sizes[rows]), size=(sizes[rows], sizes[cols]))
            for name, (rows, cols) in PARAMETER_SHAPES.items()}


def latent_kv_attention(
    x: ArrayLike,
    params: dict[str, ArrayLike],
    n_heads: int,
    *,
    absorbed: bool = False,
    causal: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Self-attention whose keys and values come from a small latent per token (MLA).

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
    params : dict of array_like
        ``W_Q`` (d_model, h d_head), ``W_DKV`` (d_model, d_c), ``W_UK`` (d_c, h d_head),
        ``W_UV`` (d_c, h d_v) and ``W_O`` (h d_v, d_model), e.g. from
        :func:`latent_kv_parameters`; head ``i`` owns the ``i``-th block of columns
        of ``W_Q``, ``W_UK``, ``W_UV`` and of rows of ``W_O``.
    n_heads : int
        Number of heads ``h``; must divide the columns of ``W_Q`` and ``W_UV``.
    absorbed : bool, default False
        False: compute the keys and values from the latent, then attend (the
        explicit form). True: fold ``W_UK`` into the queries and ``W_UV`` into
        ``W_O`` and attend to the latents themselves (what a decoder runs with a
        cache of latents). The two agree up to rounding.
    causal : bool, default True
        Each position attends only to itself and the positions before it.

    Returns
    -------
    output : numpy.ndarray, shape (..., n, d_model)
    weights : numpy.ndarray, shape (..., h, n, n)
        Each head's attention weights. The weights are stored in float64 and cast
        to the input's floating dtype (float32 stays float32; float16 is computed
        in float32).

    Notes
    -----
    Explicit, with :math:`C = X W_{DKV}` the latents and :math:`s = 1/\sqrt{d_{\text{head}}}`:

    .. math::

        \text{head}_i = \operatorname{softmax}\bigl(s\, Q^{(i)} (C W_{UK}^{(i)})^{\mathsf T}
        \bigr)\, C W_{UV}^{(i)}, \qquad
        \text{out} = \sum_i \text{head}_i\, W_O^{(i)} .

    Absorbed, the same products grouped the other way:

    .. math::

        \text{out} = \sum_i \operatorname{softmax}\bigl(s\, (X W_Q^{(i)} W_{UK}^{(i)\mathsf T})
        C^{\mathsf T}\bigr)\, C\, \bigl(W_{UV}^{(i)} W_O^{(i)}\bigr) .

    The absorbed queries have ``d_c`` entries; they are multiplied by
    :math:`\sqrt{d_c / d_{\text{head}}}` so that
    :func:`~attention_lib.scaled_dot_product_attention`, which divides by the
    square root of their length, scales the scores by :math:`s` as the explicit
    form does. No decoupled rotary key (see the module's notes).

    Examples
    --------
    >>> params = latent_kv_parameters(8, 2, 3, rng=np.random.default_rng(0))
    >>> x = np.random.default_rng(1).normal(size=(5, 8))
    >>> out, w = latent_kv_attention(x, params, 2)
    >>> out.shape, w.shape
    ((5, 8), (2, 5, 5))
    >>> out_absorbed, _ = latent_kv_attention(x, params, 2, absorbed=True)
    >>> bool(np.allclose(out, out_absorbed, rtol=0, atol=1e-12))
    True
    """
    n_heads = positive_int(n_heads, "n_heads")
    absorbed = check_flag(absorbed, "absorbed")
    causal = check_flag(causal, "causal")
    w, dims = weight_arrays(params, PARAMETER_SHAPES, "params")
    for letter, name in (("h*d_head", "W_Q"), ("h*d_v", "W_UV")):
        if dims[letter] % n_heads:
            raise ValueError(f"params[{name!r}] has {dims[letter]} columns, not a multiple of "
                             f"n_heads={n_heads}; expected {letter} columns, one block per head")
    d_model, d_c = dims["d_model"], dims["d_c"]
    d_head, d_v = dims["h*d_head"] // n_heads, dims["h*d_v"] // n_heads
    xa = token_rows(x, "x", d_model)
    dtype = common_float_dtype(xa)  # of the result: float32 stays float32
    work = compute_dtype(dtype)  # float16 is computed in float32
    xa = xa.astype(work, copy=False)
    w = {name: a.astype(work, copy=False) for name, a in w.items()}

    c = xa @ w["W_DKV"]  # (..., n, d_c): all a cache keeps of a token
    if not absorbed:
        q = split_heads(xa @ w["W_Q"], n_heads)  # (..., n, h*d_head) -> (..., h, n, d_head)
        k = split_heads(c @ w["W_UK"], n_heads)  # (..., n, h*d_head) -> (..., h, n, d_head)
        v = split_heads(c @ w["W_UV"], n_heads)  # (..., n, h*d_v) -> (..., h, n, d_v)
        heads, weights = scaled_dot_product_attention(q, k, v, causal=causal)  # (..., h, n, d_v)
        out = merge_heads(heads) @ w["W_O"]  # (..., n, h*d_v) @ (h*d_v, d_model)
        return out.astype(dtype, copy=False), weights.astype(dtype, copy=False)

    # W_UK folded into the queries: one (d_model, d_c) matrix per head.
    w_q = w["W_Q"].reshape(d_model, n_heads, d_head).transpose(1, 0, 2)  # (h, d_model, d_head)
    w_uk = w["W_UK"].reshape(d_c, n_heads, d_head).transpose(1, 2, 0)  # (h, d_head, d_c)
    w_qk = (w_q @ w_uk) * math.sqrt(d_c / d_head)  # (h, d_model, d_c), scale s, not 1/sqrt(d_c)
    # W_UV folded into the output: one (d_c, d_model) matrix per head.
    w_uv = w["W_UV"].reshape(d_c, n_heads, d_v).transpose(1, 0, 2)  # (h, d_c, d_v)
    w_o = w["W_O"].reshape(n_heads, d_v, d_model)  # (h, d_v, d_model)
    w_ov = w_uv @ w_o  # (h, d_c, d_model)
    q_latent = xa[..., None, :, :] @ w_qk  # (..., 1, n, d_model) @ (h, d_model, d_c)
    c_heads = c[..., None, :, :]  # (..., 1, n, d_c): one latent per token, shared by the heads
    mixed, weights = scaled_dot_product_attention(q_latent, c_heads, c_heads,
                                                  causal=causal)  # (..., h, n, d_c)
    out = (mixed @ w_ov).sum(axis=-3)  # (..., h, n, d_model) summed over the heads
    return out.astype(dtype, copy=False), weights.astype(dtype, copy=False)
