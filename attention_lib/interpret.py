r"""Taking a trained GPT apart: how its heads compose, and what each layer already predicts.

Two readings of a model of the book (a :class:`~attention_lib.GPTConfig` and its
parameters), one from the weights alone and one from a forward pass:

- :func:`composition_scores` measures, from the weights, how much each head of a later
  layer can read what a head of an earlier layer writes: through its queries
  (Q-composition), its keys (K-composition) or its values (V-composition)
  (Elhage et al., 2021, "A Mathematical Framework for Transformer Circuits");
  :func:`shuffled_composition_baseline` gives the same scores for weights whose entries
  are shuffled, the level a score must clear to mean anything;
- :func:`logit_lens` reads the residual stream after the embedding and after every block
  through the model's own final norm and read-out (nostalgebraist, 2020, "interpreting
  GPT: the logit lens"): what the model would predict if it stopped there;
- :func:`direct_logit_attribution` splits the logit of the right next token into what
  the embedding, each head, each feed-forward layer and each bias wrote into the
  residual stream, read through the final norm with its scale held at the stream's own;
- :func:`stream_activations` collects what one site holds at every position of a long
  text, read in the windows the model's loss reads it in (neurons, features);
- activation patching, which finds where the coreference encoder carries its decision,
  is in :mod:`attention_lib.patching`.

Row vectors throughout, as in the rest of the package: a head ``i`` owns columns
``i*e:(i+1)*e`` of ``W_Q`` (and of ``W_K``, ``W_V`` for its key/value head) and rows
``i*e:(i+1)*e`` of ``W_O``, with ``e = d_head``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import index_array, positive_int
from .model.config import GPTConfig, check_params
from .model.hooks import capture_hooks, hook_sites
from .model.layers import LN_EPS, norm_forward
from .model.loss import log_softmax
from .model.stack import read_out, stack_forward

__all__ = ["composition_scores", "direct_logit_attribution", "logit_lens",
           "shuffled_composition_baseline", "stream_activations"]

KINDS = ("q", "k", "v")


def _check_model(params: Any, config: Any) -> np.dtype:
    """Check a GPT's parameters against its configuration; return their dtype."""
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    dtype = check_params(params, config)
    if config.cross_attention:
        raise ValueError("config has cross_attention=True: a decoder reads a memory, and its "
                         "cross-attention heads write into the stream too; expected a GPT "
                         "(a stack of self-attention blocks)")
    return dtype


def _check_ids(ids: Any, config: GPTConfig, *, shortest: int = 1) -> np.ndarray:
    """``ids`` as int64 of shape (T,) or (B, T), ``shortest <= T <= context``."""
    tokens = index_array(ids, config.vocab_size, "ids")  # int64, no id wrapped
    if tokens.ndim not in (1, 2):
        raise ValueError(f"ids has {tokens.ndim} dimensions, shape {tokens.shape}; expected "
                         "(T,) or (B, T)")
    if tokens.shape[-1] > config.context:
        raise ValueError(f"ids has T={tokens.shape[-1]} positions, shape {tokens.shape}; the "
                         f"model's context is {config.context}; expected T <= "
                         f"{config.context}")
    if tokens.shape[-1] < shortest:
        raise ValueError(f"ids has T={tokens.shape[-1]} position, shape {tokens.shape}; "
                         f"expected T >= {shortest} (a position and the token after it)")
    return tokens


