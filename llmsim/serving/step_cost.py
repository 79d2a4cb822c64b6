"""The time of one engine step: one forward pass over a mixed batch of prefill chunks and decode requests.

A continuous-batching engine runs, every step, the new tokens of several requests together: chunks of
prompts being prefilled and one token of each decoding request, each request at its own context length.
Rebuilding the op graph per step would be far too slow for thousands of requests, so the step time is
composed from per-op totals evaluated once, on grids, by the same cost model `simulate()` uses
(timing.phases), split by what each op's cost depends on:

    step_s = tokens_s(T) + lm_head_s(n_emit) + decode_attention_s(n_decode, mean cached length)
             + prefill_attention_s(chunks, pair-equivalent length)

- tokens_s(T): every op but the attention core and the LM head, for T = prefill tokens + decode tokens
  run together (GEMMs at m = T, norms, rotary, KV writes, MoE, collectives, their launch overheads, and the
  linear-attention and SSM layers' scans and state updates, whose cost follows the new tokens only).
  A step without prefill tokens is priced by the decode graph at batch T, one with prefill tokens by the
  prefill graph at T tokens (the two agree for every model but MLA, whose decode runs weight-absorbed).
  A step with prefill tokens is one pass that the serving engines run without a CUDA graph: all its parts,
  the LM head and the decode requests' attention too, are priced under Roofline.for_prefill (eager launches),
  and the step takes the longer of that and its host dispatch, every kernel of the prefill graph at
  ExecutionOptions.prefill_dispatch_s (timing.host_bound), unless its tokens are within the engine's captured
  sizes (ExecutionOptions.prefill_graph_tokens: vLLM's piecewise graphs); a decode-only step replays graphs.
  approximation: the prefill attention core is priced by its own chunks' tokens against that limit.
- lm_head_s(n): the LM head (and its gather) over the n requests that emit a token this step.
- decode_attention_s(n, L): the attention core of n decode requests at L cached tokens each.
  approximation: requests at different lengths are priced at their mean length (exact for the roofline,
  whose attention cost is linear in the cached tokens; a measured table is read at the mean).
- prefill_attention_s(k, S): the attention core of k causal prefills of S tokens each from nothing, one
  kernel for all of them (varlen flash attention). The step's chunks (q new tokens after c cached ones,
  c*q + q*q/2 causal query-key pairs each) are priced as k equal fresh prefills with as many pairs in all:
  S = sqrt(2 * pairs / k). Exact for equal fresh prompts (a static batch).
  approximation: unequal chunks and chunks after a cached prefix are priced at that pair-equivalent length.

A step with prefill tokens is one pass whose compute-bound work past the device's onset runs at its sustained,
power-limited clock (timing.sustained): the grids are priced at the boost clock and each such step adds
(C - onset_s) * (1 / fraction - 1), C the compute-bound seconds of its tokens_s and prefill attention parts.
approximation: the decode requests' attention and the LM head of the step are left out of C; decode-only
steps are not stretched (as simulate() leaves decode at the boost clock).

Grids: tokens_s and lm_head_s at every integer up to the step's token budget and batch limit (exact);
lengths on a geometric grid (ratio about 1.03) and attention batches 1..16 then geometric (ratio about 1.1),
linearly interpolated (approximation: well under 0.1 % along lengths; along batches exact for the roofline,
whose attention time is linear in the batch, a linear reading of a measured table between its points).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cost.workload import CostOptions
from ..models.spec import ModelSpec
from ..timing.host_bound import host_excess_one_s
from ..timing.phases import PhaseTotals, decode_totals, prefill_totals
from ..timing.roofline import Roofline
from ..timing.sustained import sustained_extra_one_s

_LENGTH_POINTS_PER_DOUBLING = 24  # geometric grid of lengths: 2 ** (1/24) = 1.029 between points


def kernel_sources_note(roofline: Roofline, phases: tuple[PhaseTotals, ...]) -> str:
    """One line on what timed the step's ops: the measured table families, and why any op is on the roofline
    (analysis.provenance, as simulate() reports them)."""
    from ..analysis.provenance import provenance_of

    found = provenance_of(roofline, phases)
    tables = ", ".join(sorted(found["measured_tables"]))
    parts = [f"measured tables: {tables}" if tables else "no measured table: every op on the roofline"]
    parts += [f"roofline: {why}" for why in found["roofline_reasons"]]
    return "; ".join(parts)


def length_grid(longest: int) -> np.ndarray:
    """Lengths 1..64 one by one, then geometrically to `longest` (both ends included)."""
    small = np.arange(1, min(longest, 64) + 1, dtype=float)
    if longest <= 64:
        return small
    doublings = np.log2(longest / 64)
    steps = max(int(np.ceil(doublings * _LENGTH_POINTS_PER_DOUBLING)), 1)
    large = np.unique(np.round(64 * 2 ** (np.arange(1, steps + 1) * doublings / steps)))
    return np.concatenate([small, large[large > 64]])


def _interp(x: float, xs: list[float], ys: list[float]) -> float:
    """np.interp for one point (clamped at both ends), in plain Python."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect_right(xs, x)
    x0, x1 = xs[i - 1], xs[i]
    return ys[i - 1] + (ys[i] - ys[i - 1]) * ((x - x0) / (x1 - x0))


