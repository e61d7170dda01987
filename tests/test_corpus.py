"""The shipped corpus, its split and the character tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

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
