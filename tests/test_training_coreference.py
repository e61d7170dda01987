"""The coreference corpus and model (``attention_lib.training.coreference``): the split holds
out noun pairs, the referent follows the adjective, the gradient matches central
differences, padding changes nothing, ablation and forcing do what they say, and a short
run learns the task."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences

import attention_lib as al
from attention_lib.training import coreference as co

TINY = al.GPTConfig(vocab_size=54, context=12, d_model=4, n_layers=2, n_heads=2, d_ff=6,
                    causal=False)


@pytest.fixture(scope="module")
def corpus():
    return al.coreference_examples("train"), al.coreference_examples("test")


def _pair(sentence):
    return al.CoreferenceModel.candidates(sentence)


# ---------------------------------------------------------------- the corpus

def test_the_split_holds_out_noun_pairs_not_just_sentences(corpus):
    train, test = corpus
    train_pairs, test_pairs = {_pair(s) for s, _ in train}, {_pair(s) for s, _ in test}
    assert not train_pairs & test_pairs
    assert not {s for s, _ in train} & {s for s, _ in test}
    assert 0.2 < len(test) / (len(train) + len(test)) < 0.3
    # every noun and every adjective is seen in training, in both slots where it can stand
    firsts = {p[0] for p in train_pairs}
    seconds = {p[1] for p in train_pairs}
    assert firsts == set(co.AGENTS) and seconds == set(co.AGENTS + co.PLACES)
    adjectives = {s.split()[-1] for s, _ in train}
    assert adjectives == set(co.FIRST_ADJECTIVES + co.PLACE_ADJECTIVES + co.AGENT_ADJECTIVES)
    # a held-out pair is held out with every verb and every adjective
    for pair in test_pairs:
        n = sum(_pair(s) == pair for s, _ in test)
        assert n == (3 if pair[1] in co.PLACES else 4) * 12


def test_the_tutorials_two_sentences_are_held_out(corpus):
    train, test = corpus
    tired = " ".join(al.examples.coreference().tokens)
    assert tired == co.TUTORIAL[0]
    assert (tired, "animal") in test and (co.TUTORIAL[1], "street") in test
    assert not any(_pair(s) == ("animal", "street") for s, _ in train)
    assert any(_pair(s)[0] == "animal" for s, _ in train)
    assert any(_pair(s)[1] == "street" for s, _ in train)


def test_the_adjective_decides_and_every_sentence_has_a_twin(corpus):
    train, test = corpus
    everything = dict(train + test)
    assert len(everything) == len(train) + len(test)  # no sentence twice
    for sentence, referent in everything.items():
        words = sentence.split()
        first, second = _pair(sentence)
        assert words[:1] == ["The"] and words[-5:-1] == ["because", "it", "was", "too"]
        assert words.count("it") == 1 and first != second
        adjective = words[-1]
        assert referent == (first if adjective in co.FIRST_ADJECTIVES else second)
        twin = " ".join(words[:-1] + [co.FIRST_ADJECTIVES[0] if adjective not in
                                      co.FIRST_ADJECTIVES else words[-1]])
        assert twin in everything
    frames = {(s.split()[1] in co.AGENTS, _pair(s)[1] in co.PLACES) for s in everything}
    assert frames == {(True, True), (True, False)}
    n_cross = len(list(product(co.AGENTS, co.PLACES))) * 3 * 12
    n_chase = 12 * 11 * 4 * 12
    assert len(everything) == n_cross + n_chase


def test_the_corpus_is_the_same_every_time(corpus):
    assert al.coreference_examples("train") == corpus[0]
    assert al.coreference_examples() == corpus[0]
    with pytest.raises(ValueError, match="split='dev'"):
        al.coreference_examples("dev")


# ---------------------------------------------------------------- the model

def test_the_gradient_matches_central_differences(corpus):
    model = al.init_coreference_model(TINY, seed=1, std=0.7)
    batch = model.encode(corpus[0][::1500] + corpus[1][::1000])
    loss, grads = al.coreference_loss_and_grads(model.params, TINY, batch)
    fd = central_differences(lambda p: al.coreference_loss_and_grads(p, TINY, batch)[0],
                             model.params)
    for name in [n for n in fd if n.endswith("attn.b_k")]:  # the softmax ignores q . b_k
        assert np.abs(grads.pop(name)).max() < 1e-12 and np.abs(fd.pop(name)).max() < 1e-7
    unused = [w for w in model.vocabulary if not any(w in s.split() for s, _ in
                                                      corpus[0][::1500] + corpus[1][::1000])]
    ids = [model.vocabulary.index(w) for w in unused]  # words the batch never reads
    assert np.all(grads["wte"][ids] == 0) and np.all(fd["wte"][ids] == 0)
    assert_gradients_match(grads, fd, tol=1e-7)
    p = al.CoreferenceModel(model.params, TINY, model.vocabulary).probabilities(
        [s for s, _ in corpus[0][::1500] + corpus[1][::1000]])
    target = batch.target
    assert loss == pytest.approx(-np.mean(np.log(p[np.arange(len(p)), target])), rel=1e-12)


def test_padding_changes_nothing():
    model = al.init_coreference_model(seed=3, std=0.5)
    short = "The dog didn't cross the road because it was too busy"  # 11 words
    long = "The dog didn't walk across the road because it was too busy"  # 12 words
    alone = model.probabilities([short])
    together = model.probabilities([long, short])
    np.testing.assert_allclose(together[1], alone[0], rtol=1e-12, atol=1e-15)
    w = model.it_weights_many([long, short])
    assert w[1].shape == (2, 2, 11) and w[0].shape == (2, 2, 12)
    np.testing.assert_allclose(w[1], model.it_weights(short), rtol=1e-12, atol=1e-15)


def test_the_weights_from_it_and_their_scores():
    model = al.init_coreference_model(seed=4, std=0.5)
    sentence = co.TUTORIAL[0]
    w, s = model.it_weights(sentence), model.it_scores(sentence)
    assert w.shape == s.shape == (2, 2, 11)
    np.testing.assert_allclose(w, al.softmax(s), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    # against the encoder run directly: row of "it" (position 7)
    ids = [[model.vocabulary.index(x) for x in sentence.split()]]
    weights = al.gpt_attention_weights(model.params, model.config, ids)  # no causal mask
    np.testing.assert_allclose(w, weights[:, 0, :, 7, :], rtol=1e-12)
    assert np.all(w[:, :, 8:] > 0)  # "it" sees the words after it


def test_prediction_is_the_larger_of_the_two_nouns_logits():
    model = al.init_coreference_model(seed=5, std=0.5)
    sentences = [co.TUTORIAL[0], "The cat didn't chase the dog because it was too big"]
    p = model.probabilities(sentences)
    assert p.shape == (2, 2) and np.allclose(p.sum(axis=1), 1)
    said = model.predict_many(sentences)
    assert said == [_pair(s)[int(r[1] > r[0])] for s, r in zip(sentences, p, strict=True)]
    assert model.predict(sentences[1]) == said[1]
    assert model.accuracy(list(zip(sentences, said, strict=True))) == 1.0


def test_ablation_and_forcing_do_what_they_say():
    model = al.init_coreference_model(seed=6, std=0.5)
    s = co.TUTORIAL[1]
    assert np.array_equal(model.probabilities([s], head_mask=np.ones((2, 2))),
                          model.probabilities([s]))
    assert not np.allclose(model.probabilities([s], head_mask=[[1, 1], [1, 0]]),
                           model.probabilities([s]))
    # forcing head 1 of layer 0 onto "street": that row is one-hot there, the others and
    # the earlier heads unchanged; a later layer's weights change
    forced = model.it_weights(s, force=(0, 1, "street"))
    plain = model.it_weights(s)
    assert forced[0, 1].tolist() == [0.0] * 5 + [1.0] + [0.0] * 5
    assert np.array_equal(forced[0, 0], plain[0, 0])
    assert not np.allclose(forced[1], plain[1])
    # forcing a head onto the word it already weights fully changes nothing
    sure = model.it_weights(s, force=(1, 0, "street"))
    assert sure[1, 0].tolist() == [0.0] * 5 + [1.0] + [0.0] * 5
    many = model.predict_many([s, co.TUTORIAL[0]], force=(0, 1, ["street", "animal"]))
    assert many[0] == model.predict(s, force=(0, 1, "street"))
    assert model.it_weights(s, force=(0, 0, "the"))[0, 0, 4] == 1.0  # "The" is another word
    with pytest.raises(ValueError, match="occurs 0 times"):
        model.predict(s, force=(0, 1, "dog"))
    with pytest.raises(ValueError, match="one per sentence"):
        model.predict_many([s, s], force=(0, 1, ["street"]))
    with pytest.raises(ValueError, match="force's layer"):
        model.predict(s, force=(2, 0, "street"))


def test_bad_sentences_are_refused():
    model = al.init_coreference_model()
    with pytest.raises(ValueError, match="does not know.*'spaceship'"):
        model.predict("The spaceship didn't cross the street because it was too tired")
    with pytest.raises(ValueError, match="two different nouns"):
        model.predict("The dog didn't chase the dog because it was too fast")
    with pytest.raises(ValueError, match="one 'it'"):
        model.predict("The dog didn't chase the cat because dog was too fast")
    with pytest.raises(TypeError, match="expected a str"):
        model.predict(["The"])
    with pytest.raises(TypeError, match="expected a list of str"):
        model.predict_many(co.TUTORIAL[0])
    with pytest.raises(ValueError, match="vocab_size=10"):
        al.init_coreference_model(al.GPTConfig(10, 12, 8, 1, 2))


def test_training_is_seeded_and_learns_the_task(corpus):
    a = al.train_coreference_model(seed=0, steps=5)
    b = al.train_coreference_model(seed=0, steps=5)
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    assert np.array_equal(a.log["train_loss"], b.log["train_loss"])
    c = al.train_coreference_model(seed=1, steps=5)
    assert not np.array_equal(a.params["wte"], c.params["wte"])
    # float32 numbers, kept as float64
    assert all(v.dtype == np.float64 and np.array_equal(v.astype(np.float32), v)
               for v in a.params.values())
    assert 0.5 < a.log["train_loss"][0] < 1.0  # about log 2: a guess at first
    short = al.train_coreference_model(seed=0, steps=300)
    assert short.log["train_loss"][-50:].mean() < 0.05
    assert short.accuracy(corpus[1]) > 0.9  # on noun pairs never seen together
