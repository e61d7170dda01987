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
- :func:`coreference_patching` runs the coreference encoder on a sentence whose
  adjective names the other referent and puts back, one site at a time, what the model
  computed on the original sentence: one head's output, or the residual stream at one
  position (activation patching; Meng et al., 2022, "Locating and Editing Factual
  Associations in GPT"; Wang et al., 2022, "Interpretability in the Wild"). How much of
  the answer comes back says where the decision is carried. :func:`coreference_minimal_pairs`
  gives the sentence pairs: twins that differ in the adjective alone.

Row vectors throughout, as in the rest of the package: a head ``i`` owns columns
``i*e:(i+1)*e`` of ``W_Q`` (and of ``W_K``, ``W_V`` for its key/value head) and rows
``i*e:(i+1)*e`` of ``W_O``, with ``e = d_head``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._threads import one_blas_thread
from ._validation import index_array, non_empty, positive_int
from .model.config import GPTConfig, check_params
from .model.hooks import capture_hooks
from .model.layers import LN_EPS, norm_forward
from .model.loss import log_softmax
from .model.stack import read_out, stack_forward
from .training import coreference as _coref

__all__ = ["CoreferencePatching", "composition_scores", "coreference_minimal_pairs",
           "coreference_patching", "direct_logit_attribution", "logit_lens",
           "shuffled_composition_baseline"]

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


# ---------------------------------------------------------------- activation patching

_SECOND_ADJECTIVES = _coref.PLACE_ADJECTIVES + _coref.AGENT_ADJECTIVES
_VERB_WORDS = frozenset(w for v in _coref.CROSS_VERBS + _coref.CHASE_VERBS for w in v.split())


def _referent(adjective: str) -> int | None:
    """0 if ``adjective`` makes "it" the first noun, 1 if the second, None if it is none of
    the corpus's adjectives."""
    if adjective in _coref.FIRST_ADJECTIVES:
        return 0
    if adjective in _SECOND_ADJECTIVES:
        return 1
    return None


def _twin(sentence: str) -> str:
    """A corpus sentence with its adjective swapped for the one at the same place in the
    list of the other referent."""
    words = sentence.split()
    adjective = words[-1]
    second = _coref.CoreferenceModel.candidates(sentence)[1]
    seconds = _coref.PLACE_ADJECTIVES if second in _coref.PLACES else _coref.AGENT_ADJECTIVES
    if adjective in _coref.FIRST_ADJECTIVES:
        twin = seconds[_coref.FIRST_ADJECTIVES.index(adjective)]
    else:
        twin = _coref.FIRST_ADJECTIVES[seconds.index(adjective)]
    return " ".join([*words[:-1], twin])


def coreference_minimal_pairs(split: str = "test", *, length: int | None = None,
                              ) -> list[tuple[str, str]]:
    """Every sentence of the coreference corpus with its twin: the other adjective, the
    other referent.

    Parameters
    ----------
    split : {"test", "train"}, default "test"
        The held-out sentences or the training ones
        (:func:`~attention_lib.coreference_examples`).
    length : int, optional
        Keep only the sentences of that many words. The corpus has sentences of 11 and of
        12 words ("walk across" and "run across" are two words).

    Returns
    -------
    list of (str, str)
        ``(clean, corrupt)``, one pair per sentence of the split, in the corpus's order:
        the sentence, and the same sentence with another adjective, one that makes "it"
        refer to the other noun. Every other word is the same, at the same place.

    Notes
    -----
    The k-th adjective that makes "it" the first noun (*tired*, *scared*, *weak*, *slow*,
    *sleepy*, *lazy*) goes with the k-th that makes it the second: *wide*, *busy*,
    *long*, ... when the second noun is a place, *fast*, *quick*, *far*, ... when it is an
    animal or a person. So *tired* goes with *wide*, as in the tutorial's two sentences.
    Every sentence is the clean sentence of one pair and the corrupt sentence of its
    twin's, the same pair the other way round; a sentence and its twin are always in the
    same split, which holds out whole pairs of nouns.

    Examples
    --------
    >>> pairs = coreference_minimal_pairs("test")
    >>> len(pairs), len(coreference_minimal_pairs("test", length=11))
    (2448, 1872)
    >>> clean, corrupt = pairs[0]
    >>> clean
    "The animal didn't cross the street because it was too tired"
    >>> corrupt
    "The animal didn't cross the street because it was too wide"
    """
    examples = _coref.coreference_examples(split)
    if length is not None:
        length = positive_int(length, "length")
        examples = [(s, r) for s, r in examples if len(s.split()) == length]
        if not examples:
            raise ValueError(f"length={length}; the corpus's sentences have 11 or 12 words")
    return [(sentence, _twin(sentence)) for sentence, _ in examples]


@dataclass(frozen=True)
class CoreferencePatching:
    """How much of the coreference encoder's answer each patched site restores (the result of
    :func:`coreference_patching`).

    Attributes
    ----------
    heads : numpy.ndarray, shape (n_layers, n_heads)
        Entry ``[l, i]``: the fraction of the logit difference restored by putting back
        the output of head ``i`` of layer ``l`` (site ``"blocks.l.attn.heads"``, that
        head's slice, every position).
    resid : numpy.ndarray, shape (n_layers + 1, T)
        Entry ``[l, j]``: the fraction restored by putting back the residual stream at
        position ``j`` entering block ``l``; the last row, after the last block.
    sites : tuple of str
        The hook site of each row of ``resid``: ``"blocks.0.resid_pre"``, ...,
        ``"blocks.{L-1}.resid_pre"``, ``"blocks.{L-1}.resid_post"``.
    labels : tuple of str
        One per position: the word, where every clean sentence has the same word there;
        else its part, ``"noun 1"``, ``"noun 2"`` or ``"verb"``. The position of the
        adjectives is ``"clean/corrupt"`` (``"tired/wide"``) when every pair has the
        same two, else ``"adjective"``.
    n_pairs : int
    clean_logit_diff, corrupt_logit_diff : float
        The logit difference (the clean sentence's referent minus the other noun) on the
        clean and on the corrupt sentences, each the mean over the pairs.
    """

    heads: np.ndarray
    resid: np.ndarray
    sites: tuple[str, ...]
    labels: tuple[str, ...]
    n_pairs: int
    clean_logit_diff: float
    corrupt_logit_diff: float


def _check_pairs(pairs: Any) -> tuple[list[str], list[str]]:
    """The clean and the corrupt sentences of ``pairs``, each a str."""
    if isinstance(pairs, str) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"pairs={pairs!r}; expected a list of (clean, corrupt) pairs of "
                        "sentences")
    pairs = non_empty(pairs, "pairs", "(clean, corrupt) pair of sentences")
    for n, pair in enumerate(pairs):
        if (isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(s, str) for s in pair)):
            raise TypeError(f"pairs[{n}]={pair!r}; expected a (clean, corrupt) pair of "
                            "sentences, two str (and a list of pairs, even of one)")
    return [c for c, _ in pairs], [d for _, d in pairs]


