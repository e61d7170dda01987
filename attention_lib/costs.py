r"""Counting the cost of attention in closed form: FLOPs and bytes.

Measuring (timers, fits, stored benchmark results) lives in :mod:`attention_lib.measure`.

Conventions used throughout:

- A matrix product of an ``(m, k)`` by a ``(k, p)`` matrix costs
  :math:`2 m k p` floating-point operations (FLOPs): one multiply and one add
  for each of the :math:`k` terms of each of the :math:`m p` entries.
  Only matrix products are counted; softmax, tanh, biases and normalisation
  are lower-order terms and are left out.
- ``n`` is a number of positions (tokens), ``d_model`` the width of a
  transformer layer. With ``h`` heads of size ``d_head = d_model / h`` the
  attention FLOPs do not depend on ``h``: ``h`` heads of size ``d_head`` cost
  the same as one head of size ``d_model``.
- Under a causal mask a query only meets the keys at or before it, so only the
  allowed (query, key) pairs are counted.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import DTypeLike

from ._validation import (
    check_causal_sizes,
    check_flag,
    numeric_dtype,
    one_of,
    optional_positive_int,
    positive_int,
    positive_ints,
)

__all__ = [
    "AttentionFlops",
    "DecodeCost",
    "LayerFlops",
    "attention_flops",
    "causal_pairs",
    "decode_step_multiplications",
    "generation_multiplications",
    "kv_cache_bytes",
    "latent_kv_cache_bytes",
    "layer_flops",
    "rnn_flops",
    "score_matrix_bytes",
]


def causal_pairs(n_q: int, n_k: int | None = None) -> int:
    r"""Number of (query, key) pairs a causal mask allows.

    Parameters
    ----------
    n_q : int
        Number of queries, the last ``n_q`` of the ``n_k`` positions.
    n_k : int, optional
        Number of keys, at least ``n_q``; defaults to ``n_q``.

    Returns
    -------
    int
        The number of True entries of ``causal_mask(n_q, n_k)``.

    Notes
    -----
    Query :math:`i` (counting from 1) sits at position :math:`i + n_k - n_q`
    and sees that many keys (the rule of :func:`attention_lib.causal_mask`):

    .. math:: \sum_{i=1}^{n_q} (i + n_k - n_q) = n_q (n_k - n_q) + \frac{n_q (n_q + 1)}{2},

    which is :math:`n (n + 1) / 2`, a little over half of :math:`n^2`, when
    :math:`n_q = n_k = n`.

    Examples
    --------
    >>> causal_pairs(4)            # 1 + 2 + 3 + 4
    10
    >>> causal_pairs(1, 128)       # one new token sees the whole prefix
    128
    """
    n_q = positive_int(n_q, "n_q")
    n_k = optional_positive_int(n_k, "n_k", n_q)
    check_causal_sizes(n_q, n_k)
    return n_q * (n_k - n_q) + n_q * (n_q + 1) // 2


class AttentionFlops(NamedTuple):
    """FLOPs of one attention call, split by matrix product."""

    scores: int
    """Q @ K^T."""
    mix: int
    """weights times :math:`V`."""

    @property
    def total(self) -> int:
        """``scores + mix``."""
        return self.scores + self.mix


def attention_flops(
    n_q: int, n_k: int, d_k: int, d_v: int | None = None, *, causal: bool = False
) -> AttentionFlops:
    r"""FLOPs of the two matrix products of scaled dot-product attention.

    Parameters
    ----------
    n_q, n_k : int
        Number of queries and of keys.
    d_k : int
        Size of a query or key vector (summed over heads for multi-head
        attention).
    d_v : int, optional
        Size of a value vector; defaults to ``d_k``.
    causal : bool, default False
        Count only the pairs allowed by a causal mask (:func:`causal_pairs`).

    Returns
    -------
    AttentionFlops
        ``scores`` (:math:`QK^{\mathsf T}`), ``mix`` (weights @ V) and their
        ``total``.

    Notes
    -----
    Each allowed pair :math:`(i, j)` costs one dot product of length
    :math:`d_k` for its score and adds :math:`A_{ij} v_j` (length
    :math:`d_v`) to output :math:`i`:

    .. math:: \text{scores} = 2 P d_k, \qquad \text{mix} = 2 P d_v,

    with :math:`P = n_q n_k` pairs, or :math:`P` = ``causal_pairs(n_q, n_k)``.
    For self-attention over :math:`n` tokens this is :math:`2 n^2 d_k` each:
    quadratic in :math:`n`.

    Examples
    --------
    >>> attention_flops(4, 4, 3)
    AttentionFlops(scores=96, mix=96)
    >>> attention_flops(1, 1000, 128).total      # one new token, 1000 keys
    512000
    """
    n_q, n_k, d_k = positive_ints(n_q=n_q, n_k=n_k, d_k=d_k)
    d_v = optional_positive_int(d_v, "d_v", d_k)
    pairs = causal_pairs(n_q, n_k) if check_flag(causal, "causal") else n_q * n_k
    return AttentionFlops(scores=2 * pairs * d_k, mix=2 * pairs * d_v)


class LayerFlops(NamedTuple):
    """Forward FLOPs of one transformer layer over a sequence, by part."""

    projections: int
    """Q, K, V and output projections."""
    mlp: int
    """The two matrices of the feed-forward block."""
    attention: int
    """Scores and mixing (:func:`attention_flops`)."""

    @property
    def total(self) -> int:
        """All three parts."""
        return self.projections + self.mlp + self.attention

    @property
    def attention_share(self) -> float:
        """Fraction of the layer's FLOPs spent in scores and mixing."""
        return self.attention / self.total


