import json
import re

import numpy as np
import pytest

from attention_lib.static_sliders import softmax_slider


def test_markup_is_self_contained_and_carries_the_scores():
    scores = [0.5, 0.3, 0.1, 0.2]
    markup = softmax_slider(scores, ["a", "b", "c", "d"])._repr_html_()
    data = re.search(r"data-scores='([^']*)'", markup).group(1)
    assert json.loads(data) == scores
    assert markup.count('class="ss-weight"') == 4
    assert not re.search(r"(src|href)=\"(https?:)?//", markup), "must not load anything remote"
    assert "<script>" in markup


def test_each_slider_gets_a_distinct_stable_id():
    a = softmax_slider([1.0, 2.0], ["x", "y"])._repr_html_()
    b = softmax_slider([1.0, 2.0], ["x", "y"])._repr_html_()
    c = softmax_slider([1.0, 3.0], ["x", "y"])._repr_html_()
    ids = [re.search(r'id="(ss-[0-9a-f]+)"', m).group(1) for m in (a, b, c)]
    assert ids[0] == ids[1] != ids[2]


def test_labels_are_escaped():
    markup = softmax_slider([1.0], ["<b>"])._repr_html_()
    assert "&lt;b&gt;" in markup and "<td><b></td>" not in markup


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"scores": [[1.0, 2.0]], "labels": ["a", "b"]}, ValueError, "scores"),
        ({"scores": [1.0, 2.0], "labels": ["a"]}, ValueError, "labels"),
        ({"scores": [1.0, np.nan], "labels": ["a", "b"]}, ValueError, "scores"),
        ({"scores": [1.0, 2.0], "labels": ["a", "b"], "value": 99.0}, ValueError, "value"),
        ({"scores": None, "labels": []}, TypeError, "scores"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        softmax_slider(**kwargs)


def test_script_and_style_come_from_the_asset_files():
    from pathlib import Path

    import attention_lib

    assets = Path(attention_lib.__file__).parent / "assets"
    markup = softmax_slider([1.0, 2.0], ["a", "b"])._repr_html_()
    css = (assets / "softmax_slider.css").read_text(encoding="utf-8")
    js = (assets / "softmax_slider.js").read_text(encoding="utf-8")
    assert f"<style>{css}</style>" in markup
    uid = markup.split('id="', 1)[1].split('"', 1)[0]
    assert "<script>" + js.replace("__ROOT_ID__", f'"{uid}"') + "</script>" in markup


def test_values_at_the_starting_scale_show_before_any_script_runs():
    # An untrusted notebook strips the script: the element must still show numbers.
    import html as html_lib
    import math

    scores = [2.0, 1.0, 0.5, -1.0]
    value = 3.0
    markup = softmax_slider(scores, ["a", "b", "c", "d"], value=value)._repr_html_()
    shown = [float(x) for x in re.findall(r'class="ss-weight" data-index="\d+">([^<]*)<', markup)]
    # Independent reference: a plain loop over math.exp.
    e = [math.exp(value * x) for x in scores]
    want = [x / sum(e) for x in e]
    assert shown == [float(f"{w:.3f}") for w in want]
    h = -sum(w * math.log(w) for w in want)
    assert re.search(r'class="ss-entropy">([^<]*)<', markup).group(1) == f"{h:.3f}"
    g = max(w * (1 - w) for w in want)
    assert re.search(r'class="ss-grad">([^<]*)<', markup).group(1) == f"{g:.4f}"
    note = re.search(r'class="ss-static-note"><em>([^<]*)<', markup).group(1)
    assert "scale = 3.00" in html_lib.unescape(note) and "Trust" in note


# --- attention_lib.live_controls: the browser-side controls of chapters 3, 4, 5, 9 and 12 ------

import html as html_lib  # noqa: E402
import math  # noqa: E402
from html.parser import HTMLParser  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import attention_lib as al  # noqa: E402
from attention_lib import live_controls as lc  # noqa: E402

ASSETS = Path(al.__file__).parent / "assets"


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text inside elements of a given class."""

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


def walkthrough_qkv():
    ex = al.examples.cat_sat_on()
    return ex, *al.project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)


@pytest.fixture(scope="module")
def exported_model(tmp_path_factory):
    result = al.train_retrieval(seed=0, steps=200)
    path = al.export_retrieval_model(result, tmp_path_factory.mktemp("model") / "m.json")
    return path, json.loads(path.read_text()), result


def causal_example():
    rng = np.random.default_rng(42)  # chapter 5's draw: Q, K, V in that order
    return rng.normal(size=(4, 8)), rng.normal(size=(4, 8)), rng.normal(size=(4, 6))


def all_controls(exported):
    ex = al.examples.cat_sat_on()
    q, k, v = causal_example()
    return {
        "saturation": lc.saturation_explorer(),
        "query": lc.query_picker(ex),
        "retrieval": lc.retrieval_playground(exported[1]),
        "causal": lc.causal_stepper(q, k, v, ex.tokens),
        "proj": lc.projection_scale_explorer(ex),
    }


def test_every_control_is_self_contained_and_uses_the_asset_files(exported_model):
    css = (ASSETS / "live_controls.css").read_text(encoding="utf-8")
    common = (ASSETS / "live_controls_common.js").read_text(encoding="utf-8")
    scripts = {"saturation": "saturation_explorer.js", "query": "query_picker.js",
               "retrieval": "retrieval_playground.js", "causal": "causal_stepper.js",
               "proj": "projection_scale_explorer.js"}
    for kind, control in all_controls(exported_model).items():
        markup = control._repr_html_()
        assert not re.search(r"(src|href)\s*=", markup), f"{kind}: loads something"
        assert "://" not in markup
        assert markup.count("<script>") == 1 and markup.count("</script>") == 1
        assert f"<style>{css}</style>" in markup
        own = (ASSETS / scripts[kind]).read_text(encoding="utf-8")
        assert common + own in markup, f"{kind}: script not taken from its asset files"
        uid = re.match(r'<div class="lc-root lc-\w+" id="([^"]+)"', markup).group(1)
        assert f"document.getElementById({json.dumps(uid)})" in markup
        assert "lc-static-note" in markup and "Trust Notebook" in markup
        assert repr(control).startswith("<StaticSlider: ")


def test_every_control_has_a_visible_label_and_starts_disabled(exported_model):
    for kind, control in all_controls(exported_model).items():
        tags = elements(control._repr_html_())
        ids = [a["id"] for _, a in tags if "id" in a]
        assert len(ids) == len(set(ids)), f"{kind}: duplicate ids {ids}"
        labelled = {a["for"] for t, a in tags if t == "label"}
        controls = [(t, a) for t, a in tags if t in ("input", "select", "button")]
        assert controls, kind
        for tag, attrs in controls:
            assert "disabled" in attrs, f"{kind}: {tag} is live before the script runs"
            if tag != "button":
                assert attrs.get("id") in labelled, f"{kind}: {tag} {attrs} has no <label for>"


def test_ids_are_stable_and_distinct(exported_model):
    ex = al.examples.cat_sat_on()
    q, k, v = causal_example()
    pairs = [
        (lc.saturation_explorer, {}, {"scale": 3.0}),
        (lambda **kw: lc.query_picker(ex, **kw), {}, {"query": "cat"}),
        (lambda **kw: lc.retrieval_playground(exported_model[1], **kw), {},
         {"sequence": "a1 ? a"}),
        (lambda **kw: lc.causal_stepper(q, k, v, **kw), {}, {"start": 2}),
        (lambda **kw: lc.projection_scale_explorer(ex, **kw), {}, {"scale": 2.0}),
    ]
    seen = set()
    for build, first, other in pairs:
        a, b, c = (re.search(r'id="(lc-[\w-]+)"', build(**kw)._repr_html_()).group(1)
                   for kw in (first, first, other))
        assert a == b != c
        assert a not in seen
        seen.add(a)


def test_saturation_explorer_embeds_the_library_scores_and_starting_values():
    markup = lc.saturation_explorer(d_ks=(4, 64), n_keys=6, seed=3, scale=38.05)._repr_html_()
    rows = data_json(markup, "rows")
    assert rows[0]["d_k"] is None and rows[0]["scores"] == list(al.examples.SATURATION_SCORES)
    for row, d in zip(rows[1:], (4, 64), strict=True):
        assert row["d_k"] == d
        assert row["scores"] == al.saturation_scores(d, divide_by_sqrt_dk=False, n_keys=6,
                                                     seed=3).tolist()
    st = al.saturation_stats(al.examples.SATURATION_SCORES, 38.05)
    assert texts(markup, "lc-weight") == [f"{p:.3f}" for p in st.weights]
    assert texts(markup, "lc-entropy") == [f"{float(st.entropy):.3f}"]
    assert texts(markup, "lc-jnorm") == [f"{float(st.jacobian_norm):.4f}"]
    assert texts(markup, "lc-jmax") == [f"{float(st.jacobian_max):.4f}"]
    number = next(a for t, a in elements(markup) if a.get("type") == "number")
    assert float(number["step"]) <= 0.001 and float(number["value"]) == 38.05
    # The step reaches the window where the rounded weights are the tutorial's printed row.
    lo, hi = printed_row_window(float(number["step"]))
    assert 38.0 < lo < hi < 38.2  # chapter 4 sends the reader there
    assert float(number["min"]) <= lo and hi <= float(number["max"])


def printed_row_window(step: float) -> tuple[float, float]:
    """The smallest and largest c on a grid of ``step`` where softmax(c * scores), rounded to
    three decimals, is the row the tutorial prints for ten times its scores."""
    grid = np.round(np.arange(1.0, 60.0, step), 6)
    weights = al.softmax(grid[:, None] * al.examples.SATURATION_SCORES)
    hits = np.flatnonzero(np.all(weights.round(3) == al.examples.SATURATION_PRINTED[10.0], axis=1))
    assert hits.size and np.all(np.diff(hits) == 1)  # one unbroken window
    return float(grid[hits[0]]), float(grid[hits[-1]])


def test_saturation_explorer_starting_at_a_random_row():
    markup = lc.saturation_explorer(start=16, divide=False, scale=2.0)._repr_html_()
    s = al.saturation_scores(16, divide_by_sqrt_dk=False)
    st = al.saturation_stats(s, 2.0)
    assert texts(markup, "lc-weight") == [f"{p:.3f}" for p in st.weights]
    assert '<option value="16" selected>' in markup


def test_query_picker_embeds_the_projections_and_shows_the_library_row():
    ex, q, k, v = walkthrough_qkv()
    markup = lc.query_picker(ex, query="cat")._repr_html_()
    assert data_json(markup, "tokens") == list(ex.tokens)
    for name, m in (("q", q), ("k", k), ("v", v)):
        assert data_json(markup, name) == m.tolist()
    out, w = al.scaled_dot_product_attention(q, k, v)
    i = ex.tokens.index("cat")
    assert texts(markup, "lc-weight") == [f"{x:.4f}" for x in w[i]]
    partial = np.cumsum(w[i][:, None] * v, axis=0)
    assert texts(markup, "lc-partial") == [
        "[" + ", ".join(f"{x:.4f}" for x in row) + "]" for row in partial]
    assert texts(markup, "lc-output") == ["[" + ", ".join(f"{x:.4f}" for x in out[i]) + "]"]
    assert '<option value="1" selected>cat</option>' in markup


def test_labels_are_escaped_in_every_control():
    ex = al.examples.cat_sat_on()
    odd = SimpleNamespace(tokens=("<b>", "a&b", "c", "d"), x=ex.x, w_q=ex.w_q, w_k=ex.w_k,
                          w_v=ex.w_v)
    q, k, v = causal_example()
    for markup in (lc.query_picker(odd, query="c")._repr_html_(),
                   lc.projection_scale_explorer(odd)._repr_html_(),
                   lc.causal_stepper(q, k, v, odd.tokens, start=4)._repr_html_(),
                   lc.saturation_explorer(title="<i>t</i>")._repr_html_()):
        body = markup.split("<script>")[0].split("</style>")[1]
        assert "<b>" not in body and "<i>" not in body and "a&b" not in body
        assert "&lt;b&gt;" in body or "&lt;i&gt;" in body


def test_causal_stepper_embeds_the_numbers_and_shows_row_t():
    q, k, v = causal_example()
    markup = lc.causal_stepper(q, k, v, ["The", "cat", "sat", "on"], start=3)._repr_html_()
    for name, m in (("q", q), ("k", k), ("v", v)):
        assert data_json(markup, name) == m.tolist()
    out, w = al.scaled_dot_product_attention(q, k, v, causal=True)
    assert texts(markup, "lc-weight") == [f"{x:.3f}" for x in w[2]]
    assert texts(markup, "lc-output") == ["[" + ", ".join(f"{x:.3f}" for x in out[2]) + "]"]
    assert markup.count("masked") >= 2  # position 4: a chip and a table row
    assert len(re.findall(r"<li><span>\d ", markup)) == 3  # the cache holds positions 1..3


def test_projection_scale_explorer_shows_the_library_weights():
    ex, q, k, _ = walkthrough_qkv()
    markup = lc.projection_scale_explorer(ex, scale=3.0)._repr_html_()
    assert data_json(markup, "q") == q.tolist() and data_json(markup, "k") == k.tolist()
    w = al.projection_scale_weights(ex.x, ex.w_q, ex.w_k, [3.0])[0]
    cells = re.findall(r'<td style="[^"]*">([^<]*)</td>', markup.split("<script>")[0])
    assert cells == [f"{x:.3f}" for x in w.ravel()]
    assert texts(markup, "lc-c2") == ["9.00"]


def test_retrieval_playground_embeds_the_exported_model(exported_model):
    path, doc, result = exported_model
    for model in (doc, path, str(path)):
        markup = lc.retrieval_playground(model, sequence="c3 a7 f1 ? f")._repr_html_()
        embedded = data_json(markup, "model")
        assert embedded["format"] == doc["format"]
        assert embedded["vocabulary"] == doc["vocabulary"]
        for name, value in result.params.items():
            assert np.array_equal(np.array(embedded["params"][name]), value), name
    logits, w = al.retrieval_forward(result.params, [[2, 0, 5]], [[3, 7, 1]], [5])
    assert texts(markup, "lc-weight") == [f"{x:.3f}" for x in w[0]]
    np.testing.assert_array_equal(data_json(markup, "logits"), logits[0])
    assert "(looked up)" in markup


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "type the pairs"),
        ("c3 a7 f", "end the sequence with ?"),
        ("c3 ? a ? b", "end the sequence with ?"),
        ("? a", "at least one pair"),
        ("a0 b0 c0 d0 e0 f0 g0 h0 a1 ? a", "at most 8 pairs"),
        ("c3 a9 ? c", '"a9" is not a pair'),
        ("c3 z1 ? c", '"z1" is not a pair'),
        ("C3 ? c", '"C3" is not a pair'),
        ("c3 c4 ? c", "the key c is stored twice"),
        ("c3 a7 ? z", '"z" is not a key'),
    ],
)
def test_bad_sequences_are_refused_with_a_reason(text, problem):
    vocab = {"keys": list("abcdefgh"), "values": list("01234567")}
    with pytest.raises(ValueError, match=re.escape(f"sequence={text!r}: ") + ".*"
                       + re.escape(problem)):
        lc.parse_retrieval_sequence(text, vocab)


def test_good_sequences_parse():
    vocab = {"keys": list("abcdefgh"), "values": list("01234567")}
    assert lc.parse_retrieval_sequence("  h0   ?  h ", vocab) == ([7], [0], 7)
    assert lc.parse_retrieval_sequence("a1 b2 ? c", vocab) == ([0, 1], [1, 2], 2)  # not stored
    eight = " ".join(f"{x}{i}" for i, x in enumerate("abcdefgh")) + " ? e"
    assert lc.parse_retrieval_sequence(eight, vocab)[2] == 4


def _bad_model(doc, change):
    bad = json.loads(json.dumps(doc))
    change(bad)
    return bad


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda m: lc.saturation_explorer(d_ks=[4, 4]), ValueError, "d_ks"),
        (lambda m: lc.saturation_explorer(d_ks=[0]), ValueError, "d_ks"),
        (lambda m: lc.saturation_explorer(d_ks="64"), TypeError, "d_ks"),
        (lambda m: lc.saturation_explorer(n_keys=1), ValueError, "n_keys"),
        (lambda m: lc.saturation_explorer(start=32), ValueError, "start"),
        (lambda m: lc.saturation_explorer(scale=-1.0), ValueError, "scale"),
        (lambda m: lc.saturation_explorer(scale=float("nan")), ValueError, "scale"),
        (lambda m: lc.saturation_explorer(step=0.0), ValueError, "step"),
        (lambda m: lc.saturation_explorer(scale="1"), TypeError, "scale"),
        (lambda m: lc.saturation_explorer(divide=1), TypeError, "divide"),
        (lambda m: lc.saturation_explorer(tutorial_scores=[[1.0, 2.0]]), ValueError,
         "tutorial_scores"),
        (lambda m: lc.saturation_explorer(tutorial_scores=[1.0, np.inf]), ValueError,
         "tutorial_scores"),
        (lambda m: lc.query_picker(al.examples.cat_sat_on(), query="dog"), ValueError, "query"),
        (lambda m: lc.query_picker(al.examples.cat_sat_on(), query=7), ValueError, "query"),
        (lambda m: lc.query_picker(object()), TypeError, "example"),
        (lambda m: lc.projection_scale_explorer(al.examples.cat_sat_on(), scale=31.0),
         ValueError, "scale"),
        (lambda m: lc.causal_stepper(np.ones((3, 2)), np.ones((3, 2)), np.ones((2, 2))),
         ValueError, "v"),
        (lambda m: lc.causal_stepper(np.ones(3), np.ones(3), np.ones(3)), ValueError, "q"),
        (lambda m: lc.causal_stepper(None, np.ones((3, 2)), np.ones((3, 2))), TypeError, "q"),
        (lambda m: lc.causal_stepper(*causal_example(), ["a", "b"]), ValueError, "tokens"),
        (lambda m: lc.causal_stepper(*causal_example(), start=5), ValueError, "start"),
        (lambda m: lc.causal_stepper(*causal_example(), start=1.0), TypeError, "start"),
        (lambda m: lc.retrieval_playground(m, sequence="c3 ? z"), ValueError, "sequence"),
        (lambda m: lc.retrieval_playground(m, sequence=3), TypeError, "sequence"),
        (lambda m: lc.retrieval_playground(42), TypeError, "model"),
        (lambda m: lc.retrieval_playground(_bad_model(m, lambda d: d.update(format="x"))),
         ValueError, "model has format"),
        (lambda m: lc.retrieval_playground(
            _bad_model(m, lambda d: d["params"].pop("w_q"))), ValueError, "model lacks"),
        (lambda m: lc.retrieval_playground(
            _bad_model(m, lambda d: d["params"].update(w_k=[[1.0]]))), ValueError, "w_k"),
        (lambda m: lc.retrieval_playground(
            _bad_model(m, lambda d: d["vocabulary"].update(keys=["a b"]))), ValueError,
         "vocabulary"),
    ],
)
def test_live_controls_refuse_bad_input(exported_model, build, error, match):
    with pytest.raises(error, match=match):
        build(exported_model[1])


def test_number_formatting_drops_the_sign_of_a_rounded_zero():
    assert lc._fmt(-0.0001, 3) == "0.000" and lc._fmt(-0.0, 2) == "0.00"
    assert lc._fmt(-0.002, 3) == "-0.002" and lc._fmt(0.0005001, 3) == "0.001"
    assert math.isclose(float(lc._fmt(math.pi, 4)), 3.1416)


def test_every_control_keeps_its_arrow_keys_in_jupyterlab():
    # JupyterLab takes arrow keys as notebook shortcuts (moving between cells) unless the
    # focused element carries data-lm-suppress-shortcuts.
    import attention_lib as al
    from attention_lib import live_controls as lc

    ex = al.examples.cat_sat_on()
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(4, 8)), rng.normal(size=(4, 8)), rng.normal(size=(4, 6))
    markups = [softmax_slider([1.0, 2.0], ["a", "b"])._repr_html_(),
               lc.saturation_explorer(d_ks=(4, 16))._repr_html_(),
               lc.query_picker(ex)._repr_html_(),
               lc.projection_scale_explorer(ex)._repr_html_(),
               lc.causal_stepper(q, k, v, ["A", "B", "C", "D"])._repr_html_()]
    for markup in markups:
        controls = re.findall(r"<(?:input|select|button)\b[^>]*>", markup)
        assert controls
        for control in controls:
            assert 'data-lm-suppress-shortcuts="true"' in control, control
