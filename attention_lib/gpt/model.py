r"""A whole GPT in numpy: initialisation, the forward pass, the loss and every gradient.

The model reads token ids ``(B, T)`` and predicts, at every position, the next token:

.. math::

    x^{(0)} = W_E[t] + W_P[0{:}T], \qquad
    x^{(l)} = \operatorname{Block}_l\bigl(x^{(l-1)}\bigr), \qquad
    \text{logits} = \operatorname{LN}_f\bigl(x^{(L)}\bigr)\, W_E^{\mathsf T} .

It is the book's one transformer (:mod:`attention_lib.model`) in its decoder configuration:
the functions here check their arguments and run :func:`~attention_lib.model.stack.
stack_forward` and :func:`~attention_lib.model.stack.stack_backward`, whose layers each have
their backward written beside their forward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import float_dtype, positive_int, positive_scale
from ..model.config import GPTConfig, check_head_mask, check_params, check_tokens
from ..model.hooks import check_hooks, head_scale_hooks, merge_hooks
from ..model.loss import cross_entropy
from ..model.params import init_stacks
from ..model.stack import StackRun, stack_backward, stack_forward

__all__ = ["gpt_attention_weights", "gpt_logits", "gpt_loss_and_grads", "init_gpt"]


def init_gpt(config: GPTConfig, seed: int = 0, *, dtype: Any = np.float32,
             std: float = 0.02) -> dict[str, np.ndarray]:
    r"""Fresh parameters for ``config``, drawn as GPT-2 draws them.

    Parameters
    ----------
    config : GPTConfig
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the same seed gives the same parameters.
    dtype : {numpy.float32, numpy.float64}, default float32
    std : float, default 0.02
        Standard deviation of the weight matrices and embeddings, a finite number > 0.

    Returns
    -------
    dict of str to numpy.ndarray
        Names and shapes of :func:`gpt_parameter_shapes`. Biases and betas are 0,
        gammas 1, other matrices normal with standard deviation ``std``, except the
        projections that write into the residual stream (``attn.w_o``, ``ff.w2``), which
        get :math:`\text{std} / \sqrt{2L}` so that the stream's variance does not grow
        with depth.

    Examples
    --------
    >>> params = init_gpt(GPTConfig(10, 8, 4, 1, 2))
    >>> params["wte"].shape, params["wte"].dtype, float(params["blocks.0.ln1.gamma"][0])
    ((10, 4), dtype('float32'), 1.0)
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    seed = positive_int(seed, "seed", minimum=0)
    dtype = float_dtype(dtype)
    std = positive_scale(std, "std")
    return init_stacks([(config, "")], np.random.default_rng(seed), std=std, dtype=dtype)


def _checked_run(params: Any, config: GPTConfig, tokens: Any, head_mask: Any, hooks: Any,
                 ) -> StackRun:
    """Check the arguments of a GPT's forward pass, then run it (hooks and head scales)."""
    dtype = check_params(params, config)
    if config.cross_attention:
        raise ValueError("config has cross_attention=True: a decoder reads a memory "
                         "(attention_lib.training.translation runs one); expected a GPT")
    tokens = check_tokens(tokens, config)
    mask = check_head_mask(head_mask, config, dtype)
    hooks = merge_hooks(None if mask is None else head_scale_hooks(mask),
                        check_hooks(hooks, config))
    return stack_forward(params, config, tokens, hooks=hooks)


def gpt_logits(params: dict[str, np.ndarray], config: GPTConfig, tokens: Any, *,
               head_mask: Any = None, hooks: Any = None) -> np.ndarray:
    r"""The next-token logits at every position.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        From :func:`init_gpt` (or a trained model), float32 or float64.
    config : GPTConfig
    tokens : array_like of int, shape (B, T)
        Token ids in ``0 .. vocab_size - 1``, ``T <= context``.
    head_mask : array_like of bool or float, shape (n_layers, n_heads), optional
        Multiplies each head's output before the layer's output projection: 1 (True)
        keeps the head, 0 (False) removes it (an ablation). By default every head
        counts, and the logits are the very numbers computed without a mask.
    hooks : dict, optional
        ``{site: function}`` at the sites of :func:`~attention_lib.hook_sites`: read or
        change the activations on the way (:func:`~attention_lib.capture_hooks`, ...).

    Returns
    -------
    numpy.ndarray, shape (B, T, vocab_size)
        Row ``(b, t)`` scores every token as the one after ``tokens[b, :t + 1]``; it
        depends on no later position (the causal mask). In the parameters' dtype.

    Examples
    --------
    >>> config = GPTConfig(10, 8, 4, 1, 2)
    >>> params = init_gpt(config)
    >>> gpt_logits(params, config, [[1, 2, 3]]).shape
    (1, 3, 10)
    >>> ablated = gpt_logits(params, config, [[1, 2, 3]], head_mask=[[True, False]])
    >>> bool(np.array_equal(ablated, gpt_logits(params, config, [[1, 2, 3]])))
    False
    """
    return _checked_run(params, config, tokens, head_mask, hooks).out


