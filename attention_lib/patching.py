r"""Activation patching: where the coreference encoder carries its decision.

:func:`coreference_patching` runs the coreference encoder on a sentence whose adjective
names the other referent and puts back, one site at a time, what the model computed on the
original sentence: one head's output, or the residual stream at one position (activation
patching; Meng et al., 2022, "Locating and Editing Factual Associations in GPT"; Wang et
al., 2023, "Interpretability in the Wild"). How much of the answer comes back says where the
decision is carried. :func:`coreference_minimal_pairs` gives the sentence pairs: twins that
differ in the adjective alone. The readings from the weights and of each layer's prediction
are in :mod:`attention_lib.interpret`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._threads import one_blas_thread
from ._validation import non_empty, positive_int
from .model.hooks import capture_hooks
from .training import coreference as _coref

__all__ = ["CoreferencePatching", "coreference_minimal_pairs", "coreference_patching"]


_SECOND_ADJECTIVES = _coref.PLACE_ADJECTIVES + _coref.AGENT_ADJECTIVES
_VERB_WORDS = frozenset(w for v in _coref.CROSS_VERBS + _coref.CHASE_VERBS for w in v.split())


def _referent(adjective: str) -> int | None:
    """0 if ``adjective`` makes "it" the first noun, 1 if the second, None if it is none of
    the corpus's adjectives."""
    if adjective in _coref.FIRST_ADJECTIVES:
        return 0
    if adjective in _SECOND_ADJECTIVES:
        return 1
    return None


def _twin(sentence: str) -> str:
    """A corpus sentence with its adjective swapped for the one at the same place in the
    list of the other referent."""
    words = sentence.split()
    adjective = words[-1]
    second = _coref.CoreferenceModel.candidates(sentence)[1]
    seconds = _coref.PLACE_ADJECTIVES if second in _coref.PLACES else _coref.AGENT_ADJECTIVES
    if adjective in _coref.FIRST_ADJECTIVES:
        twin = seconds[_coref.FIRST_ADJECTIVES.index(adjective)]
    else:
        twin = _coref.FIRST_ADJECTIVES[seconds.index(adjective)]
    return " ".join([*words[:-1], twin])


def coreference_minimal_pairs(split: str = "test", *, length: int | None = None,
                              ) -> list[tuple[str, str]]:
    """Every sentence of the coreference corpus with its twin: the other adjective, the
    other referent.

    Parameters
    ----------
    split : {"test", "train"}, default "test"
        The held-out sentences or the training ones
        (:func:`~attention_lib.coreference_examples`).
    length : int, optional
        Keep only the sentences of that many words. The corpus has sentences of 11 and of
        12 words ("walk across" and "run across" are two words).

    Returns
    -------
    list of (str, str)
        ``(clean, corrupt)``, one pair per sentence of the split, in the corpus's order:
        the sentence, and the same sentence with another adjective, one that makes "it"
        refer to the other noun. Every other word is the same, at the same place.

    Notes
    -----
    The k-th adjective that makes "it" the first noun (*tired*, *scared*, *weak*, *slow*,
    *sleepy*, *lazy*) goes with the k-th that makes it the second: *wide*, *busy*,
    *long*, ... when the second noun is a place, *fast*, *quick*, *far*, ... when it is an
    animal or a person. So *tired* goes with *wide*, as in the tutorial's two sentences.
    Every sentence is the clean sentence of one pair and the corrupt sentence of its
    twin's, the same pair the other way round; a sentence and its twin are always in the
    same split, which holds out whole pairs of nouns.

    Examples
    --------
    >>> pairs = coreference_minimal_pairs("test")
    >>> len(pairs), len(coreference_minimal_pairs("test", length=11))
    (2448, 1872)
    >>> clean, corrupt = pairs[0]
    >>> clean
    "The animal didn't cross the street because it was too tired"
    >>> corrupt
    "The animal didn't cross the street because it was too wide"
    """
    examples = _coref.coreference_examples(split)
    if length is not None:
        length = positive_int(length, "length")
        examples = [(s, r) for s, r in examples if len(s.split()) == length]
        if not examples:
            raise ValueError(f"length={length}; the corpus's sentences have 11 or 12 words")
    return [(sentence, _twin(sentence)) for sentence, _ in examples]


