"""Engines and measured kernel tables in simulate(): table times reach the ops, sums stay exact where they
can, fallbacks say why, explicit options win over an engine's."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import llmsim
from llmsim.errors import OptionError
from llmsim.shipped import kernels_dir
from llmsim.timing.phases import decode_totals
from llmsim.timing.roofline import Roofline

GRAPH_LAUNCH_S = 0.875e-6  # hardware/h100-sxm.toml graph_replay_per_kernel_s: one kernel per op run
EAGER_LAUNCH_S = 2.7e-6  # hardware/h100-sxm.toml kernel_launch_s: a prefill run without a CUDA graph


def _op(result: llmsim.SimulationResult, phase: str, name: str) -> object:
    return next(op for op in getattr(result, phase).ops if op.name == name)


def test_a_gemm_takes_the_measured_time() -> None:
    # at the boost clock the tables were measured at (a long pass at the sustained clock: the next test)
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=4096, gen_len=1, engine="vllm",
                        clock="boost")
    down = _op(r, "prefill", "layers.mlp.down_proj")  # x[4096, 14336] @ W[14336, 4096]
    assert down.source == "vllm gemm"
    # kernels/h100-sxm/vllm/gemm.csv: bf16,4096,4096,12288,489.2 and bf16,4096,4096,16384,603.8 (us);
    # k = 14336 lies w = log(14336/12288) / log(16384/12288) = 0.5358 of the way in log: 489.2^(1-w) * 603.8^w
    w = math.log(14336 / 12288) / math.log(16384 / 12288)
    table_s = 489.2e-6 ** (1 - w) * 603.8e-6 ** w  # = 548.5 us
    # vLLM runs this 4096-token prefill without a CUDA graph: max(kernel + eager launch, 44.5 us of host
    # dispatch per kernel, engines.catalog), and the kernel is the longer
    assert down.time_s / down.count == pytest.approx(table_s + EAGER_LAUNCH_S, rel=1e-9)
    assert down.bound == "compute"  # the larger roofline term stays the bound


def test_a_long_prefill_runs_its_compute_bound_work_at_the_sustained_clock() -> None:
    kw = dict(batch_size=1, prompt_len=4096, gen_len=4, engine="vllm")
    boost = llmsim.simulate("llama-3.1-8b", "h100-sxm", clock="boost", **kw)
    hot = llmsim.simulate("llama-3.1-8b", "h100-sxm", **kw)  # clock="sustained", the default
    c = boost.prefill.compute_s  # the pass's compute-bound seconds at the boost clock (about 80 ms here)
    # hardware/h100-sxm.toml [sustained]: fraction 0.795 (1575 / 1980 MHz), onset 5 ms: the pass takes
    # (C - 0.005) * (1 / 0.795 - 1) more, each compute-bound op its share C_op / C of it
    extra = (c - 0.005) * (1 / 0.795 - 1)
    assert c > 0.05 and hot.ttft_s == pytest.approx(boost.ttft_s + extra, rel=1e-9)
    assert hot.prefill.compute_s == pytest.approx(c + extra, rel=1e-9)
    down, hot_down = _op(boost, "prefill", "layers.mlp.down_proj"), _op(hot, "prefill", "layers.mlp.down_proj")
    assert hot_down.time_s == pytest.approx(down.time_s + down.compute_s * extra / c, rel=1e-9)
    assert hot.tpot_s == boost.tpot_s  # decode steps are memory-bound, below the power limit: not throttled
    assert hot.assumptions["clock"].startswith("sustained: a prefill pass's compute-bound work past 5 ms at 0.795")
    assert "DeepGEMM issue #120" in hot.assumptions["clock"]
    # a pass shorter than the onset, and a device without a [sustained] figure, are as short benchmarks time them
    short = dict(kw, prompt_len=16)
    assert llmsim.simulate("llama-3.1-8b", "h100-sxm", **short).ttft_s == llmsim.simulate(
        "llama-3.1-8b", "h100-sxm", clock="boost", **short).ttft_s
    a100 = llmsim.simulate("llama-3.1-8b", "a100-80gb-sxm", **kw)
    assert a100.ttft_s == llmsim.simulate("llama-3.1-8b", "a100-80gb-sxm", clock="boost", **kw).ttft_s
    assert a100.assumptions["clock"].endswith("(no [sustained] figure for this device)")
    # `llmsim hardware` lists it: H100 SXM 0.795, none for the A100
    assert llmsim.load_hardware("h100-sxm").summary_row()["sustained_fraction"] == 0.795
    assert llmsim.load_hardware("a100-80gb-sxm").summary_row()["sustained_fraction"] is None
    with pytest.raises(llmsim.LlmsimError, match=r"clock='turbo' is not allowed; choose one of boost, sustained"):
        llmsim.simulate("llama-3.1-8b", "h100-sxm", clock="turbo", **kw)


def test_moe_experts_share_the_fused_kernel_time() -> None:
    r = llmsim.simulate("qwen3-30b-a3b", "h100-sxm", batch_size=16, prompt_len=128, gen_len=2, engine="vllm")
    gate_up = _op(r, "decode", "layers.mlp.experts.gate_up_proj")
    down = _op(r, "decode", "layers.mlp.experts.down_proj")
    assert gate_up.source == down.source == "vllm moe"
    # kernels/h100-sxm/vllm/moe.csv: bf16, power_law_1.2 (Qwen3-MoE: aiconfigurator's generic MoE load), top-8 of
    # 128, hidden 2048, inter 768, tp 1, ep 1: 16 tokens 208.9 us, read as measured
    # gate+up is 2 of the 3 expert matrices, down 1 of 3
    assert gate_up.time_s / gate_up.count == pytest.approx(208.9e-6 * 2 / 3 + GRAPH_LAUNCH_S, rel=1e-9)
    assert down.time_s / down.count == pytest.approx(208.9e-6 / 3 + GRAPH_LAUNCH_S, rel=1e-9)


def test_decode_closed_form_against_step_by_step_with_measured_attention() -> None:
    """Steady ops (GEMMs) sum exactly; decode attention keeps the middle step's measured/roofline ratio, so
    the closed form is an approximation there: within 1 % of the step-by-step sum on this workload."""
    spec, hw, cost, execution = llmsim.analysis.simulate.resolve("llama-3.1-8b", "h100-sxm", engine="vllm")
    roofline = Roofline(hw, execution)
    batch, prompt, steps = 8, 1000, 64
    closed = decode_totals(spec, roofline, cost, batch, prompt, steps)
    by_step = [decode_totals(spec, roofline, cost, batch, prompt + i, 1) for i in range(steps)]
    names = closed.names
    for i, name in enumerate(names):
        summed = sum(t.per_op["time_s"][i] for t in by_step)
        if name.endswith(".flash"):
            assert closed.per_op["time_s"][i] == pytest.approx(summed, rel=0.01), name
        else:
            assert closed.per_op["time_s"][i] == pytest.approx(summed, rel=1e-9), name
    assert closed.total("bytes") == pytest.approx(sum(t.total("bytes") for t in by_step), rel=1e-9)


def test_no_tables_for_the_device_falls_back_and_says_why() -> None:
    r = llmsim.simulate("llama-3.1-8b", "l4", batch_size=4, prompt_len=256, gen_len=8)
    assert r.engine == "vllm" and not r.measured_tables
    assert r.roofline_reasons == ["no measured vllm kernel tables for l4: every op on the roofline with the "
                                  "hardware file's achievable fractions"]
    assert all(op.source == "roofline" for op in r.decode.ops)
    assert "roofline    no measured vllm kernel tables for l4" in str(r)


def test_a_sibling_devices_tables_stand_in_with_the_roofline_ratio() -> None:
    """h100-pcie has no tables: h100-sxm's (the same GH100 die) stand in, each measured time x the op's achievable
    roofline time on the PCIe part / on the SXM part (TABLE_SIBLINGS)."""
    for m, ratio in ((1, (3.35e12 * 0.90) / (2.0e12 * 0.90)),  # memory-bound: bandwidth x fraction, SXM / PCIe
                     (8192, (989.4e12 * 0.80) / (756e12 * 0.66))):  # compute-bound: bf16 peak x matmul fraction
        sxm, pcie = (llmsim.op_cost("matmul", hw, m=m, n=4096, k=4096) for hw in ("h100-sxm", "h100-pcie"))
        assert sxm.source == pcie.source == "vllm gemm"
        # the kernel times less the one graph launch (0.875 us) both add
        assert (pcie.time_s - pcie.overhead_s) / (sxm.time_s - sxm.overhead_s) == pytest.approx(ratio)
    r = llmsim.simulate("llama-3.1-8b", "a100-80gb-pcie", batch_size=4, prompt_len=256, gen_len=8)
    assert "no vllm kernel tables ship for a100-80gb-pcie: those of a100-80gb-sxm (the same die) stand in" in str(r)
    # the ranking by bandwidth holds: A100 80 GB SXM (2.04 TB/s) decodes faster than the PCIe part (1.94 TB/s)
    assert r.tpot_s > llmsim.simulate("llama-3.1-8b", "a100-80gb-sxm", batch_size=4, prompt_len=256, gen_len=8).tpot_s


def test_a_dtype_without_a_table_falls_back_and_says_why() -> None:
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=4, weight_dtype="mxfp4")
    assert r.roofline_reasons == ["no mxfp4_wo GEMM table for engine vllm on h100-sxm"]  # no package measures it
    assert _op(r, "decode", "layers.mlp.down_proj").source == "roofline"
    assert _op(r, "decode", "layers.attn.flash").source == "vllm decode_attention"  # attention still measured


@pytest.mark.parametrize("dtypes, reasons", [
    # float32 runs: no engine measures float32 GEMMs or a float32 cache (FlashAttention takes 16-bit and fp8)
    ({"weight_dtype": "float32", "activation_dtype": "float32"},
     ["no float32 GEMM table for engine vllm on h100-sxm",
      "no prefill attention table for float32 KV caches (the tables time bf16 and fp8 caches; engine vllm on "
      "h100-sxm)",
      "no decode attention table for float32 KV caches (the tables time bf16 and fp8 caches; engine vllm on "
      "h100-sxm)"]),
    # int8 W8A8 (SmoothQuant-style): no int8 x int8 GEMM rows, and the cache follows the activations to int8
    ({"weight_dtype": "int8", "activation_dtype": "int8"},
     ["no int8 (W8A8) GEMM table for engine vllm on h100-sxm",
      "no prefill attention table for int8 KV caches (the tables time bf16 and fp8 caches; engine vllm on h100-sxm)",
      "no decode attention table for int8 KV caches (the tables time bf16 and fp8 caches; engine vllm on h100-sxm)"]),
    # 16-bit weights with fp8 activations: a pair no GEMM table holds; the fp8 cache reads the attention tables
    ({"weight_dtype": "bfloat16", "activation_dtype": "fp8"},
     ["no bfloat16 weights x fp8 activations GEMM table for engine vllm on h100-sxm"]),
])
def test_every_dtype_pair_without_a_table_says_why(dtypes: dict, reasons: list) -> None:
    """Each GEMM and attention op an engine's tables would time names its kernel, so a dtype no table holds puts
    it on the roofline with a reason in the result (these fell back silently before)."""
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=4, **dtypes)
    assert r.roofline_reasons == reasons
    assert _op(r, "decode", "layers.mlp.down_proj").source == "roofline"
    assert all(f"roofline    {why}" in str(r) for why in reasons)


def test_moe_experts_of_a_weight_dtype_override_name_their_table() -> None:
    """weight_dtype="int8" on an MoE model: the experts are int8 weight-only, which no MoE table holds; the result
    says so (it was silent: only checkpoint formats named their MoE table)."""
    r = llmsim.simulate("qwen3-30b-a3b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=4, weight_dtype="int8")
    assert [why for why in r.roofline_reasons if "MoE" in why] == [
        "no int8_wo MoE table row for top-8 of 128 experts, hidden 2048, intermediate 768, tp 1, ep 1, power_law_1.2 "
        "routing (engine vllm on h100-sxm)"]
    assert _op(r, "decode", "layers.mlp.experts.gate_up_proj").source == "roofline"


def test_unequal_query_and_value_head_dims_say_why_attention_is_on_the_roofline() -> None:
    spec = llmsim.load_model("llama-3.1-8b")
    attention = spec.layer_groups[0].layer.attention.model_copy(update={"v_head_dim": 64})
    layer = spec.layer_groups[0].layer.model_copy(update={"attention": attention})
    spec = spec.model_copy(update={"layer_groups": (spec.layer_groups[0].model_copy(update={"layer": layer}),)})
    r = llmsim.simulate(spec, "h100-sxm", batch_size=1, prompt_len=128, gen_len=4)
    assert "decode attention with head dim 128 and value head dim 64: the attention tables time equal dims" in (
        r.roofline_reasons)
    assert _op(r, "decode", "layers.attn.flash").source == "roofline"


def test_fp8_weight_only_reads_the_int8_weight_only_kernel() -> None:
    # no package measures an fp8 weight-only GEMM; the 8-bit weight-only kernel (the same bytes, a dequantize to
    # 16 bits on load) stands in and the result says so: on the H100 as the A100 TensorRT-LLM int8_wo/bf16 ratio
    fp8, int8 = (llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=4, weight_dtype=w)
                 for w in ("fp8", "int8"))
    assert _op(fp8, "decode", "layers.mlp.down_proj").time_s == _op(int8, "decode", "layers.mlp.down_proj").time_s
    assert any("int8_wo rows stand in for fp8_wo" in source for source in fp8.measured_tables.values())


def test_serving_engines_run_mla_q_a_and_kv_a_as_one_gemm() -> None:
    # vLLM's and SGLang's fused_qkv_a_proj, TensorRT-LLM's fused kv_a_proj_with_mqa: x [4, 7168] @ [7168, 1536 +
    # 512 + 64] per layer, replicated over the tensor ranks: 2 x 4 x 7168 x 2112 = 121,110,528 FLOPs, the two
    # GEMMs' sum, in one kernel (one launch fewer in each of DeepSeek-V3's 61 layers)
    kw = dict(batch_size=4, prompt_len=64, gen_len=2, tensor_parallel=8)
    fused, split = (llmsim.simulate("deepseek-v3", "h200", fused_projections=f, **kw) for f in (True, False))
    one = _op(fused, "decode", "layers.moe.attn.fused_qkv_a_proj")
    q_a, kv_a = (_op(split, "decode", f"layers.moe.attn.{name}") for name in ("q_a_proj", "kv_a_proj"))
    assert one.matmul_flops / one.count == 2 * 4 * 7168 * 2112 == (q_a.matmul_flops + kv_a.matmul_flops) / q_a.count
    assert sum(op.matmul_flops for op in fused.decode.ops) == sum(op.matmul_flops for op in split.decode.ops)
    assert one.count == q_a.count == kv_a.count == 58  # the MoE layers; the 3 dense ones fuse them too
    names = {op.name for op in fused.decode.ops}
    assert "layers.dense.attn.fused_qkv_a_proj" in names and not names & {"layers.moe.attn.q_a_proj",
                                                                           "layers.moe.attn.kv_a_proj"}
    # no q_lora_rank (DeepSeek-V2-Lite): its q_proj and kv_a_proj stay two GEMMs
    lite = {op.name for op in llmsim.simulate("deepseek-v2-lite", "h200", **{**kw, "tensor_parallel": 1}).decode.ops}
    assert {"layers.moe.attn.q_proj", "layers.moe.attn.kv_a_proj"} <= lite


def test_engines_set_defaults_and_explicit_options_win() -> None:
    served = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2)
    assert served.options.fused_projections and served.execution.tables == "vllm"
    assert {op.name for op in served.decode.ops} >= {"layers.attn.qkv_proj", "layers.mlp.gate_up_proj"}
    split = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2, fused_projections=False)
    assert "layers.attn.q_proj" in {op.name for op in split.decode.ops}
    eager = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2, engine="transformers")
    assert eager.execution.overhead == "eager" and eager.options.fusion == "eager"
    assert eager.execution.table_families == ("gemm",)
    assert _op(eager, "decode", "layers.attn.flash").source == "roofline"  # transformers: GEMM tables only
    peak = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2, engine="roofline")
    assert peak.execution.efficiency == "peak" and not peak.measured_tables
    cpu = llmsim.simulate("gpt2", "cpu-generic", batch_size=1, prompt_len=16, gen_len=2)
    assert cpu.engine == "transformers"  # a CPU: no serving engine


def test_bad_engine_and_tables_are_refused_by_name() -> None:
    with pytest.raises(OptionError, match=r"engine.*tgi.*vllm"):
        llmsim.simulate("gpt2", "h100-sxm", engine="tgi")
    with pytest.raises(OptionError, match="table_families"):
        llmsim.simulate("gpt2", "h100-sxm", table_families=("gemm", "flux"))
    with pytest.raises(OptionError, match="fused_projections"):
        llmsim.simulate("gpt2", "h100-sxm", fused_projections="yes")


def test_every_shipped_device_names_its_vendor_and_engines_run_where_they_can() -> None:
    """Hardware files name their vendor (NVIDIA's GPUs, AMD's MI300X, the Intel Xeon of cpu-generic); a file
    without one loads as "unknown", which no engine refuses (only the device type is checked)."""
    from llmsim.engines.catalog import ENGINE_NAMES, ENGINES, runs_on
    from llmsim.shipped import shipped_hardware_names

    vendors = {name: llmsim.load_hardware(name).vendor for name in shipped_hardware_names()}
    assert vendors.pop("mi300x") == "amd" and vendors.pop("cpu-generic") == "intel"
    assert set(vendors.values()) == {"nvidia"}
    assert llmsim.load_hardware("mi300x").summary_row()["vendor"] == "amd"  # a column of `llmsim hardware`
    no_vendor = llmsim.load_hardware("mi300x").model_dump(exclude={"path", "vendor"})
    assert llmsim.load_hardware(no_vendor).vendor == "unknown"
    assert llmsim.simulate("llama-3.2-1b", no_vendor, engine="trtllm", prompt_len=16, gen_len=2).engine == "trtllm"
    # public facts: TensorRT-LLM NVIDIA only; vLLM and SGLang on CUDA and ROCm; the rest anywhere
    assert [e for e in ENGINE_NAMES if runs_on(ENGINES[e], "gpu", "amd")] == [
        "vllm", "sglang", "torch-compile", "transformers", "roofline"]
    assert [e for e in ENGINE_NAMES if runs_on(ENGINES[e], "cpu", "intel")] == [
        "torch-compile", "transformers", "roofline"]
    # the MI300X has no measured tables: vLLM there is the roofline with the file's fractions, and says so
    amd = llmsim.simulate("llama-3.1-8b", "mi300x", batch_size=1, prompt_len=256, gen_len=4)
    assert amd.engine == "vllm" and not amd.measured_tables
    assert amd.roofline_reasons == ["no measured vllm kernel tables for mi300x: every op on the roofline with the "
                                    "hardware file's achievable fractions"]
    # a GPU of a vendor vLLM does not run on defaults to eager PyTorch, as a CPU does
    intel_gpu = llmsim.load_hardware("h100-sxm").model_dump(exclude={"path"}) | {"vendor": "intel"}
    assert llmsim.simulate("llama-3.2-1b", intel_gpu, prompt_len=16, gen_len=2).engine == "transformers"


def test_tables_from_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "gemm.csv").write_text((kernels_dir() / "h100-sxm" / "vllm" / "gemm.csv").read_text())
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=4096, gen_len=2, tables=str(folder))
    assert _op(r, "prefill", "layers.mlp.down_proj").source.endswith("gemm")
    assert _op(r, "decode", "layers.attn.flash").source == "roofline"  # the folder has no attention table
    # the folder as a Path, as hardware= takes one (was "neither a table set name nor an existing folder")
    by_path = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=4096, gen_len=2, tables=folder)
    assert by_path.ttft_s == r.ttft_s and by_path.tpot_s == r.tpot_s
    # the folder is named where its tables are listed, and the messages name the device and engine its files
    # state (they named the folder and its parent: "engine mine on test_tables_from_a_folder0")
    assert r.measured_tables["gemm"].endswith(f"; read from {folder.resolve()}")
    assert "no decode_attention table for engine vllm on h100-sxm" in r.roofline_reasons


def test_weight_only_gemms_read_another_engines_table_as_a_proxy() -> None:
    r = llmsim.simulate("llama-2-7b", "a100-80gb-sxm", batch_size=1, prompt_len=6, gen_len=3, weight_dtype="int4",
                        engine="vllm")
    down = _op(r, "decode", "layers.mlp.down_proj")  # x[1, 11008] @ W[11008, 4096], int4 weights
    assert down.source == "trtllm gemm (proxy)"
    assert "a proxy: vllm has no int4_wo GEMM table on a100-80gb-sxm" in r.measured_tables["trtllm gemm (proxy)"]
    grid = llmsim.hardware.measured.measured_for("a100-80gb-sxm", "trtllm").gemm_table_named("int4_wo")
    assert down.time_s / down.count / 2 == pytest.approx(grid.time_s(1, 4096, 11008) + 0.875e-6, rel=1e-9)


def test_deepseek_mla_attention_from_the_engines_mla_tables() -> None:
    r = llmsim.simulate("deepseek-v3", "h100-sxm", engine="sglang", batch_size=8, prompt_len=1024, gen_len=3,
                        tensor_parallel=8)
    flash = next(op for op in r.decode.ops if op.name.endswith(".flash"))
    assert flash.source == "sglang decode_mla"
    grid = llmsim.hardware.measured.measured_for("h100-sxm", "sglang").tables["decode_mla"].grids[("bf16", 16)]
    # 128 heads / tp 8 = 16 per GPU; the two decode steps attend to 1025 and 1026 keys: the middle step's
    # measured/roofline ratio on both (the closed form), so the sum is within a hair of the two table times
    expected = grid.time_s(8, 1025) + grid.time_s(8, 1026) + 2 * GRAPH_LAUNCH_S
    assert flash.time_s / flash.count == pytest.approx(expected, rel=1e-3)
    vllm = llmsim.simulate("deepseek-v3", "h100-sxm", engine="vllm", batch_size=8, prompt_len=1024, gen_len=3,
                           tensor_parallel=8)
    # vLLM: aiconfigurator has no op-level MLA table for it; SGLang's of the same device stands in, said so
    assert next(op for op in vllm.decode.ops if op.name.endswith(".flash")).source == "sglang decode_mla (proxy)"
    assert "a proxy: aiconfigurator ships no op-level MLA table for vllm" in vllm.measured_tables[
        "sglang decode_mla (proxy)"]
    on_rtx = llmsim.simulate("deepseek-v3", "rtx-pro-6000-server", engine="vllm", batch_size=8, prompt_len=1024,
                             gen_len=3, tensor_parallel=8)  # no engine ships an MLA table for it: the roofline
    assert "no decode_mla table for engine vllm on rtx-pro-6000-server" in on_rtx.roofline_reasons


def test_a_sweep_with_measured_tables_equals_simulate_point_by_point() -> None:
    """The vectorised path (numpy table reads over the sweep) and one simulate() (plain-Python reads of a few
    points) agree exactly, on an MoE model split over 2 GPUs (GEMM, MoE, attention and all-reduce tables)."""
    batches, prompts, gens = [1, 8, 64, 512], [128, 4096], [2, 300]
    s = llmsim.sweep("qwen3-30b-a3b", "h100-sxm", batch_size=batches, prompt_len=prompts, gen_len=gens,
                     tensor_parallel=2)
    for b, p, g in [(8, 128, 300), (512, 4096, 2), (64, 4096, 300), (1, 128, 2)]:
        r = llmsim.simulate("qwen3-30b-a3b", "h100-sxm", batch_size=b, prompt_len=p, gen_len=g, tensor_parallel=2)
        at = (batches.index(b), prompts.index(p), gens.index(g))
        assert s.columns["ttft_s"].reshape(4, 2, 2)[at] == pytest.approx(r.ttft_s, rel=1e-12)
        assert s.columns["tpot_s"].reshape(4, 2, 2)[at] == pytest.approx(r.tpot_s, rel=1e-12)


def test_tables_from_a_folder_of_another_gpu_are_refused(tmp_path: Path) -> None:
    """`llmsim calibrate --from aiconfigurator --system h200_sxm --out DIR` then `--hardware h100-sxm --tables DIR`
    timed an H100 with the H200's kernels, saying so only in the provenance lines."""
    folder = tmp_path / "h200-tables"
    folder.mkdir()
    (folder / "gemm.csv").write_text((kernels_dir() / "h200" / "vllm" / "gemm.csv").read_text())  # system: h200_sxm
    with pytest.raises(OptionError, match=r"tables='.*h200-tables': measured on NVIDIA H200 \(system h200_sxm, "
                                          r"llmsim hardware 'h200'\), not on 'h100-sxm'; simulate --hardware h200"):
        llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=16, gen_len=2, tables=str(folder))
    r = llmsim.simulate("llama-3.1-8b", "h200", batch_size=1, prompt_len=4096, gen_len=2, tables=str(folder))
    assert _op(r, "prefill", "layers.mlp.down_proj").source.endswith("gemm")