def gpt_attention_weights(params: dict[str, np.ndarray], config: GPTConfig,
                          tokens: Any, *, head_mask: Any = None, hooks: Any = None,
                          ) -> np.ndarray:
    """Every head's attention weights, layer by layer.

    Parameters
    ----------
    params, config, tokens, head_mask, hooks
        As in :func:`gpt_logits`. A removed head still has weights (the mask scales its
        output), but the later layers' weights change with what it no longer writes.

    Returns
    -------
    numpy.ndarray, shape (n_layers, B, n_heads, T, T)
        Entry ``[l, b, i, t, s]`` is the weight position ``t`` of head ``i`` in layer ``l``
        puts on position ``s <= t``; each row sums to 1.

    Examples
    --------
    >>> config = GPTConfig(10, 8, 4, 2, 2)
    >>> w = gpt_attention_weights(init_gpt(config), config, [[1, 2, 3]])
    >>> w.shape, float(w[0, 0, 0, 0, 0])
    ((2, 1, 2, 3, 3), 1.0)
    """
    return np.stack(_checked_run(params, config, tokens, head_mask, hooks).weights)


def gpt_loss_and_grads(params: dict[str, np.ndarray], config: GPTConfig, tokens: Any,
                       targets: Any) -> tuple[float, dict[str, np.ndarray]]:
    r"""The mean next-token cross-entropy and its gradient with respect to every parameter.

    Parameters
    ----------
    params, config, tokens
        As in :func:`gpt_logits`.
    targets : array_like of int, shape (B, T)
        The token that should follow each position (usually ``tokens`` shifted by one).

    Returns
    -------
    loss : float
        :math:`-\frac1{BT}\sum_{b,t} \log p(\text{targets}_{bt} \mid \text{tokens}_{b,\le t})`
        in nats.
    grads : dict of str to numpy.ndarray
        One gradient per parameter, with its name, shape and dtype.

    Notes
    -----
    The gradient of the loss with respect to the logits is
    :math:`(\operatorname{softmax}(\text{logits}) - \text{onehot}(\text{targets})) / BT`;
    from there every layer's backward runs in reverse order. A tied embedding gets two
    contributions: from the output layer and, by scatter-add, from the tokens it
    embedded.

    Examples
    --------
    >>> config = GPTConfig(10, 8, 8, 1, 2)
    >>> params = init_gpt(config, dtype=np.float64)
    >>> loss, grads = gpt_loss_and_grads(params, config, [[1, 2, 3]], [[2, 3, 4]])
    >>> round(loss, 1), grads["wte"].shape      # about log(10) at initialisation
    (2.3, (10, 8))
    """
    dtype = check_params(params, config)
    tokens = check_tokens(tokens, config)
    targets = check_tokens(targets, config, "targets")
    if targets.shape != tokens.shape:
        raise ValueError(f"targets have shape {targets.shape} but tokens {tokens.shape}; "
                         "expected one target per token")
    return loss_and_grads(params, config, tokens, targets, dtype)


def loss_and_grads(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray,
                   targets: np.ndarray, dtype: np.dtype) -> tuple[float, dict[str, np.ndarray]]:
    """:func:`gpt_loss_and_grads` on checked arguments (the training loop's own)."""
    run = stack_forward(params, config, tokens, keep=True)
    loss, d_logits = cross_entropy(run.out, targets)  # d_logits: (B, T, V)
    grads = {name: np.zeros_like(a) for name, a in params.items()}
    stack_backward(d_logits, run.saved, params, config, tokens, grads)
    return loss, {name: g.astype(dtype, copy=False) for name, g in grads.items()}
