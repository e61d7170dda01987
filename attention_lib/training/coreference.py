r"""The tutorial's sentence, trained: a bidirectional encoder learns what "it" refers to.

The corpus (:func:`coreference_examples`) is generated around the tutorial's sentence,
"The animal didn't cross the street because it was too tired", in two frames:

- ``The <agent> didn't <cross> the <place> because it was too <adjective>``, with the
  verbs *cross*, *walk across* and *run across*;
- ``The <agent> didn't <chase> the <agent> because it was too <adjective>``, with the
  verbs *chase*, *catch*, *follow* and *pass*, two different agents.

The adjective decides the referent. Six describe the one who did not act (*tired*,
*scared*, *weak*, *slow*, *sleepy*, *lazy*): "it" is the first noun. Six describe a place
that is hard to cross (*wide*, *busy*, *long*, *crowded*, *muddy*, *dark*) and six an
animal or person that is hard to catch (*fast*, *quick*, *far*, *clever*, *big*,
*strong*): "it" is the second noun. Every sentence has a twin that differs in the
adjective alone and has the other referent.

The held-out sentences are those of held-out **noun pairs**: about a quarter of the
ordered (first noun, second noun) pairs of each frame, drawn once from a fixed seed. No
training sentence has a held-out pair in these roles, with any verb or adjective (every
noun and every adjective still occurs in training, in other pairs). In the chasing frame
the two nouns of a held-out pair may occur in training the other way round. The pair
(*animal*, *street*) is held out, so the tutorial's two sentences, with *tired* and with
*wide*, are test sentences.

The model (:func:`train_coreference_model`) is a two-layer encoder, the book's transformer
with ``causal=False`` (:mod:`attention_lib.model`): no causal mask, so "it" sees "tired".
Its output is read at "it": the final layer norm there, times the (tied) embeddings of the
sentence's two nouns, gives two logits; the loss is the cross-entropy of the referent. To
score a noun the model must bring something of that noun into the vector at "it", and
attention is the only way across positions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import permutations, product
from typing import Any

import numpy as np

from .._validation import index, non_empty, one_of, positive_int, positive_scale, sentence_list
from ..attention import scaled_scores
from ..masks import padding_mask
from ..model.config import GPTConfig, check_head_mask, check_params
from ..model.hooks import capture_hooks, head_scale_hooks, merge_hooks
from ..model.loss import cross_entropy
from ..model.params import init_stacks
from ..model.stack import StackRun, stack_backward, stack_forward
from .loop import train_small_model

__all__ = ["CoreferenceModel", "coreference_config", "coreference_examples",
           "coreference_loss_and_grads", "init_coreference_model", "train_coreference_model",
           "trained_coreference_model"]

AGENTS = ("animal", "dog", "cat", "horse", "cow", "fox", "sheep", "goat", "child", "boy",
          "girl", "man")
PLACES = ("street", "road", "bridge", "field", "square", "yard", "park", "track")
CROSS_VERBS = ("cross", "walk across", "run across")
CHASE_VERBS = ("chase", "catch", "follow", "pass")
#: Adjectives that make "it" the first noun, and those that make it the second.
FIRST_ADJECTIVES = ("tired", "scared", "weak", "slow", "sleepy", "lazy")
PLACE_ADJECTIVES = ("wide", "busy", "long", "crowded", "muddy", "dark")
AGENT_ADJECTIVES = ("fast", "quick", "far", "clever", "big", "strong")
FRAME = "The {first} didn't {verb} the {second} because it was too {adjective}"
#: The tutorial's two sentences, word for word.
TUTORIAL = ("The animal didn't cross the street because it was too tired",
            "The animal didn't cross the street because it was too wide")

HELD_OUT_SHARE = 0.25
CORPUS_SEED = 2017  # draws the held-out noun pairs, once for every model
PAD = "<pad>"

# The model of the book.
D_MODEL, N_LAYERS, N_HEADS, D_FF = 32, 2, 2, 64
INIT_STD = 0.1
STEPS = 1500


def _held_out_pairs(pairs: list[tuple[str, str]], rng: np.random.Generator,
                    keep: tuple[str, str] | None) -> set[tuple[str, str]]:
    """About a quarter of ``pairs``, with ``keep`` among them, such that every first noun and
    every second noun keeps at least two training partners."""
    n = round(HELD_OUT_SHARE * len(pairs))
    order = [pairs[i] for i in rng.permutation(len(pairs))]
    if keep is not None:
        order.remove(keep)
        order.insert(0, keep)
    held: set[tuple[str, str]] = set()
    for pair in order:
        if len(held) == n:
            break
        left = [p for p in pairs if p not in held and p != pair]
        if (sum(p[0] == pair[0] for p in left) >= 2 and sum(p[1] == pair[1] for p in left) >= 2):
            held.add(pair)
    return held


@functools.cache  # the corpus is drawn once
def _corpus() -> dict[str, list[tuple[str, str]]]:
    rng = np.random.default_rng(CORPUS_SEED)
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "test": []}
    frames = (
        (list(product(AGENTS, PLACES)), CROSS_VERBS, PLACE_ADJECTIVES, ("animal", "street")),
        (list(permutations(AGENTS, 2)), CHASE_VERBS, AGENT_ADJECTIVES, None),
    )
    for pairs, verbs, second_adjectives, keep in frames:
        held = _held_out_pairs(pairs, rng, keep)
        for (first, second), verb in product(pairs, verbs):
            for adjective in FIRST_ADJECTIVES + second_adjectives:
                referent = first if adjective in FIRST_ADJECTIVES else second
                sentence = FRAME.format(first=first, verb=verb, second=second,
                                        adjective=adjective)
                splits["test" if (first, second) in held else "train"].append(
                    (sentence, referent))
    return splits


def coreference_examples(split: str = "train") -> list[tuple[str, str]]:
    """The generated Winograd-style corpus around the tutorial's sentence.

    Parameters
    ----------
    split : {"train", "test"}
        The training sentences, or the held-out ones: every sentence of a held-out pair of
        nouns (see the module's notes; the tutorial's two sentences are among them).

    Returns
    -------
    list of (str, str)
        ``(sentence, referent)``: the sentence, words separated by single spaces
        (``"didn't"`` is one word), and the noun "it" refers to. The same list every time.

    Examples
    --------
    >>> train, test = coreference_examples("train"), coreference_examples("test")
    >>> len(train), len(test)
    (7344, 2448)
    >>> ("The animal didn't cross the street because it was too wide", "street") in test
    True
    """
    split = one_of(split, "split", ("train", "test"))
    return list(_corpus()[split])


def _vocabulary() -> tuple[str, ...]:
    words = {w for s, _ in coreference_examples("train") + coreference_examples("test")
             for w in s.split(" ")}
    return (PAD, *sorted(words))


NOUNS = frozenset(AGENTS + PLACES)


@dataclass(frozen=True)
class CoreferenceBatch:
    """Encoded sentences (int64 arrays, padded): what the loss reads."""

    tokens: np.ndarray  # (B, T) word ids, PAD after the end
    lengths: np.ndarray  # (B,)
    it: np.ndarray  # (B,) position of "it"
    candidates: np.ndarray  # (B, 2) positions of the two nouns, in sentence order
    target: np.ndarray  # (B,) 0 or 1: which candidate is the referent

    def subset(self, index: Any) -> CoreferenceBatch:
        return CoreferenceBatch(self.tokens[index], self.lengths[index], self.it[index],
                                self.candidates[index], self.target[index])


def _encode(vocabulary: Sequence[str], examples: Sequence[tuple[str, str | None]],
            context: int) -> CoreferenceBatch:
    ids = {w: i for i, w in enumerate(vocabulary)}
    n = len(examples)
    tokens = np.zeros((n, context), dtype=np.int64)
    lengths, it = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    candidates, target = np.zeros((n, 2), dtype=np.int64), np.zeros(n, dtype=np.int64)
    for b, (sentence, referent) in enumerate(examples):
        words = _words(sentence, ids, context)
        nouns = [j for j, w in enumerate(words) if w in NOUNS]
        if words.count("it") != 1 or len(nouns) != 2 or words[nouns[0]] == words[nouns[1]]:
            raise ValueError(f"sentence={sentence!r}; expected one 'it' and two different "
                             f"nouns among {sorted(NOUNS)}")
        tokens[b, :len(words)] = [ids[w] for w in words]
        lengths[b], it[b] = len(words), words.index("it")
        candidates[b] = nouns
        if referent is not None:
            if referent not in (words[nouns[0]], words[nouns[1]]):
                raise ValueError(f"referent={referent!r} is not a noun of {sentence!r}")
            target[b] = int(referent == words[nouns[1]])
    return CoreferenceBatch(tokens, lengths, it, candidates, target)


def _words(sentence: Any, ids: dict[str, int], context: int) -> list[str]:
    if not isinstance(sentence, str):
        raise TypeError(f"sentence={sentence!r}; expected a str of words separated by spaces")
    words = sentence.split()
    unknown = [w for w in words if w not in ids or w == PAD]
    if unknown:
        raise ValueError(f"sentence={sentence!r} has words the model does not know: {unknown}")
    if not 1 <= len(words) <= context:
        raise ValueError(f"sentence={sentence!r} has {len(words)} words; expected 1 to "
                         f"{context}")
    return words


def _forward(params: dict[str, np.ndarray], config: GPTConfig, batch: CoreferenceBatch, *,
             keep: bool = False, hooks: Any = None,
             ) -> tuple[np.ndarray, StackRun, np.ndarray, np.ndarray]:
    """The two nouns' logits at "it" (B, 2), the encoder's run, its tokens and the nouns' ids.

    The encoder reads the sentences (padding hidden from every query); its tied read-out at
    "it", restricted to the sentence's two nouns, gives the two logits.
    """
    T = int(batch.lengths.max())
    tokens = batch.tokens[:, :T]
    rows = np.arange(len(batch.it))[:, None]  # (B, 1)
    key_mask = padding_mask(batch.lengths, T)[:, None, None, :]  # (B, 1, 1, T)
    run = stack_forward(params, config, tokens, key_mask=key_mask, hooks=hooks, keep=keep)
    cand_ids = tokens[rows, batch.candidates]  # (B, 2) the nouns' word ids
    return run.out[rows, batch.it[:, None], cand_ids], run, tokens, cand_ids


def coreference_loss_and_grads(params: dict[str, np.ndarray], config: GPTConfig,
                               batch: CoreferenceBatch) -> tuple[float, dict[str, np.ndarray]]:
    r"""The mean cross-entropy of the referents and its gradient for every parameter.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        The encoder's parameters (the GPT's names, :func:`~attention_lib.gpt_parameter_shapes`
        of ``config``).
    config : GPTConfig
    batch : CoreferenceBatch
        Encoded sentences (:meth:`CoreferenceModel.encode`).

    Returns
    -------
    loss : float
    grads : dict of str to numpy.ndarray

    Notes
    -----
    With :math:`h` the final layer norm at "it" and :math:`e_1, e_2` the embeddings of the
    two nouns, the logits are :math:`\ell_c = h \cdot e_c`. The gradient runs back from
    :math:`d\ell = \operatorname{softmax}(\ell) - \text{onehot}(y)` (over the batch's mean)
    to :math:`dh = \sum_c d\ell_c\, e_c` at the position of "it" (zero elsewhere), then
    through the encoder; the two nouns' embedding rows also get :math:`d\ell_c\, h` from
    the output side. It is the cross-entropy of the tied read-out at "it" with the softmax
    restricted to the two nouns (``attention_lib.model.loss``), so the encoder's own
    backward pass computes all of it.
    """
    _, run, tokens, cand_ids = _forward(params, config, batch, keep=True)
    rows = np.arange(len(batch.it))
    targets = np.zeros(tokens.shape, dtype=np.int64)  # (B, T): only "it" has a target
    targets[rows, batch.it] = cand_ids[rows, batch.target]
    valid = np.zeros(tokens.shape, dtype=bool)
    valid[rows, batch.it] = True
    allowed = np.zeros((len(rows), 1, config.vocab_size), dtype=bool)  # (B, 1, V)
    allowed[rows[:, None], 0, cand_ids] = True  # the softmax runs over the two nouns
    loss, d_logits = cross_entropy(run.out, targets, valid, allowed)  # (B, T, V)
    grads = {name: np.zeros_like(a) for name, a in params.items()}
    stack_backward(d_logits, run.saved, params, config, tokens, grads)
    return loss, grads


@dataclass
class CoreferenceModel:
    """A coreference encoder: what "it" refers to, and where "it" looks.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        float64 parameters with the GPT's names (:func:`~attention_lib.gpt_parameter_shapes`
        of ``config``).
    config : GPTConfig
        The encoder's sizes (its ``context`` is the longest sentence, 12 words).
    vocabulary : tuple of str
        The words; entry 0 is the padding.
    log : dict
        After training: ``"train_loss"`` (one per step), ``"settings"`` and ``"seconds"``
        (wall clock, depends on the machine).

    Notes
    -----
    Layers and heads are numbered from 0 in the arguments (``head_mask[l, i]``,
    ``force=(l, i, ...)``) and in the arrays returned.
    """

    params: dict[str, np.ndarray]
    config: GPTConfig
    vocabulary: tuple[str, ...]
    log: dict[str, Any] = field(default_factory=dict)

    def encode(self, examples: Sequence[tuple[str, str | None]] | Sequence[str]
               ) -> CoreferenceBatch:
        """Sentences (or ``(sentence, referent)`` pairs) as padded word ids, as
        :func:`coreference_loss_and_grads` reads them."""
        pairs = [(e, None) if isinstance(e, str) else e for e in examples]
        return _encode(self.vocabulary, pairs, self.config.context)

    @staticmethod
    def candidates(sentence: str) -> tuple[str, str]:
        """The sentence's two nouns, in order: the words "it" may refer to.

        Examples
        --------
        >>> CoreferenceModel.candidates(TUTORIAL[1])
        ('animal', 'street')
        """
        nouns = [w for w in str(sentence).split() if w in NOUNS]
        if len(nouns) != 2:
            raise ValueError(f"sentence={sentence!r} has nouns {nouns}; expected two")
        return nouns[0], nouns[1]

    def _force(self, batch: CoreferenceBatch, force: Any) -> dict[str, Any] | None:
        """A hook that puts all of a head's weight from "it" on a given word, or None."""
        if force is None:
            return None
        if not (isinstance(force, tuple) and len(force) == 3):
            raise TypeError(f"force={force!r}; expected (layer, head, words): a word of each "
                            "sentence (a str for one sentence)")
        layer = index(force[0], self.config.n_layers, "force's layer")
        head = index(force[1], self.config.n_heads, "force's head")
        words = [force[2]] if isinstance(force[2], str) else list(force[2])
        if len(words) != len(batch.it):
            raise ValueError(f"force names {len(words)} words for {len(batch.it)} sentences; "
                             "expected one per sentence")
        pos = []
        for b, w in enumerate(words):
            row = [self.vocabulary[t] for t in batch.tokens[b, :batch.lengths[b]]]
            if row.count(w) != 1:
                raise ValueError(f"force's word {w!r} occurs {row.count(w)} times in sentence "
                                 f"{b}; expected a word that occurs once")
            pos.append(row.index(w))
        rows = np.arange(len(batch.it))

        def forced(w: np.ndarray) -> np.ndarray:
            w = w.copy()
            w[rows, head, batch.it, :] = 0.0  # the row of "it" in that head ...
            w[rows, head, batch.it, pos] = 1.0  # ... all on the forced word
            return w

        return {f"blocks.{layer}.attn.weights": forced}

    def _run(self, sentences: Sequence[str], head_mask: Any, force: Any
             ) -> tuple[np.ndarray, list[np.ndarray], CoreferenceBatch]:
        batch = self.encode(sentence_list(sentences, "sentences", "the methods without _many"))
        mask = check_head_mask(head_mask, self.config, np.dtype(np.float64))
        hooks = merge_hooks(None if mask is None else head_scale_hooks(mask),
                            self._force(batch, force))
        logits, run, _, _ = _forward(self.params, self.config, batch, hooks=hooks)
        return logits, run.weights, batch

    def probabilities(self, sentences: Sequence[str], *, head_mask: Any = None,
                      force: Any = None) -> np.ndarray:
        """The probability of each of the two nouns (in sentence order), shape (B, 2).

        Parameters
        ----------
        sentences : sequence of str
        head_mask : array_like, shape (n_layers, n_heads), optional
            Multiplies each head's output: 0 removes the head (an ablation).
        force : (int, int, str or list of str), optional
            ``(layer, head, words)``: that head's weights from "it" are replaced by 1 on the
            given word of each sentence (a word that occurs once) and 0 elsewhere; the
            model runs on from there (the later layers see the change).
        """
        logits, _, _ = self._run(sentences, head_mask, force)
        z = logits - logits.max(axis=-1, keepdims=True)
        return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)

    def predict_many(self, sentences: Sequence[str], *, head_mask: Any = None,
                     force: Any = None) -> list[str]:
        """The referent the model names for each sentence (arguments of
        :meth:`probabilities`)."""
        sentences = sentence_list(sentences, "sentences", "the methods without _many")
        p = self.probabilities(sentences, head_mask=head_mask, force=force)
        return [self.candidates(s)[int(row[1] > row[0])]
                for s, row in zip(sentences, p, strict=True)]

    def predict(self, sentence: str, *, head_mask: Any = None, force: Any = None) -> str:
        """The noun the model says "it" refers to.

        Examples
        --------
        >>> model = init_coreference_model(seed=0)  # untrained: a guess
        >>> model.predict("The dog didn't chase the cat because it was too fast") in ("dog", "cat")
        True
        """
        return self.predict_many([sentence], head_mask=head_mask, force=force)[0]

    def accuracy(self, examples: Sequence[tuple[str, str]], *, head_mask: Any = None,
                 force: Any = None) -> float:
        """The share of ``(sentence, referent)`` pairs the model answers right."""
        examples = non_empty(examples, "examples", "(sentence, referent) pair")
        said = self.predict_many([s for s, _ in examples], head_mask=head_mask, force=force)
        return float(np.mean([p == r for p, (_, r) in zip(said, examples, strict=True)]))

    def it_weights_many(self, sentences: Sequence[str], *, head_mask: Any = None,
                        force: Any = None) -> list[np.ndarray]:
        """:meth:`it_weights` of each sentence, computed together."""
        _, weights, batch = self._run(sentences, head_mask, force)
        w = np.stack(weights, axis=1)  # (B, L, h, T, T)
        return [w[b, :, :, batch.it[b], :batch.lengths[b]] for b in range(len(batch.it))]

    def it_weights(self, sentence: str, *, head_mask: Any = None,
                   force: Any = None) -> np.ndarray:
        """The attention weights from "it", shape (n_layers, n_heads, n_words).

        Entry ``[l, i, j]`` is the weight head ``i`` of layer ``l`` puts on word ``j`` of
        the sentence (its whitespace-separated words); each row sums to 1.

        Examples
        --------
        >>> w = init_coreference_model().it_weights(TUTORIAL[0])
        >>> w.shape, bool(np.allclose(w.sum(axis=-1), 1.0))
        ((2, 2, 11), True)
        """
        return self.it_weights_many([sentence], head_mask=head_mask, force=force)[0]

    def it_scores(self, sentence: str) -> np.ndarray:
        r"""The scores from "it" before the softmax, shape (n_layers, n_heads, n_words).

        Entry ``[l, i, j]`` is :math:`\mathbf q \cdot \mathbf k_j / \sqrt{d_k}` of head
        ``i`` of layer ``l``, with the query of "it": :meth:`it_weights` is their softmax.
        """
        batch = self.encode([sentence])
        seen: dict[str, np.ndarray] = {}
        sites = [f"blocks.{layer}.attn.{m}" for layer in range(self.config.n_layers)
                 for m in "qk"]
        _forward(self.params, self.config, batch, hooks=capture_hooks(seen, sites))
        it = int(batch.it[0])
        rows = []
        for layer in range(self.config.n_layers):
            q, k = seen[f"blocks.{layer}.attn.q"], seen[f"blocks.{layer}.attn.k"]  # (1, h, T, e)
            rows.append(scaled_scores(q[0, :, it:it + 1], k[0])[:, 0])  # (h, T)
        return np.stack(rows)


