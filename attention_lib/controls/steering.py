r"""Feature steering: the book's GPT writing with one sparse-autoencoder feature clamped.

The reader picks a feature of a sparse autoencoder of the residual stream (by its label),
a value to clamp it to, a temperature and a seed, and presses *Generate*: the page continues
the prompt twice with the book's model, computed in JavaScript from the model's own weights,
once with the feature held at that value at every position and once unchanged, with the same
random numbers, and marks the first character where the two texts part. The weights travel
as the text generator's do (float16 bytes, on the website in a file of their own); of the
autoencoder, the page receives only what the chosen features need: their encoder columns
and biases, their decoder rows and the decoder bias.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import as_real_array, describe, positive_int, real_number
from ..corpus import shakespeare_split
from ..features import feature_clamp_hooks
from ..gpt import BookLanguageModel, generate
from ..interpret import stream_activations
from ..sparse_autoencoder import SparseAutoencoder, trained_sparse_autoencoder
from . import element as el
from .generator import MESSAGES as GENERATOR_MESSAGES
from .generator import _char, _prompt_problem, mulberry32, page_model

__all__ = ["feature_steering"]

#: Characters of the validation text on which each feature's largest activation is measured
#: when ``peaks`` is not given.
PEAK_SAMPLE = 2048

#: Features offered when none are named: the most active on that sample.
DEFAULT_FEATURES = 4

#: What the page says (``{name}`` slots): the generator's words about prompts and seeds and
#: weights, and its own.
MESSAGES = {
    **GENERATOR_MESSAGES,
    "value": "the clamp value is a number from 0 to {most}",
    "range": "From 0 to {most}, {reach} times the feature's largest activation ({peak}).",
    "clamped": "{label} clamped to {value}",
    "plain": "unchanged",
    "steered": ("Generated {n} characters twice at temperature {temperature} with seed {seed}: "
                "with {label} clamped to {value}, and unchanged."),
    "differ": "The two texts first differ at character {pos} of {total} (marked in both).",
    "same": "The two texts are the same: the clamp changed none of these {n} characters.",
}


def _clamp_hooks(sae: dict[str, np.ndarray], site: str, feature: int, value: float,
                 ) -> dict[str, Any]:
    """:func:`~attention_lib.feature_clamp_hooks` of the autoencoder's arrays."""
    return feature_clamp_hooks(SparseAutoencoder(**sae, site=site), feature, value)


def _stream_site(site: Any, n_layers: int) -> str:
    """The autoencoder's site, if the page's engine can change the stream there."""
    parts = site.split(".") if isinstance(site, str) else []
    if not (len(parts) == 3 and parts[0] == "blocks" and parts[1].isdigit()
            and int(parts[1]) < n_layers and parts[2] in ("resid_pre", "resid_post")):
        raise ValueError(f"sae.site={site!r}; the page clamps a feature of the residual stream "
                         f"at a block's 'blocks.l.resid_pre' or 'blocks.l.resid_post', "
                         f"0 <= l < {n_layers}")
    return site


def _autoencoder(sae: Any, d_model: int) -> tuple[str, dict[str, np.ndarray]]:
    """The site and the four arrays of a sparse autoencoder of a stream of width d_model."""
    missing = [a for a in ("w_enc", "b_enc", "w_dec", "b_dec", "site") if not hasattr(sae, a)]
    if missing:
        raise TypeError(f"sae is {type(sae).__name__}, without {', '.join(missing)}; expected "
                        "a SparseAutoencoder (w_enc, b_enc, w_dec, b_dec, site)")
    w_enc = as_real_array(sae.w_enc, "sae.w_enc", min_ndim=2)
    if w_enc.ndim != 2 or w_enc.shape[0] != d_model:
        raise ValueError(f"sae.w_enc has {describe(w_enc)}; expected (d, m) with d = {d_model}, "
                         "the width of the model's residual stream")
    m = w_enc.shape[1]
    arrays = {"w_enc": w_enc}
    for name, shape in (("b_enc", (m,)), ("w_dec", (m, d_model)), ("b_dec", (d_model,))):
        a = as_real_array(getattr(sae, name), f"sae.{name}")
        if a.shape != shape:
            raise ValueError(f"sae.{name} has {describe(a)}; expected {shape} for sae.w_enc of "
                             f"shape (d, m) = {(d_model, m)}")
        arrays[name] = a
    return sae.site, arrays