def _head_blocks(params: dict[str, np.ndarray], config: GPTConfig,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every head's blocks in float64: W_Q (L, h, d, e), W_K and W_V (L, h_kv, d, e),
    W_O (L, h, e, d)."""
    L, h, h_kv, d, e = (config.n_layers, config.n_heads, config.kv_heads, config.d_model,
                        config.d_head)

    def columns(name: str, heads: int) -> np.ndarray:
        w = np.stack([params[f"blocks.{layer}.attn.{name}"] for layer in range(L)])  # (L, d, he)
        return w.astype(np.float64).reshape(L, d, heads, e).transpose(0, 2, 1, 3)  # (L, hs, d, e)

    w_o = np.stack([params[f"blocks.{layer}.attn.w_o"] for layer in range(L)])  # (L, d, d)
    w_o = w_o.astype(np.float64).reshape(L, h, e, d)  # head i: rows i*e:(i+1)*e
    return columns("w_q", h), columns("w_k", h_kv), columns("w_v", h_kv), w_o


def _scores(w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, w_o: np.ndarray,
            ) -> dict[str, np.ndarray]:
    r"""The three composition scores from the heads' blocks (W_K, W_V one per query head).

    Each d x d matrix is a product of two thin factors, :math:`W_{OV} = W_V W_O` and
    :math:`W_{QK} = W_Q W_K^{\mathsf T}`. With thin QR factors :math:`W_V = Q_V R_V`,
    :math:`W_O^{\mathsf T} = Q_O R_O` (and likewise for :math:`W_Q`, :math:`W_K`),
    :math:`W_{OV} = Q_V (R_V R_O^{\mathsf T}) Q_O^{\mathsf T}`, and since matrices of
    orthonormal columns keep the Frobenius norm, every norm below is that of an
    e x e product: exact, without forming a d x d matrix.
    """
    L, h = w_q.shape[:2]
    # Reduced QR of (..., d, e): Q (..., d, e) of orthonormal columns (at any rank), R (..., e, e).
    qv, rv = np.linalg.qr(w_v)
    qo, ro = np.linalg.qr(np.swapaxes(w_o, -1, -2))
    qq, rq = np.linalg.qr(w_q)
    qk, rk = np.linalg.qr(w_k)
    ov = rv @ np.swapaxes(ro, -1, -2)  # (L, h, e, e): W_OV = qv @ ov @ qo^T
    qk_core = rq @ np.swapaxes(rk, -1, -2)  # (L, h, e, e): W_QK = qq @ qk_core @ qk^T
    ov_norm = np.linalg.norm(ov, axis=(-2, -1))  # (L, h) = ||W_OV||_F
    qk_norm = np.linalg.norm(qk_core, axis=(-2, -1))  # (L, h) = ||W_QK||_F
    out = {kind: np.full((L, h, L, h), np.nan) for kind in KINDS}
    for l2 in range(1, L):
        for l1 in range(l2):
            # [h2, h1] pairs: head h1 of layer l1 writes, head h2 of layer l2 reads.
            into_q = np.swapaxes(qo[l1], -1, -2)[None] @ qq[l2][:, None]  # (h2, h1, e, e)
            into_k = np.swapaxes(qk[l2], -1, -2)[:, None] @ qo[l1][None]
            into_v = np.swapaxes(qo[l1], -1, -2)[None] @ qv[l2][:, None]
            pairs = {
                "q": ov[l1][None] @ into_q @ qk_core[l2][:, None],  # W_OV1 W_QK2
                "k": qk_core[l2][:, None] @ into_k @ np.swapaxes(ov[l1], -1, -2)[None],
                "v": ov[l1][None] @ into_v @ ov[l2][:, None],  # W_OV1 W_OV2
            }
            reader = {"q": qk_norm[l2], "k": qk_norm[l2], "v": ov_norm[l2]}  # (h2,)
            for kind, product in pairs.items():
                norms = np.linalg.norm(product, axis=(-2, -1))  # (h2, h1)
                scale = reader[kind][:, None] * ov_norm[l1][None, :]
                # A zero matrix composes with nothing: its score is 0, not 0 / 0.
                out[kind][l2, :, l1, :] = np.divide(norms, scale, out=np.zeros_like(norms),
                                                    where=scale > 0)
    return out


def _per_query_head(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Key/value blocks (L, h_kv, d, e) repeated for the query heads that share them."""
    return np.repeat(w, n_heads // w.shape[1], axis=1)  # query head i reads i // g


def composition_scores(params: dict[str, np.ndarray], config: GPTConfig,
                       ) -> dict[str, np.ndarray]:
    r"""How strongly each head can read what each head of an earlier layer writes.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters (from :func:`~attention_lib.init_gpt`, a trained model, ...),
        float32 or float64; checked against ``config``.
    config : GPTConfig
        Any configuration without cross-attention: attention-only or not, grouped
        key/value heads (``n_kv_heads``), any norm or positions.

    Returns
    -------
    dict with keys ``"q"``, ``"k"``, ``"v"``
        Each a float64 array of shape ``(n_layers, n_heads, n_layers, n_heads)``: entry
        ``[l2, h2, l1, h1]`` is the score of head ``h1`` of layer ``l1`` writing into
        head ``h2`` of layer ``l2`` through its queries, keys or values, for ``l1 < l2``;
        NaN where ``l1 >= l2`` (a head reads only what earlier layers wrote). Every score
        lies in [0, 1] (up to rounding); a head whose matrix is zero scores 0.

    Notes
    -----
    For head :math:`h` of a layer, with its column blocks :math:`W_Q^h, W_K^h, W_V^h`
    (d x e) and its row block :math:`W_O^h` (e x d),

    .. math::

        W_{OV}^h = W_V^h W_O^h, \qquad W_{QK}^h = W_Q^h \bigl(W_K^h\bigr)^{\mathsf T}
        \qquad (d \times d),

    so that a head moves :math:`\mathbf x\,W_{OV}^h` from a position whose stream is
    :math:`\mathbf x`, and scores query :math:`\mathbf x` against key :math:`\mathbf y`
    with :math:`\mathbf x\, W_{QK}^h\, \mathbf y^{\mathsf T}`. Head :math:`h_1` (layer
    :math:`l_1`) composes with head :math:`h_2` (layer :math:`l_2 > l_1`):

    .. math::

        Q = \frac{\lVert W_{OV}^{h_1} W_{QK}^{h_2}\rVert_F}
                 {\lVert W_{OV}^{h_1}\rVert_F\,\lVert W_{QK}^{h_2}\rVert_F}, \quad
        K = \frac{\lVert W_{QK}^{h_2} (W_{OV}^{h_1})^{\mathsf T}\rVert_F}
                 {\lVert W_{QK}^{h_2}\rVert_F\,\lVert W_{OV}^{h_1}\rVert_F}, \quad
        V = \frac{\lVert W_{OV}^{h_1} W_{OV}^{h_2}\rVert_F}
                 {\lVert W_{OV}^{h_1}\rVert_F\,\lVert W_{OV}^{h_2}\rVert_F}.

    Since :math:`\lVert AB\rVert_F \le \lVert A\rVert_F \lVert B\rVert_F`, each is at
    most 1. Left out: the biases, the norms (their gains and the normalisation), the
    rotary positions of a ``positions="rope"`` model (the scores are those of
    :math:`W_Q W_K^{\mathsf T}` at distance 0) and the feed-forward layers between the
    heads. With grouped key/value heads, query head :math:`i` uses the :math:`W_K, W_V`
    block of its key/value head :math:`\lfloor i/g \rfloor`, :math:`g = h / h_{kv}`
    (its own :math:`W_Q` columns and :math:`W_O` rows), as the forward pass computes
    it; the scores are those of the same model with the shared blocks copied out to
    every query head. The norms are computed from thin QR factors of the d x e blocks, exactly,
    without forming a d x d product.

    Compare a score with :func:`shuffled_composition_baseline`: two unrelated random
    matrices already score about :math:`1/\sqrt{d}`, not 0.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 8, 8, 2, 2, attention_only=True)
    >>> scores = composition_scores(init_gpt(config), config)
    >>> sorted(scores), scores["k"].shape
    (['k', 'q', 'v'], (2, 2, 2, 2))
    >>> bool(np.isnan(scores["k"][0]).all()), bool(np.isnan(scores["k"][1, :, 1]).all())
    (True, True)
    >>> bool(((scores["k"][1, :, 0] > 0) & (scores["k"][1, :, 0] <= 1)).all())
    True
    """
    _check_model(params, config)
    w_q, w_k, w_v, w_o = _head_blocks(params, config)
    h = config.n_heads
    return _scores(w_q, _per_query_head(w_k, h), _per_query_head(w_v, h), w_o)


def _shuffled(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each block ``w[l, i]`` with its entries in a random order (each block its own)."""
    flat = w.reshape(*w.shape[:2], -1)  # (L, heads, d e)
    return rng.permuted(flat, axis=-1).reshape(w.shape)


def shuffled_composition_baseline(params: dict[str, np.ndarray], config: GPTConfig, *,
                                  seed: int = 0, n_shuffles: int = 20,
                                  ) -> dict[str, np.ndarray]:
    """The composition scores of the same model with each head's weights shuffled.

    Parameters
    ----------
    params, config
        As in :func:`composition_scores`.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``: the same seed gives the same shuffles.
    n_shuffles : int, default 20
        How many shuffled copies of the weights to score.

    Returns
    -------
    dict with keys ``"q"``, ``"k"``, ``"v"``
        Each a float64 array of shape ``(n_shuffles, n_layers, n_heads, n_layers,
        n_heads)``: entry ``[s, ...]`` is :func:`composition_scores` of the ``s``-th
        shuffled copy (NaN where ``l1 >= l2``). Take ``.mean(axis=0)`` for the baseline,
        or a quantile, to compare with the real scores.

    Notes
    -----
    Each head's four blocks (its columns of ``W_Q``, of ``W_K`` and of ``W_V`` (a
    key/value head's, shuffled once and shared by its query heads as in the model), and
    its rows of ``W_O``) have their entries put in a random order, each block
    independently and every copy afresh. That keeps every block's values, its norm and
    its rank (e, with probability 1), and destroys only how the blocks line up, which
    is what a composition score measures. So a real score well above its shuffled ones
    says that training aligned what one head writes with what another reads.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 8, 8, 2, 2, attention_only=True)
    >>> base = shuffled_composition_baseline(init_gpt(config), config, n_shuffles=5)
    >>> base["q"].shape, bool(np.isnan(base["q"][:, 0]).all())
    ((5, 2, 2, 2, 2), True)
    """
    _check_model(params, config)
    seed = positive_int(seed, "seed", minimum=0)
    n_shuffles = positive_int(n_shuffles, "n_shuffles")
    w_q, w_k, w_v, w_o = _head_blocks(params, config)
    h = config.n_heads
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(n_shuffles):
        q, k, v, o = (_shuffled(w, rng) for w in (w_q, w_k, w_v, w_o))
        runs.append(_scores(q, _per_query_head(k, h), _per_query_head(v, h), o))
    return {kind: np.stack([run[kind] for run in runs]) for kind in KINDS}


def logit_lens(params: dict[str, np.ndarray], config: GPTConfig, ids: Any) -> np.ndarray:
    r"""What the model would predict from the residual stream after each block.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64.
    config : GPTConfig
        Any configuration without cross-attention.
    ids : array_like of int, shape (T,) or (B, T)
        Token ids in ``0 .. vocab_size - 1``, ``1 <= T <= context``.

    Returns
    -------
    numpy.ndarray, shape (n_layers + 1, T, vocab_size) or (n_layers + 1, B, T, vocab_size)
        Log-probabilities of the next token, in the parameters' dtype: reading ``0`` is the
        stream after the embedding (plus the learned positions, if any), reading ``l``
        the stream after block ``l - 1``. The last reading is the model's own
        ``log_softmax`` of :func:`~attention_lib.gpt_logits`, the very numbers.

    Notes
    -----
    With :math:`x^{(l)}` the residual stream after :math:`l` blocks (captured by hooks at
    ``"embed"`` and ``"blocks.l.resid_post"``, :func:`~attention_lib.capture_hooks`),

    .. math::

        \text{reading}_l = \log\operatorname{softmax}\bigl(N_f(x^{(l)})\,W_{\text{out}}\bigr),

    with the model's final norm :math:`N_f` and its read-out :math:`W_{\text{out}}`
    (:math:`W_E^{\mathsf T}` with tied embeddings, ``w_out`` otherwise). An early
    reading is the model's read-out applied where it was not trained to be applied; how
    far it already predicts the next token says how much of the prediction the stream
    holds, in the read-out's terms, at that depth.

    Examples
    --------
    >>> from attention_lib import GPTConfig, gpt_logits, init_gpt
    >>> config = GPTConfig(10, 8, 8, 2, 2)
    >>> params = init_gpt(config, dtype=np.float64)
    >>> lens = logit_lens(params, config, [1, 2, 3])
    >>> lens.shape, bool(np.allclose(np.exp(lens).sum(axis=-1), 1))
    ((3, 3, 10), True)
    >>> logits = gpt_logits(params, config, [[1, 2, 3]])[0]
    >>> bool(np.allclose(lens[-1], logits - np.log(np.exp(logits).sum(-1, keepdims=True))))
    True
    """
    _check_model(params, config)
    tokens = _check_ids(ids, config)
    single = tokens.ndim == 1
    sites = ["embed"] + [f"blocks.{layer}.resid_post" for layer in range(config.n_layers)]
    stream: dict[str, np.ndarray] = {}
    stack_forward(params, config, tokens[None] if single else tokens,
                  hooks=capture_hooks(stream, sites))
    readings = []
    for site in sites:  # each as the model reads its last stream: the same operations
        final, _ = norm_forward(config.norm, stream[site], params, "ln_f")  # (B, T, d)
        readings.append(log_softmax(read_out(params, config, final)))  # (B, T, V)
    lens = np.stack(readings)  # (L + 1, B, T, V)
    return lens[:, 0] if single else lens


def direct_logit_attribution(params: dict[str, np.ndarray], config: GPTConfig, ids: Any,
                             ) -> dict[str, np.ndarray]:
    r"""What each part of the model writes towards the right next token's logit.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64 (the computation is float64).
    config : GPTConfig
        A pre-norm configuration without cross-attention: attention-only or not, layer
        norm or RMSNorm, any positions, tied or untied read-out, grouped key/value heads.
    ids : array_like of int, shape (T,) or (B, T)
        Token ids in ``0 .. vocab_size - 1``, ``2 <= T <= context``. Position ``t``
        predicts ``ids[..., t + 1]``.

    Returns
    -------
    dict of str to numpy.ndarray
        Each component's contribution to the logit of the right next token, float64 of
        shape ``(T - 1,)`` or ``(B, T - 1)``, in the order the forward pass writes them:
        ``"embed"`` (the token embedding, plus the learned positions if any); for each
        layer ``l`` (numbered from 1), every head ``"Ll Hi"``, then ``"Ll attn bias"``
        (the output projection's bias, if the model has biases) and ``"Ll FF"`` (the
        feed-forward layer, its biases included, unless the model is attention-only);
        last ``"final norm bias"`` (layer norm's :math:`\beta`; RMSNorm has none). The
        contributions add up to the model's logit of the right next token at each
        position, ``gpt_logits(params, config, ids)[..., t, ids[..., t + 1]]``, up to
        rounding.

    Notes
    -----
    In a pre-norm model the residual stream that reaches the final norm is a sum of what
    was written into it: :math:`x = \sum_c x_c`, over the embedding, every head
    (its output through its rows of :math:`W_O`), the output biases and the
    feed-forward layers. The final norm is not linear: layer norm divides the centred
    stream by its spread :math:`\sigma(x)`. Holding that scale at the value the whole
    stream gives makes it linear, and exact for this stream:

    .. math::

        \begin{aligned}
        \text{logit}_y &= \Bigl(\gamma \odot \frac{x - \bar x}{\sigma(x)} + \beta\Bigr)
        \cdot \mathbf w_y \\
        &= \sum_c \frac{(x_c - \bar x_c) \cdot (\gamma \odot \mathbf w_y)}{\sigma(x)}
        \;+\; \beta \cdot \mathbf w_y,
        \end{aligned}

    with :math:`\mathbf w_y` the read-out's column of the right token :math:`y`
    (:math:`W_E[y]` with tied embeddings), :math:`\bar x` the mean over the stream's
    entries and :math:`\sigma(x) = \sqrt{\operatorname{var}(x) + \varepsilon}`
    (RMSNorm: no centring, :math:`\sigma(x) = \sqrt{\overline{x^2} + \varepsilon}`,
    no :math:`\beta`). Each term is that component's *direct* effect: what it writes
    straight to the read-out, not what it changes by being read by later layers. The
    forward pass runs on float64 copies of the parameters, and each head's output is
    read at the hook site ``"blocks.l.attn.heads"``.

    Examples
    --------
    >>> from attention_lib import GPTConfig, gpt_logits, init_gpt
    >>> config = GPTConfig(10, 8, 8, 2, 2)
    >>> params = init_gpt(config, dtype=np.float64)
    >>> parts = direct_logit_attribution(params, config, [1, 2, 3, 4])
    >>> list(parts)[:4], parts["L1 H1"].shape
    (['embed', 'L1 H1', 'L1 H2', 'L1 attn bias'], (3,))
    >>> logits = gpt_logits(params, config, [[1, 2, 3, 4]])[0]
    >>> bool(np.allclose(sum(parts.values()), logits[[0, 1, 2], [2, 3, 4]]))
    True
    """
    _check_model(params, config)
    if config.norm_position != "pre":
        raise ValueError("config has norm_position='post': the norm after every sublayer "
                         "rescales the stream, which is then no sum of what each part wrote; "
                         "expected a pre-norm model")
    tokens = _check_ids(ids, config, shortest=2)
    single = tokens.ndim == 1
    batch = tokens[None] if single else tokens  # (B, T)
    p = {name: np.asarray(a, dtype=np.float64) for name, a in params.items()}
    L, h, e = config.n_layers, config.n_heads, config.d_head
    sites = ["embed", f"blocks.{L - 1}.resid_post"]
    for layer in range(L):
        sites.append(f"blocks.{layer}.attn.heads")
        if not config.attention_only:
            sites.append(f"blocks.{layer}.ff.out")
    seen: dict[str, np.ndarray] = {}
    stack_forward(p, config, batch, hooks=capture_hooks(seen, sites))
    stream = seen[f"blocks.{L - 1}.resid_post"][:, :-1]  # (B, T-1, d): what ln_f reads
    w_out = p["wte"].T if config.tie_embeddings else p["w_out"]  # (d, V)
    targets = batch[:, 1:]  # (B, T-1)
    w_y = w_out.T[targets]  # (B, T-1, d): the right token's read-out column
    direction = w_y * p["ln_f.gamma"]  # gamma ⊙ w_y
    if config.norm == "layer":
        # (x - mean x) . u = x . (u - mean u): centre the direction once instead of each part
        direction = direction - direction.mean(axis=-1, keepdims=True)
        centred = stream - stream.mean(axis=-1, keepdims=True)
        spread = np.sqrt((centred * centred).mean(axis=-1) + LN_EPS)  # (B, T-1)
    else:
        spread = np.sqrt((stream * stream).mean(axis=-1) + LN_EPS)
    direction = direction / spread[..., None]  # the frozen scale

    def read(part: np.ndarray) -> np.ndarray:
        """A part's contribution (B, T-1) from what it wrote, (B, T, d) or (d,)."""
        if part.ndim == 1:
            return direction @ part
        return np.einsum("btd,btd->bt", part[:, :-1], direction)

    out = {"embed": read(seen["embed"])}
    for layer in range(L):
        b = f"blocks.{layer}."
        heads = seen[b + "attn.heads"][:, :, :-1]  # (B, h, T-1, e)
        w_o = p[b + "attn.w_o"].reshape(h, e, -1)  # head i: rows i*e:(i+1)*e
        # head i's output o_i W_O^i read along the direction: o_i . (W_O^i direction)
        along = np.einsum("ied,btd->bite", w_o, direction)  # (B, h, T-1, e)
        per_head = np.einsum("bite,bite->bit", heads, along)
        for i in range(h):
            out[f"L{layer + 1} H{i + 1}"] = per_head[:, i]
        if b + "attn.b_o" in p:
            out[f"L{layer + 1} attn bias"] = read(p[b + "attn.b_o"])
        if not config.attention_only:
            out[f"L{layer + 1} FF"] = read(seen[b + "ff.out"])
    if config.norm == "layer":
        out["final norm bias"] = w_y @ p["ln_f.beta"]
    return {name: c[0] if single else c for name, c in out.items()}



def stream_activations(params: dict[str, np.ndarray], config: GPTConfig, stream: Any,
                       site: str, *, batch_size: int = 32) -> np.ndarray:
    r"""What one hook site holds at every position of a long token stream.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        A GPT's parameters, float32 or float64.
    config : GPTConfig
        Any configuration without cross-attention.
    stream : array_like of int, shape (N,)
        Token ids, any length ``N >= 1``.
    site : str
        A site of :func:`~attention_lib.hook_sites` that holds one row per position:
        ``"embed"``, ``"final"``, ``"logits"`` or a block's ``resid_pre``, ``attn.out``,
        ``resid_mid``, ``ff.hidden``, ``ff.out``, ``resid_post`` (shape (N, width)), or a
        block's ``attn.q``, ``attn.k``, ``attn.v``, ``attn.heads`` (shape (N, heads, e)).
    batch_size : int, default 32
        Windows run at once (memory, not the result).

    Returns
    -------
    numpy.ndarray, shape (N, width) or (N, heads, e)
        Row ``p`` is the site's activation at position ``p``, in the parameters' dtype.

    Notes
    -----
    The stream is read in consecutive windows of ``context`` tokens, ``stream[0:T]``,
    ``stream[T:2T]``, ... (the last one shorter), the windows in which
    :func:`~attention_lib.sequence_loss` scores it: position ``p`` sees the
    ``p mod T`` tokens before it in its window. A site's rows are collected with
    :func:`~attention_lib.capture_hooks`.

    Examples
    --------
    >>> from attention_lib import GPTConfig, init_gpt
    >>> config = GPTConfig(10, 4, 8, 2, 2, d_ff=16)
    >>> params = init_gpt(config)
    >>> stream_activations(params, config, np.arange(10) % 10, "blocks.1.ff.hidden").shape
    (10, 16)
    >>> stream_activations(params, config, [1, 2, 3, 4, 5], "blocks.0.attn.heads").shape
    (5, 2, 4)
    """
    dtype = _check_model(params, config)
    tokens = index_array(stream, config.vocab_size, "stream", ndim=1)
    batch_size = positive_int(batch_size, "batch_size")
    if not isinstance(site, str) or site not in hook_sites(config):
        raise ValueError(f"site={site!r} is not a site of this model; expected one of "
                         "hook_sites(config)")
    if site.endswith("attn.weights"):
        raise ValueError(f"site={site!r} holds one row per query and key; expected a site "
                         "with one row per position (e.g. 'blocks.0.resid_post')")
    T = config.context
    starts = np.arange(0, tokens.size, T)
    full = starts[starts + T <= tokens.size]
    parts: list[np.ndarray] = []

    def run(x: np.ndarray) -> None:
        seen: dict[str, np.ndarray] = {}
        stack_forward(params, config, x, hooks=capture_hooks(seen, [site]))
        a = seen[site]
        if a.ndim == 4:  # (B, h, T, e) -> (B, T, h, e)
            a = a.transpose(0, 2, 1, 3)
        parts.append(a.reshape((-1,) + a.shape[2:]).astype(dtype, copy=False))

    for first in range(0, full.size, batch_size):
        chunk = full[first:first + batch_size]
        run(tokens[chunk[:, None] + np.arange(T)])  # (B, T)
    if full.size < starts.size:  # the last, shorter window
        run(tokens[None, starts[-1]:])
    return np.concatenate(parts)
