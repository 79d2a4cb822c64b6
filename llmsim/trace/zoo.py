"""Modules the CLI can name: transformers' own vision models built from their config classes' defaults
(nothing downloaded, no torchvision), and a user's file:function that builds one.

    hf:vit       ViTModel(ViTConfig())            ViT-B/16, 224x224
    hf:resnet    ResNetModel(ResNetConfig())      ResNet-50, 224x224
    hf:convnext  ConvNextModel(ConvNextConfig())  ConvNeXt-T, 224x224
    my_model.py:build   build() returns (module, example_inputs), or a module (then input_shape is needed)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import OptionError, check_choice
from .recorder import import_torch

HF_VISION: dict[str, tuple[str, str]] = {
    "vit": ("ViTConfig", "ViTModel"),
    "resnet": ("ResNetConfig", "ResNetModel"),
    "convnext": ("ConvNextConfig", "ConvNextModel"),
}


def hf_vision(name: str, batch_size: int = 1, image_size: int = 224) -> tuple[Any, tuple[Any, ...]]:
    """transformers' vision model `name` on the meta device and a pixel batch [B, 3, H, W] on meta."""
    torch = import_torch()
    check_choice("model", f"hf:{name}", [f"hf:{n}" for n in HF_VISION])
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - transformers is in the test environment
        raise ImportError("hf: models need transformers: pip install transformers", name="transformers") from exc
    config_name, model_name = HF_VISION[name]
    config = getattr(transformers, config_name)(**({"image_size": image_size} if name == "vit" else {}))
    with torch.device("meta"):
        module = getattr(transformers, model_name)(config).eval()
    return module, (torch.empty(batch_size, 3, image_size, image_size, device="meta"),)


def from_file(target: str, input_shape: tuple[int, ...] | None = None) -> tuple[Any, tuple[Any, ...]]:
    """`path.py:function`: import the file, call function(); (module, example_inputs)."""
    import importlib.util

    torch = import_torch()
    path_text, _, function = target.rpartition(":")
    path = Path(path_text)
    if not path_text.endswith(".py") or not function:
        raise OptionError(f"model={target!r}: write FILE.py:FUNCTION (e.g. my_model.py:build) or one of "
                          f"{', '.join('hf:' + n for n in HF_VISION)}")
    if not path.is_file():
        raise OptionError(f"model={target!r}: no file {path}")
    spec = importlib.util.spec_from_file_location(f"llmsim_user_{path.stem}", path)
    module_code = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module_code)  # the user's own file, named by them
    except Exception as exc:
        raise OptionError(f"model={target!r}: importing {path} raised {type(exc).__name__}: {exc}") from exc
    build = getattr(module_code, function, None)
    if not callable(build):
        raise OptionError(f"model={target!r}: {path} has no function {function!r}")
    try:
        built = build()
    except Exception as exc:
        raise OptionError(f"model={target!r}: {function}() raised {type(exc).__name__}: {exc}") from exc
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], torch.nn.Module):
        module, inputs = built
        return module, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if not isinstance(built, torch.nn.Module):
        raise OptionError(f"model={target!r}: {function}() returned {type(built).__name__}; return an nn.Module "
                          "or (module, example_inputs)")
    if input_shape is None:
        raise OptionError(f"model={target!r}: {function}() returned a module without example inputs; pass "
                          "--input-shape (e.g. 8,3,224,224) or return (module, example_inputs)")
    return built, (torch.empty(*input_shape, device="meta"),)


def resolve_target(target: str, batch_size: int = 1, image_size: int = 224,
                   input_shape: tuple[int, ...] | None = None) -> tuple[Any, tuple[Any, ...]]:
    """A CLI model name -> (module, example_inputs)."""
    if target.startswith("hf:"):
        return hf_vision(target[3:], batch_size, image_size)
    if target.startswith("diffusers:"):
        from .diffusion import diffusion_target

        module, args, kwargs = diffusion_target(target.removeprefix("diffusers:"), batch_size)
        if kwargs:
            raise OptionError(f"model={target!r}: its forward takes keyword inputs; use "
                              "llmsim.trace.diffusion.analyze_pipeline or diffusion_target")
        return module, args
    if target.startswith("timm:"):
        raise OptionError(f"model={target!r}: timm models are not supported (timm needs torchvision, whose "
                          f"wheel does not load beside the CPU torch build); use the same architectures from "
                          f"transformers: {', '.join('hf:' + n for n in HF_VISION)}")
    return from_file(target, input_shape)
