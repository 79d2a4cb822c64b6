"""The ends of the graph: token (and learned position) embeddings before the layers, the LM head after
them, with their tensor-parallel collectives. A mixin of GraphBuilder."""

from __future__ import annotations

from ..op import formula


class HeadBlocks:
    """Embeddings and LM head."""

    def embed(self) -> None:
        """Token embeddings (vocabulary-parallel under tensor parallelism) and learned position embeddings."""
        model = self.model
        self.add(formula("embedding")("embed_tokens", 1, T=self.T, h=self.h, rows=int(self.vocab_local().value),
                                      ab=self.eb))
        self.all_reduce("embed_tokens.all_reduce", 1)  # vocabulary-parallel embedding
        if model.embedding_scale:  # x[T, h] * c (Gemma: sqrt(h); Granite: embedding_multiplier)
            self.elementwise("embed_scale", 1, self.T * self.h, 1, 1, 1)
        if model.position_embedding == "learned":
            self.add(formula("embedding")("embed_positions", 1, T=self.T, h=self.h,
                                          rows=model.max_position_embeddings, ab=self.eb, add=True))

    def lm_head(self) -> None:
        """logits[tokens, V] = x[tokens, h] @ W[h, V]: every token in decode or with logits="all", else the
        last of each sequence; tied weights are the embedding table's."""
        model = self.model
        tokens = self.T if self.options.logits == "all" or self.phase == "decode" else self.B
        V_local = self.vocab_local()  # padded to a multiple of 64 and split under tensor parallelism
        tied = model.tie_word_embeddings
        self.layer_unquantized = ()
        terms = self.role_terms("lm_head", self.h, V_local)  # untied: the weight dtype, or the config's format
        dtype = "bf16" if tied and terms["lane_measured"] else terms["gemm"]  # tied: the 16-bit embedding
        self.add(formula("linear")(
            "lm_head", 1, T=tokens, K=self.h, N=V_local, wb=self.eb if tied else terms["wb"], ab=self.ab,
            owns_weight=not tied, precision=terms["precision"], bias=model.lm_head_bias,
            kernel_key=("gemm", dtype, model.hidden_size),
        ))
        if model.logit_scale:  # logits[tokens, V] * c (Cohere: logit_scale; Granite: 1 / logits_scaling)
            self.elementwise("logit_scale", 1, tokens * V_local, 1, 1, 1)
        if model.logit_softcap:  # logits[tokens, V]: / c, tanh, * c (Gemma 2), one kernel each in eager PyTorch
            self.elementwise("logit_softcap", 1, tokens * V_local, 3, 3, 10, launches=3)
        if self.tp_degree > 1:  # gather the vocabulary slices of the logits
            self.add(formula("collective")("lm_head.all_gather", 1, kind="all_gather",
                                           message_bytes=tokens * V_local * self.tp * self.rb, group=self.tp_degree))
        if self.options.engine_step:  # the engine's host work per forward pass (ExecutionOptions.step_host_s)
            self.add(formula("engine_step")("engine.step", 1))
