"""The diffusers zoo (llmsim.trace.diffusion): every shipped config's traced FLOPs against torch's
FlopCounterMode on the same module and inputs, the pipeline's arithmetic (text encoder once, denoiser x
steps, VAE once, classifier-free guidance doubling the denoiser's batch), masked attention, and the CLI."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("diffusers")

from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import llmsim  # noqa: E402
from llmsim.errors import OptionError  # noqa: E402
from llmsim.trace.diffusion import CLIP_TOKENS, DIFFUSION_MODELS, analyze_pipeline, build, diffusion_target  # noqa: E402


def _flop_counter(module: nn.Module, args: tuple, kwargs: dict) -> int:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(*args, **kwargs)
    return counter.get_total_flops()


# the shipped configs at their real widths and depths; a small latent keeps the fast subset fast (the FLOP
# formulas do not depend on the resolution; the slow test below repeats it at the pipelines' defaults)
FAST = {"unet-sd15": 8, "vae-sd15": 4}
SLOW = {"sd3-transformer": 8, "flux": 8}


@pytest.mark.parametrize("name", [*FAST, *[pytest.param(n, marks=pytest.mark.slow) for n in SLOW]])
def test_zoo_flops_equal_flop_counter(name: str) -> None:
    latent = {**FAST, **SLOW}[name]
    module, args, kwargs = diffusion_target(name, batch_size=1, latent=latent)
    result = llmsim.analyze(module, args, example_kwargs=kwargs, dtype="float32", engine="transformers")
    assert result.matmul_flops == _flop_counter(module, args, kwargs)
    assert not result.unknown_ops
    assert result.parameters == sum(p.numel() for p in module.parameters())


def test_text_encoder_causal_attention_counts_the_kept_half() -> None:
    # SD 1.5's CLIP text encoder attends causally (SDPA is_causal=True). FlopCounterMode counts the full
    # 77 x 77 scores; llmsim counts what a flash kernel computes, the causal half: per layer and sequence
    # 12 heads x (77*77 - 77*78/2) = 12 x 2926 = 35112 scores fewer, each 2*64 (q k^T) + 2*64 (p v) = 256 FLOPs
    module = build("sd15-text-encoder")
    ids = torch.zeros(2, CLIP_TOKENS, dtype=torch.long, device="meta")
    result = llmsim.analyze(module, (ids,), dtype="float32", engine="transformers")
    skipped = 2 * 12 * 12 * (77 * 77 - 77 * 78 // 2) * 256  # sequences x layers x heads x scores x FLOPs
    assert _flop_counter(module, (ids,), {}) - result.matmul_flops == skipped == 215_728_128


def test_sdpa_explicit_mask_counts_the_full_square_and_keywords_are_read() -> None:
    # an explicit attn_mask is data: the kernel computes every score, as FlopCounterMode counts them.
    # diffusers calls SDPA with every argument by keyword (query=, key=, value=): read the same way
    class Attention(nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(query=q, key=k, value=v, attn_mask=mask)

    q = torch.empty(1, 2, 8, 4)  # [B, H, L, E]
    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    args = (q, q.clone(), q.clone(), mask)
    result = llmsim.analyze(Attention(), args, dtype="float32", engine="transformers")
    (kernel,) = [k.kernel for k in result.kernels]
    # 2 * 2*B*H*L*S*E = 2 * 2*1*2*8*8*4 = 2048, as FlopCounterMode; softmax 5 per score = 5*128 = 640
    assert (kernel.matmul_flops, kernel.vector_flops) == (2048, 640)
    assert kernel.matmul_flops == _flop_counter(Attention(), tuple(a.to("meta") for a in args), {})
    # q, k, v 3 x 256 B and the boolean mask 64 B read; the output 256 B written
    assert (kernel.bytes_read, kernel.bytes_written) == (3 * 256 + 64, 256)


def test_pipeline_is_text_encoder_once_denoiser_per_step_vae_once() -> None:
    guided = analyze_pipeline("unet-sd15", latent=8, steps=3, engine="roofline")
    assert [(s.name, s.runs) for s in guided.stages] == [("text encoder", 1), ("denoiser step", 3), ("vae decode", 1)]
    text, unet, vae = (s.result for s in guided.stages)
    assert guided.time_s == pytest.approx(text.time_s + 3 * unet.time_s + vae.time_s)
    assert guided.step_time_s == unet.time_s and guided.cfg
    # classifier-free guidance runs the UNet and the text encoder on 2 x images; every FLOP of both scales
    # with the batch, the VAE decodes the images only
    plain = analyze_pipeline("unet-sd15", latent=8, steps=3, cfg=False, engine="roofline")
    assert unet.matmul_flops == 2 * plain.stages[1].result.matmul_flops
    assert text.matmul_flops == 2 * plain.stages[0].result.matmul_flops
    assert vae.matmul_flops == plain.stages[2].result.matmul_flops
    text_out = str(guided)
    assert "per denoising step" in text_out and "whole pipeline" in text_out and "classifier-free" in text_out


def test_bad_zoo_input_is_one_line() -> None:
    with pytest.raises(OptionError, match="latent=12"):
        diffusion_target("unet-sd15", latent=12)
    with pytest.raises(OptionError, match="diffusers:sd15"):
        diffusion_target("sd15")
    with pytest.raises(OptionError, match="steps=0"):
        analyze_pipeline("unet-sd15", steps=0)
    assert set(DIFFUSION_MODELS) == {"unet-sd15", "vae-sd15", "sd3-transformer", "flux"}
    # sizes and steps the Python API took to torch (a 0-element reshape, a negative dimension, empty()'s TypeError)
    # or printed ("True steps"); a VAE decoder alone printed "1 steps, no classifier-free guidance" for --steps 30
    for bad, match in ((dict(batch_size=0), "batch_size=0"), (dict(batch_size=-1), "batch_size=-1"),
                       (dict(batch_size=2.5), "batch_size=2.5"), (dict(latent=0), "latent=0")):
        with pytest.raises(OptionError, match=rf"^{match}: give a whole number >= 1$"):
            analyze_pipeline("unet-sd15", **bad)
    with pytest.raises(OptionError, match=r"^steps=True"):
        analyze_pipeline("flux", steps=True, latent=8)
    # sizes past what the model runs on: named by the option (they were the model's own errors with advice
    # about example_inputs); SD3-medium: pos_embed_max_size 192 x patch_size 2 = 384 latent pixels a side
    with pytest.raises(OptionError, match=r"^latent=512: diffusers:sd3-transformer takes latents up to 384"):
        diffusion_target("sd3-transformer", latent=512)
    from llmsim.trace.zoo import hf_vision

    for name, size, smallest in (("vit", 8, 16), ("convnext", 3, 32)):
        with pytest.raises(OptionError, match=rf"^image_size={size}: hf:{name} needs images of at least {smallest}"):
            hf_vision(name, 1, size)
    for given in (dict(steps=30), dict(cfg=True)):
        with pytest.raises(OptionError, match=r"^diffusers:vae-sd15 is a VAE decoder run once: steps and cfg"):
            analyze_pipeline("vae-sd15", latent=8, **given)


def test_cli_analyze_diffusers(capsys) -> None:
    from llmsim.cli import main

    assert main(["analyze", "diffusers:unet-sd15", "--latent", "8", "--steps", "3", "--no-cfg", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "3 steps" in out and "no classifier-free guidance" in out and "vae decode" in out
    assert "aten.convolution.default" in out
    assert main(["analyze", "diffusers:unet-sd15", "--latent", "12"]) == 2
    assert "latent=12" in capsys.readouterr().err
    assert main(["analyze", "timm:resnet50"]) == 2
    assert "torchvision" in capsys.readouterr().err
    # flags of hf: models were dropped silently for diffusers: ones (the image size is --latent x 8)
    assert main(["analyze", "diffusers:unet-sd15", "--latent", "8", "--image-size", "1024"]) == 2
    assert "--image-size does not apply to diffusers:unet-sd15" in capsys.readouterr().err
    assert main(["analyze", "diffusers:vae-sd15", "--latent", "8", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "one decode" in out and "denoising" not in out and "guidance" not in out
    assert "scheduler" not in out  # a VAE decoder alone has no scheduler to leave out (session 46's audit)


@pytest.mark.slow
def test_zoo_at_default_sizes_equal_flop_counter() -> None:
    # every shipped zoo model at its pipeline's default latent (SD 1.5 64 = 512 px; SD3, Flux 128 = 1024 px)
    # and transformers' vision models at their defaults (ViT-B/16, ResNet-50, ConvNeXt-T, 224 px)
    from llmsim.trace.zoo import HF_VISION, hf_vision

    for name in DIFFUSION_MODELS:
        module, args, kwargs = diffusion_target(name)
        result = llmsim.analyze(module, args, example_kwargs=kwargs, dtype="float32", engine="transformers")
        assert result.matmul_flops == _flop_counter(module, args, kwargs), name
    for name in HF_VISION:
        module, inputs = hf_vision(name, batch_size=2)
        result = llmsim.analyze(module, inputs, dtype="float32", engine="transformers")
        assert result.matmul_flops == _flop_counter(module, inputs, {}), name


def test_a_diffusers_target_without_diffusers_names_both_extras(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from llmsim.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "diffusers" else real(name, *a))
    assert main(["analyze", "diffusers:unet-sd15", "--hardware", "h100-sxm"]) == 2
    assert ("diffusers:unet-sd15 needs torch and diffusers (diffusers missing): pip install "
            "'llmsim[validate,models]'") in capsys.readouterr().err
