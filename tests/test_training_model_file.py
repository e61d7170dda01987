"""The model file: an exact round trip, a forward pass from the JSON alone, and every way a file
can be wrong refused with an error naming what is wrong."""

from __future__ import annotations

import copy
import json
import math
import re

import numpy as np
import pytest

import attention_lib as al
from attention_lib import training as tr


@pytest.fixture(scope="module")
def trained():
    return al.train_retrieval(seed=1, steps=300)


@pytest.fixture(scope="module")
def doc(trained, tmp_path_factory):
    path = al.export_retrieval_model(trained, tmp_path_factory.mktemp("m") / "model.json")
    return json.loads(path.read_text())


def test_export_round_trip_and_a_forward_pass_from_the_json_alone(trained, tmp_path):
    path = al.export_retrieval_model(trained, tmp_path / "model.json")
    params, info = al.load_retrieval_model(path)
    for name, value in trained.params.items():
        np.testing.assert_array_equal(params[name], value)
    assert info["vocabulary"]["keys"] == list("abcdefgh")
    assert info["vocabulary"]["values"] == [str(i) for i in range(8)]
    assert info["accuracy"] == trained.accuracy and info["config"] == trained.config

    doc = json.loads(path.read_text())  # plain numpy from the dictionary, nothing else
    p = {k: np.array(v) for k, v in doc["params"].items()}
    d_k = len(doc["params"]["w_q"][0])
    test = trained.test
    for b in range(20):
        x = p["key_embed"][test.keys[b]] + p["value_embed"][test.values[b]]
        q = p["query_embed"][test.query[b]] @ p["w_q"]
        s = (x @ p["w_k"]) @ q / math.sqrt(d_k)
        a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        logits = a @ (x @ p["w_v"]) @ p["w_out"] + p["b_out"]
        ref_logits, ref_w = al.retrieval_forward(trained.params, test.keys[b:b + 1],
                                                 test.values[b:b + 1], test.query[b:b + 1])
        np.testing.assert_allclose(logits, ref_logits[0], atol=1e-12)
        np.testing.assert_allclose(a, ref_w[0], atol=1e-14)


def test_export_refuses_what_it_cannot_write(trained, tmp_path):
    shift = al.train_shift(seed=0, steps=2)
    with pytest.raises(TypeError, match="^result is a TrainingResult \\(task 'shift'\\)"):
        al.export_retrieval_model(shift, tmp_path / "x.json")
    with pytest.raises(TypeError, match="^result is a dict"):
        al.export_retrieval_model({"w_q": 1}, tmp_path / "x.json")
    for bad in (np.nan, np.inf):
        broken = copy.deepcopy(trained)
        broken.params["w_k"][2, 3] = bad
        with pytest.raises(ValueError, match=r"^result params\['w_k'\] contains 1 NaN or "
                                             r"infinite value\(s\), the first at index \(2, 3\)"):
            al.export_retrieval_model(broken, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()  # nothing half-written


def _write(tmp_path, doc, text=None):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc) if text is None else text)
    return path


def _changed(doc, change):
    doc = copy.deepcopy(doc)
    change(doc)
    return doc


def _set(entry, key, value):
    def change(doc):
        (doc if entry is None else doc[entry])[key] = value
    return change


