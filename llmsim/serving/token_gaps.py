"""The gaps between consecutive tokens of a request (inter-token latency, ITL), from the engine's step log.

A request that decodes in a step emits its token when the step ends; its previous token came at the end of the
last step it decoded in, or (its first decode) at its first token. Every step between the two counts, a step that
only prefilled other requests too (SGLang's default, mixed_batches=False, stops decoding while prompts start).
For a step k with d_k decoding requests ending at end_k, after the engine's previous decoding step ended at prev_k:

    gap = end_k - first_token_s   for each request whose first token came after prev_k (its first decode)
    gap = end_k - prev_k          for the other d_k - (those) requests                     [per decoding request]

approximation: a request whose first token came after prev_k is taken to decode in the next decoding step (it
may wait a step longer when the step's batch or budget is full). With several engine instances (a step log with
an `instance` column: disaggregated serving) each instance's steps are taken on their own, with the first tokens of
the requests that decoded on it (instance_of: each request's instance, -1 for none). A decode instance that
recomputes a prefilled request's last prompt token (vLLM's: serving.disaggregated.RECOMPUTES_FIRST_TOKEN) samples
its first token in a decoding step of its own that ends at it (first_in_step): that step holds no gap for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def inter_token_gaps(step: dict[str, Any], first_token_s: Any, gen_len: Any, instance_of: Any = None,
                     first_in_step: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(gaps, how many tokens had each gap) over every decoding step of the step log (module docstring);
    instance_of: with an `instance` column, the instance each request decoded on (-1: none); first_in_step: each
    first token was sampled in a decoding step ending at it."""
    start, time = np.asarray(step["start_s"], dtype=float), np.asarray(step["time_s"], dtype=float)
    decoding = np.asarray(step["decode_requests"], dtype=float)
    if "instance" in step:  # several engines: each one's steps on their own, with its own requests' first tokens
        if instance_of is None:
            raise ValueError("a step log of several instances needs each request's instance (instance_of)")
        instance, on = np.asarray(step["instance"]), np.asarray(instance_of)
        first_all, gen_all = np.asarray(first_token_s, dtype=float), np.asarray(gen_len)
        gaps, counts = [], []
        for e in np.unique(instance):
            mine = instance == e
            part = {"start_s": start[mine], "time_s": time[mine], "decode_requests": decoding[mine]}
            g, c = inter_token_gaps(part, first_all[on == e], gen_all[on == e], first_in_step=first_in_step)
            gaps.append(g)
            counts.append(c)
        return np.concatenate(gaps), np.concatenate(counts)
    d = decoding > 0
    start, end, decoding = start[d], start[d] + time[d], decoding[d]
    if len(end) == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(start, kind="stable")
    start, end, decoding = start[order], end[order], decoding[order]
    prev = np.concatenate([[-np.inf], end[:-1]])  # the previous decoding step's end  [decoding steps]
    first = np.asarray(first_token_s, dtype=float)
    first = np.sort(first[(np.asarray(gen_len) > 1) & np.isfinite(first)])  # requests that decode at all
    sampled = first
    # each first token's decoding step: the first one starting at or after it  [requests]
    k = np.searchsorted(start, first, side="left")
    inside = k < len(start)
    k, first = k[inside], first[inside]
    new = np.bincount(k, minlength=len(start)).astype(float)  # first decodes per step  [decoding steps]
    if first_in_step:  # the decoding step ending at each first token sampled it: no gap there
        tol = 1e-9 * np.maximum(sampled, 1.0)  # [requests]
        j = np.searchsorted(end, sampled - tol, side="left")  # the first step ending at or after it
        ok = j < len(end)
        j = j[ok][np.abs(end[j[ok]] - sampled[ok]) <= tol[ok]]
        new += np.bincount(j, minlength=len(start))
    continuing = np.maximum(decoding - new, 0.0)
    own = np.isfinite(prev)  # the very first decoding step: every request in it is on its first decode
    gaps = np.concatenate([end - np.where(own, prev, start), end[k] - first])
    counts = np.concatenate([np.where(own, continuing, 0.0), np.ones(len(first))])
    return gaps, counts
