"""What serve() returns: latency percentiles, throughput, goodput, and every request and step behind them."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator, model_serializer

from ..errors import OptionError, check_positive


class Percentiles(BaseModel):
    """A latency distribution in seconds. samples: how many values it summarises; 0 where there is nothing to
    measure (TPOT and ITL when every request generated one token), its figures then 0 as attributes, shown as n/a
    and written as null in JSON (model_dump, --json: a consumer reading 0 ms would take it as a measured time)."""

    model_config = ConfigDict(frozen=True)
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float
    max: float
    samples: int

    @field_validator("mean", "p50", "p90", "p95", "p99", "max", mode="before")
    @classmethod
    def _null_is_none_measured(cls, value: Any) -> Any:
        return 0.0 if value is None else value  # read back from JSON: a null figure (no samples) is 0 here

    @model_serializer(mode="wrap")
    def _none_without_samples(self, handler: Any) -> Any:
        data = handler(self)
        if self.samples == 0 and isinstance(data, dict):
            data.update(dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max"), None))
        return data

    def __str__(self) -> str:
        if self.samples == 0:
            return "n/a: no request generated a second token"
        return (f"mean {self.mean * 1e3:8.1f}  p50 {self.p50 * 1e3:8.1f}  p90 {self.p90 * 1e3:8.1f}  "
                f"p99 {self.p99 * 1e3:8.1f} ms")


class ServingResult(BaseModel):
    """One engine replica (a tensor-parallel group) serving a stream of requests.

    ttft_s: arrival (the client sending it) to first token, the serving frontend's queue and time included (serve's
    frontend_s, serving.frontend). tpot_s: per request, (finish - first token) / (gen_len - 1), as vLLM's benchmark
    reports it (requests with one token left out). itl_s: every gap between two tokens of a request. e2e_s: arrival
    to last token. Throughputs over the makespan (first arrival to last finish).
    """

    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    engine: str
    tensor_parallel: int
    gpus: int
    num_requests: int
    pipeline_parallel: int = 1
    attention_data_parallel: int = 1  # serve()'s attention data-parallel ranks (requests and steps: every rank's)
    request_rate: float | None
    concurrency: int | None
    arrival: str
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_tokens: int
    block_size: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    input_tokens_per_s: float
    mean_running: float  # requests in a step, weighted by step time over the engine's busy time (idle gaps left
    # out: the batch it runs, not Little's-law requests in the system, which also counts queued and idle time)
    peak_kv_fraction: float
    preemptions: int
    steps: int
    mode: str = "aggregated"  # or "disaggregated": prefill and decode on separate pools (then the limits and
    # the step counts are the decode pool's, and step_log has an `instance` column)
    pools: str = ""  # disaggregated: "prefill R x TPt, decode R x TPt" (each pool's replicas and split)
    assumptions: dict[str, str] = {}
    _requests: dict[str, np.ndarray] = PrivateAttr(default_factory=dict)
    _steps: dict[str, np.ndarray] = PrivateAttr(default_factory=dict)

    # ---- per request and per step -------------------------------------------------------------------
    @property
    def requests(self) -> dict[str, np.ndarray]:
        """Per request: arrival_s, first_token_s, finish_s, prompt_len, gen_len, ttft_s, tpot_s, e2e_s,
        preemptions (arrays, index = request id); tpot_s is NaN for a one-token request (no second token: not
        defined, left out of tpot_s's percentiles)."""
        return dict(self._per_request(self._requests, "requests"))

    @property
    def step_log(self) -> dict[str, np.ndarray]:
        """Per engine step: start_s, time_s, prefill_tokens, decode_requests, running, waiting, kv_blocks_used."""
        return dict(self._per_request(self._steps, "step_log"))

    def to_pandas(self) -> Any:
        """One row per request."""
        return _frame(self._per_request(self._requests, "to_pandas()"))

    def steps_to_pandas(self) -> Any:
        """One row per engine step."""
        return _frame(self._per_request(self._steps, "steps_to_pandas()"))

    def goodput(self, ttft_s: float | None = None, tpot_s: float | None = None, e2e_s: float | None = None) -> float:
        """Requests per second that met every service-level objective given (all of them: the rate)."""
        ok = np.ones(len(self._requests["ttft_s"]) if self._requests else self.num_requests, dtype=bool)
        for name, limit in (("ttft_s", ttft_s), ("tpot_s", tpot_s), ("e2e_s", e2e_s)):
            if limit is None:
                continue
            check_positive(name, limit, "seconds")
            values = self._per_request(self._requests, "goodput() with an objective")[name]
            ok &= ~(values > limit)  # a request with no TPOT (one token) meets any TPOT objective
        return float(ok.sum() / self.duration_s) if self.duration_s > 0 else 0.0

    def _per_request(self, data: dict[str, np.ndarray], what: str) -> dict[str, np.ndarray]:
        """The per-request or per-step arrays, refused in one line where the result has none (one read back from
        JSON keeps its summary only: the arrays are not serialized)."""
        if not data and self.num_requests:
            raise OptionError(f"{what}: this ServingResult holds no per-request data (a result read back from JSON "
                              "keeps the summary only); run serve() again for requests and steps")
        return data

    def __str__(self) -> str:
        load = (f"{self.request_rate:g} req/s ({self.arrival})" if self.request_rate is not None
                else f"concurrency {self.concurrency}")
        pp, adp = self.pipeline_parallel, self.attention_data_parallel
        shape = (f"tensor_parallel={self.tensor_parallel}{f', pipeline_parallel={pp}' if pp > 1 else ''}"
                 f"{f', attention_data_parallel={adp}' if adp > 1 else ''}"
                 if self.mode == "aggregated" or not self.pools else f"{self.mode}: {self.pools}")
        lines = [
            f"{self.model} on {self.hardware} x{self.gpus} ({self.engine}, {shape}): {self.num_requests} "
            f"request{'s' if self.num_requests != 1 else ''} at "
            f"{load}",
            f"  engine{'' if self.mode == 'aggregated' else ' (decode pool)'}: max_num_seqs {self.max_num_seqs}, "
            f"max_num_batched_tokens {self.max_num_batched_tokens}, KV cache {self.kv_cache_tokens:,} tokens "
            f"(block {self.block_size})",
            f"  TTFT  {self.ttft_s}",
            f"  TPOT  {self.tpot_s}",
            f"  ITL   {self.itl_s}",
            f"  E2E   {self.e2e_s}",
            f"  throughput {self.output_tokens_per_s:,.0f} output tok/s, {self.input_tokens_per_s:,.0f} input tok/s, "
            f"{self.requests_per_s:.2f} req/s over {self.duration_s:.1f} s",
            f"  batch: {self.mean_running:.1f} requests running on average while busy, peak KV use "
            f"{100 * self.peak_kv_fraction:.0f} %, {self.preemptions} preemptions, {self.steps:,} steps",
        ]
        lines += [f"  assumption: {k}: {v}" for k, v in self.assumptions.items()]
        return "\n".join(lines)


def _frame(columns: dict[str, np.ndarray]) -> Any:
    from ..frames import data_frame

    return data_frame(columns)
