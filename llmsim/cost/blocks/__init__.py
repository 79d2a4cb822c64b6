"""The blocks of the graph builder, one concern per module, each a mixin of `cost.builder.GraphBuilder`:
attention (standard attention, the core softmax(Q K^T) V kernels: flash, math, SDPA math), mla (multi-head
latent attention), linear_attention (gated DeltaNet), ssm (Mamba-2), feedforward (MLP, MoE, activation), parallel
(tensor-parallel split checks, local heads, all-reduce) and head (embeddings, LM head).

A mixin holds methods only. It reads the builder's workload symbols and options (self.B, self.S, self.L,
self.T, self.h, self.ab, self.rb, self.kvb, self.wb, self.eb, self.tp, self.precision, self.phase, self.options,
self.fusion, ...; set in GraphBuilder.__init__) and appends ops through its helpers (self.add, linear,
norm, elementwise, expert_linear); blocks call each other's methods through self as well. The mixins
import nothing of the builder: the arrow points from builder to blocks.
"""
