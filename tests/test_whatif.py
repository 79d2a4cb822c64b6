"""whatif(): each row is simulate() with that choice; speedups and bytes saved against the baseline row."""

from __future__ import annotations

import json

import pytest

import llmsim
from llmsim.cli import main

MODEL, GPU = "llama-3.2-1b", "h100-sxm"
WORKLOAD = {"batch_size": 4, "prompt_len": 256, "gen_len": 16}


def test_one_at_a_time_rows_are_the_simulations_of_each_choice() -> None:
    vary = {"fusion": ["none", "elementwise", "full"], "attention": ["math", "flash"], "engine": ["vllm",
                                                                                                  "transformers"]}
    w = llmsim.whatif(MODEL, GPU, vary, **WORKLOAD)
    # baseline + 2 other fusions + 1 other attention + 1 other engine
    assert [r.label for r in w.rows] == ["baseline", "fusion=elementwise", "fusion=full", "attention=flash",
                                         "engine=transformers"]
    base = llmsim.simulate(MODEL, GPU, fusion="none", attention="math", engine="vllm", **WORKLOAD)
    flash = llmsim.simulate(MODEL, GPU, fusion="none", attention="flash", engine="vllm", **WORKLOAD)
    row = w.rows[3]
    assert (w.baseline.ttft_s, row.ttft_s, row.tpot_s) == (base.ttft_s, flash.ttft_s, flash.tpot_s)
    assert row.ttft_speedup == base.ttft_s / flash.ttft_s and row.prefill_bytes_saved == base.prefill.bytes - \
        flash.prefill.bytes
    assert row.prefill_bytes_saved > 0  # flash keeps the S x S scores out of memory
    assert "engine=transformers" in str(w) and w.to_pandas().shape[0] == 5


def test_fusion_savings_is_the_fusion_special_case() -> None:
    w = llmsim.whatif(MODEL, GPU, {"fusion": ["none", "elementwise", "full"]}, **WORKLOAD)
    saved = llmsim.fusion_savings(MODEL, GPU, **WORKLOAD)
    for row in w.rows[1:]:
        policy = row.choice["fusion"]
        assert row.prefill_bytes_saved == saved[policy].prefill_bytes_saved
        assert row.ttft_speedup == saved[policy].prefill_speedup
        assert row.decode_bytes_saved_per_step * 15 == pytest.approx(saved[policy].decode_bytes_saved, rel=1e-12)


def test_product_runs_every_combination() -> None:
    w = llmsim.whatif(MODEL, GPU, {"fusion": ["none", "full"], "overhead": ["eager", "graph", "none"]}, product=True,
                      **WORKLOAD)
    assert len(w.rows) == 2 * 3 and w.rows[-1].label == "fusion=full, overhead=none"
    assert w.rows[-1].tpot_speedup > 1  # fused and without launch overheads: faster than fused-none-eager


def test_cli_whatif(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", MODEL, "--hardware", GPU, "--batch-size", "4", "--prompt-len", "256", "--gen-len", "16",
                 "--vary", "fusion=none,full", "overhead=eager,graph", "--vary", "tensor_parallel=1,2"]) == 0
    out = capsys.readouterr().out
    assert "baseline fusion=none, overhead=eager, tensor_parallel=1" in out and "tensor_parallel=2" in out
    assert main(["whatif", MODEL, "--hardware", GPU, "--fusion", "full", "--vary", "fusion=none,full"]) == 2
    assert "fusion='full' is both fixed and varied" in capsys.readouterr().err
    # a split's "MB saved" are one GPU's: the table says so (it read as 1988.8 MB less traffic for PP 2)
    assert main(["whatif", MODEL, "--hardware", GPU, "--vary", "pipeline_parallel=1,2"]) == 0
    assert "MB saved are one GPU's: varying pipeline_parallel spreads the traffic" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # a value left out between commas (it was dropped silently)
        main(["whatif", MODEL, "--hardware", GPU, "--vary", "fusion=none,,full"])
    assert "an empty value between commas" in capsys.readouterr().err