def layer_flops(
    d_model: int, n: int, *, d_ff: int | None = None, causal: bool = False
) -> LayerFlops:
    r"""Forward FLOPs of one transformer layer applied to ``n`` tokens.

    Parameters
    ----------
    d_model : int
        Width of the layer (``n_heads * d_head``).
    n : int
        Number of tokens in the sequence.
    d_ff : int, optional
        Hidden width of the feed-forward block; defaults to ``4 * d_model``.
    causal : bool, default False
        Each token attends only to itself and the tokens before it.

    Returns
    -------
    LayerFlops
        ``projections``, ``mlp`` and ``attention`` FLOPs for the whole
        sequence, their ``total`` and the ``attention_share``. Divide by
        ``n`` for the cost per token.

    Notes
    -----
    Counted from the matrix products, two FLOPs per multiply-add, per token:

    .. math::

        \underbrace{8 d^2}_{W_Q, W_K, W_V, W_O}
        + \underbrace{4 d\, d_{ff}}_{\text{MLP}} \;(= 16 d^2)
        + \underbrace{4 n d}_{QK^{\mathsf T},\ AV}
        = 24 d^2 + 4 n d \quad (d_{ff} = 4d),

    where a token attending to :math:`n` keys pays :math:`2 n d` for its
    scores :math:`QK^{\mathsf T}` and :math:`2 n d` for the mixing :math:`AV`.
    (Kaplan et al. 2020, table 1, write :math:`C_\text{forward} \approx 2N +
    2 n_\text{layer} n_\text{ctx} d_\text{attn}`: the same :math:`24 d^2` per
    layer, but one attention term, :math:`2 n d`.) Everything
    but attention is linear in :math:`n` over the sequence; attention is
    quadratic. With ``causal=True`` token :math:`t` sees :math:`t` keys, so
    the attention term over the sequence is :math:`4 d \cdot n(n+1)/2`, about
    half.

    Examples
    --------
    >>> f = layer_flops(4, 2)
    >>> f.projections, f.mlp, f.attention        # 8*16*2, 16*16*2, 4*2*4*2
    (256, 512, 64)
    >>> round(f.attention_share, 4)
    0.0769
    """
    d_model, n = positive_ints(d_model=d_model, n=n)
    d_ff = optional_positive_int(d_ff, "d_ff", 4 * d_model)
    projections = 4 * (2 * n * d_model * d_model)  # Q, K, V, O: (n, d) @ (d, d) each
    mlp = 2 * n * d_model * d_ff + 2 * n * d_ff * d_model  # (n, d) @ (d, d_ff) @ (d_ff, d)
    attention = attention_flops(n, n, d_model, causal=causal).total
    return LayerFlops(projections=projections, mlp=mlp, attention=attention)


