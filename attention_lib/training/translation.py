r"""Cross-attention that aligns: a tiny encoder-decoder trained on a toy translation.

The corpus (:func:`translation_examples`) pairs English-like sentences,
``<det> [<adjective>] <noun> <verb> <det> [<adjective>] <noun>`` ("the big dog sees a
cat"), with a toy language of invented words whose word order differs in two ways:
adjectives come after their nouns, and the verb comes last ("lo kanu gran un miro
vidas"). Every target word translates one source word, and ``alignment[j]`` is the
position of the source word that target word ``j`` translates; with the reordering the
alignment is not the diagonal.

Held-out **combinations**: a quarter of the (adjective, noun) pairs, drawn once from a
fixed seed, never occur in a training sentence (every adjective and every noun does, with
other partners). Every test sentence contains at least one of them, so it is also a
sentence the model never saw.

The model (:func:`train_translation_model`) is chapter 11's wiring, trained: a
two-layer encoder without a causal mask, and a two-layer decoder whose blocks mask their
self-attention causally and attend across to the encoder's output, both the book's
transformer (:mod:`attention_lib.model`; the decoder's configuration has
``cross_attention=True``). It is trained on the next-word loss of the target with the
right translation as input (teacher forcing), and translates by greedy decoding.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

from .._validation import non_empty, one_of, positive_int, positive_scale, sentence_list
from ..masks import padding_mask
from ..model.config import GPTConfig, check_head_mask
from ..model.hooks import head_scale_hooks
from ..model.loss import cross_entropy
from ..model.params import init_stacks
from ..model.stack import stack_backward, stack_forward
from .loop import train_small_model

__all__ = ["TranslationModel", "init_translation_model", "train_translation_model",
           "translate_by_rule", "translation_configs", "translation_examples",
           "translation_held_out_pairs", "translation_loss_and_grads"]

#: The lexicon: each English word and its word in the toy language.
DETERMINERS = {"the": "lo", "a": "un"}
NOUNS = {"dog": "kanu", "cat": "miro", "bird": "pipo", "horse": "equa", "fox": "vulpo",
         "child": "nino", "farmer": "agro", "king": "rego"}
ADJECTIVES = {"big": "gran", "small": "peti", "tall": "alta", "young": "jova", "red": "ruba",
              "black": "nera"}
VERBS = {"sees": "vidas", "follows": "sekvas", "helps": "helpas", "finds": "trovas",
         "calls": "vokas", "likes": "amas"}
LEXICON = {**DETERMINERS, **NOUNS, **ADJECTIVES, **VERBS}

N_TRAIN, N_TEST = 8000, 1000
HELD_OUT_SHARE = 0.25
CORPUS_SEED = 2014  # draws the held-out pairs and the sentences, once for every model
PAD, BOS, EOS = "<pad>", "<s>", "</s>"

# The model of the book.
D_MODEL, N_LAYERS, N_HEADS, D_FF = 32, 2, 2, 64
SOURCE_CONTEXT, TARGET_CONTEXT = 7, 8  # source words; target words + the start mark
INIT_STD = 0.1
STEPS = 800


def _phrase(det: str, adjective: str | None, noun: str) -> list[str]:
    return [det] + ([adjective] if adjective else []) + [noun]


def translate_by_rule(source: str) -> tuple[str, list[int]]:
    """The gold translation of a source sentence and its alignment (the grammar's rule)."""
    words = source.split()
    verb_at = next(i for i, w in enumerate(words) if w in VERBS)
    order = []
    for lo, hi in ((0, verb_at), (verb_at + 1, len(words))):
        phrase = list(range(lo, hi))  # det [adj] noun
        order += [phrase[0], phrase[-1]] + phrase[1:-1]  # det noun [adj]
    order.append(verb_at)
    return " ".join(LEXICON[words[i]] for i in order), order


def _held_out_pairs(rng: np.random.Generator) -> set[tuple[str, str]]:
    pairs = list(product(ADJECTIVES, NOUNS))
    n = round(HELD_OUT_SHARE * len(pairs))
    held: set[tuple[str, str]] = set()
    for i in rng.permutation(len(pairs)):
        adjective, noun = pairs[i]
        left = [p for p in pairs if p not in held and p != pairs[i]]
        if (sum(p[0] == adjective for p in left) >= 3 and sum(p[1] == noun for p in left) >= 3):
            held.add(pairs[i])
        if len(held) == n:
            break
    return held


def _sentence(rng: np.random.Generator) -> tuple[str, list[tuple[str, str]]]:
    """A random source sentence and its (adjective, noun) pairs."""
    adjectives = [None, *ADJECTIVES]
    words, pairs = [], []
    for slot in range(2):
        det = list(DETERMINERS)[rng.integers(len(DETERMINERS))]
        adjective = adjectives[rng.integers(len(adjectives))]
        noun = list(NOUNS)[rng.integers(len(NOUNS))]
        words += _phrase(det, adjective, noun)
        if adjective:
            pairs.append((adjective, noun))
        if slot == 0:
            words.append(list(VERBS)[rng.integers(len(VERBS))])
    return " ".join(words), pairs


@functools.cache  # the corpus is drawn once
def _corpus() -> dict[str, list[tuple[str, str, list[int]]]]:
    rng = np.random.default_rng(CORPUS_SEED)
    held = _held_out_pairs(rng)
    seen: set[str] = set()
    splits: dict[str, list[tuple[str, str, list[int]]]] = {"train": [], "test": []}
    while len(splits["train"]) < N_TRAIN or len(splits["test"]) < N_TEST:
        source, pairs = _sentence(rng)
        split = "test" if any(p in held for p in pairs) else "train"
        if source in seen or len(splits[split]) == (N_TEST if split == "test" else N_TRAIN):
            continue
        seen.add(source)
        target, alignment = translate_by_rule(source)
        splits[split].append((source, target, alignment))
    return splits


def translation_examples(split: str = "train") -> list[tuple[str, str, list[int]]]:
    """The toy translation corpus.

    Parameters
    ----------
    split : {"train", "test"}
        8,000 training sentences, or 1,000 held-out ones, each with at least one
        (adjective, noun) pair that no training sentence has.

    Returns
    -------
    list of (str, str, list of int)
        ``(source, target, alignment)``: words separated by single spaces, and for each
        target word the position of the source word it translates. The same list every
        time.

    Examples
    --------
    >>> source, target, alignment = translation_examples("train")[0]
    >>> len(target.split()) == len(alignment) == len(source.split())
    True
    >>> translate_by_rule("the big dog sees a cat")
    ('lo kanu gran un miro vidas', [0, 2, 1, 4, 5, 3])
    """
    split = one_of(split, "split", ("train", "test"))
    return [(s, t, list(a)) for s, t, a in _corpus()[split]]


def translation_held_out_pairs() -> list[tuple[str, str]]:
    """The (adjective, noun) pairs no training sentence has, sorted."""
    return sorted(_held_out_pairs(np.random.default_rng(CORPUS_SEED)))


def vocabularies() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The source words (padding first) and the target words (padding, start, end first)."""
    return (PAD, *LEXICON), (PAD, BOS, EOS, *LEXICON.values())


@dataclass(frozen=True)
class TranslationBatch:
    """Encoded sentence pairs (int64, padded)."""

    source: np.ndarray  # (B, S) source word ids
    source_lengths: np.ndarray  # (B,)
    target_in: np.ndarray  # (B, T): the start mark, then the target words
    target_out: np.ndarray  # (B, T): the target words, then the end mark
    target_lengths: np.ndarray  # (B,) target words + 1

    def subset(self, index: Any) -> TranslationBatch:
        return TranslationBatch(self.source[index], self.source_lengths[index],
                                self.target_in[index], self.target_out[index],
                                self.target_lengths[index])


def _ids(words: Sequence[str], vocabulary: dict[str, int], name: str, text: str,
         most: int) -> list[int]:
    unknown = [w for w in words if w not in vocabulary or w in (PAD, BOS, EOS)]
    if unknown:
        raise ValueError(f"{name}={text!r} has words the model does not know: {unknown}")
    if not 1 <= len(words) <= most:
        raise ValueError(f"{name}={text!r} has {len(words)} words; expected 1 to {most}")
    return [vocabulary[w] for w in words]


def _encode(sources: Sequence[str], targets: Sequence[str] | None) -> TranslationBatch:
    src_vocab, tgt_vocab = ({w: i for i, w in enumerate(v)} for v in vocabularies())
    n = len(sources)
    source = np.zeros((n, SOURCE_CONTEXT), dtype=np.int64)
    src_len = np.zeros(n, dtype=np.int64)
    t_in = np.zeros((n, TARGET_CONTEXT), dtype=np.int64)
    t_out = np.zeros((n, TARGET_CONTEXT), dtype=np.int64)
    t_len = np.ones(n, dtype=np.int64)
    for b, text in enumerate(sources):
        if not isinstance(text, str):
            raise TypeError(f"source={text!r}; expected a str of words separated by spaces")
        ids = _ids(text.split(), src_vocab, "source", text, SOURCE_CONTEXT)
        source[b, :len(ids)], src_len[b] = ids, len(ids)
        t_in[b, 0] = tgt_vocab[BOS]
        if targets is not None:
            if not isinstance(targets[b], str):
                raise TypeError(f"target={targets[b]!r}; expected a str")
            ids = _ids(targets[b].split(), tgt_vocab, "target", targets[b], TARGET_CONTEXT - 1)
            t_in[b, 1:len(ids) + 1] = ids
            t_out[b, :len(ids)] = ids
            t_out[b, len(ids)] = tgt_vocab[EOS]
            t_len[b] = len(ids) + 1
    return TranslationBatch(source, src_len, t_in, t_out, t_len)


def _forward(params: dict[str, np.ndarray], configs: tuple[GPTConfig, GPTConfig],
             batch: TranslationBatch, *, keep: bool = False, hooks: Any = None,
             ) -> tuple[np.ndarray, list, Any]:
    """Logits (B, T, V) and the cross-attention weights of every decoder layer."""
    enc, dec = configs
    S, T = int(batch.source_lengths.max()), int(batch.target_lengths.max())
    src, t_in = batch.source[:, :S], batch.target_in[:, :T]
    mask = padding_mask(batch.source_lengths, S)[:, None, None, :]  # (B, 1, 1, S)
    encoded = stack_forward(params, enc, src, prefix="enc.", key_mask=mask, keep=keep,
                            readout=False)  # the memory, (B, S, d)
    decoded = stack_forward(params, dec, t_in, prefix="dec.", memory=encoded.out,
                            memory_mask=mask, keep=keep, hooks=hooks)
    return decoded.out, decoded.cross_weights, (encoded, decoded, src, t_in)


def translation_loss_and_grads(params: dict[str, np.ndarray],
                               configs: tuple[GPTConfig, GPTConfig],
                               batch: TranslationBatch) -> tuple[float, dict[str, np.ndarray]]:
    r"""The mean next-word cross-entropy of the targets and every parameter's gradient.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        The encoder's (``"enc."``) and the decoder's (``"dec."``) parameters.
    configs : (GPTConfig, GPTConfig)
        The encoder's and the decoder's sizes.
    batch : TranslationBatch

    Returns
    -------
    loss : float
        The mean over every target word and end mark of the batch (padding excluded).
    grads : dict of str to numpy.ndarray

    Notes
    -----
    The decoder's backward returns the gradient of the memory: cross-attention reads the
    memory through its keys and its values, :math:`dM = dK\,W_K^{\mathsf T} +
    dV\,W_V^{\mathsf T}` summed over the decoder's layers, and the encoder's backward
    starts from it.
    """
    enc, dec = configs
    logits, _, (encoded, decoded, src, t_in) = _forward(params, configs, batch, keep=True)
    T = t_in.shape[1]
    valid = np.arange(T) < batch.target_lengths[:, None]  # (B, T): padding does not count
    loss, d_logits = cross_entropy(logits, batch.target_out[:, :T], valid)
    grads = {name: np.zeros_like(a) for name, a in params.items()}
    d_memory = stack_backward(d_logits, decoded.saved, params, dec, t_in, grads,
                              prefix="dec.")
    stack_backward(d_memory, encoded.saved, params, enc, src, grads, prefix="enc.",
                   readout=False)
    return loss, grads


@dataclass
class TranslationModel:
    """A toy translator: greedy translations and the decoder's cross-attention weights.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        float64; the encoder's names start with ``"enc."``, the decoder's with ``"dec."``
        (each block of the decoder has ``ln_x`` and ``cross`` besides the GPT's names).
    configs : (GPTConfig, GPTConfig)
        The encoder's and the decoder's sizes.
    log : dict
        After training: ``"train_loss"`` (one per step), ``"settings"``, ``"seconds"``
        (wall clock, depends on the machine).

    Notes
    -----
    ``cross_head_mask`` (n_layers, n_heads) multiplies each cross-attention head's output:
    0 removes the head (an ablation); layers and heads are numbered from 0.
    """

    params: dict[str, np.ndarray]
    configs: tuple[GPTConfig, GPTConfig]
    log: dict[str, Any] = field(default_factory=dict)

    def encode(self, examples: Sequence[tuple[str, str, Any]]) -> TranslationBatch:
        """``(source, target, ...)`` examples as padded word ids, as
        :func:`translation_loss_and_grads` reads them."""
        examples = list(examples)
        return _encode([e[0] for e in examples], [e[1] for e in examples])

    def _hooks(self, cross_head_mask: Any) -> dict[str, Any] | None:
        """Hooks that scale each cross-attention head's output by ``cross_head_mask``."""
        mask = check_head_mask(cross_head_mask, self.configs[1], np.dtype(np.float64),
                               "cross_head_mask")
        return None if mask is None else head_scale_hooks(mask, sublayer="cross")

    def translate_many(self, sources: Sequence[str], *,
                       cross_head_mask: Any = None) -> list[str]:
        """Greedy decoding of each source sentence: from the start mark, the most probable
        next word (or the end mark), again and again, until the end mark or seven words."""
        batch = _encode(sentence_list(sources, "sources", "translate"), None)
        hooks = self._hooks(cross_head_mask)
        tgt_vocab = vocabularies()[1]
        eos = tgt_vocab.index(EOS)
        t_in = batch.target_in.copy()  # the start mark, then what has been decoded
        done = np.zeros(len(t_in), dtype=bool)
        lengths = np.zeros(len(t_in), dtype=np.int64)
        for step in range(TARGET_CONTEXT - 1):
            partial = TranslationBatch(batch.source, batch.source_lengths, t_in, t_in,
                                       np.full(len(t_in), step + 1))
            logits, _, _ = _forward(self.params, self.configs, partial, hooks=hooks)
            step_logits = logits[:, step].copy()  # (B, V)
            step_logits[:, :eos] = -np.inf  # the padding and the start mark are never targets
            word = step_logits.argmax(axis=-1)  # (B,): the next word of each
            done |= word == eos
            t_in[~done, step + 1] = word[~done]
            lengths[~done] += 1
            if done.all():
                break
        return [" ".join(tgt_vocab[i] for i in t_in[b, 1:lengths[b] + 1])
                for b in range(len(t_in))]

    def next_word_probabilities(self, source: str, prefix: str = "") -> dict[str, float]:
        """The decoder's probability of each possible next word after ``prefix``.

        Parameters
        ----------
        source : str
        prefix : str
            The target words written so far (none at first), at most six.

        Returns
        -------
        dict of str to float
            Every word of the toy language and the end mark ``"</s>"``, with its
            probability (they sum to 1 over these; the padding and the start mark, never
            targets, are left out). Greedy decoding takes the most probable.

        Examples
        --------
        >>> p = init_translation_model().next_word_probabilities("the dog sees a cat")
        >>> len(p), round(sum(p.values()), 6)
        (23, 1.0)
        """
        if not isinstance(prefix, str):
            raise TypeError(f"prefix={prefix!r}; expected a str of target words")
        words = prefix.split()
        if len(words) > TARGET_CONTEXT - 2:
            raise ValueError(f"prefix={prefix!r} has {len(words)} words; expected at most "
                             f"{TARGET_CONTEXT - 2}")
        batch = _encode([source], [prefix] if words else None)
        step = len(words)
        batch = TranslationBatch(batch.source, batch.source_lengths, batch.target_in,
                                 batch.target_in, np.array([step + 1]))
        logits, _, _ = _forward(self.params, self.configs, batch)
        tgt_vocab = vocabularies()[1]
        eos = tgt_vocab.index(EOS)
        z = logits[0, step, eos:]  # the end mark and the words
        p = np.exp(z - z.max())
        p /= p.sum()
        return {w: float(x) for w, x in zip(tgt_vocab[eos:], p, strict=True)}

    def translate(self, source: str, *, cross_head_mask: Any = None) -> str:
        """The greedy translation of one source sentence.

        Examples
        --------
        >>> model = init_translation_model()  # untrained: some words of the toy language
        >>> len(model.translate("the dog sees a cat").split()) <= 7
        True
        """
        return self.translate_many([source], cross_head_mask=cross_head_mask)[0]

    def exact_match(self, examples: Sequence[tuple[str, str, Any]], *,
                    cross_head_mask: Any = None) -> float:
        """The share of ``(source, target, ...)`` examples translated word for word."""
        examples = non_empty(examples, "examples", "(source, target) example")
        said = self.translate_many([e[0] for e in examples], cross_head_mask=cross_head_mask)
        return float(np.mean([s == e[1] for s, e in zip(said, examples, strict=True)]))

    def cross_attention_many(self, examples: Sequence[tuple[str, str, Any]], *,
                             cross_head_mask: Any = None) -> list[np.ndarray]:
        """:meth:`cross_attention` of each ``(source, target, ...)`` example, together."""
        batch = self.encode(non_empty(examples, "examples", "(source, target) example"))
        _, cross, _ = _forward(self.params, self.configs, batch,
                               hooks=self._hooks(cross_head_mask))
        w = np.stack(cross, axis=1)  # (B, L, h, T, S)
        return [w[b, :, :, :batch.target_lengths[b] - 1, :batch.source_lengths[b]]
                for b in range(len(w))]

    def cross_attention(self, source: str, target: str, *,
                        cross_head_mask: Any = None) -> np.ndarray:
        """The decoder's cross-attention weights when it reads ``target`` (teacher forcing).

        Returns
        -------
        numpy.ndarray, shape (n_layers, n_heads, n_target_words, n_source_words)
            Row ``j`` belongs to the decoder position that predicts target word ``j`` (it
            has read the start mark and the target words before ``j``); each row sums to 1
            over the source words.

        Examples
        --------
        >>> w = init_translation_model().cross_attention("the dog sees a cat",
        ...                                               "lo kanu un miro vidas")
        >>> w.shape, bool(np.allclose(w.sum(axis=-1), 1.0))
        ((2, 2, 5, 5), True)
        """
        return self.cross_attention_many([(source, target)],
                                         cross_head_mask=cross_head_mask)[0]


def translation_configs() -> tuple[GPTConfig, GPTConfig]:
    """The encoder's and the decoder's sizes.

    Both: ``d_model`` 32, 2 layers of 2 heads, a feed-forward width of 64, learned
    positions, tied embeddings; the encoder reads up to 7 source words (23 words with the
    padding) without a causal mask, the decoder 8 positions (the start mark and 7 words; 25
    words with the padding and the two marks) with cross-attention to the encoder.

    Examples
    --------
    >>> enc, dec = translation_configs()
    >>> enc.vocab_size, enc.context, dec.vocab_size, dec.context
    (23, 7, 25, 8)
    """
    src, tgt = vocabularies()
    return (GPTConfig(len(src), SOURCE_CONTEXT, D_MODEL, N_LAYERS, N_HEADS, d_ff=D_FF,
                      causal=False),
            GPTConfig(len(tgt), TARGET_CONTEXT, D_MODEL, N_LAYERS, N_HEADS, d_ff=D_FF,
                      cross_attention=True))


def init_translation_model(configs: tuple[GPTConfig, GPTConfig] | None = None,
                           seed: int = 0, *, std: float = INIT_STD) -> TranslationModel:
    """An untrained encoder-decoder: fresh float64 weights drawn from ``seed``.

    Parameters
    ----------
    configs : (GPTConfig, GPTConfig), optional
        The encoder's and the decoder's sizes; by default :func:`translation_configs`.
        Vocabularies and contexts must be those of the corpus; ``d_model`` must agree; the
        encoder has ``causal=False``, the decoder ``cross_attention=True``.
    seed : int, default 0
    std : float, default 0.1
        Standard deviation of the weight matrices and embeddings (as in
        :func:`~attention_lib.init_gpt`).

    Examples
    --------
    >>> model = init_translation_model()
    >>> model.params["dec.blocks.0.cross.w_k"].shape
    (32, 32)
    """
    configs = translation_configs() if configs is None else configs
    default = translation_configs()
    if not (isinstance(configs, tuple) and len(configs) == 2
            and all(isinstance(c, GPTConfig) for c in configs)):
        raise TypeError(f"configs={configs!r}; expected two GPTConfig (encoder, decoder)")
    for name, c, d in zip(("encoder", "decoder"), configs, default, strict=True):
        if ((c.vocab_size, c.context, c.positions, c.tie_embeddings, c.attention_only)
                != (d.vocab_size, d.context, "learned", True, False)):
            raise ValueError(f"the {name}'s config has vocab_size={c.vocab_size}, context="
                             f"{c.context}; expected {d.vocab_size} and {d.context}, learned "
                             "positions, tied embeddings and feed-forward networks")
        if (c.causal, c.cross_attention) != (d.causal, d.cross_attention):
            raise ValueError(f"the {name}'s config has causal={c.causal}, cross_attention="
                             f"{c.cross_attention}; expected {d.causal} and "
                             f"{d.cross_attention} (an encoder sees the whole source; the "
                             "decoder sees the target so far and attends to the encoder)")
    if configs[0].d_model != configs[1].d_model:
        raise ValueError(f"the encoder's d_model={configs[0].d_model} and the decoder's "
                         f"{configs[1].d_model} differ; expected one width (cross-attention "
                         "reads the encoder's output)")
    seed = positive_int(seed, "seed", minimum=0)
    std = positive_scale(std, "std")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    params = init_stacks([(configs[0], "enc."), (configs[1], "dec.")], rng, std=std)
    return TranslationModel(params, configs)


def train_translation_model(seed: int = 0, *, steps: int = STEPS,
                            progress: bool = False) -> TranslationModel:
    r"""Train the book's toy translator on the training sentences.

    Parameters
    ----------
    seed : int, default 0
        Seeds the initial weights and the minibatches (the corpus is fixed).
    steps : int, default 800
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    TranslationModel
        Its weights rounded to float32 numbers at the end (kept as float64 arrays, computed
        in float64), so that a page can receive them exactly in four bytes each.

    Notes
    -----
    The model of :func:`translation_configs` (about 45,000 parameters) starts from
    :func:`init_translation_model`. Each step draws 64 training pairs and follows the
    gradient of :func:`translation_loss_and_grads` with AdamW (learning rate
    :math:`3\cdot10^{-3}` after 100 warm-up steps, cosine decay to :math:`3\cdot10^{-4}`,
    weight decay 0.01, clipping at norm 1), in float64, on the one training loop
    (``attention_lib.model.train.train_scheduled``), with one BLAS thread.

    Examples
    --------
    >>> model = train_translation_model(steps=2)
    >>> len(model.log["train_loss"])
    2
    """
    model = init_translation_model(seed=positive_int(seed, "seed", minimum=0))
    configs = model.configs
    train = translation_examples("train")
    params, log = train_small_model(
        model.params, lambda p, batch: translation_loss_and_grads(p, configs, batch),
        model.encode(train), len(train), seed=seed, steps=steps, progress=progress,
        settings={"configs": [c.as_dict() for c in configs], "init_std": INIT_STD})
    return TranslationModel(params, configs, log)
