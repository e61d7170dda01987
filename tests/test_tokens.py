"""Byte-pair encoding against a slow reference that follows the stated rule step by step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention_lib as al


def reference_bpe(text: str, vocab_size: int) -> tuple[str, list[tuple[int, int]]]:
    """The rule of train_bpe's docstring, with lists and a dict."""
    alphabet = "".join(sorted(set(text)))
    seq = [alphabet.index(ch) for ch in text]
    merges = []
    for new_id in range(len(alphabet), vocab_size):
        counts: dict[tuple[int, int], int] = {}
        for pair in zip(seq[:-1], seq[1:], strict=True):  # overlapping occurrences count
            counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))  # most frequent, then smallest
        merges.append(best)
        seq = reference_merge(seq, best, new_id)
    return alphabet, merges


def reference_merge(seq: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    out, i = [], 0
    while i < len(seq):
        if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def reference_encode(text: str, alphabet: str, merges: list[tuple[int, int]]) -> list[int]:
    seq = [alphabet.index(ch) for ch in text]
    for k, pair in enumerate(merges):
        seq = reference_merge(seq, pair, len(alphabet) + k)
    return seq


TEXTS = st.text(alphabet="abc d\n", min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.integers(min_value=0, max_value=12), TEXTS)
def test_train_bpe_follows_the_rule_and_round_trips(text, extra, other):
    tok = al.train_bpe(text, len(set(text)) + extra)
    alphabet, merges = reference_bpe(text, len(set(text)) + extra)
    assert tok.alphabet == alphabet and tok.merges == merges
    assert tok.vocab_size == len(alphabet) + len(merges)
    assert tok.encode(text) == reference_encode(text, alphabet, merges)
    assert tok.decode(tok.encode(text)) == text
    usable = "".join(ch for ch in other if ch in alphabet)
    assert tok.encode(usable) == reference_encode(usable, alphabet, merges)
    assert tok.decode(tok.encode(usable)) == usable


def test_runs_merge_left_to_right_and_ties_go_to_the_smallest_pair():
    tok = al.train_bpe("aaabdaaabac", 7)
    assert tok.alphabet == "abcd"
    # (a, a) occurs 4 times counting overlaps; then (a, b) and (aa, a) tie at 2: (0, 1) < (4, 0)
    assert tok.merges == [(0, 0), (0, 1), (4, 5)]
    assert [tok.piece(i) for i in tok.encode("aaaa")] == ["aa", "aa"]
    assert [tok.piece(i) for i in tok.encode("aaa")] == ["aa", "a"]


def test_training_stops_when_the_text_is_one_token():
    tok = al.train_bpe("abab", 50)
    assert tok.encode("abab") == [len(tok.alphabet) + len(tok.merges) - 1]
    assert tok.vocab_size < 50


def test_a_long_text_shrinks_and_round_trips():
    text = al.shakespeare_split()[0][:20000]
    tok = al.train_bpe(text, 120)
    ids = tok.encode(text)
    assert tok.vocab_size == 120 and len(ids) < 0.7 * len(text)
    assert tok.decode(ids) == text


def test_bad_input_gets_a_clear_error():
    tok = al.train_bpe("hello", 6)
    with pytest.raises(ValueError, match=r"characters not in the training text: \['z'\]"):
        tok.encode("hez")
    with pytest.raises(ValueError, match="smaller than the text's 4 distinct characters"):
        al.train_bpe("hello", 3)
    with pytest.raises(ValueError, match="text is empty"):
        al.train_bpe("", 3)
    with pytest.raises(TypeError, match="expected a str"):
        al.train_bpe(b"hello", 6)
    with pytest.raises(ValueError, match="token id 99 is not in"):
        tok.decode([99])


def test_the_sorted_count_gives_the_table_counts_choice(monkeypatch):
    """Large vocabularies count pairs by sorting instead of a table; the merges are the same."""
    import attention_lib.tokens as tokens

    text = "the theme of these three thin threads"
    with_table = al.train_bpe(text, 30).merges
    monkeypatch.setattr(tokens, "_BINCOUNT_LIMIT", 0)
    assert al.train_bpe(text, 30).merges == with_table == reference_bpe(text, 30)[1]
