"""The one independent reference of attention for the tests: plain Python loops.

Written from the equation, one batch entry, query and key at a time, with
``math.fsum`` for every sum, and sharing no code with ``attention_lib``.
"""

from __future__ import annotations

import math

import numpy as np


def reference_attention(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(d_k)) v, one query at a time.

    ``mask`` (bool, broadcastable to ``(..., n_q, n_k)``) holds True where the
    query may attend to the key. With ``causal`` query ``i`` may attend to key
    ``j`` only when ``j <= i + n_k - n_q``. A query with no key left gets zero
    weights and a zero output row (the ``fully_masked="zero"`` policy).
    Returns ``(output, weights)`` in float64.
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    lead = [q.shape[:-2], k.shape[:-2], v.shape[:-2]]
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        mask = mask.reshape((1,) * max(0, 2 - mask.ndim) + mask.shape)
        lead.append(mask.shape[:-2])
    batch = np.broadcast_shapes(*lead)
    q = np.broadcast_to(q, (*batch, n_q, d_k))
    k = np.broadcast_to(k, (*batch, n_k, d_k))
    v = np.broadcast_to(v, (*batch, n_k, d_v))
    if mask is not None:
        mask = np.broadcast_to(mask, (*batch, n_q, n_k))

    output = np.zeros((*batch, n_q, d_v))
    weights = np.zeros((*batch, n_q, n_k))
    for b in np.ndindex(*batch):
        qb, kb, vb = q[b].tolist(), k[b].tolist(), v[b].tolist()
        mb = None if mask is None else mask[b].tolist()
        for i in range(n_q):
            allowed = []
            for j in range(n_k):
                ok = True if mb is None else bool(mb[i][j])
                if causal and j > i + n_k - n_q:
                    ok = False
                allowed.append(ok)
            if not any(allowed):
                continue  # zero weights, zero output
            scores = []
            for j in range(n_k):
                dot = math.fsum(qb[i][c] * kb[j][c] for c in range(d_k))
                scores.append(dot / math.sqrt(d_k))
            biggest = max(s for s, ok in zip(scores, allowed, strict=True) if ok)
            exps = [math.exp(s - biggest) if ok else 0.0
                    for s, ok in zip(scores, allowed, strict=True)]
            total = math.fsum(exps)
            row = [e / total for e in exps]
            for j in range(n_k):
                weights[(*b, i, j)] = row[j]
            for c in range(d_v):
                output[(*b, i, c)] = math.fsum(row[j] * vb[j][c] for j in range(n_k))
    return output, weights


def rotate_reference(x):
    """Rotary positions written from the definition, on rows ``(n, d)``: pair i at position
    p turns by p * 10000^(-2i/d)."""
    n, d = x.shape
    out = np.empty_like(x)
    for p in range(n):
        for i in range(d // 2):
            theta = p * 10000.0 ** (-2 * i / d)
            c, s = math.cos(theta), math.sin(theta)
            a, b = x[p, 2 * i], x[p, 2 * i + 1]
            out[p, 2 * i], out[p, 2 * i + 1] = c * a - s * b, s * a + c * b
    return out