def batch_grid(largest: int) -> np.ndarray:
    """Batch sizes 1..16 one by one, then geometrically (ratio about 1.1) to `largest` (included)."""
    small = np.arange(1, min(largest, 16) + 1, dtype=float)
    if largest <= 16:
        return small
    steps = max(int(np.ceil(np.log(largest / 16) / np.log(1.1))), 1)
    large = np.unique(np.round(16 * (largest / 16) ** (np.arange(1, steps + 1) / steps)))
    return np.concatenate([small, large[large > 16]])


# The recurrent-state ops of linear-attention (Gated DeltaNet) and SSM (Mamba-2) layers: kind "attention", but
# their cost follows the new tokens and a fixed-size state, not the cached length (blocks/linear_attention.py,
# blocks/ssm.py name them so). They are priced with the step's tokens, not at a pair-equivalent length.
RECURRENT_STATE_OPS = (".scan", ".update")


def is_attention_core(name: str, kind: str) -> bool:
    """An op priced by the cached length (softmax attention, MLA), not by the step's tokens."""
    return kind == "attention" and not name.endswith(RECURRENT_STATE_OPS)


def is_lm_head(name: str) -> bool:
    return name == "lm_head" or name.startswith("lm_head.")


def _split(totals: PhaseTotals, part: str = "time_s") -> tuple[Any, Any, Any]:
    """(attention core, LM head, everything else) time (or another of PARTS) of a phase's ops, summed over ops."""
    attention, head, rest = 0.0, 0.0, 0.0
    for name, kind, time_s in zip(totals.names, totals.kinds, totals.per_op[part]):
        if is_attention_core(name, kind):
            attention = attention + time_s
        elif is_lm_head(name):
            head = head + time_s
        else:
            rest = rest + time_s
    return attention, head, rest


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding: each decode step verifies num_tokens proposed tokens plus one in the target
    model and keeps tokens_per_step of them on average; proposing costs nothing ("ngram": a lookup in the
    prompt on the CPU), num_tokens steps of a draft model ("draft"), or num_tokens passes of one extra
    decoder layer and the LM head ("mtp", DeepSeek-style multi-token prediction; approximation: a layer
    costs 1/num_layers of a target decode step)."""

    method: str
    num_tokens: int
    acceptance_rate: float
    draft: StepCost | None = None
    num_layers: int = 1

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens per verification with i.i.d. acceptance a of each of k proposals:
        (1 - a**(k + 1)) / (1 - a) (Leviathan et al. 2023, eq. 1); k + 1 when every proposal is accepted."""
        a, k = self.acceptance_rate, self.num_tokens
        return float(k + 1) if a >= 1 else (1 - a ** (k + 1)) / (1 - a)


