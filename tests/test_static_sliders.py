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