def test_tables_from_a_folder_time_a_same_die_sibling_as_the_shipped_ones_do(tmp_path: Path) -> None:
    # imported A100 SXM tables on an A100 40GB PCIe were refused with advice to import the PCIe part's, which the
    # package does not measure; the shipped set serves it by the roofline ratio (TABLE_SIBLINGS): so does a folder
    folder = tmp_path / "a100-tables"
    folder.mkdir()
    (folder / "gemm.csv").write_text((kernels_dir() / "a100-80gb-sxm" / "vllm" / "gemm.csv").read_text())
    kw = dict(batch_size=1, prompt_len=512, gen_len=4)
    mine = llmsim.simulate("llama-3.1-8b", "a100-40gb-pcie", tables=str(folder), **kw)
    shipped = llmsim.simulate("llama-3.1-8b", "a100-40gb-pcie", tables="vllm", table_families=("gemm",), **kw)
    down = _op(mine, "prefill", "layers.mlp.down_proj")
    assert down.time_s == pytest.approx(_op(shipped, "prefill", "layers.mlp.down_proj").time_s, rel=1e-12)
    assert any("measured on a100-80gb-sxm (the same die), stand in for a100-40gb-pcie" in reason
               for reason in mine.roofline_reasons)


def test_tables_of_another_gpu_are_refused_on_every_shipped_device_and_any_cpu(tmp_path: Path) -> None:
    """An audit found L40S tables timing an MI300X (TPOT 4.9 -> 23.1 ms), an L4, an H100 PCIe and the CPUs, and the
    tables of a GPU llmsim ships no file for (aiconfigurator's b60) timing an H100: only the shipped devices with
    tables of their own were checked. A hardware file of the user's own still takes GPU tables as given."""
    folder = tmp_path / "l40s-tables"
    folder.mkdir()
    (folder / "gemm.csv").write_text((kernels_dir() / "l40s" / "vllm" / "gemm.csv").read_text())  # system: l40s
    kw = dict(batch_size=1, prompt_len=16, gen_len=2, tables=str(folder))
    for device in ("mi300x", "l4", "h100-pcie"):
        with pytest.raises(OptionError, match=rf"measured on NVIDIA L40S \(system l40s, llmsim hardware 'l40s'\), "
                                              rf"not on '{device}'"):
            llmsim.simulate("llama-3.1-8b", device, **kw)
    with pytest.raises(OptionError, match=r"GPU kernels measured on NVIDIA L40S \(system l40s\) cannot time the CPU "
                                          r"'cpu-generic'"):
        llmsim.simulate("llama-3.1-8b", "cpu-generic", **kw)
    unknown = tmp_path / "b60-tables"
    unknown.mkdir()
    text = (folder / "gemm.csv").read_text().replace("# system: l40s", "# system: b60")
    (unknown / "gemm.csv").write_text(text.replace("NVIDIA L40S", "Intel(R) Arc(TM) Pro B60 Graphics"))
    with pytest.raises(OptionError, match=r"measured on Intel\(R\) Arc\(TM\) Pro B60 Graphics \(system b60\), a GPU "
                                          r"llmsim ships no hardware file for, not on 'h100-sxm'"):
        llmsim.simulate("llama-3.1-8b", "h100-sxm", **{**kw, "tables": str(unknown)})
    own = llmsim.load_hardware("l40s").model_copy(update={"name": "my-gpu"})  # the user's own device: as given
    r = llmsim.simulate("llama-3.1-8b", own, **kw)
    assert _op(r, "decode", "layers.mlp.down_proj").source.endswith("gemm")


