"""``attention_lib.controls.element``: what every control shares.

The element (self-contained, its script and style from the asset files, labelled controls
disabled until the script runs, stable ids, escaped labels), the templates that Python and
the scripts both fill (so no script writes markup of its own), the number formatting, the
heatmap's text colour and the range checks of a scale slider.
"""

from __future__ import annotations

import json
import math
import re
from importlib import resources
from types import SimpleNamespace

import numpy as np
import pytest
from controls_helpers import (
    KINDS,
    SCRIPTS,
    builders,
    causal_example,
    data_json,
    elements,
    export_model,
    induction_model,
    trained_models,
)

import attention_lib as al
from attention_lib import _validation, controls
from attention_lib.controls import element

ASSETS = resources.files("attention_lib.controls").joinpath("assets")


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    return export_model(tmp_path_factory)[1]


@pytest.mark.parametrize("kind", KINDS)
def test_every_control_is_self_contained_and_uses_the_asset_files(doc, kind):
    css = ASSETS.joinpath("controls.css").read_text(encoding="utf-8")
    common = ASSETS.joinpath("common.js").read_text(encoding="utf-8")
    control = builders(doc)[kind]()
    markup = control._repr_html_()
    assert not re.search(r"(src|href)\s*=", markup), f"{kind}: loads something"
    assert "://" not in markup
    # one script runs; any other <script> holds data (the generator's weights) and never runs
    opening = re.findall(r"<script\b[^>]*>", markup)
    assert opening.count("<script>") == 1 and markup.count("</script>") == len(opening)
    assert all(tag == "<script>" or 'type="application/octet-stream"' in tag for tag in opening)
    assert f"<style>{css}</style>" in markup
    own = "".join(ASSETS.joinpath(name).read_text(encoding="utf-8") for name in SCRIPTS[kind])
    assert common + own in markup, f"{kind}: script not taken from its asset files"
    uid = re.match(r'<div class="lc-root lc-\w+" id="([^"]+)"', markup).group(1)
    assert f"document.getElementById({json.dumps(uid)})" in markup
    assert "lc-static-note" in markup and "Trust Notebook" in markup
    assert isinstance(control, controls.ControlElement)
    assert repr(control).startswith("<ControlElement: ")


def test_every_asset_is_used_by_a_control():
    shipped = sorted(p.name for p in ASSETS.iterdir())
    scripts = {name for names in SCRIPTS.values() for name in names}
    assert shipped == sorted(["controls.css", "common.js", *scripts])


@pytest.mark.parametrize("kind", KINDS)
def test_every_control_has_a_visible_label_and_starts_disabled(doc, kind):
    tags = elements(builders(doc)[kind]()._repr_html_())
    ids = [a["id"] for _, a in tags if "id" in a]
    assert len(ids) == len(set(ids)), f"{kind}: duplicate ids {ids}"
    labelled = {a["for"] for t, a in tags if t == "label"}
    live = [(t, a) for t, a in tags if t in ("input", "select", "button", "textarea")]
    assert live, kind
    for tag, attrs in live:
        assert "disabled" in attrs, f"{kind}: {tag} is live before the script runs"
        # JupyterLab takes arrow keys as notebook shortcuts unless the control opts out.
        assert attrs.get("data-lm-suppress-shortcuts") == "true", f"{kind}: {tag}"
        if tag != "button":
            assert attrs.get("id") in labelled, f"{kind}: {tag} {attrs} has no <label for>"


def test_ids_are_stable_and_distinct(doc):
    ex = al.examples.cat_sat_on()
    q, k, v = causal_example()
    pairs = [
        (controls.saturation_explorer, {"scale": 3.0}),
        (lambda **kw: controls.query_picker(ex, **kw), {"query": "cat"}),
        (lambda **kw: controls.retrieval_playground(doc, **kw), {"sequence": "a1 ? a"}),
        (lambda **kw: controls.causal_stepper(q, k, v, **kw), {"start": 2}),
        (lambda **kw: controls.projection_scale_explorer(ex, **kw), {"scale": 2.0}),
        (lambda **kw: controls.induction_playground(*induction_model(), **kw),
         {"sequence": "ABAB"}),
        (lambda **kw: controls.coreference_explorer(trained_models()[0], **kw),
         {"adjective": "wide"}),
        (lambda **kw: controls.translation_explorer(trained_models()[1], **kw),
         {"head": (0, 0)}),
    ]
    seen = set()
    for build, other in pairs:
        a, b, c = (re.search(r'id="(lc-[\w-]+)"', build(**kw)._repr_html_()).group(1)
                   for kw in ({}, {}, other))
        assert a == b != c
        assert a not in seen
        seen.add(a)


def test_labels_are_escaped_in_every_control():
    ex = al.examples.cat_sat_on()
    odd = SimpleNamespace(tokens=("<b>", "a&b", "c", "d"), x=ex.x, w_q=ex.w_q, w_k=ex.w_k,
                          w_v=ex.w_v)
    q, k, v = causal_example()
    for markup in (controls.query_picker(odd, query="c")._repr_html_(),
                   controls.projection_scale_explorer(odd)._repr_html_(),
                   controls.causal_stepper(q, k, v, odd.tokens, start=4)._repr_html_(),
                   controls.saturation_explorer(title="<i>t</i>")._repr_html_()):
        body = markup.split("<script>")[0].split("</style>")[1]
        body = re.sub(r'data-[\w-]+="[^"]*"', "", body)  # the JSON is escaped on its own
        assert "<b>" not in body and "<i>" not in body and "a&b" not in body
        assert "&lt;b&gt;" in body or "&lt;i&gt;" in body


