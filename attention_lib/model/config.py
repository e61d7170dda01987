"""The shape of a transformer: its configuration, its parameters' names and shapes, their checks.

Every model of the book is a :class:`GPTConfig`: the Shakespeare GPT, the attention-only
induction model, the coreference encoder (``causal=False``), the translator's encoder and
decoder (``cross_attention=True``), and the front doors of chapters 6 and 11.

Dimension letters used in the shape comments of the package:

- ``B``  sequences in a batch (any leading axes, ``...``, where a function allows them)
- ``T``  positions of each sequence (at most ``context``); ``S`` positions of the memory
- ``V``  vocabulary size
- ``d``  ``d_model``, the width of the residual stream
- ``h``  query heads, each of width ``e = d_head = d / h``; ``h_kv`` key/value heads
- ``f``  ``d_ff``, the width of the feed-forward hidden layer
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    _asarray,
    as_real_array,
    check_flag,
    describe,
    exact_keys,
    index_array,
    kv_group_size,
    one_of,
    positive_int,
)

__all__ = ["GPTConfig", "gpt_parameter_shapes"]

POSITIONS = ("learned", "rope", "none")
NORMS = ("layer", "rms")
NORM_POSITIONS = ("pre", "post")
FFNS = ("gelu", "relu", "swiglu")
# The fields every configuration prints; the later ones only when they differ from their
# defaults (so that a configuration of the book's first models reads as it always did).
_ALWAYS_SHOWN = ("vocab_size", "context", "d_model", "n_layers", "n_heads", "d_ff",
                 "attention_only", "positions", "tie_embeddings")


@dataclass(frozen=True, repr=False)
class GPTConfig:
    r"""The sizes and choices of a transformer: a GPT by default, any model of the book.

    Parameters
    ----------
    vocab_size : int
        Number of token ids ``V``.
    context : int
        Longest sequence ``T`` the model reads at once.
    d_model : int
        Width ``d`` of the residual stream; a multiple of ``n_heads``.
    n_layers : int
        Number of blocks ``L``.
    n_heads : int
        Query heads per attention layer ``h``.
    d_ff : int, optional
        Width of the feed-forward hidden layer; defaults to ``4 * d_model``.
    attention_only : bool, default False
        Blocks without the second norm and the feed-forward network (attention and the
        residual stream only, as in interpretability studies).
    positions : {"learned", "rope", "none"}, default "learned"
        A learned position embedding added to the tokens (GPT-2), rotary positions
        applied to queries and keys in every layer (chapter 8), or none (only the
        causal mask then tells positions apart).
    tie_embeddings : bool, default True
        The output layer is the transposed token embedding (no parameters of its own).
    n_kv_heads : int, optional
        Key/value heads ``h_kv`` (grouped-query attention, chapter 18); must divide
        ``n_heads``. Defaults to ``n_heads``.
    causal : bool, default True
        Self-attention sees only earlier positions (a decoder); ``False`` is an encoder.
    window : int, optional
        Self-attention sees at most the last ``window`` positions (itself included).
    cross_attention : bool, default False
        Each block attends, after its self-attention, across to a memory (an encoder's
        output): the decoder of an encoder-decoder model.
    norm : {"layer", "rms"}, default "layer"
        Layer norm (gain and bias) or RMSNorm (a gain, no bias).
    norm_position : {"pre", "post"}, default "pre"
        Normalise each sublayer's input (GPT-2 and since) or the residual stream after
        each sublayer (the 2017 paper).
    ffn : {"gelu", "relu", "swiglu"}, default "gelu"
        The feed-forward network: two matrices with biases and a GELU or ReLU between,
        or SwiGLU (three matrices, no biases).
    attention_biases : bool, default True
        A bias after each of the four attention projections (GPT-2 has them).

    Notes
    -----
    A pre-norm block computes, with :math:`N` the norm,

    .. math::

        x \leftarrow x + \operatorname{MHA}(N_1(x)), \qquad
        x \leftarrow x + \operatorname{FFN}(N_2(x)),

    (with cross-attention a sublayer :math:`x \leftarrow x + \operatorname{MHA}(N_x(x), M)`
    between them), and the logits are :math:`N_f(x)\,W_E^{\mathsf T}` when the
    embeddings are tied.

    Examples
    --------
    >>> config = GPTConfig(vocab_size=65, context=128, d_model=64, n_layers=2, n_heads=4)
    >>> config.d_ff, config.d_head
    (256, 16)
    >>> encoder = GPTConfig(10, 8, 4, 1, 2, causal=False)
    >>> encoder.causal, encoder.as_dict()["causal"], "causal=False" in repr(encoder)
    (False, False, True)
    """

    vocab_size: int
    context: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int | None = None
    attention_only: bool = False
    positions: str = "learned"
    tie_embeddings: bool = True
    n_kv_heads: int | None = None
    causal: bool = True
    window: int | None = None
    cross_attention: bool = False
    norm: str = "layer"
    norm_position: str = "pre"
    ffn: str = "gelu"
    attention_biases: bool = True

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in ("vocab_size", "context", "d_model", "n_layers", "n_heads"):
            put(name, positive_int(getattr(self, name), name))
        put("d_ff", 4 * self.d_model if self.d_ff is None else positive_int(self.d_ff, "d_ff"))
        for name in ("attention_only", "tie_embeddings", "causal", "cross_attention",
                     "attention_biases"):
            put(name, check_flag(getattr(self, name), name))
        put("positions", one_of(self.positions, "positions", POSITIONS))
        put("norm", one_of(self.norm, "norm", NORMS))
        put("norm_position", one_of(self.norm_position, "norm_position", NORM_POSITIONS))
        put("ffn", one_of(self.ffn, "ffn", FFNS))
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "expected d_model to be a multiple of n_heads"
            )
        if self.n_kv_heads is not None:
            put("n_kv_heads", positive_int(self.n_kv_heads, "n_kv_heads"))
            kv_group_size(self.n_heads, self.n_kv_heads, heads="n_heads",
                          kv_heads="n_kv_heads")
        if self.window is not None:
            put("window", positive_int(self.window, "window",
                                       what="the positions a query sees, itself included"))
        if self.positions == "rope" and self.d_head % 2:
            raise ValueError(
                f"positions='rope' turns pairs of entries, but d_head = d_model / n_heads = "
                f"{self.d_head} is odd; expected an even d_head"
            )

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.as_dict().items())
        return f"GPTConfig({shown})"

    def as_dict(self) -> dict[str, Any]:
        """The fields ``repr`` shows, as a dict that ``GPTConfig(**d)`` turns back into
        this configuration (what model files and training logs record).

        Examples
        --------
        >>> GPTConfig(10, 8, 4, 1, 2, n_kv_heads=1).as_dict()["n_kv_heads"]
        1
        """
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name in _ALWAYS_SHOWN or getattr(self, f.name) != f.default}

    @property
    def d_head(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or ``n_heads`` when it is not set."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads


def _norm_shapes(config: GPTConfig, name: str) -> dict[str, tuple[int, ...]]:
    d = config.d_model
    if config.norm == "rms":
        return {name + ".gamma": (d,)}
    return {name + ".gamma": (d,), name + ".beta": (d,)}


def _attention_shapes(config: GPTConfig, prefix: str) -> dict[str, tuple[int, ...]]:
    d, d_kv = config.d_model, config.kv_heads * config.d_head
    shapes: dict[str, tuple[int, ...]] = {}
    for m, width in (("q", d), ("k", d_kv), ("v", d_kv), ("o", d)):
        shapes[prefix + f"w_{m}"] = (d, width)
        if config.attention_biases:
            shapes[prefix + f"b_{m}"] = (width,)
    return shapes


def gpt_parameter_shapes(config: GPTConfig, prefix: str = "") -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in a fixed order (the order initial weights are drawn).

    Parameters
    ----------
    config : GPTConfig
    prefix : str, default ""
        Put before every name, so that two stacks live in one dict (an encoder ``"enc."``
        and a decoder ``"dec."``).

    Returns
    -------
    dict of str to tuple of int
        ``"wte"`` (V, d) the token embedding; ``"wpe"`` (context, d) with learned
        positions; per block ``l``: ``"blocks.l.ln1.gamma"`` (and ``.beta`` for layer
        norm), ``"blocks.l.attn.w_q"`` (d, d) and its bias ``b_q`` (d,), likewise ``k``
        and ``v`` (d, h_kv d_head) and the output ``o`` (d, d); with cross-attention
        ``ln_x`` and ``cross.w_q`` ... alike; unless ``attention_only``: ``ln2`` and
        ``ff.w1`` (d, f), ``ff.b1``, ``ff.w2`` (f, d), ``ff.b2`` (SwiGLU: ``ff.w_gate``,
        ``ff.w_up`` (d, f), ``ff.w_down`` (f, d)); then ``"ln_f.gamma"`` (and
        ``"ln_f.beta"``), and ``"w_out"`` (d, V) when the embeddings are not tied.

    Examples
    --------
    >>> shapes = gpt_parameter_shapes(GPTConfig(10, 8, 4, 1, 2, attention_only=True))
    >>> list(shapes)[:4], shapes["blocks.0.attn.w_q"]
    (['wte', 'wpe', 'blocks.0.ln1.gamma', 'blocks.0.ln1.beta'], (4, 4))
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    d, f, v = config.d_model, config.d_ff, config.vocab_size
    shapes: dict[str, tuple[int, ...]] = {"wte": (v, d)}
    if config.positions == "learned":
        shapes["wpe"] = (config.context, d)
    for layer in range(config.n_layers):
        p = f"blocks.{layer}."
        shapes.update(_norm_shapes(config, p + "ln1"))
        shapes.update(_attention_shapes(config, p + "attn."))
        if config.cross_attention:
            shapes.update(_norm_shapes(config, p + "ln_x"))
            shapes.update(_attention_shapes(config, p + "cross."))
        if not config.attention_only:
            shapes.update(_norm_shapes(config, p + "ln2"))
            if config.ffn == "swiglu":
                shapes.update({p + "ff.w_gate": (d, f), p + "ff.w_up": (d, f),
                               p + "ff.w_down": (f, d)})
            else:
                shapes.update({p + "ff.w1": (d, f), p + "ff.b1": (f,), p + "ff.w2": (f, d),
                               p + "ff.b2": (d,)})
    shapes.update(_norm_shapes(config, "ln_f"))
    if not config.tie_embeddings:
        shapes["w_out"] = (d, v)
    return {prefix + name: shape for name, shape in shapes.items()}


def check_params(params: Any, config: GPTConfig, prefix: str = "", *,
                 others: bool = False) -> np.dtype:
    """Check a parameter dict against ``config``: names, shapes, one float dtype, finite.

    With ``others``, names outside ``prefix`` (another stack's) are left alone. Returns
    the dtype (float32 or float64). Raises ``TypeError``/``ValueError`` naming the
    parameter at fault.
    """
    shapes = gpt_parameter_shapes(config, prefix)
    if not isinstance(params, dict):
        raise TypeError(f"params is {type(params).__name__}; expected a dict of arrays "
                        "(from init_gpt)")
    own = {k: v for k, v in params.items() if k.startswith(prefix)} if others else params
    exact_keys(own, shapes, "params", what="arrays of the config")
    dtypes = set()
    for name, shape in shapes.items():
        a = params[name]
        if not isinstance(a, np.ndarray) or a.dtype not in (np.float32, np.float64):
            got = describe(a) if isinstance(a, np.ndarray) else type(a).__name__
            raise TypeError(f"params[{name!r}] is {got}; expected a float32 or float64 array")
        if a.shape != shape:
            raise ValueError(f"params[{name!r}] has {describe(a)}; expected shape {shape}")
        dtypes.add(a.dtype)
    if len(dtypes) > 1:
        raise TypeError(f"params mix dtypes {sorted(str(t) for t in dtypes)}; expected one")
    for name in shapes:
        if not np.isfinite(params[name]).all():
            raise ValueError(f"params[{name!r}] has non-finite entries (NaN or inf)")
    return dtypes.pop()


def check_tokens(tokens: Any, config: GPTConfig, name: str = "tokens") -> np.ndarray:
    """``tokens`` as an int64 array (B, T) of ids in ``0 .. V - 1`` with ``1 <= T <= context``."""
    t = index_array(tokens, config.vocab_size, name, ndim=2)  # (B, T), no id wrapped
    if t.shape[1] > config.context:
        raise ValueError(f"{name} has T={t.shape[1]} positions ({describe(t)}); the model's "
                         f"context is {config.context}; expected T <= {config.context}")
    return t


def check_head_mask(head_mask: Any, config: GPTConfig, dtype: np.dtype,
                    name: str = "head_mask") -> np.ndarray | None:
    """``head_mask`` as a ``dtype`` array (n_layers, n_heads) of finite scales, or None.

    True/1 keeps a head's output, False/0 removes it; booleans and real numbers are
    accepted. Raises ``TypeError``/``ValueError`` naming ``name``.
    """
    if head_mask is None:
        return None
    m = _asarray(head_mask, name)
    if m.dtype != np.bool_:
        m = as_real_array(m, name)
    expected = (config.n_layers, config.n_heads)
    if m.shape != expected:
        raise ValueError(f"{name} has {describe(m)}; expected shape (n_layers, n_heads) = "
                         f"{expected}, one entry per head (1 keeps it, 0 removes its output)")
    return m.astype(dtype)
