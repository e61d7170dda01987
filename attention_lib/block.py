r"""The Transformer block around attention: layer norm, feed-forward network, residuals.

Dimension letters used in the shape comments:

- ``...``      leading batch axes
- ``n``        number of positions of the sequence the block transforms
- ``m``        number of positions of the encoder's output (cross-attention)
- ``d_model``  size of a token representation (the residual stream)
- ``d_ff``     width of the feed-forward network's hidden layer (usually ``4 d_model``)

Today's decoders (Llama and most since) keep the pre-norm block but swap two parts:
RMSNorm for layer norm (no mean, no bias) and SwiGLU for the two-matrix network
(a gated hidden layer of three matrices); with rotary positions and no biases
anywhere, :func:`llama_parameter_count` counts such a model.

A block maps ``(..., n, d_model)`` to ``(..., n, d_model)``, so blocks stack.
Pre-norm (GPT-2 and most models since) normalises the input of each sublayer
and adds the sublayer's output to the untouched residual stream; post-norm
(the 2017 paper) normalises after the addition:

.. math::

    \text{pre-norm:}\quad x \leftarrow x + F(\operatorname{LN}(x)), \qquad
    \text{post-norm:}\quad x \leftarrow \operatorname{LN}(x + F(x)).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as check
from .model.config import GPTConfig
from .model.layers import feed_forward_forward, layer_norm_forward, rms_norm_forward
from .model.params import draw_params, fan_in_std
from .model.stack import block_forward
from .multihead import MultiHeadAttention

__all__ = [
    "TransformerBlock",
    "block_parameter_count",
    "feed_forward",
    "gpt_parameter_count",
    "layer_norm",
    "llama_parameter_count",
    "rms_norm",
    "swiglu",
]


def layer_norm(
    x: ArrayLike,
    gamma: ArrayLike | None = None,
    beta: ArrayLike | None = None,
    *,
    eps: float = 1e-5,
) -> np.ndarray:
    r"""Normalise every row to mean 0 and variance 1 over its last axis, then scale and shift.

    Parameters
    ----------
    x : array_like, shape (..., d)
        One row per token.
    gamma : array_like, shape (d,), optional
        Gain per feature; defaults to ones.
    beta : array_like, shape (d,), optional
        Bias per feature; defaults to zeros.
    eps : float, default 1e-5
        Added to the variance before the square root (PyTorch's default).

    Returns
    -------
    numpy.ndarray, shape of ``x``
        float32 stays float32; float16 is computed in float32 and returned as
        float16; integer input is computed in float64.

    Raises
    ------
    ValueError
        With ``eps=0``, when a row is constant (its normalisation is 0 / 0).

    Notes
    -----
    With the mean and the *population* variance (divided by :math:`d`, not
    :math:`d - 1`, as ``torch.nn.LayerNorm``) of each row,

    .. math::

        \mu = \frac1d \sum_j x_j, \qquad \sigma^2 = \frac1d \sum_j (x_j - \mu)^2,

        \operatorname{LN}(x)_j = \gamma_j \frac{x_j - \mu}{\sqrt{\sigma^2 + \varepsilon}}
            + \beta_j .

    A constant row gives exactly :math:`\beta`. Before squaring, each row (and
    :math:`\varepsilon`) is divided by a power of two close to its largest
    :math:`|x_j|`, which changes only exponents and so no digit of the result: a
    row times :math:`10^{155}` is normalised as well as the row itself, where the
    plain formula would overflow to inf and return zeros.

    Examples
    --------
    >>> layer_norm(np.array([1.0, 2.0, 3.0]), eps=0.0).round(4)
    array([-1.2247,  0.    ,  1.2247])
    >>> layer_norm(np.array([[1.0, 3.0]]), gamma=[2.0, 2.0], beta=[0.5, 0.5], eps=0.0)
    array([[-1.5,  2.5]])
    """
    xa = check.as_real_array(x, "x")
    eps = check.real_number(eps, "eps", minimum=0.0)
    d = xa.shape[-1]
    params = {}
    for name, value in (("gamma", gamma), ("beta", beta)):
        if value is None:
            continue
        pa = check.as_real_array(value, name)
        if pa.shape != (d,):
            raise ValueError(
                f"{name} has {check.describe(pa)}; expected shape ({d},), one entry per feature "
                f"of x ({check.describe(xa)})"
            )
        params[name] = pa
    dtype = check.common_float_dtype(xa, *params.values())
    work = check.compute_dtype(dtype)  # float16 is computed in float32
    y, eps_rows, constant = _rescaled_rows(xa.astype(work, copy=False), eps, "constant")
    y = np.where(constant, work.type(0), y)  # a constant row is its mean: centred, exactly 0
    g, b = (None if n not in params else params[n].astype(work, copy=False)
            for n in ("gamma", "beta"))
    return layer_norm_forward(y, g, b, eps_rows)[0].astype(dtype, copy=False)


def _rescaled_rows(x: np.ndarray, eps: float, kind: str
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every row divided by a power of two near its largest ``|x_j|``, and ``eps`` alike.

    Exact (only exponents change), so no digit of a norm changes, but squares can no longer
    overflow or underflow: a row times 1e155 normalises as well as the row itself. Rows
    below 1 need no scaling when ``eps > 0`` (``eps`` dominates their variance). Returns the
    rows, one ``eps`` per row (..., 1), and the rows a norm cannot divide by anything but
    ``eps`` (``kind``: "constant" rows for layer norm, "all-zero" rows for RMSNorm), whose
    ``eps`` is 1 where its scaled value underflowed. With ``eps = 0`` such rows raise.
    """
    _, e = np.frexp(np.max(np.abs(x), axis=-1, keepdims=True))  # (..., 1): max = m 2^e
    if eps > 0:
        e = np.maximum(e, 0)
    y = np.ldexp(x, -e)  # (..., d), |y| < 1 where scaled
    if kind == "constant":
        degenerate = np.max(x, axis=-1, keepdims=True) == np.min(x, axis=-1, keepdims=True)
        why = "their variance is 0, so (x - mu) / sigma is 0 / 0"
    else:
        degenerate = ~np.any(x, axis=-1, keepdims=True)
        why = "their root mean square is 0, so x / rms is 0 / 0"
    if eps == 0 and degenerate.any():
        count, first = check.first_true(degenerate)
        raise ValueError(
            f"x has {count} {kind} row(s), the first at index {first[:-1]}, and eps=0: "
            f"{why}; expected eps > 0 (e.g. the default 1e-5) or rows that are not {kind}"
        )
    eps_rows = np.ldexp(x.dtype.type(eps), -2 * e)  # (..., 1): eps / 2^(2e)
    eps_rows[degenerate & (eps_rows == 0)] = 1  # their rows are 0: any divisor gives 0
    return y, eps_rows, degenerate


def feed_forward(
    x: ArrayLike,
    w1: ArrayLike,
    b1: ArrayLike,
    w2: ArrayLike,
    b2: ArrayLike,
    *,
    activation: Literal["relu", "gelu"] = "relu",
) -> np.ndarray:
    r"""The position-wise feed-forward network: two linear maps with a nonlinearity between.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
    w1 : array_like, shape (d_model, d_ff)
    b1 : array_like, shape (d_ff,)
    w2 : array_like, shape (d_ff, d_model)
    b2 : array_like, shape (d_model,)
    activation : {"relu", "gelu"}, default "relu"
        ReLU as in the 2017 paper, or GELU (tanh approximation) as in GPT-2.

    Returns
    -------
    numpy.ndarray, shape (..., n, d_model)
        float32 stays float32; float16 is computed in float32 and returned as float16.

    Notes
    -----
    Applied to every position separately, with the same weights:

    .. math:: \operatorname{FFN}(x) = \phi(x W_1 + b_1)\, W_2 + b_2, \qquad
              \phi(u) = \max(0, u) \ \text{(ReLU)}.

    Examples
    --------
    >>> x = np.array([[1.0, -1.0]])
    >>> feed_forward(x, np.eye(2), np.zeros(2), np.eye(2), np.zeros(2))  # ReLU(x)
    array([[1., 0.]])
    """
    check.one_of(activation, "activation", ("relu", "gelu"))
    return _network(activation, x, {"w1": w1, "b1": b1, "w2": w2, "b2": b2})


def rms_norm(x: ArrayLike, gain: ArrayLike | None = None, *, eps: float = 1e-5) -> np.ndarray:
    r"""Divide every row by its root mean square, then scale: RMSNorm (Zhang and Sennrich 2019).

    Parameters
    ----------
    x : array_like, shape (..., d)
        One row per token.
    gain : array_like, shape (d,), optional
        Gain per feature; defaults to ones. There is no bias.
    eps : float, default 1e-5
        Added to the mean square before the square root (Llama 2 and 3 use 1e-5).

    Returns
    -------
    numpy.ndarray, shape of ``x``
        float32 stays float32; float16 is computed in float32 and returned as
        float16; integer input is computed in float64.

    Raises
    ------
    ValueError
        With ``eps=0``, when a row is all zeros (its normalisation is 0 / 0).

    Notes
    -----
    .. math:: \operatorname{RMSNorm}(x)_j = g_j\,
              \frac{x_j}{\sqrt{\frac1d \sum_l x_l^2 + \varepsilon}} .

    Layer norm without the mean: the row is not centred, only rescaled, which
    saves a reduction and works as well in practice. As in :func:`layer_norm`,
    each row (and :math:`\varepsilon`) is first divided by a power of two near its
    largest :math:`|x_j|`, so rows of any magnitude are normalised without overflow.

    Examples
    --------
    >>> rms_norm(np.array([3.0, -4.0]), eps=0.0).round(4)   # rms = sqrt(12.5)
    array([ 0.8485, -1.1314])
    >>> rms_norm(np.array([[1.0, 1.0]]), gain=[2.0, 0.5], eps=0.0)
    array([[2. , 0.5]])
    """
    xa = check.as_real_array(x, "x")
    eps = check.real_number(eps, "eps", minimum=0.0)
    d = xa.shape[-1]
    params = [] if gain is None else [check.array_of_shape(
        gain, "gain", (d,), what=f"({d},), one entry per feature of x ({check.describe(xa)})")]
    dtype = check.common_float_dtype(xa, *params)
    work = check.compute_dtype(dtype)  # float16 is computed in float32
    y, eps_rows, _ = _rescaled_rows(xa.astype(work, copy=False), eps, "all-zero")
    gain = params[0].astype(work, copy=False) if params else None
    return rms_norm_forward(y, gain, eps_rows)[0].astype(dtype, copy=False)


def swiglu(x: ArrayLike, w_gate: ArrayLike, w_up: ArrayLike, w_down: ArrayLike) -> np.ndarray:
    r"""The SwiGLU feed-forward network (Shazeer 2020) of Llama: a gated hidden layer.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
    w_gate, w_up : array_like, shape (d_model, d_ff)
    w_down : array_like, shape (d_ff, d_model)

    Returns
    -------
    numpy.ndarray, shape (..., n, d_model)
        float32 stays float32; float16 is computed in float32 and returned as float16.

    Notes
    -----
    .. math:: \operatorname{SwiGLU}(x) = \bigl(\operatorname{SiLU}(x W_{\text{gate}})
              \odot x W_{\text{up}}\bigr) W_{\text{down}}, \qquad
              \operatorname{SiLU}(u) = u\,\sigma(u) = \frac{u}{1 + e^{-u}},

    with :math:`\sigma(u) = \tfrac12 (1 + \tanh(u/2))` computed without overflow.
    Three matrices instead of two and no biases: Llama shrinks :math:`d_{ff}` to about
    :math:`\tfrac23 \cdot 4 d` (11008 for :math:`d = 4096`) so that the parameter
    count stays that of a :math:`4d` two-matrix network.

    Examples
    --------
    >>> x = np.array([[1.0, -1.0]])
    >>> swiglu(x, np.eye(2), np.eye(2), np.eye(2)).round(4)   # SiLU(x) * x
    array([[0.7311, 0.2689]])
    """
    return _network("swiglu", x, {"w_gate": w_gate, "w_up": w_up, "w_down": w_down})


def _network(kind: str, x: ArrayLike, weights: dict[str, ArrayLike]) -> np.ndarray:
    """Check a feed-forward network's weights against ``x`` and run it in their common dtype.

    The first weight is a (d_model, d_ff) matrix; the others must have the shapes their
    names take in :func:`feed_forward` and :func:`swiglu`.
    """
    xa = check.as_real_array(x, "x")
    d_model = xa.shape[-1]
    (first, w), *rest = weights.items()
    arrays = {first: check.as_real_array(w, first)}
    if arrays[first].ndim != 2 or arrays[first].shape[0] != d_model:
        raise ValueError(f"{first} has {check.describe(arrays[first])}; expected shape "
                         f"(d_model, d_ff) with d_model={d_model} (the last axis of x)")
    d_ff = arrays[first].shape[1]
    sizes = {"d_model": d_model, "d_ff": d_ff}
    shapes = {"b1": ("d_ff",), "w2": ("d_ff", "d_model"), "b2": ("d_model",),
              "w_up": ("d_model", "d_ff"), "w_down": ("d_ff", "d_model")}
    for name, a in rest:
        symbols = shapes[name]
        arrays[name] = check.array_of_shape(
            a, name, tuple(sizes[n] for n in symbols),
            what=f"({', '.join(symbols)}{',' * (len(symbols) == 1)}) (d_model={d_model}, "
                 f"d_ff={d_ff})")
    dtype = check.common_float_dtype(xa, *arrays.values())
    work = check.compute_dtype(dtype)  # float16 is computed in float32
    p = {name: a.astype(work, copy=False) for name, a in arrays.items()}
    out, _ = feed_forward_forward(kind, xa.astype(work, copy=False), p, "")
    return out.astype(dtype, copy=False)  # (..., n, d_model)


class TransformerBlock:
    r"""One Transformer layer: self-attention, optional cross-attention, feed-forward network.

    Parameters
    ----------
    d_model : int
        Size of the residual stream.
    num_heads : int
        Heads of each attention sublayer; must divide ``d_model``.
    d_ff : int, optional
        Hidden width of the feed-forward network; defaults to ``4 * d_model``.
    norm : {"pre", "post"}, default "pre"
        Where the layer norms sit (see Notes).
    causal : bool, default False
        Mask the future in self-attention (a decoder block).
    cross_attention : bool, default False
        Add a sublayer that attends from the block's sequence to an encoder's
        output, ``memory`` (the decoder of an encoder-decoder model).
    rng : numpy.random.Generator, optional
        Source of the initial weights.

    Attributes
    ----------
    self_attn, cross_attn : MultiHeadAttention (``cross_attn`` is None without cross-attention)
    w1, b1, w2, b2 : numpy.ndarray
        Feed-forward weights, shapes (d_model, d_ff), (d_ff,), (d_ff, d_model), (d_model,).
    norms : list of (gamma, beta)
        One layer norm per sublayer, each two arrays of shape (d_model,).

    Notes
    -----
    With sublayers :math:`F_1, F_2, \dots` (self-attention, cross-attention,
    feed-forward) and one layer norm per sublayer,

    .. math::

        \text{pre-norm:}\; x \leftarrow x + F_s(\operatorname{LN}_s(x)), \qquad
        \text{post-norm:}\; x \leftarrow \operatorname{LN}_s(x + F_s(x)).

    Cross-attention takes its queries from the block's sequence and its keys
    and values from ``memory`` (not normalised here; an encoder ends with its
    own layer norm in pre-norm models).

    Examples
    --------
    >>> block = TransformerBlock(8, 2, rng=np.random.default_rng(0))
    >>> x = np.random.default_rng(1).normal(size=(5, 8))
    >>> y, weights = block(x)
    >>> y.shape, weights["self"].shape
    ((5, 8), (2, 5, 5))
    >>> block.num_parameters == block_parameter_count(8, attention_biases=False)
    True
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        *,
        norm: Literal["pre", "post"] = "pre",
        causal: bool = False,
        cross_attention: bool = False,
        rng: np.random.Generator | None = None,
    ) -> None:
        d_model = check.positive_int(d_model, "d_model")
        d_ff = check.optional_positive_int(d_ff, "d_ff", 4 * d_model)
        self.norm = check.one_of(norm, "norm", ("pre", "post"))
        self.causal = check.check_flag(causal, "causal")
        cross_attention = check.check_flag(cross_attention, "cross_attention")
        rng = check.random_generator(rng, optional=True)
        self.d_model, self.d_ff = d_model, d_ff
        self.self_attn = MultiHeadAttention(d_model, num_heads, rng=rng)
        self.cross_attn = (MultiHeadAttention(d_model, num_heads, rng=rng)
                           if cross_attention else None)
        # The one model's configuration of this block (its sizes; no vocabulary of its own).
        self._config = GPTConfig(1, 1, d_model, 1, num_heads, d_ff, causal=self.causal,
                                 cross_attention=cross_attention, norm_position=self.norm,
                                 ffn="relu", attention_biases=False)
        ffn = draw_params({"w1": (d_model, d_ff), "b1": (d_ff,), "w2": (d_ff, d_model),
                           "b2": (d_model,)}, rng, fan_in_std)  # N(0, 1/fan-in), biases 0
        self.w1, self.b1, self.w2, self.b2 = ffn.values()
        n_sub = 3 if cross_attention else 2
        self.norms = [(np.ones(d_model), np.zeros(d_model)) for _ in range(n_sub)]

    def __repr__(self) -> str:
        return (f"TransformerBlock(d_model={self.d_model}, num_heads={self.self_attn.num_heads}, "
                f"d_ff={self.d_ff}, norm={self.norm!r}, causal={self.causal}, "
                f"cross_attention={self.cross_attn is not None})")

    def parameters(self) -> dict[str, np.ndarray]:
        """Every weight array by name (attention matrices prefixed ``self.``/``cross.``).

        Examples
        --------
        >>> block = TransformerBlock(4, 2, rng=np.random.default_rng(0))
        >>> sorted(block.parameters())[:4]
        ['b1', 'b2', 'ln0.beta', 'ln0.gamma']
        """
        params = {f"self.{k}": v for k, v in self.self_attn.parameters().items()}
        if self.cross_attn is not None:
            params |= {f"cross.{k}": v for k, v in self.cross_attn.parameters().items()}
        params |= {"w1": self.w1, "b1": self.b1, "w2": self.w2, "b2": self.b2}
        for i, (gamma, beta) in enumerate(self.norms):
            params |= {f"ln{i}.gamma": gamma, f"ln{i}.beta": beta}
        return params

    @property
    def num_parameters(self) -> int:
        """Number of weights in the block (the sizes of :meth:`parameters` added up).

        Examples
        --------
        >>> TransformerBlock(4, 2, 8, rng=np.random.default_rng(0)).num_parameters
        156
        """
        return sum(int(w.size) for w in self.parameters().values())

    def __call__(
        self, x: ArrayLike, memory: ArrayLike | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        r"""Transform a sequence, attending to ``memory`` too if the block has cross-attention.

        Parameters
        ----------
        x : array_like, shape (..., n, d_model)
        memory : array_like, shape (..., m, d_model)
            The encoder's output; required exactly when the block has
            cross-attention.

        Returns
        -------
        y : numpy.ndarray, shape (..., n, d_model)
        weights : dict
            ``"self"``: shape (..., h, n, n); ``"cross"`` (with cross-attention):
            shape (..., h, n, m).

        Examples
        --------
        >>> dec = TransformerBlock(8, 2, causal=True, cross_attention=True,
        ...                        rng=np.random.default_rng(0))
        >>> y, w = dec(np.ones((3, 8)), memory=np.ones((6, 8)))
        >>> y.shape, w["cross"].shape
        ((3, 8), (2, 3, 6))
        """
        xa = check.token_rows(x, "x", self.d_model)
        if (memory is None) != (self.cross_attn is None):
            raise ValueError(
                "memory is " + ("None" if memory is None else "given")
                + "; expected memory exactly when the block has cross-attention "
                + f"(cross_attention={self.cross_attn is not None})")
        dtype = check.common_float_dtype(xa)  # of the result: float32 stays float32
        work = check.compute_dtype(dtype)  # the weights are cast to it (float16: float32)
        mem = None
        if self.cross_attn is not None:
            mem = check.token_rows(memory, "memory", self.d_model).astype(work, copy=False)
            if check.broadcast_shape(xa.shape[:-2], mem.shape[:-2]) is None:
                raise ValueError(
                    f"memory has {check.describe(mem)}, whose leading (batch) axes do not "
                    f"broadcast with those of x {xa.shape[:-2]}; expected shapes numpy can "
                    "broadcast"
                )
        if self.causal:
            check.check_causal_sizes(xa.shape[-2], xa.shape[-2])
        params = {name: a.astype(work, copy=False) for name, a in self._core_params().items()}
        y, w, wx, _ = block_forward(xa.astype(work, copy=False), params, self._config, "",
                                    memory=mem)
        weights = {"self": w.astype(dtype, copy=False)}
        if wx is not None:
            weights["cross"] = wx.astype(dtype, copy=False)
        return y.astype(dtype, copy=False), weights

    def _core_params(self) -> dict[str, np.ndarray]:
        """The block's arrays under the one model's names (``ln1.gamma``, ``attn.w_q``, ...)."""
        p: dict[str, np.ndarray] = {}
        norm_names = ["ln1", "ln_x", "ln2"] if self.cross_attn is not None else ["ln1", "ln2"]
        for name, (gamma, beta) in zip(norm_names, self.norms, strict=True):
            p[name + ".gamma"], p[name + ".beta"] = gamma, beta
        for sub, mha in (("attn", self.self_attn), ("cross", self.cross_attn)):
            if mha is not None:
                p |= {f"{sub}.w_{m}": w for m, w in zip("qkvo", mha.parameters().values(),
                                                         strict=True)}
        return p | {"ff.w1": self.w1, "ff.b1": self.b1, "ff.w2": self.w2, "ff.b2": self.b2}


def block_parameter_count(
    d_model: int,
    d_ff: int | None = None,
    *,
    attention_biases: bool = True,
    cross_attention: bool = False,
) -> int:
    r"""Number of parameters of one Transformer block, in closed form.

    Parameters
    ----------
    d_model : int
    d_ff : int, optional
        Defaults to ``4 * d_model``.
    attention_biases : bool, default True
        Count a bias for each of the four attention projections (GPT-2 and
        GPT-3 have them; :class:`TransformerBlock` does not).
    cross_attention : bool, default False
        Count a cross-attention sublayer and its layer norm.

    Returns
    -------
    int

    Notes
    -----
    Per attention sublayer :math:`4d^2` weights (+ :math:`4d` biases), per
    feed-forward network :math:`2 d\, d_{ff} + d_{ff} + d`, per layer norm
    :math:`2d`. With :math:`d_{ff} = 4d` and biases a decoder-only block has

    .. math:: 12 d^2 + 13 d

    parameters: about :math:`12 d^2` once :math:`d` is large.

    Examples
    --------
    >>> block_parameter_count(768)  # one GPT-2 small layer
    7087872
    """
    d = check.positive_int(d_model, "d_model")
    d_ff = check.optional_positive_int(d_ff, "d_ff", 4 * d)
    attention_biases = check.check_flag(attention_biases, "attention_biases")
    n_attn = 2 if check.check_flag(cross_attention, "cross_attention") else 1
    attention = n_attn * (4 * d * d + (4 * d if attention_biases else 0))
    ffn = 2 * d * d_ff + d_ff + d
    norms = (n_attn + 1) * 2 * d
    return attention + ffn + norms


def gpt_parameter_count(
    n_layers: int,
    d_model: int,
    vocab_size: int,
    context: int,
    *,
    d_ff: int | None = None,
    tied_output: bool = True,
) -> int:
    r"""Parameters of a GPT-2/GPT-3 style decoder-only model, in closed form.

    Parameters
    ----------
    n_layers : int
    d_model : int
    vocab_size : int
    context : int
        Number of learned positions (the context length).
    d_ff : int, optional
        Defaults to ``4 * d_model``.
    tied_output : bool, default True
        The output layer is the token embedding, transposed (weight tying, as
        in GPT-2), and adds nothing. With ``False`` it is a matrix of its own,
        ``(d_model, vocab_size)`` without a bias: :math:`V d` more.

    Returns
    -------
    int

    Notes
    -----
    Token and position embeddings, ``n_layers`` pre-norm blocks with
    attention biases, a final layer norm; with a tied output layer

    .. math:: N = L\,(12 d^2 + 13 d) + (V + T)\, d + 2d ,

    and :math:`V d` more with an untied one.

    Examples
    --------
    >>> gpt_parameter_count(12, 768, 50257, 1024)  # GPT-2 small
    124439808
    >>> gpt_parameter_count(12, 768, 50257, 1024, tied_output=False) - 124439808
    38597376
    """
    n_layers, d, vocab_size, context = check.positive_ints(n_layers=n_layers, d_model=d_model,
                                                     vocab_size=vocab_size, context=context)
    tied_output = check.check_flag(tied_output, "tied_output")
    blocks = n_layers * block_parameter_count(d, d_ff)
    output = 0 if tied_output else vocab_size * d  # (d_model, vocab_size), no bias
    return blocks + (vocab_size + context) * d + 2 * d + output


def llama_parameter_count(
    vocab_size: int,
    d_model: int,
    n_layers: int,
    n_heads: int,
    n_kv_heads: int,
    d_ff: int,
    tie_embeddings: bool = False,
) -> int:
    r"""Parameters of a Llama-style decoder (RMSNorm, SwiGLU, rotary positions, no biases).

    Parameters
    ----------
    vocab_size, d_model, n_layers : int
    n_heads : int
        Query heads; must divide ``d_model``.
    n_kv_heads : int
        Key/value heads (grouped-query attention); must divide ``n_heads``.
    d_ff : int
        Hidden width of the SwiGLU network (:func:`swiglu`).
    tie_embeddings : bool, default False
        The output layer is the token embedding, transposed (Llama 2 and 3 keep
        a matrix of their own: ``False``).

    Returns
    -------
    int

    Notes
    -----
    With :math:`d_{\text{head}} = d / h` and :math:`h_{kv}` key/value heads, a layer
    has :math:`W_Q, W_O` (:math:`d^2` each), :math:`W_K, W_V`
    (:math:`d\,h_{kv} d_{\text{head}}` each), three SwiGLU matrices
    (:math:`d\,d_{ff}` each) and two RMSNorm gains; rotary positions add nothing:

    .. math:: N = L\,\bigl(2 d^2 + 2 d\,h_{kv} d_{\text{head}} + 3 d\,d_{ff} + 2d\bigr)
              + d + V d\,(2 \text{ untied, } 1 \text{ tied}),

    the lone :math:`d` being the final RMSNorm.

    Examples
    --------
    >>> llama_parameter_count(32000, 4096, 32, 32, 32, 11008)      # Llama 2 7B
    6738415616
    >>> llama_parameter_count(128256, 4096, 32, 32, 8, 14336)      # Llama 3 8B
    8030261248
    """
    vocab_size, d, n_layers, n_heads, n_kv_heads, d_ff = check.positive_ints(
        vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
        n_kv_heads=n_kv_heads, d_ff=d_ff)
    tie_embeddings = check.check_flag(tie_embeddings, "tie_embeddings")
    d_head = check.head_size(d, n_heads, heads="n_heads")
    check.kv_group_size(n_heads, n_kv_heads, heads="n_heads", kv_heads="n_kv_heads")
    attention = 2 * d * d + 2 * d * n_kv_heads * d_head  # W_Q, W_O; W_K, W_V
    mlp = 3 * d * d_ff  # W_gate, W_up, W_down
    norms = 2 * d  # before attention and before the network
    embeddings = vocab_size * d * (1 if tie_embeddings else 2)  # input; output unless tied
    return n_layers * (attention + mlp + norms) + d + embeddings
