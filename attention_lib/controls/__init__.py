r"""Controls that run in the reader's browser, without a kernel, on the library's numbers.

Each builder returns a :class:`ControlElement`: one self-contained HTML element (inline
style and script, nothing loaded from elsewhere) whose numbers are computed by
``attention_lib`` and embedded as JSON. Its script redoes the computation in double
precision, with the same operations as the library, whenever a control moves, on the
website as in JupyterLab, Binder and Colab once its cell has run. Every control is a native
``<input>``, ``<select>``, ``<textarea>`` or ``<button>`` with a visible ``<label>``, so it
works by keyboard. Before the script runs (an untrusted notebook strips scripts) the element
shows the values at its starting position, computed here, the controls are disabled, and a
note says how to make them move; the script removes the note.

One module per control, its script beside it in ``assets/``:

- :func:`saturation_explorer` (``saturation``): softmax saturation as the scale,
  :math:`d_k` and the :math:`\sqrt{d_k}` division change (chapter 4);
- :func:`query_picker` (``query``): one query of the "The cat sat on" walkthrough, its
  scores, weights and the weighted sum of the values term by term (chapter 3);
- :func:`projection_scale_explorer` (``projection``): the walkthrough's weights as ``W_Q``
  and ``W_K`` are multiplied by a factor (chapter 3);
- :func:`causal_stepper` (``causal``): causal generation step by step, the new query, the
  keys it may use and the key-value cache (chapter 5);
- :func:`retrieval_playground` (``retrieval``): the trained soft dictionary of chapter 10 on
  a sequence the reader types (:func:`parse_retrieval_sequence` reads it);
- :func:`induction_playground` (``induction``): the attention-only GPT that formed an induction
  head (chapter 20) on tokens the reader types, each head's weights from a chosen position,
  with heads removable (:func:`parse_induction_sequence` reads the tokens, one character of
  :data:`INDUCTION_ALPHABET` each; :func:`copy_targets` says where copying points);
- :func:`text_generator` (``generator``): the book's trained GPT continuing a prompt in the
  page, and where each head looked (chapters 14 and 15); it samples with
  :func:`mulberry32`, as ``al.generate(..., uniform=mulberry32(seed))`` does;
- :func:`coreference_explorer` (``coreference``): the trained encoder of chapter 21 names
  what "it" refers to in a sentence the reader builds from lists, and shows the weights
  from "it" in every head;
- :func:`translation_explorer` (``translation``): the trained encoder-decoder of chapter 22
  translates a sentence the reader builds from lists (:func:`parse_translation_source` reads
  one), and draws a cross-attention head against the gold alignment;
- :func:`feature_steering` (``steering``): the book's GPT writing with one feature of a
  sparse autoencoder of its residual stream clamped to a value the reader sets, beside the
  text it writes unchanged with the same seed;
- :func:`patching_map` (``patching``): activation patching of chapter 21's encoder on one
  minimal pair (chapter 24): what each head and each position of the residual stream
  restores, and the run that patches a chosen one (:func:`patching_twin` builds the twin of
  a sentence the reader types);
- :func:`logit_lens_explorer` (``logit_lens``): the book's GPT read after the embedding and
  after each block through its read-out, on a text the reader types (chapter 23): each
  reading's top next character per position, and its loss on the text.

The controls that run a trained model (the generator, the induction playground, the two
explorers, the patching map, feature steering and the logit-lens explorer) compute with one
engine, ``assets/model.js``: attention, layer norm, the feed-forward network, the block, the
stack, cached decoding and sampling, with hooks at the sites of
:mod:`attention_lib.model.hooks` that the patching map, feature steering and the logit-lens
explorer use, in double precision with the operations
of :mod:`attention_lib.model`. Their weights travel as bytes that hold the model's numbers
exactly (float16 for the book's GPT, float32 for the trained encoder and translator, float64
for the induction model), with their length and CRC-32: in the element or, on the website,
in a file of their own fetched when the reader first starts the control, which the page
checks before decoding and refuses with a message if it is not the model's.

``element`` holds what they share: :class:`ControlElement`, the markup templates that Python
and the scripts both fill, the number formatting, the range checks, and the weights and
configuration the engine reads.
"""

from __future__ import annotations

from .causal import causal_stepper
from .coreference import coreference_explorer
from .element import ControlElement
from .generator import mulberry32, text_generator
from .induction import (
    INDUCTION_ALPHABET,
    copy_targets,
    induction_playground,
    parse_induction_sequence,
)
from .logit_lens import logit_lens_explorer
from .patching import patching_map, patching_twin
from .projection import projection_scale_explorer
from .query import query_picker
from .retrieval import SEPARATOR, parse_retrieval_sequence, retrieval_playground
from .saturation import saturation_explorer
from .steering import feature_steering
from .translation import parse_translation_source, translation_explorer

__all__ = [
    "INDUCTION_ALPHABET",
    "SEPARATOR",
    "ControlElement",
    "causal_stepper",
    "copy_targets",
    "coreference_explorer",
    "feature_steering",
    "induction_playground",
    "logit_lens_explorer",
    "mulberry32",
    "parse_induction_sequence",
    "parse_retrieval_sequence",
    "parse_translation_source",
    "patching_map",
    "patching_twin",
    "projection_scale_explorer",
    "query_picker",
    "retrieval_playground",
    "saturation_explorer",
    "text_generator",
    "translation_explorer",
]