def _changed_words(cleans: list[str], corrupts: list[str]) -> tuple[np.ndarray, list[int]]:
    """The clean sentences' referents (0: the first noun, 1: the second) and the position
    where each pair differs; a ValueError unless each pair differs in one adjective, with
    the other referent, and all sentences have one length."""
    referents, changed = [], []
    for n, (clean, corrupt) in enumerate(zip(cleans, corrupts, strict=True)):
        a, b = clean.split(), corrupt.split()
        if len(a) != len(b):
            raise ValueError(f"pairs[{n}] has sentences of {len(a)} and {len(b)} words; "
                             "expected two sentences of one length that differ in one word, "
                             "the adjective")
        where = [j for j, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(where) != 1:
            at = f" (positions {where})" if where else ""
            raise ValueError(f"pairs[{n}] differs in {len(where)} words{at}; expected exactly "
                             "one, the adjective that decides the referent")
        j = where[0]
        r_clean, r_corrupt = _referent(a[j]), _referent(b[j])
        if r_clean is None or r_corrupt is None or r_clean == r_corrupt:
            raise ValueError(
                f"pairs[{n}] differs in {a[j]!r} and {b[j]!r}; expected two adjectives of "
                f"different referents: one of {list(_coref.FIRST_ADJECTIVES)} (\"it\" is the "
                f"first noun) and one of {list(_SECOND_ADJECTIVES)} (the second)")
        referents.append(r_clean)
        changed.append(j)
    lengths = [len(c.split()) for c in cleans]
    if len(set(lengths)) > 1:
        other = next(n for n, t in enumerate(lengths) if t != lengths[0])
        raise ValueError(f"pairs has sentences of {lengths[0]} words (pairs[0]) and of "
                         f"{lengths[other]} (pairs[{other}]); expected one length, so that "
                         "the positions line up: patch each length apart, e.g. the pairs of "
                         f"coreference_minimal_pairs(length={lengths[0]})")
    return np.asarray(referents, dtype=np.int64), changed


def _position_labels(cleans: list[str], corrupts: list[str], candidates: np.ndarray,
                     changed: list[int]) -> tuple[str, ...]:
    """A label per position: the common word, or the part the words at it play."""
    words = [c.split() for c in cleans]
    labels = []
    for j in range(len(words[0])):
        column = {w[j] for w in words}
        if all(k == j for k in changed):
            swaps = {(c.split()[j], d.split()[j]) for c, d in zip(cleans, corrupts, strict=True)}
            labels.append("/".join(swaps.pop()) if len(swaps) == 1 else "adjective")
        elif len(column) == 1:
            labels.append(column.pop())
        elif (candidates[:, 0] == j).all():
            labels.append("noun 1")
        elif (candidates[:, 1] == j).all():
            labels.append("noun 2")
        elif column <= _VERB_WORDS:
            labels.append("verb")
        else:
            labels.append(f"word {j}")
    return tuple(labels)


def coreference_patching(model: Any, pairs: Sequence[tuple[str, str]],
                         ) -> CoreferencePatching:
    r"""Where the coreference encoder carries its decision: activation patching, one head
    and one position of the residual stream at a time.

    Parameters
    ----------
    model : CoreferenceModel
        A coreference encoder (:func:`~attention_lib.train_coreference_model`, or
        :func:`~attention_lib.init_coreference_model` for an untrained one).
    pairs : sequence of (str, str)
        ``(clean, corrupt)`` sentences that differ in one word, the adjective, one of each
        referent (*tired* against *wide*), as :func:`coreference_minimal_pairs` gives
        them. Every sentence has the same number of words.

    Returns
    -------
    CoreferencePatching
        ``heads`` (n_layers, n_heads) and ``resid`` (n_layers + 1, T): the fraction of the
        logit difference each patched site restores; the positions' ``labels``, the
        ``n_pairs``, and the mean logit differences of the clean and the corrupt sentences.

    Notes
    -----
    The model scores the two nouns with two logits at "it" and a softmax over those two
    alone (:func:`~attention_lib.coreference_loss_and_grads`), so the difference of the
    two logits is the whole of its answer: with :math:`r` the referent of the clean
    sentence and :math:`o` the other noun,

    .. math::

        \Delta = \ell_r - \ell_o = \log \frac{p(r)}{p(o)},

    large and positive on a clean sentence that the model gets right, negative on its
    corrupt twin. Both sentences have the same nouns at the same places, so the same two
    logits are compared on both.

    The clean sentences run once, and their activations are kept; the corrupt sentences
    run once as they are, and once more for every site with the clean activation put back
    there: the output of one head (at every position), or the residual stream at one
    position, entering a block or leaving the last one. A site restores

    .. math::

        \frac{\bar\Delta_{\text{patched}} - \bar\Delta_{\text{corrupt}}}
             {\bar\Delta_{\text{clean}} - \bar\Delta_{\text{corrupt}}},

    with :math:`\bar\Delta` the mean over the pairs: a ratio of means, not a mean of
    each pair's fraction, because a pair whose two sentences the model scores nearly
    alike would divide by a gap near 0 and its fraction, of any size, would swamp the
    others; the ratio weighs each pair by its gap. 0 means nothing comes back, 1 the
    clean answer; a site may also restore less than 0 or more than 1. NaN if the clean
    and the corrupt mean are equal.

    Two rows of ``resid`` are known in advance. Entering the first block, the two
    sentences differ at the adjective alone, so patching there makes the run the clean
    run (exactly 1) and patching anywhere else changes nothing (exactly 0). Leaving the
    last block, only "it" is read (the final norm acts position by position): 1 there,
    0 elsewhere. The rows between say where the adjective's information is on its way
    to "it". Patching puts a site back in a context that is otherwise corrupt: it finds
    what is enough to bring the answer back, and two sites that each carry the decision
    may each restore only part of it.

    The sentences are not padded: all pairs have one length, so that position ``j``
    is the same word of the frame in every sentence (the corpus's 12-word sentences,
    with "walk across" and "run across", go in a call of their own). The cost is
    :math:`2 + L h + (L + 1) T` forward passes, each of all the pairs at once, in the
    parameters' dtype.

    Examples
    --------
    >>> from attention_lib import init_coreference_model
    >>> model = init_coreference_model(seed=0)  # untrained: the logit differences are small
    >>> result = coreference_patching(model, coreference_minimal_pairs(length=11)[:12])
    >>> result.heads.shape, result.resid.shape, result.n_pairs
    ((2, 2), (3, 11), 12)
    >>> result.labels[5:]
    ('street', 'because', 'it', 'was', 'too', 'adjective')
    >>> bool((result.resid[0, :10] == 0).all()), float(result.resid[0, 10])
    (True, 1.0)
    >>> float(result.resid[-1, 7])  # the position of "it"
    1.0
    """
    if not isinstance(model, _coref.CoreferenceModel):
        raise TypeError(f"model is {type(model).__name__}; expected a CoreferenceModel "
                        "(train_coreference_model or init_coreference_model)")
    cleans, corrupts = _check_pairs(pairs)
    clean_batch, corrupt_batch = model.encode(cleans), model.encode(corrupts)  # known words
    referent, changed = _changed_words(cleans, corrupts)
    config = model.config
    L, h = config.n_layers, config.n_heads
    T = int(clean_batch.lengths[0])
    head_sites = [f"blocks.{layer}.attn.heads" for layer in range(L)]
    resid_sites = [f"blocks.{layer}.resid_pre" for layer in range(L)]
    resid_sites.append(f"blocks.{L - 1}.resid_post")
    rows = np.arange(len(cleans))

    def logit_diff(batch: Any, hooks: Any = None) -> np.ndarray:
        logits = _coref._forward(model.params, config, batch, hooks=hooks)[0]  # (P, 2)
        return logits[rows, referent] - logits[rows, 1 - referent]  # (P,)

    clean_run: dict[str, np.ndarray] = {}
    clean = logit_diff(clean_batch, capture_hooks(clean_run, head_sites + resid_sites)).mean()
    corrupt = logit_diff(corrupt_batch).mean()
    gap = clean - corrupt

    def restored(site: str, where: tuple[slice, int]) -> float:
        source = clean_run[site]

        def patch(a: np.ndarray) -> np.ndarray:
            a = a.copy()
            a[where] = source[where]
            return a

        patched = logit_diff(corrupt_batch, {site: patch}).mean()
        return float((patched - corrupt) / gap) + 0.0 if gap != 0 else np.nan  # no -0.0

    every = slice(None)
    with one_blas_thread():  # products this small only lose time to more BLAS threads
        heads = np.array([[restored(site, (every, i)) for i in range(h)]
                          for site in head_sites])
        resid = np.array([[restored(site, (every, j)) for j in range(T)]
                          for site in resid_sites])
    labels = _position_labels(cleans, corrupts, clean_batch.candidates, changed)
    return CoreferencePatching(heads, resid, tuple(resid_sites), labels, len(cleans),
                               float(clean), float(corrupt))
