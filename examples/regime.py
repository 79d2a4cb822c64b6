"""The regime of prefill and decode of Llama-3.1-8B on two devices, with the plots.

Run: python examples/regime.py  (regenerates the repository's own docs/*.png, the README's plots, wherever it is
run from: another folder's docs/ is never written)
"""

from __future__ import annotations

from pathlib import Path

import llmsim
from llmsim.analysis.regime import find_crossover, first_limit
from llmsim.report.plot import breakdown_figure, roofline_figure, sweep_figure

MODEL = "llama-3.1-8b"
OUT = Path(__file__).resolve().parent.parent / "docs"  # the repository's, not the working folder's


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for hw in ("h100-sxm", "a100-80gb-sxm"):
        prefill = find_crossover(MODEL, hw, phase="prefill", vary="seq_len", batch_size=1)
        short = find_crossover(MODEL, hw, phase="decode", vary="batch_size", kv_len=128)
        long = find_crossover(MODEL, hw, phase="decode", vary="batch_size", kv_len=4096)
        limit = first_limit(MODEL, hw, vary="batch_size", phase="decode", kv_len=1024, tpot_slo_s=0.03)
        print(f"{hw}:")
        print(f"  prefill, batch 1:      {prefill.reason}")
        print(f"  decode, kv_len 128:    {short.reason}")
        print(f"  decode, kv_len 4096:   {long.reason}")
        print(f"  decode, kv_len 1024, growing batch, TPOT target 30 ms: {limit.reason}")
        result = llmsim.simulate(MODEL, hw, batch_size=16, prompt_len=2048, gen_len=512)
        roofline_figure(result, hw).savefig(OUT / f"roofline-{hw}.png", dpi=110, bbox_inches="tight")
        sweep_figure(MODEL, hw, vary="batch_size", metric="tpot", prompt_len=128, gen_len=64).savefig(
            OUT / f"sweep-tpot-batch-{hw}.png", dpi=110, bbox_inches="tight")
        breakdown_figure(result).savefig(OUT / f"breakdown-{hw}.png", dpi=110, bbox_inches="tight")
    print(f"wrote the plots to {OUT}/")


if __name__ == "__main__":
    main()
