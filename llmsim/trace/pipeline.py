"""PipelineResult: a generation made of traced stages, each run a number of times (a diffusion model's
text encoder once, its denoiser once per step, its VAE decoder once)."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.text import fmt_s
from .result import TraceResult


@dataclass(frozen=True)
class PipelineStage:
    """One traced forward and how many times the pipeline runs it."""

    name: str  # "text encoder", "denoiser step", "vae decode"
    result: TraceResult
    runs: int

    @property
    def time_s(self) -> float:
        return self.result.time_s * self.runs

    @property
    def flops(self) -> float:
        return self.result.flops * self.runs


@dataclass(frozen=True)
class PipelineResult:
    """A whole generation: stages in order; time_s and flops are sums over runs (frozen)."""

    model: str
    batch_size: int  # images generated
    latent: int  # latent height = width
    steps: int
    cfg: bool  # classifier-free guidance: the denoiser runs on 2 x batch_size latents
    stages: tuple[PipelineStage, ...]
    note: str = ""

    @property
    def time_s(self) -> float:
        return sum(s.time_s for s in self.stages)

    @property
    def flops(self) -> float:
        return sum(s.flops for s in self.stages)

    def stage(self, name: str) -> PipelineStage:
        return next(s for s in self.stages if s.name == name)

    @property
    def step_time_s(self) -> float:
        """One denoising step (the denoiser's forward; a VAE alone: its decode)."""
        return self.stages[-1].result.time_s if len(self.stages) == 1 else self.stage("denoiser step").result.time_s

    def __str__(self) -> str:
        first = self.stages[0].result
        guidance = (f"classifier-free guidance on (the denoiser runs on 2 x {self.batch_size} latents; --no-cfg "
                    "to turn it off)" if self.cfg else "no classifier-free guidance (denoiser batch = images)")
        dtype = first.dtype if first.autocast is None else f"autocast {first.autocast} over {first.dtype}"
        decoder = [s.name for s in self.stages] == ["vae decode"]  # a VAE decoder alone: no denoising
        size = f"latent {self.latent}x{self.latent} ({self.latent * 8}x{self.latent * 8} px)"
        lines = [f"{self.model} on {first.hardware}, {dtype}, engine {first.engine}: batch {self.batch_size}, "
                 + (f"{size}, one decode" if decoder else
                    f"{size}, {self.steps} step{'s' if self.steps != 1 else ''}, {guidance}"),
                 (f"  decode: {fmt_s(self.time_s)}" if decoder else
                  f"  per denoising step: {fmt_s(self.step_time_s)}; whole pipeline: {fmt_s(self.time_s)}")
                 + f" ({self.flops / 1e12:.2f} TFLOP)"]
        total = self.time_s or 1.0
        lines.append(f"  {'stage':<14} {'runs':>5} {'per run':>10} {'total':>10} {'share':>6} {'GFLOP/run':>10} bound")
        for s in self.stages:
            lines.append(f"  {s.name:<14} {s.runs:>5} {fmt_s(s.result.time_s):>10} {fmt_s(s.time_s):>10} "
                         f"{s.time_s / total:>6.1%} {s.result.flops / 1e9:>10.1f} {s.result.bound}")
        if self.note:
            lines.append(f"  note: {self.note}")
        if not decoder:  # a VAE decoder alone has no scheduler
            lines.append("  approximation: the scheduler's element-wise update of the latents is not counted")
        return "\n".join(lines)
