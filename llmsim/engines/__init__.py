"""Serving engines (vLLM, SGLang, TensorRT-LLM, torch.compile, transformers eager): which kernels they run,
their overheads, and which measured kernel tables apply. Filled by the measured-kernels work."""
