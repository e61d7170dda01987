r"""From the book to PyTorch: weights in PyTorch's and Hugging Face's layouts, and their outputs.

The book computes in row vectors: a layer multiplies ``x @ W`` with ``W`` of shape
(inputs, outputs). PyTorch's ``torch.nn.Linear`` and ``torch.nn.MultiheadAttention`` store
the transpose, (outputs, inputs), and compute ``x @ W.T``; a Hugging Face GPT-2 stores its
projections as ``Conv1D`` layers, (inputs, outputs), as the book does. The functions here
move weights from those layouts into the book's, so that the same numbers go in and the
outputs can be compared: :func:`pytorch_reference` holds what PyTorch and transformers
returned on seeded inputs (``tools/pytorch_reference.py`` ran them; neither library is a
dependency of the book).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

import numpy as np

from ._validation import as_real_array, describe, positive_int
from .model.config import GPTConfig, check_params
from .multihead import MultiHeadAttention

__all__ = ["gpt2_params_from_hf", "multihead_from_torch", "pytorch_reference"]

REFERENCE_FILE = "pytorch_reference.npz"


def pytorch_reference() -> dict[str, np.ndarray]:
    """What PyTorch and Hugging Face transformers returned on the book's seeded inputs.

    Returns
    -------
    dict of str to numpy.ndarray
        The arrays ``tools/pytorch_reference.py`` wrote (its docstring lists them):
        ``"sdpa.*"`` for ``torch.nn.functional.scaled_dot_product_attention``,
        ``"mha.*"`` for ``torch.nn.MultiheadAttention``, ``"gpt2.*"`` for a GPT-2 and its
        cache; ``"versions"`` holds the torch and transformers versions that ran.

    Examples
    --------
    >>> ref = pytorch_reference()
    >>> ref["sdpa.q"].shape, ref["sdpa.plain"].shape
    ((1, 4, 3, 8), (1, 4, 3, 8))
    """
    with resources.files("attention_lib").joinpath("data", REFERENCE_FILE).open("rb") as f:
        with np.load(f) as data:
            return {name: data[name] for name in data.files}


def multihead_from_torch(in_proj_weight: Any, out_proj_weight: Any,
                         num_heads: int) -> MultiHeadAttention:
    r"""The book's :class:`MultiHeadAttention` with a ``torch.nn.MultiheadAttention``'s weights.

    Parameters
    ----------
    in_proj_weight : array_like, shape (3 d, d)
        The module's ``in_proj_weight``: the query, key and value projections stacked by
        rows, each in PyTorch's (outputs, inputs) layout.
    out_proj_weight : array_like, shape (d, d)
        ``out_proj.weight``, (outputs, inputs).
    num_heads : int
        The module's ``num_heads``; head ``i`` uses the ``i``-th block of ``d / num_heads``
        query, key and value coordinates, as in the book.

    Returns
    -------
    MultiHeadAttention
        With :math:`W_Q, W_K, W_V` the transposed thirds of ``in_proj_weight`` and
        :math:`W_O` the transposed ``out_proj_weight``. The module must have been built
        with ``bias=False`` (the book's layer has no biases) and ``kdim = vdim = d``.

    Examples
    --------
    >>> ref = pytorch_reference()
    >>> mha = multihead_from_torch(ref["mha.in_proj_weight"], ref["mha.out_proj_weight"], 2)
    >>> mha.W_Q.shape, bool(np.array_equal(mha.W_Q, ref["mha.in_proj_weight"][:8].T))
    ((8, 8), True)
    """
    w_in = as_real_array(in_proj_weight, "in_proj_weight")
    w_out = as_real_array(out_proj_weight, "out_proj_weight")
    if w_out.ndim != 2 or w_out.shape[0] != w_out.shape[1]:
        raise ValueError(f"out_proj_weight has {describe(w_out)}; expected shape (d, d)")
    d = w_out.shape[0]
    if w_in.shape != (3 * d, d):
        raise ValueError(f"in_proj_weight has {describe(w_in)}; expected shape (3 d, d) = "
                         f"({3 * d}, {d}) for out_proj_weight of shape ({d}, {d})")
    layer = MultiHeadAttention(d, positive_int(num_heads, "num_heads"))
    layer.W_Q, layer.W_K, layer.W_V = (w_in[i * d:(i + 1) * d].T.astype(np.float64)
                                       for i in range(3))
    layer.W_O = w_out.T.astype(np.float64)
    return layer


def gpt2_params_from_hf(state_dict: Mapping[str, Any], config: GPTConfig) -> dict[str, np.ndarray]:
    r"""The book's GPT parameters from a Hugging Face ``GPT2LMHeadModel``'s ``state_dict``.

    Parameters
    ----------
    state_dict : mapping of str to array_like
        The model's parameters under their Hugging Face names (``"transformer.wte.weight"``,
        ``"transformer.h.0.attn.c_attn.weight"``, ...), as numpy arrays (``t.numpy()``).
        The buffers ``attn.bias``/``attn.masked_bias`` and the tied ``lm_head.weight`` are
        not read.
    config : GPTConfig
        The book's configuration with the same sizes: ``GPTConfig(vocab_size, n_positions,
        n_embd, n_layer, n_head)`` and the defaults (learned positions, pre-norm layer norm,
        GELU with the tanh approximation, attention biases, tied embeddings), which are
        GPT-2's.

    Returns
    -------
    dict of str to numpy.ndarray
        Under the names of :func:`~attention_lib.gpt_parameter_shapes`. GPT-2's ``c_attn``
        (d, 3 d) holds the query, key and value projections side by side, in the book's
        (inputs, outputs) layout already: its three column blocks become ``w_q``, ``w_k``,
        ``w_v``; ``c_proj`` becomes ``w_o``; ``mlp.c_fc`` and ``mlp.c_proj`` become
        ``ff.w1`` and ``ff.w2``; ``ln_1``, ``ln_2``, ``ln_f`` the norms' ``gamma``
        (``weight``) and ``beta`` (``bias``).

    Examples
    --------
    >>> ref = pytorch_reference()
    >>> vocab, context, d, layers, heads = (int(n) for n in ref["gpt2.config"])
    >>> hf = {name.removeprefix("gpt2.param."): a for name, a in ref.items()
    ...       if name.startswith("gpt2.param.")}
    >>> params = gpt2_params_from_hf(hf, GPTConfig(vocab, context, d, layers, heads))
    >>> params["blocks.0.attn.w_k"].shape
    (8, 8)
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    defaults = GPTConfig(config.vocab_size, config.context, config.d_model, config.n_layers,
                         config.n_heads, d_ff=config.d_ff)
    if config != defaults:
        raise ValueError("GPT-2 is the configuration with the defaults (learned positions, "
                         f"pre-norm layer norm, GELU, biases, tied embeddings); got {config!r}")
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict is {type(state_dict).__name__}; expected a mapping")

    def get(name: str) -> np.ndarray:
        if name not in state_dict:
            raise KeyError(f"the state_dict has no {name!r}: is it a GPT2LMHeadModel's?")
        return np.array(as_real_array(state_dict[name], name), dtype=np.float64)

    d = config.d_model
    params = {"wte": get("transformer.wte.weight"), "wpe": get("transformer.wpe.weight")}
    for layer in range(config.n_layers):
        hf, ours = f"transformer.h.{layer}.", f"blocks.{layer}."
        w_qkv, b_qkv = get(hf + "attn.c_attn.weight"), get(hf + "attn.c_attn.bias")
        for i, m in enumerate("qkv"):
            params[ours + f"attn.w_{m}"] = w_qkv[:, i * d:(i + 1) * d]
            params[ours + f"attn.b_{m}"] = b_qkv[i * d:(i + 1) * d]
        params[ours + "attn.w_o"] = get(hf + "attn.c_proj.weight")
        params[ours + "attn.b_o"] = get(hf + "attn.c_proj.bias")
        for norm, hf_norm in (("ln1", "ln_1"), ("ln2", "ln_2")):
            params[ours + norm + ".gamma"] = get(hf + hf_norm + ".weight")
            params[ours + norm + ".beta"] = get(hf + hf_norm + ".bias")
        params[ours + "ff.w1"] = get(hf + "mlp.c_fc.weight")
        params[ours + "ff.b1"] = get(hf + "mlp.c_fc.bias")
        params[ours + "ff.w2"] = get(hf + "mlp.c_proj.weight")
        params[ours + "ff.b2"] = get(hf + "mlp.c_proj.bias")
    params["ln_f.gamma"] = get("transformer.ln_f.weight")
    params["ln_f.beta"] = get("transformer.ln_f.bias")
    check_params(params, config)
    return params