# --- the markup, once -------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted({n for names in SCRIPTS.values() for n in names})
                         + ["common.js"])
def test_no_script_writes_markup_of_its_own(name):
    # A row, a cell, a list item or a message comes from a template in the element's data,
    # which Python fills too; the scripts only fill templates and set text.
    js = ASSETS.joinpath(name).read_text(encoding="utf-8")
    code = re.sub(r"/\*.*?\*/", "", js, flags=re.S)
    tags = re.findall(r"</?(tr|td|th|li|table|p|span|strong|div|sub)[\s>/]", code)
    assert not tags, f"{name} writes markup itself: {tags}"
    assert "must be a number" not in code and "is not a" not in code  # messages too


HELPERS = {"barRow(": {"bar_row", "score_cell"}, "heatCell": {"heat_cell"},
           "linkScale(": {"scale_error"}}


@pytest.mark.parametrize("kind", KINDS)
def test_python_and_the_scripts_fill_the_same_templates(doc, kind):
    markup = builders(doc)[kind]()._repr_html_()
    templates = data_json(markup, "templates")
    assert templates and all(element.TEMPLATES[n] == t for n, t in templates.items()), kind
    own = "".join(ASSETS.joinpath(name).read_text(encoding="utf-8") for name in SCRIPTS[kind])
    used = set(re.findall(r'fill\("(\w+)"', own))
    used |= {t for call, names in HELPERS.items() if call in own for t in names}
    assert used and used <= set(templates), f"{kind}: the script fills {used - set(templates)}"


def test_fill_replaces_each_slot_once_and_refuses_a_missing_one():
    assert element.fill("<b>{x}</b>{y}", x="{y}", y=1) == "<b>{y}</b>1"
    with pytest.raises(KeyError):
        element.fill("{x}", y=1)


def test_number_formatting_drops_the_sign_of_a_rounded_zero():
    assert element.fmt(-0.0001, 3) == "0.000" and element.fmt(-0.0, 2) == "0.00"
    assert element.fmt(-0.002, 3) == "-0.002" and element.fmt(0.0005001, 3) == "0.001"
    assert math.isclose(float(element.fmt(math.pi, 4)), 3.1416)


def _contrast(rgb, text):
    def lum(c):
        lin = [x / 255 / 12.92 if x / 255 <= 0.04045 else ((x / 255 + 0.055) / 1.055) ** 2.4
               for x in c]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    a, b = sorted((lum(rgb), lum(text)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_heatmap_text_is_the_colour_that_contrasts_more():
    # The cell colour is the linear mix CSS computes; the text is black below the threshold
    # and white from it, and that choice is the better one at every weight.
    lo, hi = np.array([247, 251, 255]), np.array([8, 48, 107])
    for w in np.linspace(0, 1, 1001):
        rgb = lo + (hi - lo) * w
        black, white = _contrast(rgb, (0, 0, 0)), _contrast(rgb, (255, 255, 255))
        dark = "lc-dark" in element.heat_cell(float(w))
        assert dark == (white > black) or math.isclose(white, black, rel_tol=1e-6), w
        assert max(black, white) >= 4.5, w  # WCAG AA for text at every weight


# --- the range of a scale slider --------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"scale": -1.0}, ValueError, "scale=-1.0; expected a number from 0"),
        ({"scale": 101.0}, ValueError, "scale=101.0"),
        ({"scale": float("nan")}, ValueError, "scale=nan"),
        ({"scale": "1"}, TypeError, "scale='1'"),
        ({"scale": True}, TypeError, "scale=True"),
        ({"scale_max": 0.0}, ValueError, "scale_max=0.0"),
        ({"scale_max": float("inf")}, ValueError, "scale_max=inf"),
        ({"scale_max": 1e308}, ValueError, "scale_max=1e\\+308; expected at most"),
        ({"step": 0.0}, ValueError, "step=0.0"),
        ({"step": -0.1}, ValueError, "step=-0.1"),
        ({"step": 1e-12}, ValueError, "step=1e-12; expected a step from"),
        ({"step": 200.0}, ValueError, "step=200.0"),
    ],
)
def test_scale_range_refuses_what_the_page_could_not_show(kwargs, error, match):
    args = {"scale": 1.0, "scale_max": 100.0, "step": 0.01, **kwargs}
    with pytest.raises(error, match=match):
        _validation.scale_range(**args, largest=10.0)


def test_scale_range_keeps_every_product_below_the_largest_shown_number():
    # The limit is where scale_max^power * largest reaches LARGEST_SHOWN, and c^power itself.
    for largest, power in ((10.0, 1), (2.5, 2), (1e-3, 2), (0.0, 1)):
        limit = (_validation.LARGEST_SHOWN / max(largest, 1.0)) ** (1 / power)
        _validation.scale_range(0.0, limit, limit / 10, largest=largest, power=power)
        with pytest.raises(ValueError, match="expected at most"):
            _validation.scale_range(0.0, limit * 1.001, limit / 10, largest=largest, power=power)
