"""The toy translation corpus and the encoder-decoder (``attention_lib.training.translation``):
alignments that follow the grammar, held-out combinations, every gradient against central
differences, greedy decoding against a loop written here, and a short run that learns."""

from __future__ import annotations

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences

import attention_lib as al
from attention_lib.training import translation as tr

ENC, DEC = al.translation_configs()
TINY = (al.GPTConfig(ENC.vocab_size, ENC.context, 4, 1, 2, d_ff=6, causal=False),
        al.GPTConfig(DEC.vocab_size, DEC.context, 4, 2, 2, d_ff=6, cross_attention=True))


@pytest.fixture(scope="module")
def corpus():
    return al.translation_examples("train"), al.translation_examples("test")


def _adjective_noun_pairs(source):
    words = source.split()
    return {(a, b) for a, b in zip(words, words[1:], strict=False) if a in tr.ADJECTIVES}


# ---------------------------------------------------------------- the corpus

def test_each_target_word_translates_the_source_word_it_is_aligned_to(corpus):
    for source, target, alignment in corpus[0] + corpus[1]:
        s, t = source.split(), target.split()
        assert len(t) == len(s) == len(alignment) and sorted(alignment) == list(range(len(s)))
        assert all(t[j] == tr.LEXICON[s[alignment[j]]] for j in range(len(t)))
        assert t[-1] in tr.VERBS.values()  # the verb last
        for j, i in enumerate(alignment):  # an adjective right after its noun
            if s[i] in tr.ADJECTIVES:
                assert s[alignment[j - 1]] in tr.NOUNS and alignment[j - 1] == i + 1
    assert al.translate_by_rule("a small fox calls the tall king") == (
        "un vulpo peti lo rego alta vokas", [0, 2, 1, 4, 6, 5, 3])
    assert al.translate_by_rule("the dog sees a cat") == ("lo kanu un miro vidas",
                                                         [0, 1, 3, 4, 2])


def test_held_out_combinations_never_occur_in_training(corpus):
    train, test = corpus
    held = set(al.translation_held_out_pairs())
    assert len(held) == 12 and len(train) == 8000 and len(test) == 1000
    seen = set().union(*(_adjective_noun_pairs(s) for s, _, _ in train))
    assert not seen & held
    assert {a for a, _ in seen} == set(tr.ADJECTIVES) and {n for _, n in seen} == set(tr.NOUNS)
    assert all(_adjective_noun_pairs(s) & held for s, _, _ in test)
    sources = [s for s, _, _ in train + test]
    assert len(set(sources)) == len(sources)  # every sentence once
    assert al.translation_examples("test") == test
    with pytest.raises(ValueError, match="split='valid'"):
        al.translation_examples("valid")


# ---------------------------------------------------------------- the model

def test_every_gradient_matches_central_differences(corpus):
    model = al.init_translation_model(TINY, seed=2, std=0.7)
    examples = corpus[0][:3] + [("the dog sees a cat", "lo kanu un miro vidas", None)]
    batch = model.encode(examples)
    loss, grads = al.translation_loss_and_grads(model.params, TINY, batch)
    fd = central_differences(lambda p: al.translation_loss_and_grads(p, TINY, batch)[0],
                             model.params)
    for name in [n for n in fd if n.endswith(("attn.b_k", "cross.b_k"))]:
        assert np.abs(grads.pop(name)).max() < 1e-12 and np.abs(fd.pop(name)).max() < 1e-7
    unused_src = [i for i, w in enumerate(tr.vocabularies()[0])
                  if not any(w in e[0].split() for e in examples)]
    assert np.all(grads["enc.wte"][unused_src] == 0)
    # rows of words the batch never reads or predicts still get the softmax's gradient
    assert_gradients_match(grads, fd, tol=1e-7)
    # the loss is the mean over target words and end marks: a loop written here
    logits = _logits(model, examples)
    nll = []
    vocab = tr.vocabularies()[1]
    for b, (_, target, _) in enumerate(examples):
        wanted = [vocab.index(w) for w in target.split()] + [vocab.index(tr.EOS)]
        for j, y in enumerate(wanted):
            z = logits[b, j]
            nll.append(np.log(np.exp(z - z.max()).sum()) + z.max() - z[y])
    assert loss == pytest.approx(np.mean(nll), rel=1e-12)