@dataclass(frozen=True)
class CoreferencePatching:
    """How much of the coreference encoder's answer each patched site restores (the result of
    :func:`coreference_patching`).

    Attributes
    ----------
    heads : numpy.ndarray, shape (n_layers, n_heads)
        Entry ``[l, i]``: the fraction of the logit difference restored by putting back
        the output of head ``i`` of layer ``l`` (site ``"blocks.l.attn.heads"``, that
        head's slice, every position).
    resid : numpy.ndarray, shape (n_layers + 1, T)
        Entry ``[l, j]``: the fraction restored by putting back the residual stream at
        position ``j`` entering block ``l``; the last row, after the last block.
    sites : tuple of str
        The hook site of each row of ``resid``: ``"blocks.0.resid_pre"``, ...,
        ``"blocks.{L-1}.resid_pre"``, ``"blocks.{L-1}.resid_post"``.
    labels : tuple of str
        One per position: the word, where every clean sentence has the same word there;
        else its part, ``"noun 1"``, ``"noun 2"`` or ``"verb"``. The position of the
        adjectives is ``"clean/corrupt"`` (``"tired/wide"``) when every pair has the
        same two, else ``"adjective"``.
    n_pairs : int
    clean_logit_diff, corrupt_logit_diff : float
        The logit difference (the clean sentence's referent minus the other noun) on the
        clean and on the corrupt sentences, each the mean over the pairs.
    """

    heads: np.ndarray
    resid: np.ndarray
    sites: tuple[str, ...]
    labels: tuple[str, ...]
    n_pairs: int
    clean_logit_diff: float
    corrupt_logit_diff: float


def _check_pairs(pairs: Any) -> tuple[list[str], list[str]]:
    """The clean and the corrupt sentences of ``pairs``, each a str."""
    if isinstance(pairs, str) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"pairs={pairs!r}; expected a list of (clean, corrupt) pairs of "
                        "sentences")
    pairs = non_empty(pairs, "pairs", "(clean, corrupt) pair of sentences")
    for n, pair in enumerate(pairs):
        if (isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(s, str) for s in pair)):
            raise TypeError(f"pairs[{n}]={pair!r}; expected a (clean, corrupt) pair of "
                            "sentences, two str (and a list of pairs, even of one)")
    return [c for c, _ in pairs], [d for _, d in pairs]


