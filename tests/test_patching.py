"""Activation patching on the coreference encoder: the library's maps against a loop written
here (one sentence at a time through the GPT's own logits, a hand-written hook per head and
per position), the rows known in advance, the metric against the model's probabilities, the
minimal pairs, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import attention_lib as al

TRAIN, TEST = al.coreference_examples("train"), al.coreference_examples("test")
REFERENT = dict(TRAIN + TEST)  # the corpus's own answer for every sentence
NOUNS = set(REFERENT.values())  # every noun is the referent of some sentence
TUTORIAL = ("The animal didn't cross the street because it was too tired",
            "The animal didn't cross the street because it was too wide")


@pytest.fixture(scope="module")
def model():
    return al.init_coreference_model(seed=1, std=0.3)  # untrained; its gaps are not tiny


def _three_pairs(length):
    """A cross and a chase pair of each direction (first noun -> second, and back), as far as
    sentences of that length have them."""
    pairs = al.coreference_minimal_pairs("test", length=length)
    return [pairs[0], pairs[6], pairs[-1]]


# ---------------------------------------------------------------- the reference: a loop

def _logit_diff(model, sentence, referent, hooks=None):
    """The referent's logit minus the other noun's, at "it", for one sentence."""
    words = sentence.split()
    ids = [[model.vocabulary.index(w) for w in words]]
    logits = al.gpt_logits(model.params, model.config, ids, hooks=hooks)[0]  # (T, V)
    other = next(w for w in words if w in NOUNS and w != referent)
    at = logits[words.index("it")]
    return at[model.vocabulary.index(referent)] - at[model.vocabulary.index(other)]


def _keeper(store, site):
    def hook(a):
        store[site] = a.copy()
    return hook


def _head_putter(source, head):
    def hook(a):
        out = a.copy()
        out[0, head, :, :] = source[0, head, :, :]  # (1, h, T, e): that head, every position
        return out
    return hook


def _position_putter(source, position):
    def hook(a):
        out = a.copy()
        out[0, position, :] = source[0, position, :]  # (1, T, d): that position
        return out
    return hook


def _reference(model, pairs):
    """Fractions restored (ratio of the means over the pairs), pair by pair."""
    L, h = model.config.n_layers, model.config.n_heads
    T = len(pairs[0][0].split())
    resid_sites = [f"blocks.{layer}.resid_pre" for layer in range(L)]
    resid_sites.append(f"blocks.{L - 1}.resid_post")
    clean, corrupt = np.zeros(len(pairs)), np.zeros(len(pairs))
    heads = np.zeros((len(pairs), L, h))
    resid = np.zeros((len(pairs), L + 1, T))
    for p, (clean_sentence, corrupt_sentence) in enumerate(pairs):
        referent = REFERENT[clean_sentence]
        saved = {}
        sites = [f"blocks.{layer}.attn.heads" for layer in range(L)] + resid_sites
        clean[p] = _logit_diff(model, clean_sentence, referent,
                               {site: _keeper(saved, site) for site in sites})
        corrupt[p] = _logit_diff(model, corrupt_sentence, referent)
        for layer in range(L):
            site = f"blocks.{layer}.attn.heads"
            for i in range(h):
                heads[p, layer, i] = _logit_diff(model, corrupt_sentence, referent,
                                                 {site: _head_putter(saved[site], i)})
        for row, site in enumerate(resid_sites):
            for j in range(T):
                resid[p, row, j] = _logit_diff(model, corrupt_sentence, referent,
                                               {site: _position_putter(saved[site], j)})
    gap = clean.mean() - corrupt.mean()
    return ((heads.mean(axis=0) - corrupt.mean()) / gap,
            (resid.mean(axis=0) - corrupt.mean()) / gap, clean.mean(), corrupt.mean())


def _other_shape():
    """One block of four heads: the maps follow the model's sizes."""
    config = al.GPTConfig(vocab_size=54, context=12, d_model=16, n_layers=1, n_heads=4,
                          d_ff=24, causal=False)
    return al.init_coreference_model(config, seed=3, std=0.3)


