"""op_cost(): one op alone, by the same formulas and timing path as simulate(); numbers pinned by hand."""

from __future__ import annotations

import pytest

import llmsim
from llmsim.cli import main

GPU = "h100-sxm"


def test_elementwise_by_hand() -> None:
    # [32, 2048, 4096] = 268,435,456 elements of 2 bytes (fp16), one read and one written, 10 FLOPs each:
    # 2,684,354,560 FLOPs over 1,073,741,824 bytes = 2.5 FLOP/B, far below the vector ridge: memory-bound
    c = llmsim.op_cost("elementwise", GPU, "fp16", shape=[32, 2048, 4096], flops_per_element=10)
    assert (c.flops, c.bytes, c.arithmetic_intensity) == (2_684_354_560, 1_073_741_824, 2.5)
    hw = llmsim.load_hardware(GPU)
    assert c.ridge_point == hw.vector_peak_flops_per_s("bf16") / hw.memory_bandwidth_bytes_per_s
    assert c.bound == "memory" and c.source == "roofline" and 0.5 < c.bandwidth_share_of_peak <= 1
    assert c.time_s >= c.bytes / hw.memory_bandwidth_bytes_per_s
    assert c.fused_bytes_saved == 2 * 268_435_456 * 2  # its output written and read back: 1,073,741,824


def test_matmul_by_hand_and_from_the_measured_table() -> None:
    # 2 * 4096^3 = 137,438,953,472 FLOPs; bytes: input, weight and output, 4096 * 4096 * 2 each = 100,663,296
    c = llmsim.op_cost("matmul", GPU, "bf16", m=4096, n=4096, k=4096)
    assert (c.flops, c.bytes) == (137_438_953_472, 100_663_296)
    assert c.bound == "compute" and c.source == "vllm gemm" and c.ridge_point == pytest.approx(989.4e12 / 3.35e12,
                                                                                                 rel=1e-3)
    assert 0.5 < c.flops_share_of_peak < 1  # a measured GEMM reaches less than the datasheet peak
    roof = llmsim.op_cost("matmul", GPU, "bf16", m=4096, n=4096, k=4096, engine="roofline")
    assert roof.source == "roofline" and roof.flops == c.flops


def test_one_op_is_timed_as_in_a_simulation() -> None:
    # llama-3.2-1b prefill of 512 tokens: o_proj is [512, 2048] @ [2048, 2048]; the unfused SiLU * up reads
    # gate and up [512, 8192] and writes one, 4 + 1 FLOPs per element
    # op_cost times a kernel as a CUDA graph replays it: the simulation's prefill replays graphs too here
    # (prefill_dispatch_s=0; vLLM's own prefill runs uncaptured, with host dispatch per kernel)
    r = llmsim.simulate("llama-3.2-1b", GPU, batch_size=1, prompt_len=512, gen_len=1, fusion="none",
                        prefill_dispatch_s=0)
    ops = {op.name: op for op in r.prefill.ops}
    o_proj = llmsim.op_cost("matmul", GPU, "bf16", m=512, n=2048, k=2048)
    act = llmsim.op_cost("elementwise", GPU, "bf16", shape=[512, 8192], flops_per_element=5, inputs=2)
    assert o_proj.time_s == pytest.approx(ops["layers.attn.o_proj"].time_s / 16, rel=1e-12)
    assert act.time_s == pytest.approx(ops["layers.mlp.act"].time_s / 16, rel=1e-12)
    assert act.bytes == ops["layers.mlp.act"].bytes / 16


def test_cli_op(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["op", "elementwise", "--shape", "32,2048,4096", "--dtype", "fp16", "--flops-per-element", "10",
                 "--hardware", GPU]) == 0
    assert "memory-bound" in capsys.readouterr().out
    assert main(["op", "norm", "--shape", "8,4096", "--hardware", GPU, "--json"]) == 0
    assert '"kind": "norm"' in capsys.readouterr().out
    assert main(["op", "matmul", "--m", "4096", "--n", "4096", "--k", "4096", "--hardware", GPU]) == 0
    assert "timed by vllm gemm" in capsys.readouterr().out
    assert main(["op", "matmul", "--m", "8", "--hardware", GPU]) == 2
    assert "n is missing" in capsys.readouterr().err
    assert main(["op", "attention", "--heads", "16", "--head-dim", "64", "--q-len", "577", "--batch", "8",
                 "--non-causal", "--hardware", GPU]) == 0
    assert "577 tokens, non-causal" in (out := capsys.readouterr().out) and "timed by vllm encoder_attention" in out
    assert main(["op", "matmul", "--m", "8", "--n", "8", "--k", "8", "--non-causal", "--hardware", GPU]) == 2
    assert "--non-causal: only attention takes it, not matmul" in capsys.readouterr().err
    # another kind's options were read by nobody, without a word (a new-user audit, session 46)
    for argv, message in ((["matmul", "--m", "8", "--n", "8", "--k", "8", "--stride", "3"], "--stride: only conv"),
                          (["matmul", "--m", "8", "--n", "8", "--k", "8", "--heads", "8"], "--heads: only attention"),
                          (["norm", "--shape", "16,4096", "--flops-per-element", "1000"],
                           "--flops-per-element: only elementwise takes it, not norm"),
                          (["attention", "--heads", "8", "--q-len", "1", "--padding", "2"], "--padding: only conv")):
        assert main(["op", *argv, "--hardware", GPU]) == 2
        assert message in capsys.readouterr().err
    assert main(["op", "conv", "--shape", "8,64,56,56", "--out-channels", "64", "--kernel-size", "3", "--padding",
                 "100000", "--hardware", GPU]) == 2  # it costed an implicit GEMM of 3.2e11 rows
    assert "an implicit GEMM of 320,172,823,328 rows, past the 2,147,483,648" in capsys.readouterr().err


