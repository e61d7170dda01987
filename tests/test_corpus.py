"""The shipped corpus, its split and the character tokenizer."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention_lib as al
from attention_lib.corpus import CharTokenizer, shakespeare_split, shakespeare_text


def test_the_corpus_is_printable_ascii_speeches():
    text = shakespeare_text()
    assert 1_000_000 < len(text) < 1_200_000
    assert set(text) <= {"\n"} | {chr(c) for c in range(32, 127)}
    speeches = text.strip("\n").split("\n\n")
    heads = [s.split("\n", 1)[0] for s in speeches]
    assert all(h.endswith(":") for h in heads)
    assert "Hamlet:" in heads and "Lady Macbeth:" in heads


def test_the_split_is_by_position_at_a_speech():
    train, validation = shakespeare_split()
    assert train + validation == shakespeare_text()
    assert train.endswith("\n\n") and validation.split("\n", 1)[0].endswith(":")
    assert 0.09 < len(validation) / (len(train) + len(validation)) < 0.11
    short_train, short_val = shakespeare_split(0.5)
    assert short_train + short_val == shakespeare_text() and len(short_val) > len(validation)
    for bad in (0, 1.0, -0.1, True):
        with pytest.raises((TypeError, ValueError), match="validation_fraction"):
            shakespeare_split(bad)


def test_each_part_of_the_split_holds_whole_speeches_or_the_fraction_is_refused():
    text = shakespeare_text()
    starts = [0] + [i + 2 for i in range(len(text)) if text.startswith("\n\n", i)]
    last = starts[-1]  # where the last speech starts
    # The smallest fraction whose cut position int(len * (1 - f)) still reaches the last
    # speech's start leaves exactly that speech for validation.
    smallest = (len(text) - last + 2) / len(text)
    train, validation = shakespeare_split(smallest)
    assert (train, validation) == (text[:last], text[last:])
    # The largest fraction below 1 leaves the first speech, and only it, for training.
    train, validation = shakespeare_split(math.nextafter(1.0, 0.0))
    assert (train, validation) == (text[:starts[1]], text[starts[1]:])
    # Smaller fractions would cut after the last speech: refused, never a one-character
    # training part.
    for tiny in (smallest / 2, 1e-9, 5e-324):
        with pytest.raises(ValueError, match=r"^validation_fraction=.* leaves no speech for "
                                             r"validation.*expected a validation_fraction of "
                                             r"at least 0\.00024$"):
            shakespeare_split(tiny)
    assert shakespeare_split(0.00024)[1] == text[last:]  # the fraction the message names works


def test_tokenizer_round_trips_and_refuses_what_it_cannot_map():
    tok = CharTokenizer.from_text(shakespeare_text())
    sample = shakespeare_text()[:5000]
    ids = tok.encode(sample)
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() < tok.vocab_size
    assert tok.decode(ids) == sample
    assert [tok.alphabet[i] for i in ids[:9]] == list("Bernardo:")
    with pytest.raises(ValueError, match="outside the alphabet"):
        tok.encode("caf\u00e9")
    with pytest.raises(ValueError, match="expected indices from 0 to"):
        tok.decode([0, tok.vocab_size])
    with pytest.raises(ValueError, match="not wrapped"):
        tok.decode([-1])
    with pytest.raises(TypeError, match="expected integer indices"):
        tok.decode([0.0])
    assert tok.decode([]) == ""
    with pytest.raises(ValueError, match="twice"):
        CharTokenizer("abca")


def _ngram_loss_by_loops(train, held, V, n, alpha):
    """Count in dicts, position by position."""
    from collections import Counter

    pair, ctx = Counter(), Counter()
    for i in range(n - 1, len(train)):
        c = tuple(train[i - n + 1:i])
        pair[c, train[i]] += 1
        ctx[c] += 1
    total = 0.0
    for i in range(n - 1, len(held)):
        c = tuple(held[i - n + 1:i])
        total -= math.log((pair[c, held[i]] + alpha) / (ctx[c] + alpha * V))
    return total / (len(held) - n + 1)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_ngram_loss_against_counting_by_hand(n):
    rng = np.random.default_rng(n)
    V = 5
    train, held = rng.integers(0, V, 300), rng.integers(0, V, 40)
    for alpha in (0.1, 1.0):
        expected = _ngram_loss_by_loops(list(train), list(held), V, n, alpha)
        assert al.ngram_loss(train, held, V, n=n, alpha=alpha) == pytest.approx(expected,
                                                                                rel=1e-12)


def test_ngram_loss_of_a_uniform_table_is_log_v_and_refusals():
    assert al.ngram_loss([0], [1, 2, 3], 7, n=1, alpha=1e9) == pytest.approx(math.log(7))
    with pytest.raises(ValueError, match="^n=4"):
        al.ngram_loss([0, 1], [0, 1], 2, n=4)
    with pytest.raises(ValueError, match="eval_tokens has 1 tokens"):
        al.ngram_loss([0, 1], [0], 2, n=2)
    with pytest.raises(ValueError, match="^alpha=0"):
        al.ngram_loss([0, 1], [0, 1], 2, alpha=0)
    with pytest.raises(ValueError, match="train_tokens contains"):
        al.ngram_loss([0, 5], [0, 1], 2)