@pytest.mark.parametrize("length", [11, 12])
@pytest.mark.parametrize("shape", ["book", "one_layer"])
def test_the_maps_match_a_loop_over_heads_and_positions(model, length, shape):
    model = model if shape == "book" else _other_shape()
    pairs = _three_pairs(length)
    heads, resid, clean, corrupt = _reference(model, pairs)
    result = al.coreference_patching(model, pairs)
    L, h = model.config.n_layers, model.config.n_heads
    assert result.heads.shape == (L, h) and result.resid.shape == (L + 1, length)
    np.testing.assert_allclose(result.heads, heads, rtol=0, atol=1e-10)
    np.testing.assert_allclose(result.resid, resid, rtol=0, atol=1e-10)
    assert result.clean_logit_diff == pytest.approx(clean, abs=1e-12)
    assert result.corrupt_logit_diff == pytest.approx(corrupt, abs=1e-12)
    assert result.n_pairs == 3 and len(result.labels) == length
    assert result.sites == (*(f"blocks.{layer}.resid_pre" for layer in range(L)),
                            f"blocks.{L - 1}.resid_post")
    assert abs(clean - corrupt) > 0.1  # the fractions divide by a real gap


def test_the_labels_name_the_common_words_and_the_parts():
    model = al.init_coreference_model(seed=0)
    mixed = al.coreference_patching(model, _three_pairs(11)).labels
    assert mixed == ("The", "noun 1", "didn't", "verb", "the", "noun 2", "because", "it",
                     "was", "too", "adjective")
    one = al.coreference_patching(model, [TUTORIAL]).labels
    assert one == (*TUTORIAL[0].split()[:-1], "tired/wide")
    longer = al.coreference_patching(model, _three_pairs(12)[:1]).labels
    assert longer[3:5] == ("walk", "across")


def test_the_first_and_the_last_row_are_known_exactly(model):
    # Entering block 0 the sentences differ at the adjective alone: patching it gives the
    # clean run, patching elsewhere the corrupt run. Leaving the last block, only "it" is read.
    for length in (11, 12):
        result = al.coreference_patching(model, _three_pairs(length))
        adjective, it = length - 1, length - 4
        first, last = np.zeros(length), np.zeros(length)
        first[adjective], last[it] = 1.0, 1.0
        assert result.resid[0].tolist() == first.tolist()
        assert result.resid[-1].tolist() == last.tolist()


def test_patching_every_position_gives_the_clean_run(model):
    clean_sentence, corrupt_sentence = TUTORIAL
    L = model.config.n_layers
    ids = [[[model.vocabulary.index(w) for w in s.split()]] for s in TUTORIAL]
    sites = [f"blocks.{layer}.resid_pre" for layer in range(L)] + [f"blocks.{L - 1}.resid_post",
                                                                   "embed"]
    saved = {}
    clean = al.gpt_logits(model.params, model.config, ids[0],
                          hooks={s: _keeper(saved, s) for s in sites})
    corrupt = al.gpt_logits(model.params, model.config, ids[1])
    assert not np.array_equal(clean, corrupt)
    for site in sites:
        patched = al.gpt_logits(model.params, model.config, ids[1],
                                hooks={site: lambda a, site=site: saved[site]})
        assert np.array_equal(patched, clean), site


def test_the_logit_difference_is_the_models_log_odds(model):
    pairs = _three_pairs(11)
    result = al.coreference_patching(model, pairs)
    for which, mean in ((0, result.clean_logit_diff), (1, result.corrupt_logit_diff)):
        odds = []
        for pair in pairs:
            p = model.probabilities([pair[which]])[0]
            first = REFERENT[pair[0]] == al.CoreferenceModel.candidates(pair[0])[0]
            odds.append(np.log(p[0] / p[1]) if first else np.log(p[1] / p[0]))
        assert mean == pytest.approx(np.mean(odds), abs=1e-10)