def test_engine_host_work_per_step_is_one_op_per_forward_pass() -> None:
    kw = dict(batch_size=4, prompt_len=128, gen_len=65)
    base = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", step_host_s=0, **kw)
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", **kw)
    # vLLM: 0.4 ms per step (vllm-project/vllm PR #42131): once in the prefill, once per decode step
    assert r.ttft_s - base.ttft_s == pytest.approx(0.4e-3, rel=1e-9)
    assert r.tpot_s - base.tpot_s == pytest.approx(0.4e-3, rel=1e-9)
    step = next(op for op in r.decode.ops if op.name == "engine.step")
    assert step.kind == "host" and step.bound == "overhead" and step.time_s == pytest.approx(64 * 0.4e-3)
    assert step.matmul_flops == step.vector_flops == step.bytes == 0
    assert "engine host 0.40 ms per step" in str(r)
    # TensorRT-LLM 0.58 ms (NVIDIA/TensorRT-LLM issue #13957); SGLang none; a time given switches it on
    trt = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="trtllm", **kw)
    trt0 = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="trtllm", step_host_s=0.0, **kw)
    assert trt.tpot_s - trt0.tpot_s == pytest.approx(0.58e-3, rel=1e-9)
    sg = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="sglang", **kw)
    assert not any(op.kind == "host" for op in sg.decode.ops)
    sg1 = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="sglang", step_host_s=1e-3, **kw)
    assert sg1.tpot_s - sg.tpot_s == pytest.approx(1e-3, rel=1e-9)
    # a sweep and serving at a vanishing rate pay it the same way
    s = llmsim.sweep("llama-3.1-8b", "h100-sxm", engine="vllm", batch_size=[4], prompt_len=[128], gen_len=[65])
    assert float(s.to_pandas()["tpot_s"][0]) == pytest.approx(r.tpot_s, rel=1e-12)
    with pytest.raises(OptionError, match="step_host_s"):
        llmsim.simulate("llama-3.1-8b", "h100-sxm", step_host_s=-1, **kw)