def coreference_config() -> GPTConfig:
    """The book's encoder: the corpus's vocabulary, 12 positions (the longest sentence),
    ``d_model`` 32, 2 layers of 2 heads, a feed-forward width of 64, learned positions, no
    causal mask (every word sees every other).

    Examples
    --------
    >>> config = coreference_config()
    >>> config.vocab_size, config.context, config.n_layers, config.n_heads
    (54, 12, 2, 2)
    """
    return GPTConfig(vocab_size=len(_vocabulary()), context=12, d_model=D_MODEL,
                     n_layers=N_LAYERS, n_heads=N_HEADS, d_ff=D_FF, causal=False)


def init_coreference_model(config: GPTConfig | None = None, seed: int = 0, *,
                           std: float = INIT_STD) -> CoreferenceModel:
    """An untrained coreference encoder: fresh float64 weights drawn from ``seed``.

    Parameters
    ----------
    config : GPTConfig, optional
        The encoder's sizes; by default :func:`coreference_config`. Its vocabulary size and
        context must be the corpus's (54 words, 12 positions), with ``causal=False``.
    seed : int, default 0
    std : float, default 0.1
        Standard deviation of the weight matrices and embeddings (see
        :func:`~attention_lib.init_gpt`: gammas 1, biases 0, the projections into the
        residual stream smaller).

    Examples
    --------
    >>> model = init_coreference_model()
    >>> model.params["wte"].shape
    (54, 32)
    """
    config = coreference_config() if config is None else config
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    default = coreference_config()
    if (config.vocab_size, config.context, config.positions) != (
            default.vocab_size, default.context, "learned") or not config.tie_embeddings:
        raise ValueError(f"config has vocab_size={config.vocab_size}, context={config.context}, "
                         f"positions={config.positions!r}, tie_embeddings="
                         f"{config.tie_embeddings}; expected {default.vocab_size}, "
                         f"{default.context}, 'learned' and True (the corpus's words)")
    if config.attention_only or config.causal or config.cross_attention:
        raise ValueError(f"config has attention_only={config.attention_only}, causal="
                         f"{config.causal}, cross_attention={config.cross_attention}; expected "
                         "an encoder: blocks with feed-forward networks, causal=False (\"it\" "
                         "sees the words after it), no cross-attention")
    seed = positive_int(seed, "seed", minimum=0)
    std = positive_scale(std, "std")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    return CoreferenceModel(init_stacks([(config, "")], rng, std=std), config, _vocabulary())