BAD_FILES = [
    # (what is wrong, the change, error, the message names it)
    ("wrong shape", _set("params", "w_k", [[1.0] * 16] * 15), ValueError,
     r"params\['w_k'\] has shape \(15, 16\); expected \(d, d_k\) = \(16, 16\)"),
    ("a missing row", _set("params", "b_out", [0.0] * 7), ValueError,
     r"params\['b_out'\] has shape \(7,\); expected \(n_values,\) = \(8,\), since n_values = 8 "
     r"\(given\)"),
    ("a scalar", _set("params", "w_q", 1.0), ValueError, r"params\['w_q'\] has 0 dimension"),
    ("strings", _set("params", "b_out", ["0.1"] * 8), TypeError, r"params\['b_out'\] has dtype"),
    ("booleans", _set("params", "b_out", [True] * 8), TypeError,
     r"params\['b_out'\] has dtype bool"),
    ("a null", _set("params", "b_out", [None] * 8), TypeError, r"params\['b_out'\] has dtype"),
    ("ragged", _set("params", "w_q", [[1.0], [1.0, 2.0]]), ValueError,
     r"params\['w_q'\] could not be turned into an array"),
    ("a missing array", lambda d: d["params"].pop("w_v"), ValueError, r"params lacks \['w_v'\]"),
    ("an extra array", _set("params", "w_extra", [1.0]), ValueError,
     r"params has unexpected entries \['w_extra'\]"),
    ("params as a list", _set(None, "params", [1, 2]), TypeError, "params is a list"),
    ("too few key names", _set("vocabulary", "keys", list("abcdefg")), ValueError,
     r"params\['key_embed'\] has shape \(8, 16\); expected \(n_keys, d\) = \(7, 16\)"),
    ("too many value names", _set("vocabulary", "values", list("012345678")), ValueError,
     r"params\['value_embed'\] has shape \(8, 16\); expected \(n_values, d\) = \(9, 16\)"),
    ("a repeated key name", _set("vocabulary", "keys", list("abcdefga")), ValueError,
     r"vocabulary keys names \['a'\] more than once"),
    ("a number as a name", _set("vocabulary", "values", list(range(8))), TypeError,
     r"vocabulary values\[0\]=0; expected a string"),
    ("a name with a space", _set("vocabulary", "keys", ["a b"] + list("bcdefgh")), ValueError,
     r"vocabulary keys\[0\]='a b'"),
    ("vocabulary as a string", _set(None, "vocabulary", "abc"), TypeError,
     "vocabulary is a str"),
    ("vocabulary without values", lambda d: d["vocabulary"].pop("values"), ValueError,
     r"vocabulary has entries \['keys'\]"),
    ("config of another size", _set("config", "d_k", 8), ValueError,
     "config d_k=8, but the params have 16"),
    ("config without n_keys", lambda d: d["config"].pop("n_keys"), ValueError,
     "config lacks 'n_keys'"),
    ("config as a list", _set(None, "config", []), TypeError, "config is a list"),
    ("accuracy above 1", _set(None, "accuracy", 1.5), ValueError, "accuracy=1.5"),
    ("accuracy as text", _set(None, "accuracy", "1.0"), TypeError, "accuracy='1.0'"),
    ("an unknown entry", _set(None, "notes", "x"), ValueError, r"has unexpected \['notes'\]"),
    ("a missing entry", lambda d: d.pop("target_weight"), ValueError,
     r"lacks \['target_weight'\]"),
    ("another format", _set(None, "format", "x"), ValueError, "has format 'x'"),
]


@pytest.mark.parametrize("what, change, error, match", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_load_refuses_a_wrong_file(doc, tmp_path, what, change, error, match):
    path = _write(tmp_path, _changed(doc, change))
    with pytest.raises(error, match=f"^{re.escape(str(path))} .*{match}"):
        al.load_retrieval_model(path)
    with pytest.raises(error, match=match):  # the same check on a parsed document
        tr.check_retrieval_model(_changed(doc, change))


@pytest.mark.parametrize("text, error, match", [
    ("[1, 2]", TypeError, "is a list; expected a mapping"),
    ('"model"', TypeError, "is a str; expected a mapping"),
    ("null", TypeError, "is a NoneType"),
    ("{", ValueError, "is not valid JSON"),
    ('{"format": NaN}', ValueError, "contains a bare NaN, which is not JSON"),
    ('{"format": -Infinity}', ValueError, "contains a bare -Infinity"),
])
def test_load_refuses_what_is_not_a_model_document(tmp_path, text, error, match):
    path = _write(tmp_path, None, text)
    with pytest.raises(error, match=f"^{re.escape(str(path))} {match}"):
        al.load_retrieval_model(path)


def test_a_bare_nan_in_the_arrays_is_refused(doc, tmp_path):
    text = json.dumps(doc).replace(json.dumps(doc["params"]["b_out"][0]), "NaN", 1)
    assert "NaN" in text
    with pytest.raises(ValueError, match="bare NaN"):
        al.load_retrieval_model(_write(tmp_path, None, text))


def test_every_written_file_loads(doc, tmp_path):
    params, info = al.load_retrieval_model(_write(tmp_path, doc))
    assert set(params) == set(tr.RETRIEVAL_PARAMS) and all(
        a.dtype == np.float64 for a in params.values())
    integers = _changed(doc, _set("params", "b_out", [0] * 8))  # JSON integers are numbers
    assert al.load_retrieval_model(_write(tmp_path, integers))[0]["b_out"].dtype == np.float64