def _peaks_on_sample(model: BookLanguageModel, site: str, sae: dict[str, np.ndarray],
                     ) -> np.ndarray:
    """Every feature's largest value on the first PEAK_SAMPLE characters of the validation
    text: (m,), float64."""
    ids = model.encode(shakespeare_split()[1][:PEAK_SAMPLE])
    x = stream_activations(model.params, model.config, ids, site).astype(np.float64)  # (N, d)
    f = np.maximum((x - sae["b_dec"]) @ sae["w_enc"] + sae["b_enc"], 0.0)  # (N, m)
    return f.max(axis=0)


def _features(features: Any, m: int) -> list[int]:
    if isinstance(features, str | bytes | set | frozenset | dict) \
            or not hasattr(features, "__len__"):
        raise TypeError(f"features={features!r}; expected a sequence of feature indices")
    out = []
    for i, j in enumerate(features):
        if not isinstance(j, int | np.integer) or isinstance(j, bool | np.bool_):
            raise TypeError(f"features[{i}]={j!r}; expected a feature index, an int")
        if not 0 <= j < m:
            raise ValueError(f"features[{i}]={j!r} is not a feature of the autoencoder; "
                             f"expected 0 <= j < m = {m}")
        out.append(int(j))
    if not out:
        raise ValueError("features is empty; expected at least one feature index")
    if len(set(out)) < len(out):
        raise ValueError(f"features={out} names a feature twice; expected distinct indices")
    return out


def _chosen(model: BookLanguageModel, site: str, sae: dict[str, np.ndarray], features: Any,
            peaks: Any) -> tuple[list[int], np.ndarray]:
    """The features offered (``features``: checked indices, or None) and their peaks
    (float64): as given, or measured on the sample."""
    if features is None:
        if peaks is not None:
            raise ValueError("peaks is given without features; expected features to name the "
                             "features whose peaks they are")
        every = _peaks_on_sample(model, site, sae)
        chosen = [int(j) for j in np.argsort(-every, kind="stable")[:DEFAULT_FEATURES]]
        return chosen, every[chosen]
    chosen = features
    if peaks is None:
        return chosen, _peaks_on_sample(model, site, sae)[chosen]
    values = as_real_array(peaks, "peaks").astype(np.float64)
    if values.shape != (len(chosen),):
        raise ValueError(f"peaks has {describe(values)}; expected ({len(chosen)},), one per "
                         "feature")
    if (values <= 0).any():
        i = int(np.flatnonzero(values <= 0)[0])
        raise ValueError(f"peaks[{i}]={float(values[i])!r}; expected a feature's largest "
                         "activation, a number > 0")
    return chosen, values


def _labels(labels: Any, features: list[int]) -> list[str]:
    if labels is None:
        return [f"feature {j}" for j in features]
    if isinstance(labels, str | bytes | set | frozenset | dict) or not hasattr(labels, "__len__"):
        raise TypeError(f"labels={labels!r}; expected a sequence of {len(features)} strings")
    out = list(labels)
    if len(out) != len(features):
        raise ValueError(f"labels has {len(out)} labels; expected {len(features)}, one per "
                         "feature")
    for i, s in enumerate(out):
        if not isinstance(s, str) or not s.strip():
            raise TypeError(f"labels[{i}]={s!r}; expected a non-empty str")
    if len(set(out)) < len(out):
        raise ValueError(f"labels={out} has a label twice; the reader picks a feature by its "
                         "label")
    return out


