"""r.layer_table(): one layer per layer group, one step; its parts add up to the step simulate() times."""

from __future__ import annotations

import pytest

import llmsim
from llmsim.cli import main

GPU = "h100-sxm"


def _step_sum(table: llmsim.analysis.layers.LayerTable) -> float:
    return sum(g.time_s * g.layers for g in table.groups) + sum(op.time_s for op in table.other_ops)


@pytest.mark.parametrize("model", ["llama-3.2-1b", "gemma-3-1b", "qwen3-30b-a3b"])
def test_layers_times_count_plus_other_ops_is_the_step_time(model: str) -> None:
    # gen_len=2: decode is one step (kv_len = prompt_len), so its phase time is that step's time
    r = llmsim.simulate(model, GPU, batch_size=8, prompt_len=512, gen_len=2)
    decode, prefill = r.layer_table("decode", step=1), r.layer_table("prefill")
    assert decode.kv_len == 512 and decode.step_time_s == r.decode.time_s and prefill.step_time_s == r.prefill.time_s
    for table in (decode, prefill):
        assert _step_sum(table) == pytest.approx(table.step_time_s, rel=1e-12)  # exact up to rounding
        assert sum(g.layers for g in table.groups) == llmsim.load_model(model).num_layers


def test_a_mixed_model_has_one_table_per_layer_group() -> None:
    r = llmsim.simulate("gemma-3-1b", GPU, batch_size=8, prompt_len=4096, gen_len=3)
    t = r.layer_table(step=2)  # kv_len 4097: the sliding layers see 512 keys, the full ones all
    assert [(g.group, g.layers) for g in t.groups] == [("sliding", 22), ("full", 4)]
    flash = {g.group: next(op for op in g.ops if op.name == "attn.flash") for g in t.groups}
    assert flash["full"].matmul_flops > 7 * flash["sliding"].matmul_flops


def test_one_llama_layer_flops_by_hand() -> None:
    # llama-3.2-1b: hidden 2048, 32 query heads and 8 KV heads of 64, MLP 8192. Decode step 1 at batch 8,
    # prompt 512: each sequence's new token attends to 513 keys (512 cached + itself).
    #   qkv_proj  2*8*2048*(2048 + 2*8*64)   = 100,663,296
    #   o_proj    2*8*2048*2048              =  67,108,864
    #   gate_up   2*8*2048*(2*8192)          = 536,870,912
    #   down      2*8*8192*2048              = 268,435,456
    #   attention QK^T and PV: 2*2*8*32*64*513 = 33,619,968
    #   total                                = 1,006,698,496
    r = llmsim.simulate("llama-3.2-1b", GPU, batch_size=8, prompt_len=512, gen_len=2)
    (layer,) = r.layer_table("decode", step=1).groups
    by_name = {op.name: op.matmul_flops for op in layer.ops}
    assert by_name["attn.qkv_proj"] == 100_663_296 and by_name["mlp.down_proj"] == 268_435_456
    assert by_name["attn.flash"] == 33_619_968
    assert layer.matmul_flops == 1_006_698_496 and layer.layers == 16
    # the middle step by default: 127 decode steps, step 64, kv_len 512 + 63
    middle = llmsim.simulate("llama-3.2-1b", GPU, batch_size=8, prompt_len=512, gen_len=128).layer_table()
    assert (middle.step, middle.kv_len) == (64, 575)


def test_layer_table_in_pandas_and_on_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    r = llmsim.simulate("llama-3.2-1b", GPU, batch_size=1, prompt_len=64, gen_len=4)
    frame = r.layer_table().to_pandas()
    # 10 layer ops, 4 others (embed, norm, lm_head, vLLM's engine.step)
    assert list(frame.columns[:3]) == ["group", "layers", "name"] and len(frame) == 10 + 4
    assert main(["simulate", "llama-3.2-1b", "--hardware", GPU, "--prompt-len", "64", "--gen-len", "4",
                 "--per-layer", "--step", "3"]) == 0
    out = capsys.readouterr().out
    assert "decode step 3 (kv_len 66)" in out and "one layer (x16)" in out and "layer total" in out
    assert main(["simulate", "llama-3.2-1b", "--hardware", GPU, "--gen-len", "4", "--step", "3"]) == 2
    assert "--step: it picks the decode step of --per-layer" in capsys.readouterr().err
    assert main(["simulate", "llama-3.2-1b", "--hardware", GPU, "--gen-len", "4", "--per-layer", "--step", "4"]) == 2
    assert "step=4 must be an integer in 1..3" in capsys.readouterr().err
    # with --json the tables are in the output (they were dropped silently), the step's time as the text's
    import json

    assert main(["simulate", "llama-3.2-1b", "--hardware", GPU, "--prompt-len", "64", "--gen-len", "4",
                 "--per-layer", "--step", "3", "--json"]) == 0
    tables = json.loads(capsys.readouterr().out)["layer_tables"]
    assert [(t["phase"], t["step"], t["kv_len"]) for t in tables] == [("prefill", 0, 0), ("decode", 3, 66)]
    assert tables[1]["step_time_s"] == pytest.approx(r.layer_table("decode", 3).step_time_s)


def test_pipeline_stages_and_a_result_read_back_from_json() -> None:
    r = llmsim.simulate("llama-3.2-1b", GPU, batch_size=8, prompt_len=512, gen_len=2, pipeline_parallel=2)
    t = r.layer_table("decode", 1)  # one GPU's stage: the hand-over between stages is one of the other ops
    assert t.step_time_s == r.decode.time_s and "pipeline.p2p" in [op.name for op in t.other_ops]
    assert _step_sum(t) == pytest.approx(t.step_time_s, rel=1e-12)
    back = llmsim.SimulationResult.model_validate_json(r.model_dump_json())
    assert back == r and back.layer_table("decode", 1) == t  # the inputs are kept beside the result, not in it


def test_an_op_twice_in_a_layer_counts_twice_in_the_layer_table() -> None:
    """Falcon-7B adds the attention and MLP outputs to the residual in two ops named alike (64 runs in 32 layers);
    the table listed one run per layer, so its layers plus the other ops came to 64.43 of a 65.33 ms step. Every
    table's layers (x their count) plus the ops outside them add up to the step, as the model's ops do."""
    for model in ("falcon-7b", "llama-3.1-8b"):
        r = llmsim.simulate(model, GPU, batch_size=4, prompt_len=700, gen_len=30)
        for phase in ("prefill", "decode"):
            t = r.layer_table(phase)
            total = sum(g.time_s * g.layers for g in t.groups) + sum(o.time_s for o in t.other_ops)
            assert total == pytest.approx(t.step_time_s, rel=1e-9), (model, phase)
