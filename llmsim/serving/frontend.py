"""The serving frontend (the OpenAI-compatible API server in front of an engine) as one first-come-first-served
server: each request takes `service_s` of it (HTTP, tokenization, the hand-off to the engine; the engine's figure
in engine_limits.FRONTEND) before the engine can see it, and a request sent while an earlier one is being handled
waits for it. vLLM's API server (one process unless --api-server-count says otherwise), SGLang's TokenizerManager
and TensorRT-LLM's trtllm-serve each take requests in through one Python event loop.

approximation: the whole per-request figure is taken as the server's busy time; the part of it that overlaps other
requests (network latency, the engine's own queue) is not told apart, so a burst of N requests reaches the engine
spread over N x service_s. With attention data parallelism one frontend serves every rank of the replica
(serving.lockstep).
The requests whose send times are known up front (a closed loop's first ones, each client's at its point of the ramp;
every request of an open loop) go through admit_all; the ones sent as others finish through admit, each behind
every earlier-sent request. approximation: a request of the up-front batch is not delayed by one admit() took that
was sent before it (with a ramp longer than a request's lifetime, a client's next request and another client's
first one can meet in the queue: at most a few service times apart)."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np


def frontend_queue(service_s: float) -> Frontend | None:
    """A Frontend of service_s per request, or None where it is 0 (the engine sees each request when it is sent)."""
    return Frontend(service_s) if service_s else None


class Frontend:
    """One FIFO server of `service_s` per request; `free_s` is when it finishes the last request admit() took."""

    def __init__(self, service_s: float) -> None:
        self.service_s = service_s
        self.free_s = -np.inf
        self._batch_sent: list[float] = []  # admit_all's requests (sorted by send time) and when each was done
        self._batch_ready: list[float] = []

    def admit(self, sent_s: float) -> float:
        """When the engine sees a request sent at sent_s (sent no earlier than the ones admit() took before it),
        behind those and the up-front batch's requests sent no later than it."""
        k = bisect_right(self._batch_sent, sent_s)
        ahead = self._batch_ready[k - 1] if k else -np.inf  # the batch's last request sent before this one
        ready = max(sent_s, self.free_s, ahead) + self.service_s
        self.free_s = ready
        return ready

    def admit_all(self, sent_s: np.ndarray) -> np.ndarray:
        """admit() of each of sent_s (sorted), at once: ready_i = max(sent_i, ready_(i-1)) + s, which unrolls to
        (i + 1) s + max over j <= i of (sent_j - j s)  [requests]."""
        sent = np.asarray(sent_s, dtype=float)
        if len(sent) == 0:
            return sent.copy()
        s = self.service_s
        i = np.arange(len(sent))
        start = np.maximum.accumulate(np.concatenate([[self.free_s], sent - i * s]))[1:]  # [requests]
        ready = (i + 1) * s + start
        self._batch_sent, self._batch_ready = sent.tolist(), ready.tolist()  # later admit()s queue behind them
        return ready