class StepCost:
    """Per-step time of one engine replica (one GPU of its tensor-parallel group: all GPUs run in step).

    max_tokens: the step's token budget (max_num_batched_tokens); max_seqs: the most requests in a step;
    max_len: the longest context a request reaches. data_parallel: an AttentionDataParallel (serving.
    data_parallel), the step then of one attention data-parallel rank (`options` its own, tp = GPUs / ranks).
    """

    def __init__(self, model: ModelSpec, roofline: Roofline, options: CostOptions, max_tokens: int,
                 max_seqs: int, max_len: int, speculation: Speculation | None = None, stages: int = 1,
                 data_parallel: Any = None) -> None:
        self.max_tokens, self.max_seqs, self.max_len = max_tokens, max_seqs, max_len
        # a step with prefill tokens is one pass: its compute-bound work past the onset at the sustained clock,
        # stretched here per step (timing.sustained) on tables priced at the boost clock
        self.sustained = roofline.sustained
        roofline = roofline.at_boost()
        self.speculation = speculation
        self.stages = stages  # pipeline stages (see step_s)
        if stages > 1:  # the hidden state handed from stage to stage, per token: one p2p transfer
            _, act_dtype, _ = options.resolved_dtypes(model.dtype)
            from ..dtypes import residual_stream_bytes

            per_token = model.hidden_size * residual_stream_bytes(act_dtype)
            self._p2p = lambda tokens: float(roofline.collective_s("p2p", tokens * per_token, 2)) if tokens else 0.0
        self.query = speculation.num_tokens + 1 if speculation else 1  # target tokens per decode request
        rows = max_seqs * self.query
        tokens = np.arange(1, max_tokens + rows + 1, dtype=float)  # T = 1 .. budget (+ verified proposals)
        batch = np.arange(1, rows + 1, dtype=float)  # decode rows 1 .. max_seqs x query
        self.lengths = length_grid(max_len)

        # prefill graph at B = 1, S = T: GEMMs at m = T; its attention core at S = T is unused here
        totals = prefill_totals(model, roofline, options, 1, tokens, host_bound=False)  # kernels: see _one_pass
        _, _, rest = _split(totals)
        self._gathered_lists: tuple[list[float], list[float]] | None = None  # attention DP: (prefill, decode)
        if data_parallel is not None:  # attention data parallelism: experts over every rank's tokens
            gathered = data_parallel.gathered_s(model, roofline, "prefill", tokens)
            rest = data_parallel.rank_s(totals) + gathered
            gathered_prefill = np.concatenate([[0.0], gathered]).tolist()  # [T + 1]
        self.prefill_tokens_s = np.concatenate([[0.0], np.broadcast_to(rest, tokens.shape)])  # [T + 1]
        if self.sustained is not None:  # the compute-bound seconds of the same (approximation: with attention
            # data parallelism, those of the whole step's tokens on one rank's share of the GPUs)
            _, _, rest_compute = _split(totals, "compute_s")
            self._prefill_tokens_compute = np.concatenate([[0.0], np.broadcast_to(rest_compute, tokens.shape)]
                                                          ).tolist()
        # decode graph at batch n, one step: its steady ops do not depend on the cached length
        step = decode_totals(model, roofline, options, batch, 1, 1)
        self.kernel_sources = kernel_sources_note(roofline, (totals, step))  # what timed the ops (the result says)
        _, head, rest = _split(step)
        if data_parallel is not None:
            gathered = data_parallel.gathered_s(model, roofline, "decode", batch)
            rest = data_parallel.rank_s(step) + gathered
            self._gathered_lists = (gathered_prefill, np.concatenate([[0.0], gathered]).tolist())  # [T + 1], [n + 1]
        self.decode_tokens_s = np.concatenate([[0.0], np.broadcast_to(rest, batch.shape)])  # [n + 1]
        self.lm_head_s = np.concatenate([[0.0], np.broadcast_to(head, batch.shape)])  # [n + 1]
        # the decode attention core at [n, L]: n on the batch grid (rows), cached length L on the length grid
        self.batches = batch_grid(max_seqs)
        grid = decode_totals(model, roofline, options, self.batches[:, None], self.lengths[None, :], 1)
        attention, _, _ = _split(grid)
        self.decode_attention_s = np.broadcast_to(attention, (len(self.batches), len(self.lengths))).copy()
        # a step with prefill tokens is one pass the engine may run without a CUDA graph (Roofline.for_prefill):
        # its LM head and its decode requests' attention then pay that pass's eager launches too (its host dispatch:
        # the step as a whole, _one_pass)
        self.mixed_lm_head_s, self.mixed_decode_attention_s = self.lm_head_s, self.decode_attention_s
        uncaptured = roofline.for_prefill()
        # an uncaptured step's host dispatch, for the pass as a whole (timing.host_bound): every kernel of the
        # prefill graph once (approximation: a mixed step's decode attention rides in the pass's attention kernel)
        self._pass_host_s = uncaptured.pass_dispatch_s * sum(
            float(count) * float(op.launches) for count, op in zip(totals.counts, totals.fixed.ops))
        self._async_host = uncaptured.async_host
        # the engine's own host work per step, on the same host thread before it dispatches: outside the maximum
        self._step_host_s = uncaptured.step_host_s * sum(
            float(count) for count, op in zip(totals.counts, totals.fixed.ops) if op.kind == "host")
        self.prefill_graph_tokens = roofline.prefill_graph_tokens  # steps up to this many tokens replay graphs
        # a step of T tokens replays graphs where T <= this (Roofline.prefill_captured, as a Python comparison)
        self._captured_tokens = math.inf if uncaptured is roofline else roofline.prefill_graph_tokens
        if uncaptured is not roofline:
            _, head, _ = _split(decode_totals(model, uncaptured, options, batch, 1, 1))
            self.mixed_lm_head_s = np.concatenate([[0.0], np.broadcast_to(head, batch.shape)])
            attention, _, _ = _split(decode_totals(model, uncaptured, options, self.batches[:, None],
                                                   self.lengths[None, :], 1))
            self.mixed_decode_attention_s = np.broadcast_to(attention, (len(self.batches), len(self.lengths))).copy()
        # the attention core of k prefills of S tokens from nothing, k on the batch grid, S on the length grid
        self.prefill_batches = self.batches
        prefills = prefill_totals(model, roofline, options, self.prefill_batches[:, None], self.lengths[None, :],
                                  host_bound=False)
        attention, _, _ = _split(prefills)
        self.prefill_attention_s = np.broadcast_to(attention, (len(self.prefill_batches), len(self.lengths))).copy()
        if self.sustained is not None:
            attention, _, _ = _split(prefills, "compute_s")
            self.prefill_attention_compute_s = np.broadcast_to(
                attention, (len(self.prefill_batches), len(self.lengths))).copy()
        self._lengths_list, self._batches_list = self.lengths.tolist(), self.batches.tolist()
        self._rows: dict[int, list[list[float]]] = {}  # a table's rows as lists, for one-step reads
        self._chunk_attention: dict[tuple[int, float], tuple[float, float]] = {}  # chunk_attention, kept
        # the same values as Python floats, for one step's reads (_one_pass)
        self._prefill_tokens_list = self.prefill_tokens_s.tolist()
        self._decode_tokens_list = self.decode_tokens_s.tolist()
        self._lm_head_list = self.lm_head_s.tolist()
        self._mixed_lm_head_list = self.mixed_lm_head_s.tolist()

    # ---- the parts --------------------------------------------------------------------------------
    def _on_grid(self, table: np.ndarray, batch: int, length: Any) -> Any:
        """table[batch, length] interpolated linearly along the length grid, then the batch grid."""
        if not np.ndim(length):  # one step: plain Python (the same interpolation, without numpy's overhead)
            return self._on_grid_scalar(id(table), table, batch, float(length))
        batches = self._batches_list  # the grid as Python floats (the same values; bisect, not numpy's search)
        k = bisect_left(batches, batch)  # first grid batch >= batch
        upper = np.interp(length, self.lengths, table[k])
        if batches[k] == batch:
            return upper
        lower = np.interp(length, self.lengths, table[k - 1])
        b0, b1 = batches[k - 1], batches[k]
        return lower + (upper - lower) * ((batch - b0) / (b1 - b0))

    def _on_grid_scalar(self, key: int, table: np.ndarray, batch: int, length: float) -> float:
        rows = self._rows.get(key)
        if rows is None:
            rows = self._rows[key] = table.tolist()
        lengths, batches = self._lengths_list, self._batches_list
        k = bisect_left(batches, batch)
        exact = batches[k] == batch
        if lengths[0] < length < lengths[-1]:  # _interp of both rows, the length's cell located once
            i = bisect_right(lengths, length)
            x0 = lengths[i - 1]
            f = (length - x0) / (lengths[i] - x0)
            ys = rows[k]
            upper = ys[i - 1] + (ys[i] - ys[i - 1]) * f
            if exact:
                return upper
            ys = rows[k - 1]
            lower = ys[i - 1] + (ys[i] - ys[i - 1]) * f
        else:
            upper = _interp(length, lengths, rows[k])
            if exact:
                return upper
            lower = _interp(length, lengths, rows[k - 1])
        b0, b1 = batches[k - 1], batches[k]
        return lower + (upper - lower) * ((batch - b0) / (b1 - b0))

    def prefill_attention(self, chunks: int, pairs: float) -> float:
        """Attention core of `chunks` prefill chunks with `pairs` causal query-key pairs in all."""
        return self.chunk_attention(chunks, pairs)[0] if chunks else 0.0

    def decode_attention(self, n: int, mean_len: Any, mixed: bool = False) -> Any:
        """Attention core of n decode requests at mean_len cached tokens each (arrays of lengths allowed);
        mixed: in a step with prefill tokens run uncaptured (priced under Roofline.for_prefill)."""
        if n == 0:
            return np.zeros(np.shape(mean_len)) if np.ndim(mean_len) else 0.0
        return self._on_grid(self.mixed_decode_attention_s if mixed else self.decode_attention_s, n, mean_len)

    def tokens(self, prefill_tokens: int, decode_requests: int) -> float:
        """Every op but attention and LM head over the step's tokens (each decode request's query tokens)."""
        if prefill_tokens == 0:
            return float(self.decode_tokens_s[decode_requests * self.query])
        return float(self.prefill_tokens_s[prefill_tokens + decode_requests * self.query])

    def lm_head(self, n_emit: int, n_decode: int, mixed: bool = False) -> float:
        """LM head over the sampled positions: one per emitting request, query per decode request; mixed: in a
        step with prefill tokens run uncaptured."""
        return float((self.mixed_lm_head_s if mixed else self.lm_head_s)[n_emit + n_decode * (self.query - 1)])

    def proposals(self, n_decode: int, mean_len: Any, prefill_tokens: int = 0, pairs: float = 0.0,
                  chunks: int = 0) -> Any:
        """Time to propose the speculative tokens of n_decode requests (and, for a draft model, to prefill
        the step's prompt chunks too); 0 without speculation."""
        spec = self.speculation
        if spec is None or spec.method == "ngram" or (n_decode == 0 and spec.method == "mtp"):
            return 0.0
        k = spec.num_tokens
        if spec.method == "mtp":  # k passes of one more layer, each with the LM head
            one_layer = (self.decode_tokens_s[n_decode] + self.decode_attention(n_decode, mean_len)) / spec.num_layers
            return k * (one_layer + float(self.lm_head_s[n_decode]))
        draft = spec.draft
        step = (draft.tokens(0, n_decode) + float(draft.lm_head_s[n_decode])
                + draft.decode_attention(n_decode, mean_len) if n_decode else 0.0)
        prefill = draft.tokens(prefill_tokens, 0) + draft.prefill_attention(chunks, pairs) if prefill_tokens else 0.0
        return k * step + prefill

    def gathered_s(self, tokens: float, prefill: bool) -> float:
        """With attention data parallelism: the part of a rank's step (tokens_s) shared by every rank, the routed
        experts and their all-gather and reduce-scatter, when each of the d ranks holds `tokens` tokens (d x
        tokens in all; fractional: interpolated linearly between whole counts), in a pass with prefill tokens
        (uncaptured where the engine runs prefill so) or a decode pass. 0.0 without data parallelism."""
        if self._gathered_lists is None or tokens <= 0:
            return 0.0
        table = self._gathered_lists[0 if prefill else 1]
        low = min(int(tokens), len(table) - 1)
        high = min(low + 1, len(table) - 1)
        return table[low] + (tokens - low) * (table[high] - table[low]) if high > low else table[low]

    # ---- one step -----------------------------------------------------------------------------------
    def step_s(self, decode_lengths_sum: float, n_decode: int, chunks: list[tuple[int, int]], n_emit: int) -> float:
        """Time of one step: n_decode decode requests with decode_lengths_sum cached tokens in all, the
        prefill chunks (q new tokens after c cached) and n_emit requests sampling a token.

        Pipeline parallelism (stages p > 1), in steady state as serving engines run it (vLLM keeps p batches
        in flight): the step's requests form m = min(p, requests) micro-batches, decodes spread evenly and each
        chunk joining the micro-batch with the fewest tokens; micro-batch i takes t_i for the whole model
        (this class's one-pass time). A stage works through every micro-batch (sum_i t_i / p) and a
        micro-batch passes every stage (t_i), plus p - 1 activation hand-overs of the largest micro-batch (h)
        on the critical path, as simulate(pipeline_decode="steady") counts them:

            max(sum_i t_i / p, max_i t_i) + (p - 1) h

        approximation: layers spread evenly over the stages; every step in steady state (filling the
        pipeline when a busy period starts is not charged); hand-overs not overlapped with compute; the
        chunks that finish their prompt this step are the first ones placed (which ones sample a token is
        not known here).
        """
        if self.stages == 1:
            return self._one_pass(decode_lengths_sum, n_decode, chunks, n_emit)
        p = self.stages
        m = max(min(p, n_decode + len(chunks)), 1)
        decodes = [n_decode // m + (i < n_decode % m) for i in range(m)]
        mean_len = decode_lengths_sum / n_decode if n_decode else 0.0
        placed: list[list[tuple[int, int]]] = [[] for _ in range(m)]
        tokens = [d * self.query for d in decodes]
        for q, c in chunks:
            i = tokens.index(min(tokens))
            placed[i].append((q, c))
            tokens[i] += q
        chunk_emits = n_emit - n_decode
        total, slowest = 0.0, 0.0
        for i in range(m):
            emits = min(len(placed[i]), max(chunk_emits, 0))
            chunk_emits -= emits
            t = self._one_pass(mean_len * decodes[i], decodes[i], placed[i], decodes[i] + emits)
            total += t / p
            slowest = max(slowest, t)
        return max(total, slowest) + (p - 1) * self._p2p(max(tokens))

    def decode_steps_s(self, n: int, mean_lens: np.ndarray) -> np.ndarray:
        """Times of pure decode steps of n requests at each of mean_lens (step_s without chunks, vectorised)."""
        def one_pass(k: int) -> np.ndarray:
            times = self.tokens(0, k) + self.lm_head(k, k) + self.decode_attention(k, mean_lens)
            # without speculation the proposals are 0.0, which leaves these positive times as they are
            return times if self.speculation is None else times + self.proposals(k, mean_lens)
        if self.stages == 1:
            return one_pass(n)
        p = self.stages
        m = min(p, n)
        small, big = n // m, n // m + 1
        bigs = n % m
        t_small = one_pass(small)
        total, slowest = (m - bigs) * t_small / p, t_small
        if bigs:
            t_big = one_pass(big)
            total, slowest = total + bigs * t_big / p, np.maximum(slowest, t_big)
        return np.maximum(total, slowest) + (p - 1) * self._p2p((big if bigs else small) * self.query)

    def _one_pass(self, decode_lengths_sum: float, n_decode: int, chunks: list[tuple[int, int]],
                  n_emit: int) -> float:
        """step_s of the whole model run on one pass (no pipeline)."""
        # tokens() and lm_head() as Python floats (the same values)
        query = self.query
        if len(chunks) == 1:  # the sums below of one chunk, written out
            (q, c), = chunks
            prefill_tokens, pairs = q, q * c + q * q / 2
        else:
            prefill_tokens = sum(q for q, _ in chunks) if chunks else 0
            pairs = sum(q * c + q * q / 2 for q, c in chunks) if chunks else 0
        uncaptured = False
        if prefill_tokens == 0:
            time_s = self._decode_tokens_list[n_decode * query]
            time_s += self._lm_head_list[n_emit + n_decode * (query - 1)]
            table = self.decode_attention_s  # decode_attention(n_decode, mean_len) of a scalar length
        else:  # one pass with prefill tokens (uncaptured where the engine runs prefill so)
            time_s = self._prefill_tokens_list[prefill_tokens + n_decode * query]
            if prefill_tokens + n_decode * query <= self._captured_tokens:  # replayed, as a decode step is
                time_s += self._lm_head_list[n_emit + n_decode * (query - 1)]
                table = self.decode_attention_s
            else:
                time_s += self._mixed_lm_head_list[n_emit + n_decode * (query - 1)]
                table = self.mixed_decode_attention_s
                uncaptured = True
        mean_len = decode_lengths_sum / n_decode if n_decode else 0.0
        if n_decode:
            # approximation: with speculation the query tokens of a request read its KV cache once, as one
            time_s += self._on_grid_scalar(id(table), table, n_decode, float(mean_len))
        if self.speculation is not None:  # proposals, and a draft model's own prefill of the chunks
            time_s += float(self.proposals(n_decode, mean_len, prefill_tokens, pairs, len(chunks)))
        if chunks:  # prefill_attention and sustained_s of one pass, the chunks' attention read once for both
            attention_s, compute_s = self.chunk_attention(len(chunks), pairs)
            time_s += attention_s
            if self.sustained is not None:
                time_s += sustained_extra_one_s(
                    self._prefill_tokens_compute[prefill_tokens + n_decode * query] + compute_s, *self.sustained)
        if uncaptured and self._pass_host_s:  # the pass's host dispatch beyond its kernels (timing.host_bound)
            time_s += host_excess_one_s(time_s - self._step_host_s, self._pass_host_s, self._async_host)
        return time_s

    def chunk_attention(self, count: int, pairs: float) -> tuple[float, float]:
        """The attention core of `count` prefill chunks with `pairs` causal query-key pairs in all and its
        compute-bound seconds (0.0 without a sustained clock), kept for the next step of the same chunks."""
        parts = self._chunk_attention.get((count, pairs))
        if parts is not None:
            return parts
        length = math.sqrt(2.0 * pairs / count)  # pair-equivalent length of each of k fresh prefills
        table = self.prefill_attention_s
        attention_s = self._on_grid_scalar(id(table), table, count, length)
        compute_s = 0.0
        if self.sustained is not None:
            table = self.prefill_attention_compute_s
            compute_s = self._on_grid_scalar(id(table), table, count, length)
        if len(self._chunk_attention) >= 4096:  # (a workload of many lengths: kept small)
            self._chunk_attention.clear()
        self._chunk_attention[(count, pairs)] = parts = (attention_s, compute_s)
        return parts

    def sustained_s(self, tokens: int, chunks: int, pairs: float) -> float:
        """The extra seconds of a step with prefill chunks (`tokens` in all, the chunks with `pairs` causal
        query-key pairs) at the sustained clock (timing.sustained): (C - onset_s) * (1 / fraction - 1), C its
        tokens_s and prefill attention compute-bound seconds; 0 where C <= onset_s or the device has no figure."""
        if self.sustained is None or chunks == 0:
            return 0.0
        return sustained_extra_one_s(self._prefill_tokens_compute[tokens] + self.chunk_attention(chunks, pairs)[1],
                                     *self.sustained)