def test_one_generated_token_says_tpot_n_a_not_zero() -> None:
    """gen_len = 1: no decode step, so TPOT (0 in the rows, as simulate's), its speedup (1) and the decode bytes saved
    (0) mean nothing; the table says n/a (it printed "0.00 us" and "x TPOT 1.00")."""
    r = llmsim.whatif(MODEL, GPU, {"tensor_parallel": [1, 2]}, prompt_len=512, gen_len=1)
    assert [row.tpot_s for row in r.rows] == [0.0, 0.0]
    text = str(r)
    assert "us" not in text.split("\n")[2] and text.count("n/a") == 2 * 3 + 1 and "no decode step" in text
    assert "n/a" not in str(llmsim.whatif(MODEL, GPU, {"tensor_parallel": [1, 2]}, gen_len=2))
    # in JSON they are null (0.0 and 1.0 read as a measured 0 s and no speedup), and read back as 0 and 1
    import json

    from llmsim.analysis.plan import Plan
    from llmsim.analysis.whatif import WhatIfResult

    rows = json.loads(r.model_dump_json())["rows"]
    assert all(row[k] is None for row in rows for k in ("tpot_s", "tpot_speedup", "decode_bytes_saved_per_step"))
    assert all(row["ttft_s"] > 0 for row in rows)
    assert WhatIfResult.model_validate_json(r.model_dump_json()) == r
    plan = llmsim.plan(MODEL, GPU, prompt_len=512, gen_len=1, ttft_slo_s=1.0, batch_sizes=[1, 8])
    dumped = json.loads(plan.model_dump_json())
    assert dumped["best"]["tpot_s"] is None and all(c["tpot_s"] is None for c in dumped["candidates"])
    assert Plan.model_validate_json(plan.model_dump_json()) == plan


def test_cli_whatif_varies_table_families(capsys: pytest.CaptureFixture[str]) -> None:
    # listed as allowed, but every CLI value failed: commas part the values, so no list could be written (a new-user
    # audit, session 46); families are joined with + now
    from llmsim.cli import main

    assert main(["whatif", "llama-3.2-1b", "--hw", "h100-sxm", "--vary",
                 "table_families=gemm,gemm+decode_attention", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["label"] for r in rows] == ["baseline", "table_families=['gemm', 'decode_attention']"]
    tpot = [llmsim.simulate("llama-3.2-1b", "h100-sxm", table_families=f).tpot_s
            for f in (["gemm"], ["gemm", "decode_attention"])]
    assert [r["tpot_s"] for r in rows] == pytest.approx(tpot, rel=1e-12)


def test_whatif_says_when_a_choice_changes_the_timing_source() -> None:
    # fp32 activations have no measured GEMM table: every op falls to the roofline at the achievable fraction, and
    # the fp32 row's TPOT came out faster than bf16's without a word (a new-user audit, session 46)
    r = llmsim.whatif("llama-3.2-1b", "h100-sxm", {"activation_dtype": ["bf16", "float32"], "fusion": ["elementwise",
                                                                                                      "full"]},
                      batch_size=4, prompt_len=256, gen_len=8)
    base, fp32, full = r.rows
    assert base.table_share > 0.5 and fp32.table_share == 0.0 and fp32.table_share_decode == 0.0
    assert abs(full.table_share - base.table_share) <= 0.1  # fusing keeps the tables: not flagged
    note = next(line for line in str(r).splitlines() if "timed from measured tables" in line)
    assert "activation_dtype=float32 0% / 0%" in note and "fusion" not in note
    s = llmsim.simulate("llama-3.2-1b", "h100-sxm", batch_size=4, prompt_len=256, gen_len=8)
    ops = [op for phase in (s.prefill, s.decode) for op in phase.ops]  # the share by hand: table ops' time / all
    assert base.table_share == pytest.approx(sum(o.time_s for o in ops if o.source != "roofline")
                                             / sum(o.time_s for o in ops), rel=1e-12)