def train_coreference_model(seed: int = 0, *, steps: int = STEPS,
                            progress: bool = False) -> CoreferenceModel:
    r"""Train the book's coreference encoder on the training sentences.

    Parameters
    ----------
    seed : int, default 0
        Seeds the initial weights and the minibatches (the corpus and its split are fixed).
    steps : int, default 1500
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    CoreferenceModel
        Its weights rounded to float32 numbers at the end (kept as float64 arrays, computed
        in float64), so that a page can receive them exactly in four bytes each.

    Notes
    -----
    The encoder of :func:`coreference_config` (about 19,000 parameters) starts from
    :func:`init_coreference_model`. Each step draws 64 training sentences and follows the
    gradient of :func:`coreference_loss_and_grads` with AdamW (learning rate
    :math:`3\cdot10^{-3}` after 100 warm-up steps, cosine decay to :math:`3\cdot10^{-4}`,
    weight decay 0.01, clipping at norm 1), in float64, on the one training loop
    (``attention_lib.model.train.train_scheduled``), with one BLAS thread. The
    training loss falls below 0.01 within about 300 steps.

    Examples
    --------
    >>> model = train_coreference_model(steps=2)
    >>> len(model.log["train_loss"]), model.predict(TUTORIAL[0]) in ("animal", "street")
    (2, True)
    """
    model = init_coreference_model(seed=positive_int(seed, "seed", minimum=0))
    config = model.config
    train = model.encode(coreference_examples("train"))
    params, log = train_small_model(
        model.params, lambda p, batch: coreference_loss_and_grads(p, config, batch), train,
        len(train.it), seed=seed, steps=steps, progress=progress,
        settings={"config": config.as_dict(), "init_std": INIT_STD})
    return CoreferenceModel(params, config, model.vocabulary, log)


