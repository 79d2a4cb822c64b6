"""Speed of llmsim.analyze (not a timed test): trace and time transformers' ViT-B/16 (batch 8, 224x224),
ResNet-50 (batch 32), Llama-3.1-8B (prefill of 2048 tokens, a 4-D causal mask) and, with diffusers
installed, Stable Diffusion 1.5's UNet (one denoising step: 2 x 1 latents of 64x64 under classifier-free
guidance), all built on the meta device from their configs. The issue's target: SD-1.5's UNet traced and
analysed in under 2 s (building the module is timed apart). Run: PYTHONPATH=. python benchmarks/bench_trace.py"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import torch
import transformers
from bench_simulate import median_s  # run as a script: this folder is first on sys.path

import llmsim


def _llama() -> tuple[torch.nn.Module, tuple, dict]:
    config = json.loads((Path(__file__).resolve().parent.parent / "model_configs" / "llama-3.1-8b.json").read_text())
    fields = {k: v for k, v in config.items() if k not in ("model_type", "auto_map")}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("llama", **fields))
    seq = 2048
    mask = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]
    return model.eval(), (torch.zeros(1, seq, dtype=torch.long),), {"attention_mask": mask, "use_cache": False}


def main() -> None:
    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"torch {torch.__version__}")
    cases = {}
    for name, batch in (("vit", 8), ("resnet", 32)):
        from llmsim.trace.zoo import hf_vision

        module, inputs = hf_vision(name, batch)
        cases[f"hf:{name} batch {batch}"] = (module, inputs, {})
    cases["llama-3.1-8b prefill 2048"] = _llama()
    try:
        from llmsim.trace.diffusion import diffusion_target

        start = time.perf_counter()
        module, args, kwargs = diffusion_target("unet-sd15")
        print(f"building SD-1.5's UNet on meta: {time.perf_counter() - start:.3f} s (not in the times below)")
        cases["sd15 unet step (2x4x64x64)"] = (module, args, kwargs)
    except ImportError:
        print("diffusers is not installed: SD-1.5's UNet skipped (pip install 'llmsim[models]')")
    for label, (module, inputs, kwargs) in cases.items():
        for engine in ("transformers", "torch-compile"):
            def run(module=module, inputs=inputs, kwargs=kwargs, engine=engine):
                return llmsim.analyze(module, inputs, example_kwargs=kwargs, hardware="h100-sxm", engine=engine)

            result = run()
            seconds = median_s(run, 3)
            print(f"{label:<28} {engine:<14} {seconds:6.3f} s to trace and time {result.aten_ops} aten calls "
                  f"({len(result.kernels)} kernels): {result.time_s * 1e3:.3f} ms predicted")


if __name__ == "__main__":
    main()
