"""Helpers shared by the tests of ``attention_lib.controls`` (not a test module)."""

from __future__ import annotations

import base64
import functools
import html as html_lib
import json
import re
import zlib
from html.parser import HTMLParser

import numpy as np

import attention_lib as al
from attention_lib import controls


class _Elements(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def elements(markup: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Elements()
    parser.feed(markup)
    return parser.tags


def data_json(markup: str, name: str):
    return json.loads(html_lib.unescape(re.search(rf'data-{name}="([^"]*)"', markup).group(1)))


def texts(markup: str, cls: str) -> list[str]:
    """The text of the elements of class ``cls`` in the markup shown before any script runs."""
    static = markup.split("<script>")[0]
    return re.findall(rf'class="[^"]*\b{cls}\b[^"]*"[^>]*>([^<]*)<', static)


def carried_weights(markup: str, params, dtype: str) -> dict:
    """The weights an element carries (a data element of class lc-blob, or the induction
    playground's data-weights), checked: every array is ``params``'s number for number, none
    is left out, and the length and CRC-32 the element gives are those of the bytes (zlib's
    CRC-32, not the page's). Returns the identity: ``{"bytes": ..., "crc32": ...}``."""
    blob = re.search(r'<script type="application/octet-stream" class="lc-blob" data-blob="[\w-]+"'
                     r' data-bytes="(\d+)" data-crc32="([0-9a-f]{8})">\n([A-Za-z0-9+/=]+)'
                     r"</script>", markup)
    if blob:
        check, text = {"bytes": int(blob.group(1)), "crc32": blob.group(2)}, blob.group(3)
    else:
        check, text = data_json(markup, "weights-check"), data_json(markup, "weights")
    raw = base64.b64decode(text)
    assert check == {"bytes": len(raw), "crc32": f"{zlib.crc32(raw):08x}"}
    numbers = np.frombuffer(raw, dtype=dtype)
    layout = data_json(markup, "layout")
    assert sorted(name for name, _, _ in layout) == sorted(params)
    for name, shape, offset in layout:
        size = int(np.prod(shape))
        np.testing.assert_array_equal(
            numbers[offset:offset + size].astype(np.float64).reshape(shape), params[name])
    assert numbers.size == sum(np.size(a) for a in params.values())
    return check


def walkthrough_qkv():
    ex = al.examples.cat_sat_on()
    return ex, *al.project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)


def causal_example():
    rng = np.random.default_rng(42)  # chapter 5's draw: Q, K, V in that order
    return rng.normal(size=(4, 8)), rng.normal(size=(4, 8)), rng.normal(size=(4, 6))


def export_model(tmp_path_factory, steps: int = 200):
    """A short training run, exported: (path, document, result)."""
    result = al.train_retrieval(seed=0, steps=steps)
    path = al.export_retrieval_model(result, tmp_path_factory.mktemp("model") / "m.json")
    return path, json.loads(path.read_text()), result


def induction_model(seed: int = 0, scale: float = 0.5):
    """The induction task's model with every entry random (biases too), so that its heads'
    weights are far from uniform: (params, config)."""
    config = al.induction_config()
    rng = np.random.default_rng(seed)
    params = {name: rng.normal(0.0, scale, shape) + (1.0 if name.endswith("gamma") else 0.0)
              for name, shape in al.gpt_parameter_shapes(config).items()}
    return params, config


KINDS = ["saturation", "query", "retrieval", "causal", "proj", "generator", "induction",
         "coreference", "translation", "patching"]
#: Each kind's asset scripts, in the order the element runs them (after common.js).
SCRIPTS = {"saturation": ("saturation.js",), "query": ("query.js",),
           "retrieval": ("retrieval.js",), "causal": ("causal.js",), "proj": ("projection.js",),
           "generator": ("model.js", "generator.js"), "induction": ("model.js", "induction.js"),
           "coreference": ("model.js", "coreference.js"),
           "translation": ("model.js", "translation.js"),
           "patching": ("model.js", "patching.js"),
           # tested in their own files: test_controls_steering.py, test_controls_logit_lens.py
           # (its grid scrolls sideways in a box of its own on a phone)
           "steering": ("model.js", "steering.js"), "logit_lens": ("model.js", "logit_lens.js")}


@functools.cache
def trained_models():
    """Short training runs of the coreference encoder and the translator (the page's
    forward pass is compared with the library's, not the models' quality)."""
    return al.train_coreference_model(seed=0, steps=40), al.train_translation_model(seed=0,
                                                                                    steps=40)


def builders(doc):
    """A builder per kind of control, with its default arguments."""
    ex = al.examples.cat_sat_on()
    return {
        "saturation": lambda: controls.saturation_explorer(),
        "query": lambda: controls.query_picker(ex),
        "retrieval": lambda: controls.retrieval_playground(doc),
        "causal": lambda: controls.causal_stepper(*causal_example(), ex.tokens),
        "proj": lambda: controls.projection_scale_explorer(ex),
        "generator": lambda: controls.text_generator(n_new=40),
        "induction": lambda: controls.induction_playground(*induction_model()),
        "coreference": lambda: controls.coreference_explorer(trained_models()[0]),
        "translation": lambda: controls.translation_explorer(trained_models()[1]),
        "patching": lambda: controls.patching_map(),
    }
