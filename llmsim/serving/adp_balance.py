"""TensorRT-LLM's attention data-parallel balance (`attention_dp_config: enable_balance: true`), seen from one rank.

With enable_attention_dp and enable_balance, every step the ranks all-gather how many context (prefill) and
generation (decode) requests each has scheduled, and a rank's context requests wait (tensorrt_llm/_torch/pyexecutor/
py_executor.py, PyExecutor._balance_adp_requests; facts, no code):

    if every rank has a free slot and a context request:      counter = 0
        if every rank also decodes: hold for batching_wait_iters steps (a second counter), then schedule them
        else: schedule them
    else:                                                      counter += 1, hold
        if counter >= timeout_iters or some rank does not decode: counter = 0, schedule them

so while all ranks decode, a new prompt waits until every rank holds one, or until the counter (which counts every
such step, prompts held or not) reaches timeout_iters. AttentionDpConfig's defaults: enable_balance False,
timeout_iters 50, batching_wait_iters 10.

llmsim simulates one rank (serving.data_parallel); the other d - 1 ranks are not simulated, so whether each of them
holds a context request is estimated:
approximation: each other rank receives requests as this one does, as independent Poisson arrivals at this rank's
observed rate lam (its requests after the first, over the time since the first): after the last release the time
until all d - 1 of them hold one is the maximum of d - 1 exponential waits, whose mean is H(d-1) / lam
(H: the harmonic number); "every rank holds a context request" is taken as this rank holding one and that much time
having passed since the last release. The other ranks are taken to decode whenever this one does (the caller turns
the balance off where some rank has no client: a closed loop of fewer clients than ranks).
"""

from __future__ import annotations

import math

import numpy as np


class AdpBalance:
    """The balance's counters and this rank's arrival count, as the scheduler runs (one per simulated rank)."""

    def __init__(self, ranks: int, timeout_iters: int, batching_wait_iters: int) -> None:
        self.timeout = timeout_iters
        self.batching_wait = batching_wait_iters
        self.others_mean = sum(1.0 / k for k in range(1, ranks))  # H(d-1): mean max of d-1 unit exponential waits
        self.count = 0  # TensorRT-LLM's adp_ctx_waiting_iters_count
        self.batching = 0  # adp_ctx_batching_wait_iters_count
        self.released_s = 0.0  # the last step that released the ranks' context requests
        self.first_s = math.inf  # this rank's first arrival
        self.later = 0  # its arrivals after the first

    def arrived(self, times: list[float]) -> None:
        """This rank's requests entering its queue, at their arrival times."""
        for t in times:
            if t > self.first_s:
                self.later += 1
            self.first_s = min(self.first_s, t)

    def _all_hold(self, clock: float) -> bool:
        """Whether every other rank is taken to hold a context request by `clock` (module docstring)."""
        if self.later == 0 or clock <= self.first_s:
            return False
        rate = self.later / (clock - self.first_s)  # this rank's arrivals per second
        return clock - self.released_s >= self.others_mean / rate

    def hold(self, clock: float, decoding: int, has_prompt: bool, slots_free: bool) -> bool:
        """One step's decision at `clock`: True holds this rank's waiting prompts back this step."""
        if slots_free and has_prompt and self._all_hold(clock):
            self.count = 0
            if decoding and self.batching < self.batching_wait:
                self.batching += 1
                return True
            self.batching = 0
            self.released_s = clock
            return False
        self.count += 1
        if self.count >= self.timeout or not decoding:
            self.count = 0
            self.released_s = clock
            return False
        return True

    def advance(self, starts: np.ndarray) -> None:
        """A run of decode-only steps starting at `starts` (no prompt waiting: each step counts, every
        timeout_iters-th releases)."""
        k = len(starts)
        if self.timeout == 0:  # every step releases
            self.released_s = float(starts[-1])
            return
        ticks = (self.count + k) // self.timeout  # counter resets within the run
        if ticks:
            last = ticks * self.timeout - self.count - 1  # the index of the run's last resetting step
            self.released_s = float(starts[last])
        self.count = (self.count + k) % self.timeout