def test_attention_by_hand_and_as_in_a_simulation() -> None:
    # decode: 8 sequences, 32 query heads and 8 KV heads of 128, 4096 cached tokens: 4097 keys per query
    #   matmul FLOPs 2*8*32*4097*(128 + 128) = 537,001,984; softmax 5*8*32*4097 = 5,244,160
    #   bytes: Q 8*32*128*2 = 65,536 read, K and V 8*8*4097*256*2 = 134,250,496 read, out 65,536 written
    c = llmsim.op_cost("attention", GPU, "bf16", batch=8, heads=32, kv_heads=8, head_dim=128, q_len=1, kv_len=4096)
    assert (c.flops, c.bytes) == (537_001_984 + 5_244_160, 65_536 + 134_250_496 + 65_536)
    assert c.source == "vllm decode_attention" and c.bound == "memory"
    assert c.fused_bytes_saved == 4 * 8 * 32 * 4097 * 2  # the math kernels' scores: written, read, written, read
    # llama-3.2-1b (32 heads, 8 KV heads of 64): its flash op at prefill 512 and at decode step 1 after 512
    r = llmsim.simulate("llama-3.2-1b", GPU, batch_size=2, prompt_len=512, gen_len=2, prefill_dispatch_s=0)
    shape = {"batch": 2, "heads": 32, "kv_heads": 8, "head_dim": 64}
    for phase, at in ((r.prefill, {"q_len": 512}), (r.decode, {"q_len": 1, "kv_len": 512})):
        flash = next(op for op in phase.ops if op.name == "layers.attn.flash")
        one = llmsim.op_cost("attention", GPU, "bf16", **shape, **at)
        assert one.time_s == pytest.approx(flash.time_s / 16, rel=1e-12) and one.bytes == flash.bytes / 16


def test_conv_by_hand_as_flop_counter_mode_and_as_traced(capsys: pytest.CaptureFixture[str]) -> None:
    """`op conv` (the issue's "and conv once traced models exist"): a 3x3 convolution of [8, 64, 56, 56] into 64
    channels, padding 1, counted as FlopCounterMode and timed as a traced nn.Conv2d is."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    c = llmsim.op_cost("conv", GPU, "bf16", shape=[8, 64, 56, 56], out_channels=64, kernel_size=3, padding=1)
    # output [8, 64, 56, 56]: 2 * 8 * 64 * 56 * 56 * 64 * 3 * 3 = 1,849,688,064 FLOPs (implicit GEMM
    # [25088, 576] @ [576, 64]); bytes 2 x (input 1,605,632 + weights 36,864 + output 1,605,632) = 6,496,256
    assert (c.flops, c.bytes) == (1_849_688_064, 6_496_256)
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False, device="meta", dtype=torch.bfloat16)
    x = torch.empty(8, 64, 56, 56, device="meta", dtype=torch.bfloat16)
    with FlopCounterMode(display=False) as counter:
        conv(x)
    assert counter.get_total_flops() == c.flops
    traced = llmsim.analyze(conv, (x,), hardware=GPU, engine="transformers")
    kernel = traced.kernels[0]
    assert kernel.kernel.matmul_flops == c.flops and kernel.kernel.bytes_read + kernel.kernel.bytes_written == c.bytes
    alone = llmsim.op_cost("conv", GPU, "bf16", shape=[8, 64, 56, 56], out_channels=64, kernel_size=[3, 3],
                           padding=1, engine="transformers", overhead="none")
    assert c.source == alone.source == "vllm gemm"  # the GEMM table at the implicit shape, as the traced conv
    # stride 2, no padding: (56 - 3) // 2 + 1 = 27 per axis
    assert "-> [8, 64, 27, 27]" in llmsim.op_cost("conv", GPU, shape=[8, 64, 56, 56], out_channels=64,
                                                  kernel_size=3, stride=2).shape
    assert main(["op", "conv", "--shape", "8,64,56,56", "--out-channels", "64", "--kernel-size", "3", "--padding",
                 "1", "--hardware", GPU]) == 0
    assert "implicit GEMM [25088, 576] @ [576, 64]" in capsys.readouterr().out
    for kwargs, message in ((dict(shape=[8, 64]), "must be the input"), (dict(kernel_size=3), "out_channels is "
                            "missing"), (dict(out_channels=4, kernel_size=9, shape=[1, 3, 5, 5]), "larger than the "
                            "padded input"), (dict(out_channels=4, kernel_size=[3, 3, 3]), "one per spatial axis")):
        with pytest.raises(llmsim.errors.OptionError, match=message):
            llmsim.op_cost("conv", GPU, **{"shape": [8, 64, 56, 56], **kwargs})