def rnn_flops(n: int, d_in: int, d_h: int) -> int:
    r"""FLOPs of the matrix products of :func:`attention_lib.rnn_forward`.

    Parameters
    ----------
    n : int
        Number of steps.
    d_in, d_h : int
        Input and hidden sizes.

    Returns
    -------
    int
        FLOPs of the ``n`` steps together.

    Notes
    -----
    Each step computes :math:`W h_{t-1}` (:math:`2 d_h^2`) and
    :math:`U x_t` (:math:`2 d_h d_{in}`):

    .. math:: 2 n d_h (d_h + d_{in}),

    linear in :math:`n`, but spread over :math:`n` dependent steps.

    Examples
    --------
    >>> rnn_flops(100, 8, 32)
    256000
    """
    n, d_in, d_h = positive_ints(n=n, d_in=d_in, d_h=d_h)
    return 2 * n * d_h * (d_h + d_in)


def score_matrix_bytes(n_q: int, n_k: int, dtype: DTypeLike = np.float32) -> int:
    """Bytes of an ``(n_q, n_k)`` score (or weight) matrix.

    Parameters
    ----------
    n_q, n_k : int
        Rows (queries) and columns (keys) of the matrix.
    dtype : numeric numpy dtype, default float32
        Integer, float or complex; ``None``, ``str`` and ``bool`` are refused.

    Returns
    -------
    int
        ``n_q * n_k * itemsize``, what ``scores.nbytes`` reports.

    Notes
    -----
    Per head and per sequence in a batch; a naive implementation holds at
    least one such matrix (the weights) for every head at once.

    Examples
    --------
    >>> score_matrix_bytes(4096, 4096) / 2**20        # MiB
    64.0
    """
    n_q, n_k = positive_ints(n_q=n_q, n_k=n_k)
    return n_q * n_k * numeric_dtype(dtype).itemsize


# --------------------------------------------------------------------------------------
# Generating token by token: work per step with and without a KV cache, cache memory
# --------------------------------------------------------------------------------------

DECODE_STRATEGIES = ("cache", "recompute_kv", "recompute_all")


class DecodeCost(NamedTuple):
    """Multiplications of one attention layer while generating, by matrix product."""

    projections: int
    """:math:`X W_Q`, :math:`X W_K`, :math:`X W_V` for the rows computed."""
    scores: int
    """Query-key dot products."""
    mix: int
    """Weights times values."""
    output: int
    """Concatenated heads times :math:`W_O`."""

    @property
    def total(self) -> int:
        """All four parts."""
        return self.projections + self.scores + self.mix + self.output


def _decode_sizes(
    d_model: int, d_k: int, d_v: int | None, strategy: str
) -> tuple[int, int, int]:
    d_model, d_k = positive_ints(d_model=d_model, d_k=d_k)
    one_of(strategy, "strategy", DECODE_STRATEGIES)
    return d_model, d_k, optional_positive_int(d_v, "d_v", d_k)