def _ranges(peaks: np.ndarray, features: list[int], reach: float) -> list[dict[str, Any]]:
    """Each feature's slider: 0 to ``reach`` times its peak, in about 100 to 1000 steps of
    a power of ten, the top rounded up to a step."""
    out = []
    for j, peak in zip(features, peaks, strict=True):
        if not peak > 0:
            raise ValueError(f"feature {j} never fires (its largest value is {peak!r}); expected "
                             "features that are active, or pass peaks=")
        top = reach * peak
        power = math.floor(math.log10(top / 100))
        digits = max(0, -power)
        step = round(10.0**power, digits)
        most = round(math.ceil(round(top / step, 6)) * step, digits)
        out.append({"peak": float(peak), "max": most, "step": step, "digits": digits})
    return out


def _value_text(value: float) -> str:
    """A clamp value as the script shows it (JavaScript's ``String``): ``repr`` without a
    trailing ``.0``."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _text(chars: str, n_prompt: int, diff: int | None) -> str:
    return "".join(el.piece("gen_char", pos=j, char=_char(c),
                            cls=(" lc-prompt" if j < n_prompt else "")
                            + (" lc-diff" if j == diff else ""))
                   for j, c in enumerate(chars))


def feature_steering(
    model: BookLanguageModel | None = None,
    sae: Any = None,
    *,
    features: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    peaks: Sequence[float] | None = None,
    reach: float = 4.0,
    value: float | None = None,
    prompt: str = "ROMEO:\n",
    temperature: float = 0.8,
    seed: int = 1,
    n_new: int = 80,
    title: str = "The book's model writing with one feature clamped",
) -> el.ControlElement:
    r"""A generator the reader steers: one feature of a sparse autoencoder held at a value.

    The reader picks a feature (by its label), sets the value to clamp it to with a slider
    or a number, the temperature and the seed, and presses *Generate*: the script continues
    the prompt by up to ``n_new`` characters twice, as the text generator does
    (:func:`~attention_lib.controls.text_generator`: double precision, the key-value cache,
    the numbers of :func:`~attention_lib.controls.mulberry32`), once with the feature clamped
    at every position, as :func:`~attention_lib.feature_clamp_hooks` does, and once
    unchanged, and shows the two texts side by side with the first character where they part
    marked in both.

    Parameters
    ----------
    model : BookLanguageModel, optional
        Defaults to :func:`~attention_lib.book_language_model`; its parameters must be float16
        numbers, as the text generator's.
    sae : SparseAutoencoder, optional
        Defaults to :func:`~attention_lib.trained_sparse_autoencoder`. ``w_enc`` (d, m),
        ``b_enc`` (m,), ``w_dec`` (m, d), ``b_dec`` (d,) with d the model's ``d_model``, and
        ``site`` a block's ``"blocks.l.resid_post"`` (or ``"resid_pre"``).
    features : sequence of int, optional
        The features offered, distinct, ``0 <= j < m``; by default the
        4 (``DEFAULT_FEATURES``) with the largest values on the sample below.
    labels : sequence of str, optional
        One distinct label per feature (the menu shows them); ``"feature j"`` by default.
    peaks : sequence of float, optional
        Each feature's largest activation, > 0; by default measured on the first
        2,048 (``PEAK_SAMPLE``) characters of the validation text.
    reach : float, default 4.0
        Each slider runs from 0 to ``reach`` times its feature's peak (from 1 to 100),
        rounded up to its step, a power of ten.
    value : float, optional
        The first feature's clamp value at the start, within its slider's range; by default
        twice its peak (rounded to the slider's step).
    prompt : str
        Characters of the model's alphabet, shorter than its context.
    temperature : float, default 0.8
        From 0 to 2.
    seed : int, default 1
    n_new : int, default 80
        Characters added per press (fewer if the context fills up).
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the two texts the library writes with the same
        settings.

    Notes
    -----
    With feature :math:`j` read by
    :math:`f_j(\mathbf x) = \mathrm{relu}((\mathbf x - \mathbf b_{dec})
    \cdot W_{enc}[:, j] + b_{enc, j})`, the stream at the autoencoder's site becomes, at every
    position, :math:`\mathbf x + (v - f_j(\mathbf x))\, W_{dec}[j]`: the feature's
    contribution set to :math:`v`, the rest of the stream and the autoencoder's error kept.

    Examples
    --------
    >>> from attention_lib import SparseAutoencoder
    >>> rng = np.random.default_rng(0)
    >>> sae = SparseAutoencoder(rng.normal(0, 0.1, (128, 8)), np.zeros(8),
    ...                         rng.normal(0, 0.1, (8, 128)), np.zeros(128))
    >>> markup = feature_steering(sae=sae, features=[3], peaks=[2.0], n_new=5)._repr_html_()
    >>> markup.count('class="lc-ch lc-prompt')  # the prompt, in both texts
    14
    """
    model, blob = page_model(model)
    cfg, params = model.config, model.params
    sae = trained_sparse_autoencoder() if sae is None else sae
    site, arrays = _autoencoder(sae, cfg.d_model)
    site = _stream_site(site, cfg.n_layers)
    if not isinstance(prompt, str):
        raise TypeError(f"prompt={prompt!r}; expected a str")
    problem = _prompt_problem(prompt, model.tokenizer.alphabet, cfg.context)
    if problem is not None:
        raise ValueError(f"prompt={prompt!r:.60}: {problem}")
    ids = model.encode(prompt)
    temperature = real_number(temperature, "temperature", minimum=0.0, maximum=2.0)
    seed = positive_int(seed, "seed", minimum=0)
    n_new = positive_int(n_new, "n_new")
    title = el.check_title(title)
    reach = real_number(reach, "reach", minimum=1.0, maximum=100.0)
    chosen = None if features is None else _features(features, arrays["w_enc"].shape[1])
    names = None if chosen is None else _labels(labels, chosen)
    features, peak_values = _chosen(model, site, arrays, chosen, peaks)
    labels = _labels(labels, features) if names is None else names
    ranges = _ranges(peak_values, features, reach)
    first = ranges[0]
    if value is None:
        value = min(round(2 * first["peak"], first["digits"]), first["max"])
    value = real_number(value, "value", minimum=0.0)
    if value > first["max"]:
        raise ValueError(f"value={value!r} is outside the slider of {labels[0]!r}: expected a "
                         f"number from 0 to {first['max']!r} ({reach!r} times its peak "
                         f"{first['peak']:.4g}, rounded up)")

    n = min(n_new, cfg.context - ids.size)
    clamped = model.decode(generate(params, cfg, ids, n, temperature=temperature,
                                    uniform=mulberry32(seed),
                                    hooks=_clamp_hooks(arrays, site, features[0], value)))
    plain = model.decode(generate(params, cfg, ids, n, temperature=temperature,
                                  uniform=mulberry32(seed)))
    diff = next((i for i, (a, b) in enumerate(zip(clamped, plain, strict=True)) if a != b), None)

    reach_text = el.fmt(reach, 2).rstrip("0").rstrip(".")
    shown = [{"index": j, "label": label, "w_enc": el.floats(arrays["w_enc"][:, j]),
              "b_enc": float(arrays["b_enc"][j]), "w_dec": el.floats(arrays["w_dec"][j]),
              "note": el.fill(MESSAGES["range"], most=_value_text(r["max"]),
                              reach=reach_text, peak=el.fmt(r["peak"], 2)), **r}
             for j, label, r in zip(features, labels, ranges, strict=True)]
    ident = el.uid("steering", cfg.as_dict(), model.tokenizer.alphabet, site, shown,
                   el.floats(arrays["b_dec"]), prompt, value, temperature, seed, n_new, title,
                   blob.check)
    data = {"config": el.engine_config(cfg), "layout": blob.layout,
            "alphabet": model.tokenizer.alphabet, "n_new": n_new, "site": site,
            "b_dec": el.floats(arrays["b_dec"]), "features": shown, "messages": MESSAGES}
    fmt_value = _value_text(value)
    clamped_title = el.fill(MESSAGES["clamped"], label=html.escape(labels[0]), value=fmt_value)
    note = (el.fill(MESSAGES["same"], n=n) if diff is None
            else el.fill(MESSAGES["differ"], pos=diff + 1, total=len(plain)))
    options = "".join(f'<option value="{i}"{" selected" if i == 0 else ""}>'
                      f"{html.escape(label)}</option>" for i, label in enumerate(labels))
    common = f'min="0" max="{first["max"]!r}" step="{first["step"]!r}" value="{value!r}" disabled'
    waiting = el.fill(MESSAGES["waiting"], size=el.fmt(len(blob.raw) / 1e6, 1))
    body = f"""<div class="lc-controls"><div class="lc-field lc-field-wide">
<label for="{ident}-prompt">prompt</label>
<textarea class="lc-prompt-box" id="{ident}-prompt" rows="2" disabled autocomplete="off"
spellcheck="false" aria-describedby="{ident}-err">
{html.escape(prompt)}</textarea></div>
<div class="lc-field"><label for="{ident}-feature">feature</label>
<select class="lc-feature" id="{ident}-feature" disabled>{options}</select></div>
<div class="lc-field lc-field-wide"><label for="{ident}-value">clamp it to</label>
<input type="range" class="lc-value" id="{ident}-value" {common}
aria-describedby="{ident}-range">
<label for="{ident}-number">value</label>
<input type="number" class="lc-value-number" id="{ident}-number" min="0"
max="{first["max"]!r}" step="any" value="{value!r}" disabled autocomplete="off"
aria-describedby="{ident}-range {ident}-err"></div>
<p class="lc-hint lc-range" id="{ident}-range">{shown[0]["note"]}</p>
<div class="lc-field"><label for="{ident}-temp">temperature</label>
<input type="range" class="lc-temp" id="{ident}-temp" min="0" max="2" step="0.05"
value="{temperature!r}" disabled>
<output class="lc-num lc-temp-value" for="{ident}-temp">{el.fmt(temperature, 2)}</output></div>
<div class="lc-field"><label for="{ident}-seed">seed</label>
<input type="number" class="lc-seed" id="{ident}-seed" min="0" max="4294967295" step="1"
value="{seed}" disabled autocomplete="off"></div>
<button type="button" class="lc-generate" disabled>Generate</button></div>
<p class="lc-error" id="{ident}-err" role="status" aria-live="polite"></p>
<p class="lc-status lc-hint" role="status" aria-live="polite">{waiting}</p>
<div class="lc-pair">
<div class="lc-pane"><p class="lc-pane-title lc-clamped-title" id="{ident}-a">{clamped_title}</p>
<div class="lc-gen-text lc-clamped" role="group" aria-labelledby="{ident}-a"
tabindex="0">{
_text(clamped, ids.size, diff)}</div></div>
<div class="lc-pane"><p class="lc-pane-title" id="{ident}-b">{MESSAGES["plain"]}</p>
<div class="lc-gen-text lc-plain" role="group" aria-labelledby="{ident}-b"
tabindex="0">{
_text(plain, ids.size, diff)}</div></div></div>
<p class="lc-diff-note" role="status" aria-live="polite">{note}</p>
{blob.markup("book-gpt")}"""
    alt = ("pick a feature of a sparse autoencoder and a value to clamp it to; the trained "
           "model continues a prompt with the feature clamped and unchanged, side by side")
    state = (f"the prompt {prompt!r} continued at temperature {el.fmt(temperature, 2)} with "
             f"seed {seed}, with {labels[0]} clamped to {fmt_value} and unchanged")
    return el.assemble("steering", ident, data, body, ("model.js", "steering.js"),
                       state=state, alt=alt, title=title,
                       templates=("gen_char", "gen_newline", "gen_error"))
