"""TensorRT-LLM's attention data-parallel balance (`attention_dp_config: enable_balance: true`).

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
timeout_iters 50, batching_wait_iters 10. The decision is the same on every rank (it reads the gathered counts).

serve() simulates every rank in lockstep (serving.lockstep); one AdpBalance serves them all and decides once per
joint step (`round`, which the lockstep loop advances) from each rank's state as the rank reports it (hold).
approximation: the ranks decide in turn within a step, so the first to decide sees the others' states of the step
before (TensorRT-LLM all-gathers this step's); a rank that decodes nothing is never held (its state alone
releases the step).
Before session 29 llmsim simulated one rank and estimated the others' prompts from its arrival rate.
"""

from __future__ import annotations


class AdpBalance:
    """The balance's counters and every rank's last state, as the ranks run in lockstep."""

    def __init__(self, ranks: int, timeout_iters: int, batching_wait_iters: int) -> None:
        self.timeout = timeout_iters
        self.batching_wait = batching_wait_iters
        self.count = 0  # TensorRT-LLM's adp_ctx_waiting_iters_count
        self.batching = 0  # adp_ctx_batching_wait_iters_count
        self.released_s = 0.0  # the last step that released the ranks' context requests
        self.peers = [(False, False)] * ranks  # per rank: (a free slot and a prompt waiting, decodes)
        self.round = 0  # the joint step being decided (serving.lockstep counts them)
        self._decided: tuple[int, bool] = (-1, False)  # (round, hold) of the last decision

    def idle(self, rank: int) -> None:
        """Rank `rank` holds nothing this step (no prompt, no decode)."""
        self.peers[rank] = (False, False)

    def hold(self, rank: int, clock: float, decoding: int, has_prompt: bool, slots_free: bool) -> bool:
        """Rank `rank`'s state this step at `clock`, and the step's one decision for every rank (True holds the
        waiting prompts back): TensorRT-LLM's rule (module docstring) over every rank's state."""
        self.peers[rank] = (slots_free and has_prompt, decoding > 0)
        if not decoding:  # a rank that decodes nothing is never held (the step's decision releases then)
            return False
        if self._decided[0] == self.round:
            return self._decided[1]
        every_prompt = all(ready for ready, _ in self.peers)
        every_decodes = all(decodes for _, decodes in self.peers)
        if every_prompt:
            self.count = 0
            hold = bool(every_decodes and self.batching < self.batching_wait)
            self.batching = self.batching + 1 if hold else 0
        else:
            self.count += 1
            hold = every_decodes and self.count < self.timeout
            if not hold:
                self.count = 0
        if not hold:
            self.released_s = clock
        self._decided = (self.round, hold)
        return hold