def _changed_words(cleans: list[str], corrupts: list[str]) -> tuple[np.ndarray, list[int]]:
    """The clean sentences' referents (0: the first noun, 1: the second) and the position
    where each pair differs; a ValueError unless each pair differs in one adjective, with
    the other referent, and all sentences have one length."""
    referents, changed = [], []
    for n, (clean, corrupt) in enumerate(zip(cleans, corrupts, strict=True)):
        a, b = clean.split(), corrupt.split()
        if len(a) != len(b):
            raise ValueError(f"pairs[{n}] has sentences of {len(a)} and {len(b)} words; "
                             "expected two sentences of one length that differ in one word, "
                             "the adjective")
        where = [j for j, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(where) != 1:
            at = f" (positions {where})" if where else ""
            raise ValueError(f"pairs[{n}] differs in {len(where)} words{at}; expected exactly "
                             "one, the adjective that decides the referent")
        j = where[0]
        r_clean, r_corrupt = _referent(a[j]), _referent(b[j])
        if r_clean is None or r_corrupt is None or r_clean == r_corrupt:
            raise ValueError(
                f"pairs[{n}] differs in {a[j]!r} and {b[j]!r}; expected two adjectives of "
                f"different referents: one of {list(_coref.FIRST_ADJECTIVES)} (\"it\" is the "
                f"first noun) and one of {list(_SECOND_ADJECTIVES)} (the second)")
        referents.append(r_clean)
        changed.append(j)
    lengths = [len(c.split()) for c in cleans]
    if len(set(lengths)) > 1:
        other = next(n for n, t in enumerate(lengths) if t != lengths[0])
        raise ValueError(f"pairs has sentences of {lengths[0]} words (pairs[0]) and of "
                         f"{lengths[other]} (pairs[{other}]); expected one length, so that "
                         "the positions line up: patch each length apart, e.g. the pairs of "
                         f"coreference_minimal_pairs(length={lengths[0]})")
    return np.asarray(referents, dtype=np.int64), changed


def _position_labels(cleans: list[str], corrupts: list[str], candidates: np.ndarray,
                     changed: list[int]) -> tuple[str, ...]:
    """A label per position: the common word, or the part the words at it play."""
    words = [c.split() for c in cleans]
    labels = []
    for j in range(len(words[0])):
        column = {w[j] for w in words}
        if all(k == j for k in changed):
            swaps = {(c.split()[j], d.split()[j]) for c, d in zip(cleans, corrupts, strict=True)}
            labels.append("/".join(swaps.pop()) if len(swaps) == 1 else "adjective")
        elif len(column) == 1:
            labels.append(column.pop())
        elif (candidates[:, 0] == j).all():
            labels.append("noun 1")
        elif (candidates[:, 1] == j).all():
            labels.append("noun 2")
        elif column <= _VERB_WORDS:
            labels.append("verb")
        else:
            labels.append(f"word {j}")
    return tuple(labels)


def coreference_patching(model: Any, pairs: Sequence[tuple[str, str]],
                         ) -> CoreferencePatching:
    r"""Where the coreference encoder carries its decision: activation patching, one head
    and one position of the residual stream at a time.

    Parameters
    ----------
    model : CoreferenceModel
        A coreference encoder (:func:`~attention_lib.train_coreference_model`, or
        :func:`~attention_lib.init_coreference_model` for an untrained one).
    pairs : sequence of (str, str)
        ``(clean, corrupt)`` sentences that differ in one word, the adjective, one of each
        referent (*tired* against *wide*), as :func:`coreference_minimal_pairs` gives
        them. Every sentence has the same number of words.

    Returns
    -------
    CoreferencePatching
        ``heads`` (n_layers, n_heads) and ``resid`` (n_layers + 1, T): the fraction of the
        logit difference each patched site restores; the positions' ``labels``, the
        ``n_pairs``, and the mean logit differences of the clean and the corrupt sentences.

    Notes
    -----
    The model scores the two nouns with two logits at "it" and a softmax over those two
    alone (:func:`~attention_lib.coreference_loss_and_grads`), so the difference of the
    two logits is the whole of its answer: with :math:`r` the referent of the clean
    sentence and :math:`o` the other noun,

    .. math::

        \Delta = \ell_r - \ell_o = \log \frac{p(r)}{p(o)},

    large and positive on a clean sentence that the model gets right, negative on its
    corrupt twin. Both sentences have the same nouns at the same places, so the same two
    logits are compared on both.

    The clean sentences run once, and their activations are kept; the corrupt sentences
    run once as they are, and once more for every site with the clean activation put back
    there: the output of one head (at every position), or the residual stream at one
    position, entering a block or leaving the last one. A site restores

    .. math::

        \frac{\bar\Delta_{\text{patched}} - \bar\Delta_{\text{corrupt}}}
             {\bar\Delta_{\text{clean}} - \bar\Delta_{\text{corrupt}}},

    with :math:`\bar\Delta` the mean over the pairs: a ratio of means, not a mean of
    each pair's fraction, because a pair whose two sentences the model scores nearly
    alike would divide by a gap near 0 and its fraction, of any size, would swamp the
    others; the ratio weighs each pair by its gap. 0 means nothing comes back, 1 the
    clean answer; a site may also restore less than 0 or more than 1. NaN if the clean
    and the corrupt mean are equal.

    Two rows of ``resid`` are known in advance. Entering the first block, the two
    sentences differ at the adjective alone, so patching there makes the run the clean
    run (exactly 1) and patching anywhere else changes nothing (exactly 0). Leaving the
    last block, only "it" is read (the final norm acts position by position): 1 there,
    0 elsewhere. The rows between say where the adjective's information is on its way
    to "it". Patching puts a site back in a context that is otherwise corrupt: it finds
    what is enough to bring the answer back, and two sites that each carry the decision
    may each restore only part of it.

    The sentences are not padded: all pairs have one length, so that position ``j``
    is the same word of the frame in every sentence (the corpus's 12-word sentences,
    with "walk across" and "run across", go in a call of their own). The cost is
    :math:`2 + L h + (L + 1) T` forward passes, each of all the pairs at once, in the
    parameters' dtype.

    Examples
    --------
    >>> from attention_lib import init_coreference_model
    >>> model = init_coreference_model(seed=0)  # untrained: the logit differences are small
    >>> result = coreference_patching(model, coreference_minimal_pairs(length=11)[:12])
    >>> result.heads.shape, result.resid.shape, result.n_pairs
    ((2, 2), (3, 11), 12)
    >>> result.labels[5:]
    ('street', 'because', 'it', 'was', 'too', 'adjective')
    >>> bool((result.resid[0, :10] == 0).all()), float(result.resid[0, 10])
    (True, 1.0)
    >>> float(result.resid[-1, 7])  # the position of "it"
    1.0
    """
    if not isinstance(model, _coref.CoreferenceModel):
        raise TypeError(f"model is {type(model).__name__}; expected a CoreferenceModel "
                        "(train_coreference_model or init_coreference_model)")
    cleans, corrupts = _check_pairs(pairs)
    clean_batch, corrupt_batch = model.encode(cleans), model.encode(corrupts)  # known words
    referent, changed = _changed_words(cleans, corrupts)
    config = model.config
    L, h = config.n_layers, config.n_heads
    T = int(clean_batch.lengths[0])
    head_sites = [f"blocks.{layer}.attn.heads" for layer in range(L)]
    resid_sites = [f"blocks.{layer}.resid_pre" for layer in range(L)]
    resid_sites.append(f"blocks.{L - 1}.resid_post")
    rows = np.arange(len(cleans))

    def logit_diff(batch: Any, hooks: Any = None) -> np.ndarray:
        logits = _coref._forward(model.params, config, batch, hooks=hooks)[0]  # (P, 2)
        return logits[rows, referent] - logits[rows, 1 - referent]  # (P,)

    clean_run: dict[str, np.ndarray] = {}
    clean = logit_diff(clean_batch, capture_hooks(clean_run, head_sites + resid_sites)).mean()
    corrupt = logit_diff(corrupt_batch).mean()
    gap = clean - corrupt

    def restored(site: str, where: tuple[slice, int]) -> float:
        source = clean_run[site]

        def patch(a: np.ndarray) -> np.ndarray:
            a = a.copy()
            a[where] = source[where]
            return a

        patched = logit_diff(corrupt_batch, {site: patch}).mean()
        return float((patched - corrupt) / gap) + 0.0 if gap != 0 else np.nan  # no -0.0

    every = slice(None)
    with one_blas_thread():  # products this small only lose time to more BLAS threads
        heads = np.array([[restored(site, (every, i)) for i in range(h)]
                          for site in head_sites])
        resid = np.array([[restored(site, (every, j)) for j in range(T)]
                          for site in resid_sites])
    labels = _position_labels(cleans, corrupts, clean_batch.candidates, changed)
    return CoreferencePatching(heads, resid, tuple(resid_sites), labels, len(cleans),
                               float(clean), float(corrupt))