def decode_step_multiplications(
    t: int, d_model: int, d_k: int, d_v: int | None = None, *, strategy: str = "cache"
) -> DecodeCost:
    r"""Multiplications of the step that adds token ``t`` to a causal attention layer.

    Parameters
    ----------
    t : int
        Tokens in the context after this step, the new one included (``t >= 1``).
    d_model : int
        Size of a token representation.
    d_k : int
        Size of the queries and keys, summed over the heads (``h * d_head``).
    d_v : int, optional
        Size of the values, summed over the heads; defaults to ``d_k``.
    strategy : {"cache", "recompute_kv", "recompute_all"}, default "cache"
        ``"cache"``: project the new token only and attend with its query over
        the ``t`` cached keys and values (:class:`attention_lib.KVCache`).
        ``"recompute_kv"``: no cache; project the keys and values of all ``t``
        tokens again, then attend with the new query only.
        ``"recompute_all"``: no cache; run the whole causal pass over the ``t``
        tokens again (every query, every output row) and keep the last row.

    Returns
    -------
    DecodeCost
        ``projections``, ``scores``, ``mix``, ``output`` and their ``total``.

    Notes
    -----
    A product of an ``(m, k)`` by a ``(k, p)`` matrix costs :math:`m k p`
    multiplications (half the FLOPs of :func:`attention_flops`). With ``r``
    query rows and ``t`` keys, a dense implementation such as
    :func:`attention_lib.scaled_dot_product_attention` computes all
    :math:`r t` scores, masked ones included:

    .. math::

        \text{cache}:&\quad d_{\text{model}}(2 d_k + d_v) + t (d_k + d_v)
                          + d_v d_{\text{model}}, \\
        \text{recompute\_kv}:&\quad d_{\text{model}} d_k
            + t\, d_{\text{model}} (d_k + d_v) + t (d_k + d_v) + d_v d_{\text{model}}, \\
        \text{recompute\_all}:&\quad t\, d_{\text{model}}(2 d_k + d_v)
            + t^2 (d_k + d_v) + t\, d_v d_{\text{model}} .

    Only matrix products are counted (not the :math:`r t` exponentials of the
    softmax). The counts do not depend on how ``d_k`` is split into heads. (Here
    ``d_k`` and ``d_v`` are totals over the heads, written :math:`h\,d_k` and
    :math:`h\,d_v` elsewhere in the book, where :math:`d_k` is one head's size.)

    Examples
    --------
    >>> decode_step_multiplications(10, 4, 4).total       # 48 + 80 + 16
    144
    >>> decode_step_multiplications(10, 4, 4, strategy="recompute_all").total
    1440
    """
    t = positive_int(t, "t")
    d_model, d_k, d_v = _decode_sizes(d_model, d_k, d_v, strategy)
    rows = t if strategy == "recompute_all" else 1  # query (and output) rows computed
    kv_rows = 1 if strategy == "cache" else t  # tokens whose keys and values are computed
    return DecodeCost(
        projections=d_model * (rows * d_k + kv_rows * (d_k + d_v)),  # (r, d) @ (d, d_k) ...
        scores=rows * t * d_k,  # (r, d_k) @ (d_k, t)
        mix=rows * t * d_v,  # (r, t) @ (t, d_v)
        output=rows * d_v * d_model,  # (r, d_v) @ (d_v, d_model)
    )


def generation_multiplications(
    n: int, d_model: int, d_k: int, d_v: int | None = None, *, strategy: str = "cache"
) -> DecodeCost:
    r"""Multiplications of feeding ``n`` tokens one at a time through an attention layer.

    Parameters
    ----------
    n : int
        Number of steps; step ``t`` (``t = 1, ..., n``) adds token ``t``.
    d_model, d_k, d_v, strategy
        As in :func:`decode_step_multiplications`.

    Returns
    -------
    DecodeCost
        The sum of :func:`decode_step_multiplications` over ``t = 1, ..., n``.

    Notes
    -----
    With :math:`S_1 = \sum_t t = n(n+1)/2` and
    :math:`S_2 = \sum_t t^2 = n(n+1)(2n+1)/6`:

    .. math::

        \text{cache}:&\quad n\, d_{\text{model}}(2 d_k + d_v) + S_1 (d_k + d_v)
            + n\, d_v d_{\text{model}}
            &&= O(n\, d_{\text{model}}^2 + n^2 d), \\
        \text{recompute\_kv}:&\quad n\, d_{\text{model}} d_k
            + S_1 \bigl(d_{\text{model}}(d_k + d_v) + d_k + d_v\bigr) + n\, d_v d_{\text{model}}
            &&= O(n^2 d_{\text{model}}^2), \\
        \text{recompute\_all}:&\quad S_1\, d_{\text{model}}(2 d_k + d_v) + S_2 (d_k + d_v)
            + S_1\, d_v d_{\text{model}}
            &&= O(n^2 d_{\text{model}}^2 + n^3 d).

    Examples
    --------
    >>> generation_multiplications(3, 4, 4).total        # 3 steps: t = 1, 2, 3
    240
    >>> sum(decode_step_multiplications(t, 4, 4).total for t in (1, 2, 3))
    240
    """
    n = positive_int(n, "n")
    d_model, d_k, d_v = _decode_sizes(d_model, d_k, d_v, strategy)
    s1 = n * (n + 1) // 2  # sum of t
    s2 = n * (n + 1) * (2 * n + 1) // 6  # sum of t^2
    if strategy == "cache":
        return DecodeCost(n * d_model * (2 * d_k + d_v), s1 * d_k, s1 * d_v, n * d_v * d_model)
    if strategy == "recompute_kv":
        return DecodeCost(n * d_model * d_k + s1 * d_model * (d_k + d_v), s1 * d_k, s1 * d_v,
                          n * d_v * d_model)
    return DecodeCost(s1 * d_model * (2 * d_k + d_v), s2 * d_k, s2 * d_v, s1 * d_v * d_model)