MODEL_FILE = "coreference_model.npz"


def trained_coreference_model() -> CoreferenceModel:
    r"""Chapter 21's encoder as trained there (seed 0), read from the package's data.

    ``attention_lib/data/coreference_model.npz`` holds the weights that
    ``train_coreference_model(seed=0)`` returns (float32 numbers, as that function rounds
    them) and its training loss at every step, written by ``tools/coreference_model.py``.
    Chapter 21 trains the model in the page and checks that its weights are these; later
    chapters read them instead of training again.

    Returns
    -------
    CoreferenceModel
        float64 weights checked against :func:`coreference_config`; ``log`` holds
        ``"train_loss"`` (one per step).

    Examples
    --------
    >>> model = trained_coreference_model()
    >>> model.predict("The animal didn't cross the street because it was too tired")
    'animal'
    """
    import io
    from importlib import resources

    data = resources.files("attention_lib").joinpath("data", MODEL_FILE).read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        stored = {name: arrays[name] for name in arrays.files}
    train_loss = stored.pop("log.train_loss", None)
    if train_loss is None or train_loss.ndim != 1:
        raise ValueError(f"{MODEL_FILE}: no training loss (log.train_loss, one per step)")
    params = {name: a.astype(np.float64) for name, a in stored.items()}
    config = coreference_config()
    check_params(params, config)
    return CoreferenceModel(params, config, _vocabulary(),
                            {"train_loss": train_loss.astype(np.float64)})
