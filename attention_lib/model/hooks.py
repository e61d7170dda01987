r"""One way to look inside: hooks at named sites of the forward pass.

A *hook* is a function of one array. At each named *site* the forward pass hands the
array it computed there to the hook of that site, if there is one; the hook may read it
(and keep a copy), or return a new array of the same shape, which the model then uses
instead. Hooks are given as a dict ``{site: function}``; :func:`hook_sites` lists the sites
of a model, in the order the forward pass meets them:

- ``"embed"`` (..., T, d): the token embedding plus the positions;
- per block ``l``: ``"blocks.l.resid_pre"`` (..., T, d), the residual stream entering it;
  ``"blocks.l.attn.q"`` (..., h, T, e), ``".k"`` and ``".v"`` (..., h_kv, S, e), the
  queries, keys and values (after rotary positions); ``"blocks.l.attn.weights"``
  (..., h, T, S), every head's attention weights (a changed array is what the heads then
  average the values with); ``"blocks.l.attn.heads"`` (..., h, T, e), each head's output
  before the output projection; ``"blocks.l.attn.out"`` (..., T, d), the sublayer's
  output; with cross-attention the same under ``"blocks.l.cross."``;
  ``"blocks.l.resid_mid"`` (..., T, d), the stream after attention; unless the model is
  attention-only, ``"blocks.l.ff.hidden"`` (..., T, f), the feed-forward hidden layer
  after its activation, and ``"blocks.l.ff.out"`` (..., T, d); ``"blocks.l.resid_post"``
  (..., T, d), the stream leaving the block;
- ``"final"`` (..., T, d), after the final norm; ``"logits"`` (..., T, V).

So removing head ``i`` of layer ``l`` is a hook at ``"blocks.l.attn.heads"`` that zeroes
``[..., i, :, :]`` (:func:`head_scale_hooks`); forcing where a head looks is a hook at
``"blocks.l.attn.weights"``; reading the residual stream after each block is a hook at
every ``"blocks.l.resid_post"`` (:func:`capture_hooks`). Hooks act on the forward pass only:
a gradient is always that of the model as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .._validation import as_real_array, describe, mapping, one_of
from .config import GPTConfig

__all__ = ["capture_hooks", "hook_sites", "head_scale_hooks"]

Hook = Callable[[np.ndarray], "np.ndarray | None"]
Hooks = Mapping[str, Hook]

_ATTENTION_SITES = ("q", "k", "v", "weights", "heads", "out")


def hook_sites(config: GPTConfig) -> list[str]:
    """Every site of a model's forward pass where a hook may read or change the activations.

    Parameters
    ----------
    config : GPTConfig

    Returns
    -------
    list of str
        In the order the forward pass meets them (see the module's notes for the shapes).

    Examples
    --------
    >>> sites = hook_sites(GPTConfig(10, 8, 4, 1, 2, attention_only=True))
    >>> sites[:3], sites[-2:]
    (['embed', 'blocks.0.resid_pre', 'blocks.0.attn.q'], ['final', 'logits'])
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    sites = ["embed"]
    for layer in range(config.n_layers):
        p = f"blocks.{layer}."
        sites.append(p + "resid_pre")
        sites += [p + "attn." + s for s in _ATTENTION_SITES]
        if config.cross_attention:
            sites += [p + "cross." + s for s in _ATTENTION_SITES]
        sites.append(p + "resid_mid")
        if not config.attention_only:
            sites += [p + "ff.hidden", p + "ff.out"]
        sites.append(p + "resid_post")
    return sites + ["final", "logits"]


def check_hooks(hooks: Any, config: GPTConfig) -> dict[str, Hook] | None:
    """``hooks`` as a dict of callables at sites of ``config``'s model, or None."""
    if hooks is None:
        return None
    hooks = mapping(hooks, "hooks")  # {site: function}, sites of hook_sites(config)
    sites = hook_sites(config)
    unknown = [site for site in hooks if site not in sites]
    if unknown:
        raise ValueError(f"hooks has the site {unknown[0]!r}, which this model does not have; "
                         f"expected sites of hook_sites(config), e.g. {sites[:4]}")
    not_callable = {site: fn for site, fn in hooks.items() if not callable(fn)}
    for site, fn in not_callable.items():
        raise TypeError(f"hooks[{site!r}] is {type(fn).__name__}; expected a function of one "
                        "array")
    return dict(hooks) or None


def run_hook(hooks: Hooks | None, site: str, value: np.ndarray) -> np.ndarray:
    """``value``, or what the hook at ``site`` returns instead (same shape, same dtype)."""
    if hooks is None or site not in hooks:
        return value
    return replacement(site, value, hooks[site](value))


def replacement(site: str, value: np.ndarray, new: Any) -> np.ndarray:
    """What a hook at ``site`` returned for ``value``: ``value`` when None, else the new array
    checked to have its shape and cast to its dtype."""
    if new is None:
        return value
    new = np.asarray(new)
    if new.shape != value.shape:
        raise ValueError(f"the hook at {site!r} returned {describe(new)}; expected the shape "
                         f"of what it received, {value.shape}")
    return new.astype(value.dtype, copy=False)


def merge_hooks(*parts: Hooks | None) -> dict[str, Hook] | None:
    """One dict of hooks from several; two hooks at one site run one after the other."""
    merged: dict[str, Hook] = {}
    for part in parts:
        for site, fn in (part or {}).items():
            if site in merged:
                first = merged[site]

                def both(v: np.ndarray, first: Hook = first, second: Hook = fn) -> Any:
                    changed = first(v)
                    again = second(v if changed is None else changed)
                    return changed if again is None else again

                merged[site] = both
            else:
                merged[site] = fn
    return merged or None


def capture_hooks(store: dict[str, np.ndarray], sites: Iterable[str]) -> dict[str, Hook]:
    """Hooks that copy the activations at ``sites`` into ``store`` (and change nothing).

    Parameters
    ----------
    store : dict
        Receives ``store[site]``, a copy of the array at each site.
    sites : iterable of str
        Sites of :func:`hook_sites`.

    Returns
    -------
    dict of str to callable

    Examples
    --------
    >>> from attention_lib import init_gpt, gpt_logits
    >>> config = GPTConfig(10, 8, 4, 2, 2)
    >>> seen = {}
    >>> _ = gpt_logits(init_gpt(config), config, [[1, 2, 3]],
    ...                hooks=capture_hooks(seen, ["blocks.1.resid_post", "blocks.0.attn.weights"]))
    >>> seen["blocks.1.resid_post"].shape, seen["blocks.0.attn.weights"].shape
    ((1, 3, 4), (1, 2, 3, 3))
    """
    if not isinstance(store, dict):
        raise TypeError(f"store is {type(store).__name__}; expected a dict to fill")

    def keep(site: str) -> Hook:
        def hook(value: np.ndarray) -> None:
            store[site] = value.copy()
        return hook

    return {site: keep(site) for site in sites}


def head_scale_hooks(scales: Any, *, sublayer: str = "attn") -> dict[str, Hook]:
    """Hooks that multiply each head's output by a factor: 0 removes the head (an ablation).

    Parameters
    ----------
    scales : array_like, shape (n_layers, n_heads)
        Entry ``[l, i]`` multiplies the output of head ``i`` of layer ``l`` before the
        output projection (True/1 keeps it, False/0 removes it).
    sublayer : {"attn", "cross"}, default "attn"
        Self-attention's heads, or cross-attention's.

    Returns
    -------
    dict of str to callable
        One hook per layer, at ``"blocks.l.<sublayer>.heads"``.

    Examples
    --------
    >>> hooks = head_scale_hooks([[1, 0], [1, 1]])
    >>> sorted(hooks)
    ['blocks.0.attn.heads', 'blocks.1.attn.heads']
    """
    one_of(sublayer, "sublayer", ("attn", "cross"))
    m = np.asarray(scales)
    m = as_real_array(m.astype(np.float64) if m.dtype == np.bool_ else m, "scales", min_ndim=2)
    if m.ndim != 2:
        raise ValueError(f"scales has {describe(m)}; expected (n_layers, n_heads)")

    def scaled(row: np.ndarray) -> Hook:
        def hook(heads: np.ndarray) -> np.ndarray:
            if row.shape[0] != heads.shape[-3]:
                raise ValueError(f"scales has {row.shape[0]} entries per layer but the model "
                                 f"{heads.shape[-3]} heads; expected (n_layers, n_heads)")
            return heads * row.astype(heads.dtype)[:, None, None]  # (h, 1, 1) over (..., h, T, e)
        return hook

    return {f"blocks.{layer}.{sublayer}.heads": scaled(m[layer]) for layer in range(len(m))}