def test_weight_only_gemms_without_a_table_on_the_device_keep_their_measured_ratio_to_bf16() -> None:
    from llmsim.timing.measured import _relative_gemm

    other, grid = _relative_gemm(llmsim.hardware.measured.measured_for("h100-sxm", "vllm"), "int4_wo")
    assert other == "a100-80gb-sxm trtllm"
    # kernels/h100-sxm/vllm/gemm.csv bf16,1,4096,4096: 15.05 us, read at m = 64's 14.77 us (monotone_envelope:
    # never slower than a larger shape); kernels/a100-80gb-sxm/trtllm/gemm.csv int4_wo,1,4096,4096: 20.48 us and
    # bf16: 26.21 us, read at m = 2's 18.43 and 24.06 us -> 14.77 * 18.43 / 24.06 = 11.314 us
    assert grid.time_s(1, 4096, 4096) == pytest.approx(14.77e-6 * 18.43 / 24.06, rel=1e-9)
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=4, weight_dtype="int4")
    source = "vllm gemm x a100-80gb-sxm trtllm int4_wo ratio (proxy)"
    assert _op(r, "decode", "layers.mlp.down_proj").source == source
    assert "time ratio x this engine's bf16 gemm table (approximation" in r.measured_tables[source]


def test_weight_only_ratio_proxy_never_makes_a_larger_batch_faster() -> None:
    from llmsim.timing.measured import _relative_gemm

    _, grid = _relative_gemm(llmsim.hardware.measured.measured_for("h100-sxm", "vllm"), "int4_wo")
    # Qwen3-32B-AWQ's qkv_proj at TP8: n 1280, k 5120. The A100 ratio int4_wo / bf16 dips from m 1 to m 2 (a new-user
    # audit: TPOT 8.541 ms at batch 1, 8.315 ms at batch 2); at m 2 the ratio is the larger of m 1's and m 2's
    r1, r2 = grid.ratio(1.0, 1280.0, 5120.0), grid.ratio(2.0, 1280.0, 5120.0)
    assert r2 < r1  # the measured dip this guards against
    assert grid.time_s(2.0, 1280.0, 5120.0) == pytest.approx(grid.base.time_s(2.0, 1280.0, 5120.0) * r1, rel=1e-12)
    m = np.array([1.0, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 512.0])
    times = grid.time_s(m, 1280.0, 5120.0)
    assert np.all(np.diff(times) >= 0)
    assert [grid.time_s(float(x), 1280.0, 5120.0) for x in m] == pytest.approx(list(times), rel=1e-12)
    tpot = [llmsim.simulate("qwen3-32b-awq", "h100-sxm", tensor_parallel=8, engine="torch-compile", batch_size=b,
                            prompt_len=64, gen_len=4).tpot_s for b in (1, 2, 3, 4)]
    assert tpot == sorted(tpot)


