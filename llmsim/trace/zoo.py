"""Modules the CLI can name: transformers' own vision models built from their config classes' defaults
(nothing downloaded, no torchvision), and a user's file:function that builds one.

    hf:vit       ViTModel(ViTConfig())            ViT-B/16, 224x224
    hf:resnet    ResNetModel(ResNetConfig())      ResNet-50, 224x224
    hf:convnext  ConvNextModel(ConvNextConfig())  ConvNeXt-T, 224x224
    my_model.py:build   build() returns (module, example_inputs), or a module (then input_shape is needed)
"""

from __future__ import annotations

import sys
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
    # the smallest image each runs on: ViT one patch; ConvNeXt's 4x4 stem then three 2x2 downsamplings (32)
    smallest = {"vit": getattr(config, "patch_size", 16), "convnext": 32}.get(name, 1)
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < smallest:
        raise OptionError(f"image_size={image_size!r}: hf:{name} needs images of at least {smallest} pixels a side")
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
        from ..shipped import shipped_model_names
        from .diffusion import DIFFUSION_MODELS

        llm = (f" ({target} is a shipped LLM: `llmsim simulate {target}` costs it)"
               if target in shipped_model_names() else "")
        names = [*(f"hf:{n}" for n in HF_VISION), *(f"diffusers:{n}" for n in DIFFUSION_MODELS)]
        raise OptionError(f"model={target!r}: write FILE.py:FUNCTION (e.g. my_model.py:build) or one of "
                          f"{', '.join(names)}{llm}")
    if not path.is_file():
        raise OptionError(f"model={target!r}: no file {path}")
    spec = importlib.util.spec_from_file_location(f"llmsim_user_{path.stem}", path)
    module_code = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)  # its own imports (`from helper import ...`) resolve as `python FILE.py`'s do
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:  # (the folder stays on the path while the function runs: it may import there too)
        try:
            spec.loader.exec_module(module_code)  # the user's own file, named by them
        except Exception as exc:
            raise OptionError(f"model={target!r}: importing {path} raised {type(exc).__name__}: {exc}") from exc
        build = getattr(module_code, function, None)
        if build is None:
            raise OptionError(f"model={target!r}: {path} has no function {function!r}")
        if not callable(build):
            kind = type(build).__name__
            raise OptionError(f"model={target!r}: {path}'s {function!r} is of type {kind}, not a function to call")
        try:
            built = build()
        except Exception as exc:
            raise OptionError(f"model={target!r}: {function}() raised {type(exc).__name__}: {exc}") from exc
    finally:
        if added:
            sys.path.remove(folder)
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], torch.nn.Module):
        if input_shape is not None:  # the function's own inputs would run, the shape given dropped
            raise OptionError(f"model={target!r}: {function}() returns its own example inputs; --input-shape "
                              "applies to a function that returns only a module (drop it, or change the inputs "
                              "the function builds)")
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