def kv_cache_bytes(
    n_tokens: int,
    *,
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    dtype: DTypeLike = np.float16,
    batch: int = 1,
) -> int:
    r"""Bytes of the keys and values a decoder keeps for ``n_tokens`` positions.

    Parameters
    ----------
    n_tokens : int
        Positions cached (the context length).
    n_layers : int
        Attention layers; each keeps its own keys and values.
    n_kv_heads : int
        Key/value heads per layer: the number of heads for ordinary
        multi-head attention, fewer with grouped-query attention (a group of
        query heads shares one key/value head), 1 with multi-query attention.
    d_head : int
        Size of one head's keys (and values).
    dtype : numeric numpy dtype, default float16
        Storage type of the cache (float16: 2 bytes per number); ``None``,
        ``str`` and ``bool`` are refused.
    batch : int, default 1
        Sequences decoded at once, each with its own cache.

    Returns
    -------
    int
        Bytes of the keys and values of every layer and sequence.

    Notes
    -----
    .. math::

        \text{bytes} = \text{batch} \times n_{\text{layers}} \times 2
            \times n_{\text{kv heads}} \times d_{\text{head}} \times n_{\text{tokens}}
            \times \text{bytes per number},

    the 2 counting keys and values. It grows linearly with ``n_tokens``;
    :attr:`attention_lib.KVCache.nbytes` reports the same for one layer at its
    capacity (``n_tokens = cache.capacity``). Multi-head latent attention
    caches a latent per token instead: :func:`latent_kv_cache_bytes`.

    Examples
    --------
    >>> gpt3 = dict(n_layers=96, n_kv_heads=96, d_head=128)    # GPT-3 175B
    >>> kv_cache_bytes(2048, **gpt3) / 2**30                  # GiB in float16
    9.0
    >>> kv_cache_bytes(1, **gpt3) / 2**20                     # MiB per token
    4.5
    """
    sizes = positive_ints(n_tokens=n_tokens, n_layers=n_layers, n_kv_heads=n_kv_heads,
                          d_head=d_head, batch=batch)
    return 2 * math.prod(sizes) * numeric_dtype(dtype).itemsize  # 2: keys and values


def latent_kv_cache_bytes(
    n_tokens: int,
    *,
    n_layers: int,
    d_latent: int,
    d_rope: int = 0,
    dtype: DTypeLike = np.float16,
    batch: int = 1,
) -> int:
    r"""Bytes of the latents a decoder with multi-head latent attention keeps for ``n_tokens``.

    Parameters
    ----------
    n_tokens : int
        Positions cached.
    n_layers : int
        Attention layers, each with its own latents.
    d_latent : int
        Size :math:`d_c` of the latent per token and layer
        (:func:`~attention_lib.latent_kv_attention`); it stands for the keys and
        values of every head.
    d_rope : int, default 0
        Size of the decoupled rotary key that DeepSeek-V2 caches beside the latent
        (64 there; 0 for :func:`~attention_lib.latent_kv_attention`, which has none).
    dtype : numeric numpy dtype, default float16
    batch : int, default 1

    Returns
    -------
    int
        Bytes of the latents (and rotary keys) of every layer and sequence.

    Notes
    -----
    .. math::

        \text{bytes} = \text{batch} \times n_{\text{layers}} \times (d_c + d_{\text{rope}})
            \times n_{\text{tokens}} \times \text{bytes per number},

    against :math:`2\, h_{kv} d_{\text{head}}` numbers per token and layer for
    :func:`kv_cache_bytes` (:math:`h_{kv} = h` for multi-head attention, fewer for
    grouped-query attention, 1 for multi-query attention).

    Examples
    --------
    >>> per_token = latent_kv_cache_bytes(1, n_layers=60, d_latent=512, d_rope=64)
    >>> per_token                                         # DeepSeek-V2, float16
    69120
    >>> kv_cache_bytes(1, n_layers=60, n_kv_heads=128, d_head=128) // per_token   # its MHA
    56
    """
    n_tokens, n_layers, d_latent, batch = positive_ints(
        n_tokens=n_tokens, n_layers=n_layers, d_latent=d_latent, batch=batch)
    d_rope = positive_int(d_rope, "d_rope", minimum=0)
    return batch * n_layers * (d_latent + d_rope) * n_tokens * numeric_dtype(dtype).itemsize