def test_step_host_s_on_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from llmsim.cli import main

    args = ["simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch-size", "1", "--prompt-len", "128",
            "--gen-len", "8"]
    assert main([*args, "--step-host-s", "0"]) == 0
    without = capsys.readouterr().out
    assert main(args) == 0
    assert "engine host 0.40 ms per step" in capsys.readouterr().out and "engine host" not in without
    assert main([*args, "--step-host-s", "-1"]) == 2
    assert "step_host_s=-1.0 must be a positive number of seconds (or 0)" in capsys.readouterr().err


def test_mla_without_a_table_says_why() -> None:
    """MLA that the DeepSeek-shaped MLA tables do not time says which difference puts it on the roofline."""
    expand = llmsim.simulate("deepseek-v2-lite", "h100-sxm", batch_size=2, prompt_len=256, gen_len=4, mla="expand")
    assert "decode MLA with mla='expand': the decode MLA tables time the absorbed kernel (mla='absorb')" in (
        expand.roofline_reasons)
    f32 = llmsim.simulate("deepseek-v2-lite", "h100-sxm", batch_size=2, prompt_len=256, gen_len=4, kv_dtype="float32")
    assert "no decode mla table for float32 KV caches (the tables time bf16 and fp8 caches; engine vllm on " \
        "h100-sxm)" in f32.roofline_reasons
    spec = llmsim.load_model("deepseek-v2-lite")
    attention = spec.layer_groups[0].layer.attention.model_copy(update={"kv_lora_rank": 256})
    groups = tuple(g.model_copy(update={"layer": g.layer.model_copy(update={"attention": attention})})
                   for g in spec.layer_groups)
    r = llmsim.simulate(spec.model_copy(update={"layer_groups": groups}), "h100-sxm", batch_size=2, prompt_len=256,
                        gen_len=4)
    assert ("prefill MLA with latent rank 256, rope dim 64, no-rope dim 128, value dim 128: the MLA tables time "
            "DeepSeek's 512, 64, 128, 128") in r.roofline_reasons