def _logits(model, examples):
    from attention_lib.training.translation import _forward

    return _forward(model.params, model.configs, model.encode(examples))[0]


def test_greedy_decoding_is_the_argmax_again_and_again():
    model = al.init_translation_model(seed=3, std=0.8)
    vocab = tr.vocabularies()[1]
    sources = ["the big dog sees a cat", "a fox likes the tall king", "the bird finds a horse"]
    said = model.translate_many(sources)
    for source, out in zip(sources, said, strict=True):
        words = []
        for _ in range(7):  # a loop over steps, each a full pass on the words so far
            target = " ".join(words) if words else None
            logits = _logits(model, [(source, target or "lo", None)])[0]
            step = logits[len(words)]
            candidates = range(vocab.index(tr.EOS), len(vocab))  # words and the end mark
            best = vocab[max(candidates, key=lambda i: step[i])]
            if best == tr.EOS:
                break
            words.append(best)
        assert out == " ".join(words)
        assert model.translate(source) == out
        # the same steps through next_word_probabilities
        steps = []
        while len(steps) < 7:
            p = model.next_word_probabilities(source, " ".join(steps))
            assert set(p) == set(vocab[vocab.index(tr.EOS):])
            assert sum(p.values()) == pytest.approx(1.0, abs=1e-12)
            best = max(p, key=p.get)
            if best == tr.EOS:
                break
            steps.append(best)
        assert " ".join(steps) == out
    with pytest.raises(ValueError, match="at most 6"):
        model.next_word_probabilities(sources[0], "lo lo lo lo lo lo lo")


def test_cross_attention_rows_are_the_positions_that_predict_each_word():
    model = al.init_translation_model(seed=4, std=0.5)
    source, target = "the big dog sees a cat", "lo kanu gran un miro vidas"
    w = model.cross_attention(source, target)
    assert w.shape == (2, 2, 6, 6)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    longer = model.cross_attention_many([(source, target), ("a fox likes the tall king",
                                                            "un vulpo lo rego alta amas")])
    np.testing.assert_allclose(longer[0], w, rtol=1e-12, atol=1e-15)
    # the row that predicts word j reads words < j only: the later words do not change it
    cut = model.cross_attention(source, "lo kanu gran")
    np.testing.assert_allclose(cut, w[:, :, :3], rtol=1e-12, atol=1e-15)
    # a removed head of the last layer leaves the weights but changes the translation
    off = np.array([[1, 1], [0, 1]])
    np.testing.assert_allclose(model.cross_attention(source, target, cross_head_mask=off),
                               w, rtol=1e-12)
    probs = _logits(model, [(source, target, None)])
    assert probs.shape == (1, 7, DEC.vocab_size)


def test_bad_input_is_refused():
    model = al.init_translation_model()
    with pytest.raises(ValueError, match="does not know.*'dragon'"):
        model.translate("the dragon sees a cat")
    with pytest.raises(ValueError, match="8 words; expected 1 to 7"):
        model.translate("the big dog sees a big red cat")
    with pytest.raises(TypeError, match="expected a str"):
        model.translate(3)
    with pytest.raises(ValueError, match="d_model"):
        al.init_translation_model((al.GPTConfig(23, 7, 8, 1, 2, causal=False),
                                   al.GPTConfig(25, 8, 4, 1, 2, cross_attention=True)))
    with pytest.raises(ValueError, match="the encoder's config has causal=True"):
        al.init_translation_model((al.GPTConfig(23, 7, 4, 1, 2),
                                   al.GPTConfig(25, 8, 4, 1, 2, cross_attention=True)))
    with pytest.raises(ValueError, match="cross_head_mask|head_mask"):
        model.translate("the dog sees a cat", cross_head_mask=np.ones(3))


def test_training_is_seeded_and_learns_to_translate(corpus):
    a = al.train_translation_model(seed=0, steps=4)
    b = al.train_translation_model(seed=0, steps=4)
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    assert all(np.array_equal(v.astype(np.float32), v) for v in a.params.values())
    short = al.train_translation_model(seed=0, steps=300)
    assert short.log["train_loss"][0] > 2.5 and short.log["train_loss"][-50:].mean() < 0.05
    assert short.exact_match(corpus[1][:300]) > 0.9  # sentences with unseen combinations