def test_the_order_of_the_pairs_and_repeating_them_change_nothing(model):
    pairs = _three_pairs(11)
    result = al.coreference_patching(model, pairs)
    again = al.coreference_patching(model, pairs[::-1] + pairs)
    assert again.n_pairs == 6
    np.testing.assert_allclose(again.heads, result.heads, rtol=0, atol=1e-12)
    np.testing.assert_allclose(again.resid, result.resid, rtol=0, atol=1e-12)
    assert again.clean_logit_diff == pytest.approx(result.clean_logit_diff, abs=1e-12)


# ---------------------------------------------------------------- the minimal pairs

def test_every_sentence_is_paired_with_its_twin_of_the_other_referent():
    for split, sentences in (("test", TEST), ("train", TRAIN)):
        pairs = al.coreference_minimal_pairs(split)
        assert [c for c, _ in pairs] == [s for s, _ in sentences]
        assert sorted(d for _, d in pairs) == sorted(s for s, _ in sentences)
        for clean, corrupt in pairs:
            a, b = clean.split(), corrupt.split()
            assert a[:-1] == b[:-1] and a[-1] != b[-1]
            assert REFERENT[clean] != REFERENT[corrupt]
    assert al.coreference_minimal_pairs()[0] == TUTORIAL


def test_the_pairs_of_one_length():
    eleven = al.coreference_minimal_pairs("test", length=11)
    twelve = al.coreference_minimal_pairs("test", length=12)
    assert {len(c.split()) for c, _ in eleven} == {11}
    assert {len(c.split()) for c, _ in twelve} == {12}
    assert len(eleven) + len(twelve) == len(TEST)
    with pytest.raises(ValueError, match="11 or 12 words"):
        al.coreference_minimal_pairs("test", length=5)
    with pytest.raises(TypeError, match="length"):
        al.coreference_minimal_pairs("test", length="11")
    with pytest.raises(ValueError, match="split"):
        al.coreference_minimal_pairs("dev")


# ---------------------------------------------------------------- bad input

TIRED, WIDE = TUTORIAL
LONGER = "The animal didn't walk across the street because it was too wide"


@pytest.mark.parametrize(("pairs", "message"), [
    ([], "pairs is empty"),
    ([(TIRED, TIRED)], "differs in 0 words"),
    ([(TIRED, WIDE.replace("animal", "dog"))], r"differs in 2 words \(positions \[1, 10\]\)"),
    ([(TIRED, TIRED.replace("animal", "dog"))], "'animal' and 'dog'; expected two adjectives"),
    ([(TIRED, TIRED.replace("tired", "weak"))], "different referents"),
    ([(TIRED, LONGER)], "sentences of 11 and 12 words"),
    ([(TIRED, WIDE), (LONGER, LONGER.replace("wide", "tired"))], "expected one length"),
    ([(TIRED, WIDE.replace("wide", "purple"))], "does not know"),
    ([(TIRED, WIDE.replace(" it ", " the "))], "one 'it'"),
])
def test_bad_pairs_are_value_errors(model, pairs, message):
    with pytest.raises(ValueError, match=message):
        al.coreference_patching(model, pairs)


@pytest.mark.parametrize(("pairs", "message"), [
    (TIRED, "expected a list of"),
    (TUTORIAL, r"pairs\[0\]=.*even of one"),
    ([(TIRED, WIDE, WIDE)], r"pairs\[0\]"),
    ([(TIRED, 3)], r"pairs\[0\]"),
    (None, "expected a list of"),
])
def test_pairs_of_the_wrong_type_are_type_errors(model, pairs, message):
    with pytest.raises(TypeError, match=message):
        al.coreference_patching(model, pairs)


def test_only_a_coreference_model_is_patched(model):
    with pytest.raises(TypeError, match="expected a CoreferenceModel"):
        al.coreference_patching(model.params, [TUTORIAL])
