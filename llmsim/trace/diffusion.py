"""Diffusion models from diffusers, built on the meta device from shipped configs (nothing downloaded),
and a denoising pipeline analysed stage by stage.

    diffusers:unet-sd15         Stable Diffusion 1.5: CLIP text encoder once, UNet x steps, VAE decode once
    diffusers:vae-sd15          SD 1.5's VAE decoder alone (latent -> image)
    diffusers:sd3-transformer   SD3-medium's MMDiT (SD3Transformer2DModel) x steps
    diffusers:flux              FLUX.1-schnell's DiT (FluxTransformer2DModel) x steps

Configs: model_configs/zoo/*.json, each the Hugging Face repository's config.json values with its source
(model_configs/zoo/SOURCES.md). diffusers is imported lazily (pip install 'llmsim[models]').

Inputs follow the diffusers pipelines (StableDiffusionPipeline, StableDiffusion3Pipeline, FluxPipeline):
- latent: the VAE latent's height and width (image pixels / 8): SD 1.5 64 (512 px), SD3 and Flux 128.
- classifier-free guidance (`cfg`): the pipeline runs the denoiser on [unconditional, conditional]
  latents in one batch (2 x images) and encodes the negative prompt too; SD 1.5 and SD3 use it by default
  (guidance_scale > 1), FLUX.1-schnell is guidance-distilled and does not.
- text tokens: CLIP 77; SD3 77 CLIP + 256 T5 = 333 (max_sequence_length 256); Flux 256 T5 tokens.
approximation: the scheduler's update of the latents (a few element-wise ops per step) is not counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..errors import OptionError, check_choice
from ..shipped import model_configs_dir
from .recorder import import_torch

DIFFUSERS_HINT = "diffusers: models need diffusers: pip install 'llmsim[models]'"


@dataclass(frozen=True)
class DiffusionModel:
    """What a zoo name builds: its denoiser (or VAE) config file, pipeline defaults and what runs once."""

    denoiser: str  # config file stem in model_configs/zoo (the VAE for vae-sd15)
    kind: str  # "unet", "vae", "sd3", "flux": how its inputs are built
    latent: int  # default latent height = width
    steps: int  # default denoising steps (the pipeline's num_inference_steps)
    cfg: bool  # classifier-free guidance by default
    text_encoder: str | None = None  # config run once per prompt (and negative prompt with cfg)
    vae: str | None = None  # config whose decoder runs once at the end
    note: str = ""


DIFFUSION_MODELS: dict[str, DiffusionModel] = {
    "unet-sd15": DiffusionModel("sd15-unet", "unet", 64, 50, True, "sd15-text-encoder", "sd15-vae"),
    "vae-sd15": DiffusionModel("sd15-vae", "vae", 64, 1, False),
    "sd3-transformer": DiffusionModel("sd3-medium-transformer", "sd3", 128, 28, True,
                                      note="SD3's text encoders (CLIP-L, CLIP-G, T5-XXL) and VAE are not included"),
    "flux": DiffusionModel("flux1-schnell-transformer", "flux", 128, 4, False,
                           note="Flux's text encoders (CLIP-L, T5-XXL) and VAE are not included"),
}
SD3_TEXT_TOKENS = 77 + 256  # CLIP-L/G tokens + T5 max_sequence_length (StableDiffusion3Pipeline default)
FLUX_TEXT_TOKENS = 256  # T5 max_sequence_length (FluxPipeline default for schnell)
CLIP_TOKENS = 77


@cache  # shipped files do not change while the process runs
def zoo_config(stem: str) -> dict[str, Any]:
    """A shipped zoo file: {"library", "class", "source", "config"}."""
    return json.loads((model_configs_dir() / "zoo" / f"{stem}.json").read_text())


def _import_diffusers() -> Any:
    try:
        import diffusers
    except ImportError as exc:
        raise ImportError(DIFFUSERS_HINT, name="diffusers") from exc
    return diffusers


@cache  # a meta module holds no data and analyze never changes it: one per process
def build(stem: str) -> Any:
    """The shipped config's module on the meta device (eval mode; no weights allocated). Shared between
    calls: do not modify it (copy.deepcopy it first)."""
    torch = import_torch()
    spec = zoo_config(stem)
    if spec["library"] == "diffusers":
        cls = getattr(_import_diffusers(), spec["class"])
        with torch.device("meta"):
            return cls(**spec["config"]).eval()
    import transformers

    config = getattr(transformers, spec["class"].replace("Model", "Config"))(**spec["config"])
    with torch.device("meta"):
        return getattr(transformers, spec["class"])(config).eval()


def _vae_decoder(vae: Any) -> Any:
    torch = import_torch()

    class VaeDecode(torch.nn.Module):
        """AutoencoderKL.decode as a forward (the pipeline's last step: latents -> image)."""

        def __init__(self, vae: Any) -> None:
            super().__init__()
            self.vae = vae

        def forward(self, latents: Any) -> Any:
            return self.vae.decode(latents).sample

    return VaeDecode(vae).eval()


def denoiser_inputs(kind: str, batch: int, latent: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) on meta of one denoiser (or VAE decoder) call on `batch` latents."""
    torch = import_torch()

    def empty(*shape: int) -> Any:
        return torch.empty(*shape, device="meta")

    if kind == "unet":  # UNet2DConditionModel(sample, timestep, encoder_hidden_states)
        return (empty(batch, 4, latent, latent), torch.full((batch,), 999, dtype=torch.long, device="meta"),
                empty(batch, CLIP_TOKENS, 768)), {}
    if kind == "vae":
        return (empty(batch, 4, latent, latent),), {}
    if kind == "sd3":
        return (), {"hidden_states": empty(batch, 16, latent, latent), "timestep": empty(batch),
                    "encoder_hidden_states": empty(batch, SD3_TEXT_TOKENS, 4096),
                    "pooled_projections": empty(batch, 2048)}
    # flux: the 16-channel latent packed into 2x2 patches, (latent/2)^2 tokens of 64 channels
    tokens = (latent // 2) ** 2
    return (), {"hidden_states": empty(batch, tokens, 64), "timestep": empty(batch),
                "encoder_hidden_states": empty(batch, FLUX_TEXT_TOKENS, 4096), "pooled_projections": empty(batch, 768),
                "img_ids": empty(tokens, 3), "txt_ids": empty(FLUX_TEXT_TOKENS, 3)}


def check_latent(name: str, latent: int) -> None:
    model = DIFFUSION_MODELS[name]
    multiple = {"unet": 8, "vae": 1, "sd3": 2, "flux": 2}[model.kind]
    if latent < multiple or latent % multiple:
        raise OptionError(f"latent={latent}: diffusers:{name} needs a positive multiple of {multiple} "
                          "(latent pixels = image pixels / 8)")
    if model.kind == "sd3":  # its position embedding covers pos_embed_max_size patches a side (diffusers' PatchEmbed)
        config = zoo_config(model.denoiser)["config"]
        largest = config["pos_embed_max_size"] * config["patch_size"]
        if latent > largest:
            raise OptionError(f"latent={latent}: diffusers:{name} takes latents up to {largest} (its position "
                              f"embedding: pos_embed_max_size {config['pos_embed_max_size']} x patch_size "
                              f"{config['patch_size']}; {largest * 8} px images)")


def _check_sizes(batch_size: Any, latent: Any) -> None:
    """batch_size and (given) latent: whole numbers >= 1, named in the error (torch's own errors said neither)."""
    for field, value in (("batch_size", batch_size), ("latent", latent)):
        if value is None and field == "latent":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"{field}={value!r}: give a whole number >= 1")


def diffusion_target(name: str, batch_size: int = 1, latent: int | None = None,
                     cfg: bool | None = None) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """One denoiser (vae-sd15: decoder) call of a zoo model: (module, args, kwargs) on meta."""
    check_choice("model", f"diffusers:{name}", [f"diffusers:{n}" for n in DIFFUSION_MODELS])
    model = DIFFUSION_MODELS[name]
    _check_sizes(batch_size, latent)
    latent = model.latent if latent is None else latent
    check_latent(name, latent)
    module = build(model.denoiser)
    if model.kind == "vae":
        module = _vae_decoder(module)
    guided = model.cfg if cfg is None else cfg
    args, kwargs = denoiser_inputs(model.kind, batch_size * (2 if guided and model.kind != "vae" else 1), latent)
    return module, args, kwargs


def analyze_pipeline(name: str, batch_size: int = 1, latent: int | None = None, steps: int | None = None,
                     cfg: bool | None = None, hardware: Any = "h100-sxm", dtype: str = "bfloat16",
                     engine: str = "torch-compile", autocast: str | None = None) -> Any:
    """A zoo model's generation: each stage traced once and counted as often as it runs (a PipelineResult).
    autocast: every stage traced under CUDA autocast to that dtype over weights in `dtype` (analyze())."""
    from .analyze import analyze
    from .pipeline import PipelineResult, PipelineStage

    check_choice("model", f"diffusers:{name}", [f"diffusers:{n}" for n in DIFFUSION_MODELS])
    model = DIFFUSION_MODELS[name]
    _check_sizes(batch_size, latent)
    if model.kind == "vae" and (steps is not None or cfg is not None):  # a decoder alone: one run, no guidance
        raise OptionError(f"diffusers:{name} is a VAE decoder run once: steps and cfg do not apply (give a "
                          "pipeline, e.g. diffusers:unet-sd15, for denoising steps)")
    latent = model.latent if latent is None else latent
    steps = model.steps if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise OptionError(f"steps={steps!r}: give a positive whole number of denoising steps")
    if cfg is not None and not isinstance(cfg, bool):
        raise OptionError(f"cfg={cfg!r}: give True (classifier-free guidance) or False")
    guided = model.cfg if cfg is None else cfg
    options = {"hardware": hardware, "dtype": dtype, "engine": engine, "autocast": autocast}
    stages = []
    if model.text_encoder:
        torch = import_torch()
        prompts = batch_size * (2 if guided else 1)  # the negative prompt is encoded too
        ids = torch.zeros(prompts, CLIP_TOKENS, dtype=torch.long, device="meta")
        stages.append(PipelineStage("text encoder", analyze(build(model.text_encoder), (ids,),
                                                             name=model.text_encoder, **options), 1))
    module, args, kwargs = diffusion_target(name, batch_size, latent, guided)
    label = "vae decode" if model.kind == "vae" else "denoiser step"
    stages.append(PipelineStage(label, analyze(module, args, example_kwargs=kwargs, name=model.denoiser, **options),
                                1 if model.kind == "vae" else steps))
    if model.vae:
        decoder = _vae_decoder(build(model.vae))
        vae_args, _ = denoiser_inputs("vae", batch_size, latent)
        stages.append(PipelineStage("vae decode", analyze(decoder, vae_args, name=model.vae, **options), 1))
    return PipelineResult(model=f"diffusers:{name}", batch_size=batch_size, latent=latent,
                          steps=1 if model.kind == "vae" else steps, cfg=guided and model.kind != "vae",
                          stages=tuple(stages), note=model.note)