def test_an_edited_copy_of_a_shipped_device_warns_that_its_tables_still_time_the_ops(tmp_path: Path) -> None:
    """Measured tables are chosen by the device's name: an audit's copy of h100-sxm.toml with its bandwidth cut to
    1 TB/s gave the same TPOT (1.833 ms against 1.832) without a word. A copy as shipped says nothing."""
    from llmsim.errors import AssumptionWarning
    from llmsim.shipped import hardware_dir

    text = (hardware_dir() / "h100-sxm.toml").read_text()
    same, slow = tmp_path / "same.toml", tmp_path / "slow.toml"
    same.write_text(text)
    key = "bandwidth_bytes_per_s = { value = "
    slow.write_text(text.replace(key + "3.35e12", key + "1.0e12"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)
        llmsim.load_hardware(str(same))
    with pytest.warns(AssumptionWarning, match=r"named 'h100-sxm' as a shipped device, but states other figures "
                                               r"than the shipped file \(memory\); h100-sxm's measured kernel tables"):
        llmsim.load_hardware(str(slow))


def test_assumption_warnings_point_at_the_users_line() -> None:
    """A fixed stacklevel had named llmsim's own analysis/fast_simulate.py:143 as the warning's origin."""
    from llmsim.errors import AssumptionWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        llmsim.simulate("gpt-oss-20b", "h100-sxm", batch_size=1, prompt_len=16, gen_len=2)  # no torch_dtype stated
    found = [w for w in caught if issubclass(w.category, AssumptionWarning)]
    assert found and all(Path(w.filename).resolve() == Path(__file__).resolve() for w in found)


def test_a_folder_of_another_engines_tables_says_it_stands_in(tmp_path: Path) -> None:
    """vLLM's tables given to engine sglang timed its ops without a word (an audit's finding)."""
    folder = tmp_path / "l40s-vllm"
    folder.mkdir()
    (folder / "gemm.csv").write_text((kernels_dir() / "l40s" / "vllm" / "gemm.csv").read_text())  # engine: vllm
    kw = dict(batch_size=1, prompt_len=64, gen_len=4, tables=str(folder))
    sglang = llmsim.simulate("llama-3.1-8b", "l40s", engine="sglang", **kw)
    note = (f"tables {folder}: measured under engine vllm; they stand in for engine sglang's kernels, whose own "
            "differ (approximation)")
    assert note in sglang.roofline_reasons and f"  tables      {note}" in str(sglang)
    vllm = llmsim.simulate("llama-3.1-8b", "l40s", engine="vllm", **kw)
    assert not any("stand in" in why for why in vllm.roofline_reasons)  # its own engine's: nothing to say
    # a shipped set by name, another engine's: said the same way (it was silent)
    named = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="sglang", batch_size=1, prompt_len=64, gen_len=4,
                            tables="trtllm")
    assert ("tables trtllm: measured under engine trtllm; they stand in for engine sglang's kernels, whose own "
            "differ (approximation)") in named.roofline_reasons
    own = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="sglang", batch_size=1, prompt_len=64, gen_len=4,
                          tables="sglang")
    assert not any("stand in" in why for why in own.roofline_reasons)


def test_one_op_says_why_it_is_on_the_roofline() -> None:
    """`llmsim op` timed an attention of head dim 96 on the roofline (19.69 us) without saying why, while head dim
    128 read SGLang's prefill attention table (74.83 us): the result now carries the reason, as simulate() does."""
    off = llmsim.op_cost("attention", "h100-sxm", batch=8, heads=16, head_dim=96, q_len=577, engine="sglang")
    on = llmsim.op_cost("attention", "h100-sxm", batch=8, heads=16, head_dim=128, q_len=577, engine="sglang")
    assert off.source == "roofline" and off.source_reason == "no prefill attention table for head dim 96 (engine " \
        "sglang on h100-sxm)"
    assert "timed by roofline (no prefill attention table for head dim 96" in str(off)
    assert on.source == "sglang prefill_attention" and on.source_reason == ""
