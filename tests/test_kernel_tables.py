"""Measured kernel tables: lookups pinned by hand, the importer on a parquet file written here, refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import llmsim
from llmsim.engines.aiconfigurator import import_tables
from llmsim.errors import HardwareError, LlmsimError, OptionError
from llmsim.hardware.measured import load_measured, measured_for, prefill_window_factor
from llmsim.hardware.table_file import read_table_file

GEMM_CSV = """# source: written by this test
dtype,m,n,k,latency_us
bf16,1,1024,1024,4
bf16,1,1024,4096,8
bf16,1,4096,1024,8
bf16,1,4096,4096,16
bf16,256,1024,1024,9
bf16,256,1024,4096,36
bf16,256,4096,1024,36
bf16,256,4096,4096,144
"""


def _gemm(tmp_path: Path) -> object:
    path = tmp_path / "gemm.csv"
    path.write_text(GEMM_CSV)
    return read_table_file(path, "gemm", ("dtype",), ("m", "n", "k")).grids[("bf16",)]


def test_a_point_measured_slower_than_a_larger_shape_reads_at_the_larger_ones_time(tmp_path: Path) -> None:
    """monotone_envelope: a glitch (m = 1, n = k = 4096 measured 200 us where m = 256 took 144 us) is read at the
    larger shape's time; the points below no larger one keep their measured times."""
    path = tmp_path / "gemm.csv"
    path.write_text(GEMM_CSV.replace("bf16,1,4096,4096,16", "bf16,1,4096,4096,200"))
    grid = read_table_file(path, "gemm", ("dtype",), ("m", "n", "k")).grids[("bf16",)]
    assert grid.time_s(1, 4096, 4096) == pytest.approx(144e-6, rel=1e-12)  # min(200, m = 256's 144) us
    assert grid.time_s(1, 4096, 1024) == pytest.approx(8e-6, rel=1e-12)  # untouched: 8 < every larger shape's
    assert grid.time_s(256, 4096, 4096) == pytest.approx(144e-6, rel=1e-12)
    # the shipped H200 TensorRT-LLM decode MLA table held fp8, 16 heads, batch 2, 131,072 keys at 1,193 us against
    # 117.7 us at batch 4: DeepSeek-V3's TPOT at TP8 and 120,000 cached tokens read 53.2 ms at batch 2 and 14.8 ms
    # at batch 1; it now grows with the batch
    tpot = [llmsim.simulate("deepseek-v3", "h200", batch_size=b, prompt_len=120000, gen_len=4, tensor_parallel=8,
                            engine="trtllm", kv_dtype="fp8").tpot_s for b in (1, 2, 3, 4)]
    assert tpot == sorted(tpot) and tpot[1] < 1.5 * tpot[0]


def test_a_measured_point_returns_its_time(tmp_path: Path) -> None:
    grid = _gemm(tmp_path)
    assert grid.time_s(256, 4096, 1024) == pytest.approx(36e-6, rel=1e-12)  # the row bf16,256,4096,1024,36
    assert grid.time_s(1, 1024, 1024) == pytest.approx(4e-6, rel=1e-12)


def test_a_log_midpoint_is_the_geometric_mean(tmp_path: Path) -> None:
    grid = _gemm(tmp_path)  # two points per axis: the cubic is the straight line in log-log
    # m = 16 is halfway between 1 and 256 in log2 (0, 4, 8): sqrt(4 * 9) = 6 us at n = k = 1024
    assert grid.time_s(16, 1024, 1024) == pytest.approx(6e-6, rel=1e-12)
    # n = 2048 halfway between 1024 and 4096: sqrt(4 * 8) = 5.657 us at m = 1, k = 1024
    assert grid.time_s(1, 2048, 1024) == pytest.approx(math.sqrt(32) * 1e-6, rel=1e-12)


def _floor_then_growth() -> object:

    from llmsim.hardware.kernel_table import GridTable

    # tokens 1, 2, 4, 8 (log2: 0, 1, 2, 3); 1, 1, 2, 8 us (log2: 0, 0, 1, 3): a floor, then growth that steepens
    return GridTable(("tokens",), (np.array([1.0, 2.0, 4.0, 8.0]),), np.array([1e-6, 1e-6, 2e-6, 8e-6]))


def test_a_midpoint_follows_the_monotone_cubic() -> None:
    grid = _floor_then_growth()
    assert grid.time_s(4) == pytest.approx(2e-6, rel=1e-12)  # a measured point: its time
    # In log2 units (slopes are the same in any base): secants 0, 1, 2 over the three cells. Slopes at the
    # points: tokens 2: 0 (the secants either side, 0 and 1, do not share a sign); tokens 4: the harmonic mean
    # of 1 and 2 (equal cells) = 4/3. Midpoint of the cell 2..4 (tokens 2 sqrt 2, s = 1/2, h = 1):
    # a = s^2 (3 - 2s) = 1/2; log2 t = (1 - a) 0 + a 1 + h s (1 - s) ((1 - s) 0 - s 4/3) = 1/2 - 1/6 = 1/3:
    # 2^(1/3) = 1.260 us, below the straight line's sqrt(1 x 2) = 1.414 us (the curve bends upward there)
    assert grid.time_s(2 * math.sqrt(2)) == pytest.approx(2 ** (1 / 3) * 1e-6, rel=1e-12)
    # the cell 1..2 on the floor: slopes 0 at tokens 1 (the end estimate (3 x 0 - 1) / 2 = -1/2 has the
    # wrong sign: 0) and at tokens 2: flat, 1 us
    assert grid.time_s(math.sqrt(2)) == pytest.approx(1e-6, rel=1e-12)
    # the last cell 4..8: slope at tokens 8 the end estimate ((2 + 1) 2 - 1) / 2 = 5/2; at s = 1/2:
    # log2 t = 1/2 + 3/2 + 1/4 (1/2 x 4/3 - 1/2 x 5/2) = 2 - 7/48 = 89/48: 2^(89/48) = 3.616 us (line: 4 us)
    assert grid.time_s(4 * math.sqrt(2)) == pytest.approx(2 ** (89 / 48) * 1e-6, rel=1e-12)
    # past the edges the rules are unchanged: the floor below, in proportion above (8 us x 16 / 8)
    assert grid.time_s(0.5) == pytest.approx(1e-6, rel=1e-12)
    assert grid.time_s(16) == pytest.approx(16e-6, rel=1e-12)


def test_the_cubic_does_not_overshoot_a_step() -> None:

    from llmsim.hardware.kernel_table import GridTable

    # a step (an L2 cache running out): 1, 1, 8, 8 us; every read between stays within 1 and 8 us, rising
    grid = GridTable(("keys",), (np.array([1.0, 2.0, 4.0, 8.0]),), np.array([1e-6, 1e-6, 8e-6, 8e-6]))
    times = grid.time_s(np.geomspace(1, 8, 200))
    assert times.min() == pytest.approx(1e-6, rel=1e-12) and times.max() == pytest.approx(8e-6, rel=1e-12)
    assert np.all(np.diff(times) >= -1e-12 * times[1:])  # never falling (but for rounding on the flat parts)


def test_every_reading_path_gives_the_same_numbers() -> None:

    from llmsim.hardware.kernel_table import GridTable

    # a 3-axis grid with 3 to 5 points per axis, times from a smooth kernel-like curve with a floor
    rng = np.random.default_rng(3)
    points = (np.array([1.0, 4, 16, 64, 256]), np.array([256.0, 1024, 4096]), np.array([512.0, 2048, 8192, 16384]))
    m, n, k = np.meshgrid(*points, indexing="ij")
    grid = GridTable(("m", "n", "k"), points, 5e-6 + 2 * m * n * k / 600e12 + 2 * n * k / 3e12)
    at = np.exp(rng.uniform(np.log(0.5), np.log(600), (40, 3)))
    swept = grid.time_s(*at.T)  # the array path (a sweep)
    one = np.array([grid.time_s(*map(float, p)) for p in at])  # the scalar path, point by point
    assert np.allclose(swept, one, rtol=1e-13, atol=0)
    held = grid.fixed_at((None, float(at[0, 1]), float(at[0, 2])))  # n and k held: a GEMM read at new M
    read_m = held.reader()
    for x in at[:, 0]:
        assert read_m(float(x)) == held.time_s(float(x)) == grid.time_s(float(x), float(at[0, 1]), float(at[0, 2]))
    pair = grid.fixed_at((None, None, float(at[0, 2])))  # two free axes
    for x, y in at[:, :2]:
        assert pair.time_s(float(x), float(y)) == grid.time_s(float(x), float(y), float(at[0, 2]))
    assert np.allclose(pair.array_time_s(at[:, 0], at[:, 1]), [grid.time_s(float(x), float(y), float(at[0, 2]))
                                                                for x, y in at[:, :2]], rtol=1e-13, atol=0)
    u, v = at[:10, 0].reshape(10, 1), at[:12, 1].reshape(1, 12)  # a sweep's outer product (its own path)
    expected = [[grid.time_s(float(x), float(y), float(at[0, 2])) for y in v.ravel()] for x in u.ravel()]
    assert np.allclose(pair.array_time_s(u, v), expected, rtol=1e-13, atol=0)


def test_beyond_the_grid(tmp_path: Path) -> None:
    grid = _gemm(tmp_path)
    # above the largest m: proportional, 144 us * 1024 / 256 = 576 us
    assert grid.time_s(1024, 4096, 4096) == pytest.approx(576e-6, rel=1e-12)
    # above in two axes: 144 * (1024/256) * (8192/4096) = 1152 us
    assert grid.time_s(1024, 8192, 4096) == pytest.approx(1152e-6, rel=1e-12)
    # below the smallest n: the time at the smallest (a floor), 4 us
    assert grid.time_s(1, 64, 1024) == pytest.approx(4e-6, rel=1e-12)


def test_arrays_broadcast(tmp_path: Path) -> None:
    grid = _gemm(tmp_path)
    times = grid.time_s([1, 256], 1024, [[1024], [4096]])
    assert times.shape == (2, 2)
    assert times[1, 1] == pytest.approx(36e-6)  # m = 256, n = 1024, k = 4096


def test_holes_and_bad_values_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "gemm.csv"
    path.write_text("\n".join(GEMM_CSV.splitlines()[:-1]) + "\n")  # the (256, 4096, 4096) row missing
    with pytest.raises(HardwareError, match="not a full grid"):
        read_table_file(path, "gemm", ("dtype",), ("m", "n", "k"))
    path.write_text(GEMM_CSV.replace("bf16,1,1024,1024,4", "bf16,1,1024,1024,-4"))
    with pytest.raises(HardwareError, match="non-positive"):
        read_table_file(path, "gemm", ("dtype",), ("m", "n", "k"))
    path.write_text(GEMM_CSV.replace("latency_us", "latency"))
    with pytest.raises(HardwareError, match="lacks column"):
        read_table_file(path, "gemm", ("dtype",), ("m", "n", "k"))
    # a size of inf passed the size check (inf > 0) and made every larger GEMM read the largest measured one
    for size in ("inf", "nan"):
        path.write_text(GEMM_CSV.replace("bf16,1,1024,1024,4", f"bf16,{size},1024,1024,4"))
        with pytest.raises(HardwareError, match="non-positive or non-finite size"):
            read_table_file(path, "gemm", ("dtype",), ("m", "n", "k"))
    path.write_text(GEMM_CSV.replace("bf16,1,1024,1024,4", "bf16,1,1024,garbage,4"))  # was numpy's ValueError
    with pytest.raises(HardwareError, match=r"gemm.csv: kernel table 'gemm': k 'garbage' is not a number \(row "
                                            r"'bf16,1,1024,garbage,4'\)$"):
        read_table_file(path, "gemm", ("dtype",), ("m", "n", "k"))


def test_token_budget_holes_are_filled_in_proportion_to_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "prefill_attention.csv"
    path.write_text("kv_dtype,head_dim,window,num_heads,num_kv_heads,batch,isl,latency_us\n"
                    "bf16,128,0,32,8,1,1024,10\nbf16,128,0,32,8,2,1024,18\nbf16,128,0,32,8,1,2048,30\n")
    grid = read_table_file(path, "prefill_attention", ("kv_dtype", "head_dim", "window", "num_heads", "num_kv_heads"),
                           ("batch", "isl"), fill_first_axis=True).grids[("bf16", 128, 0, 32, 8)]
    assert grid.time_s(2, 2048) == pytest.approx(60e-6)  # not measured: 30 us at batch 1 x 2 / 1


def test_window_factor() -> None:
    # isl 8, window 4: pairs 4*5/2 + (8-4)*4 = 26 of the causal 8*9/2 = 36
    assert prefill_window_factor(8, 4) == pytest.approx(26 / 36)
    assert prefill_window_factor(8, None) == 1.0


def test_shipped_h100_tables_return_measured_points() -> None:
    mk = measured_for("h100-sxm", "vllm")
    assert mk is not None
    # kernels/h100-sxm/vllm/gemm.csv: bf16,4096,4096,4096,166 (aiconfigurator-core 0.12.0, vLLM 0.24.0,
    # h100_sxm gemm_perf 0.16603 ms)
    assert mk.gemm_s("bf16", 4096, 4096, 4096) == pytest.approx(166e-6, rel=1e-9)
    assert "aiconfigurator-core 0.12.0" in mk.source("gemm") and "NVIDIA H100 80GB HBM3" in mk.source("gemm")
    assert mk.gemm_s("int4", 1, 4096, 4096) is None  # no weight-only int4 table for vLLM on H100
    assert measured_for("cpu-generic", "vllm") is None


def test_wide_gemms_read_the_measured_51200_line_not_a_proportional_guess() -> None:
    # aiconfigurator-core 0.12.0, b200_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet, nvfp4 at m = 4, k = 8192:
    # n = 16384 0.026 ms, n = 51200 0.059056 ms (a fused gate/up of a 70B model at TP 1 is n = 57344). Before the
    # compact grid kept 51200 the table stopped at 16384 and past it read time in proportion to n:
    # 26.0 us x 51200 / 16384 = 81 us, 37 % above the measurement.
    mk = measured_for("b200", "trtllm")
    assert mk is not None
    grid = mk.gemm_table_named("nvfp4_fallback")  # TensorRT-LLM's rows as measured (see UNTUNED_GEMM_LANES)
    assert grid is not None
    # the measured 59.06 us, read at the 57.74 us of m = 64 at the same n and k (monotone_envelope: a kernel is
    # never slower than on a larger shape)
    assert grid.time_s(4, 51200, 8192) == pytest.approx(57.74e-6, rel=1e-9)
    # between 16384 and 51200: a straight line in log(time) against log(n), the GEMM rule
    t16, t51 = grid.time_s(4, 16384, 8192), grid.time_s(4, 51200, 8192)
    assert t16 < grid.time_s(4, 28672, 8192) < t51
    assert grid.time_s(4, 28672, 8192) == pytest.approx(
        t16 * (t51 / t16) ** (math.log(28672 / 16384) / math.log(51200 / 16384)), rel=1e-9)


def test_shipped_gb300_tables_return_measured_points() -> None:
    # aiconfigurator-core 0.12.0, systems/data/gb300/gemm/<engine>/<version>/gemm_perf.parquet, device 'NVIDIA GB300',
    # m = n = k = 4096: bfloat16 0.074913 ms (vLLM 0.24.0), 0.075147 (SGLang 0.5.14), 0.073424 (TensorRT-LLM
    # 1.3.0rc20); nvfp4 0.039840, 0.042320, 0.051074 ms; the shipped rows keep 4 significant digits. TensorRT-LLM's
    # nvfp4 lane is the fastest of the three (its own row times its AutoTuner's fallback tactic): 39.84 us
    expected_us = {"vllm": (74.91, 39.84), "sglang": (75.15, 42.32), "trtllm": (73.42, 39.84)}
    for engine, (bf16_us, nvfp4_us) in expected_us.items():
        mk = measured_for("gb300", engine)
        assert mk is not None
        assert mk.gemm_s("bf16", 4096, 4096, 4096) == pytest.approx(bf16_us * 1e-6, rel=1e-9)
        assert mk.gemm_s("fp4", 4096, 4096, 4096) == pytest.approx(nvfp4_us * 1e-6, rel=1e-9)
        assert "aiconfigurator-core 0.12.0" in mk.source("gemm") and "NVIDIA GB300" in mk.source("gemm")
        assert {"prefill_mla", "decode_mla"} <= set(mk.families) or engine == "vllm"  # no op-level vLLM MLA table
    # DeepSeek's MLA reads the GB300's own MLA tables (the B300 ships none: the roofline there)
    r = llmsim.simulate("deepseek-v3", "gb300", engine="trtllm", batch_size=8, prompt_len=1024, gen_len=3,
                        tensor_parallel=8)
    assert next(op for op in r.decode.ops if op.name.endswith(".flash")).source == "trtllm decode_mla"


def test_gb300_is_its_own_device_beside_the_b300() -> None:
    gb300, b300 = llmsim.load_hardware("gb300"), llmsim.load_hardware("b300")
    # NVIDIA Blackwell Ultra datasheet, GB300 column (sparse -> dense / 2; FP4 given dense): BF16 5 PF -> 2.5,
    # FP8 10 -> 5, INT8 330 TOPS -> 165, FP4 20 | 15 -> 15 PFLOPS; HGX B300 column: 2.25, 4.5, 153.5 TOPS, 14
    peaks = {p: gb300.matrix_flops_per_s[p].value for p in ("bf16", "fp8", "int8", "fp4")}
    assert peaks == {"bf16": 2.5e15, "fp8": 5e15, "int8": 165e12, "fp4": 15e15}
    assert b300.matrix_flops_per_s["bf16"].value == 2.25e15 and b300.matrix_flops_per_s["fp4"].value == 14e15
    # '279 GB HBM3E | 8 TB/s' (binary: nvidia-smi 284208 MiB is just under 279 GiB) against the B300's 270 GB, 7.7 TB/s
    assert gb300.memory["capacity_bytes"].value == 279 * 2**30 and gb300.memory["bandwidth_bytes_per_s"].value == 8e12
    assert b300.memory["capacity_bytes"].value == 270 * 2**30
    # one 72-GPU NVLink domain at 1.8 TB/s bidirectional per GPU (as gb200.toml); one 800 Gb/s ConnectX-8 per GPU
    # beyond it: 800e9 / 8 = 100e9 byte/s
    link = gb300.interconnect
    assert link["gpus_per_node"].value == 72 and link["intra_node_bandwidth_bytes_per_s"].value == 900e9
    assert link["inter_node_bandwidth_bytes_per_s"].value == 100e9
    assert "inter_node_bandwidth_bytes_per_s" not in llmsim.load_hardware("gb200").interconnect
    sections = (gb300.matrix_flops_per_s, gb300.vector_flops_per_s, gb300.memory, link, gb300.overhead,
                gb300.efficiency)
    assert all(q.source for section in sections for q in section.values())


@pytest.mark.slow
def test_shipped_gb300_tables_are_what_the_importer_writes(tmp_path: Path) -> None:
    """kernels/README.md's regeneration command, for the GB300: byte for byte the shipped files."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("aiconfigurator_core")
    from llmsim.shipped import kernels_dir

    for engine in ("vllm", "sglang", "trtllm"):
        written = import_tables("gb300", engine, tmp_path / engine)
        shipped = sorted((kernels_dir() / "gb300" / engine).glob("*.csv"))
        assert sorted(p.name for p in written) == [p.name for p in shipped]
        for path in shipped:
            assert (tmp_path / engine / path.name).read_text() == path.read_text(), path


def test_unknown_family_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "flux_capacitor.csv").write_text("a,latency_us\n1,1\n")
    with pytest.raises(HardwareError, match="unknown kernel table family 'flux_capacitor'"):
        load_measured(str(tmp_path))


def _write_parquet(path: Path, rows: list[dict[str, object]]) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_importer_on_a_parquet_file_written_here(tmp_path: Path) -> None:
    data = tmp_path / "data"
    gemm = [{"framework": "vllm", "version": "9.9", "device": "Test GPU", "op_name": "gemm",
             "kernel_source": "torch.nn.functional.linear", "gemm_dtype": "bfloat16", "m": m, "n": n, "k": k,
             "latency": 0.001 * m * n * k / (1024 * 1024)}  # ms
            for m in (1, 256) for n in (1024, 4096) for k in (1024, 4096)]
    gemm.append({**gemm[0], "gemm_dtype": "awq"})  # a dtype llmsim does not import
    # vLLM's fp8_block lane is timed outside CUDA graphs (host launch time): left out for vLLM only
    gemm += [{**row, "gemm_dtype": "fp8_block", "kernel_source": "DeepGemmFp8BlockScaledMMKernel"}
             for row in gemm[:8]]
    _write_parquet(data / "test_gpu" / "gemm" / "vllm" / "9.9" / "gemm_perf.parquet", gemm)
    allreduce = [{"framework": "vLLM", "version": "9.9", "device": "Test GPU", "op_name": "all_reduce",
                  "kernel_source": f"vLLM_custom_{lane}", "allreduce_dtype": "bfloat16", "num_gpus": 2,
                  "message_size": size, "latency": 0.01 if lane == "graph" else 0.05, "backend": f"vllm_{lane}"}
                 for lane in ("graph", "eager") for size in (1024, 2048)]
    _write_parquet(data / "test_gpu" / "comm" / "vllm" / "9.9" / "custom_allreduce_perf.parquet", allreduce)
    out = tmp_path / "kernels" / "test-gpu" / "vllm"
    written = import_tables("test_gpu", "vllm", out, data_root=data, full=True)
    assert sorted(p.name for p in written) == ["all_reduce.csv", "gemm.csv"]  # no attention or MoE tables there
    mk = load_measured(str(out))
    # m = 256, n = k = 4096: 0.001 ms * 256 * 4096 * 4096 / 2^20 = 4.096 ms
    assert mk.gemm_s("bf16", 256, 4096, 4096) == pytest.approx(4.096e-3, rel=1e-3)
    text = (out / "gemm.csv").read_text()
    assert "# gpu: Test GPU" in text and "# engine_version: 9.9" in text and "awq" not in text
    assert "fp8_block" not in text and "DeepGemm" not in text
    _write_parquet(data / "test_gpu" / "gemm" / "sglang" / "9.9" / "gemm_perf.parquet", gemm)
    sglang = load_measured(str(tmp_path / "sg")) if import_tables(
        "test_gpu", "sglang", tmp_path / "sg", data_root=data, full=True, families=["gemm"]) else None
    assert sglang is not None and sglang.gemm_table_named("fp8_block") is not None  # other engines keep it
    # all-reduce: the graph lane only, message_size in elements -> bytes (x2 for bf16)
    grid = mk.all_reduce_table(2)
    assert grid.time_s(4096) == pytest.approx(10e-6)  # 2048 elements = 4096 bytes: 0.01 ms
    with pytest.raises(LlmsimError, match="never overwrites"):
        import_tables("test_gpu", "vllm", out, data_root=data)
    (data / "empty_gpu").mkdir()  # a folder the package ships without tables is not offered
    with pytest.raises(OptionError, match=r"system='nope' has no data in .*; systems with measured tables: "
                                          r"test_gpu$"):
        import_tables("nope", "vllm", tmp_path / "x", data_root=data)
    with pytest.raises(OptionError, match=r"system='h100-sxm' .* \(llmsim's 'h100-sxm' is aiconfigurator's "
                                          r"'h100_sxm'\)"):
        import_tables("h100-sxm", "vllm", tmp_path / "x", data_root=data)
    with pytest.raises(OptionError, match="engine"):
        import_tables("test_gpu", "tgi", tmp_path / "x", data_root=data)
    # an existing file as the folder, or a folder that cannot be made: one line, no traceback
    (tmp_path / "a-file").write_text("mine")
    with pytest.raises(LlmsimError, match=r"out .*a-file: a file; the tables are a folder of CSV files"):
        import_tables("test_gpu", "vllm", tmp_path / "a-file", data_root=data)
    assert (tmp_path / "a-file").read_text() == "mine"
    with pytest.raises(LlmsimError, match=r"out /proc/llmsim-tables: cannot create that folder"):
        import_tables("test_gpu", "vllm", Path("/proc/llmsim-tables"), data_root=data)
    # a shell's completion ("test_gpu/") reads as the name; a path was written with it as the system, so that
    # simulate refused the tables on that very GPU
    assert [p.name for p in import_tables("test_gpu/", "vllm", tmp_path / "slash", data_root=data,
                                          families=["gemm"])] == ["gemm.csv"]
    assert "# system: test_gpu\n" in (tmp_path / "slash" / "gemm.csv").read_text()
    with pytest.raises(OptionError, match=r"^system='../data/test_gpu': give a system's name"):
        import_tables("../data/test_gpu", "vllm", tmp_path / "x", data_root=data)
    # nothing to write (no attention table there): no folder is left behind, parents included
    assert import_tables("test_gpu", "vllm", tmp_path / "new" / "deep", data_root=data,
                         families=["prefill_attention"]) == []
    assert not (tmp_path / "new").exists()


def test_importer_reads_the_version_the_package_serves(tmp_path: Path) -> None:
    # aiconfigurator's systems/query_versions.yaml names each engine's `current` version; a newer folder can be
    # a partial drop (TensorRT-LLM 1.3.0rc23's moe_perf: Nemotron-3 shapes only), older ones fill backward
    data = tmp_path / "systems" / "data"

    def gemm_rows(version: str, ms: float) -> list[dict]:
        return [{"framework": "TRTLLM", "version": version, "device": "Test GPU", "op_name": "gemm",
                 "kernel_source": "torch_flow", "gemm_dtype": "bfloat16", "m": m, "n": 1024, "k": 1024,
                 "latency": ms} for m in (1, 256)]

    for version, ms in (("1.0", 0.001), ("2.0rc20", 0.002), ("2.0rc23", 0.003)):
        _write_parquet(data / "test_gpu" / "gemm" / "trtllm" / version / "gemm_perf.parquet", gemm_rows(version, ms))
    newest = import_tables("test_gpu", "trtllm", tmp_path / "a", data_root=data, families=["gemm"])
    assert "# engine_version: 2.0rc23" in newest[0].read_text()  # no slots file: the newest
    (tmp_path / "systems" / "query_versions.yaml").write_text(
        'defaults:\n  trtllm: {current: "2.0rc20", previous: null}\n'
        'overrides:\n  old_gpu:\n    trtllm: {current: "0.5", previous: null}\n')
    current = import_tables("test_gpu", "trtllm", tmp_path / "b", data_root=data, families=["gemm"])
    assert "# engine_version: 2.0rc20" in current[0].read_text()
    assert load_measured(str(tmp_path / "b")).gemm_s("bf16", 256, 1024, 1024) == pytest.approx(2e-6)  # 0.002 ms
    (data / "test_gpu" / "gemm" / "trtllm" / "2.0rc20" / "gemm_perf.parquet").unlink()  # current lacks it:
    filled = import_tables("test_gpu", "trtllm", tmp_path / "c", data_root=data, families=["gemm"])
    assert "# engine_version: 1.0" in filled[0].read_text()  # the newest older one, never the newer rc23


def test_importer_keeps_tensorrt_llms_min_latency_moe_kernel_as_a_lane_of_its_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    moe = [{"framework": "TRTLLM", "version": "1.0", "device": "Test GPU", "op_name": "moe", "kernel_source": source,
            "moe_dtype": "nvfp4", "num_tokens": tokens, "hidden_size": 1024, "inter_size": 512, "topk": 2,
            "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1, "distribution": "balanced",
            "latency": ms * tokens}
           for source, ms in (("moe_torch_flow_cutlass", 0.010), ("moe_torch_flow_min_latency", 0.004))
           for tokens in (1, 16, 256)]
    _write_parquet(data / "test_gpu" / "moe" / "trtllm" / "1.0" / "moe_perf.parquet", moe)
    written = import_tables("test_gpu", "trtllm", tmp_path / "k", data_root=data, full=True, families=["moe"])
    assert "moe_torch_flow_min_latency" in written[0].read_text()
    mk = load_measured(str(tmp_path / "k"))
    assert mk.moe_table("nvfp4", 2, 8, 1024, 512, 1, 1).time_s(16) == pytest.approx(0.160e-3)  # 0.010 ms x 16
    assert mk.moe_table("nvfp4_min_latency", 2, 8, 1024, 512, 1, 1).time_s(16) == pytest.approx(0.064e-3)  # 0.004 x 16


def test_importer_writes_static_fp8_gemms(tmp_path: Path) -> None:
    # aiconfigurator's fp8 GEMM rows run dynamic per-token activation quantisation; its computescale_perf
    # times that extra; a static-scale fp8 GEMM is the difference (as the package derives fp8_static)
    data = tmp_path / "data"
    gemm = [{"framework": "TRTLLM", "version": "1.0", "device": "Test GPU", "op_name": "gemm",
             "kernel_source": "torch_flow", "gemm_dtype": dtype, "m": m, "n": 4096, "k": k, "latency": 0.050}
            for dtype in ("bfloat16", "fp8") for m in (1, 64) for k in (1024, 4096)]
    _write_parquet(data / "test_gpu" / "gemm" / "trtllm" / "1.0" / "gemm_perf.parquet", gemm)
    scale = [{"framework": "TRTLLM", "version": "1.0", "device": "Test GPU", "op_name": "compute_scale",
              "kernel_source": "torch_ops", "m": m, "k": k, "quant_dtype": "fp8", "latency": 0.001 * m ** 0.5}
             for m in (1, 16, 64) for k in (1024, 4096)]
    _write_parquet(data / "test_gpu" / "quantize" / "trtllm" / "1.0" / "computescale_perf.parquet", scale)
    written = import_tables("test_gpu", "trtllm", tmp_path / "k", data_root=data, full=True, families=["gemm"])
    assert "# fp8: static activation scales" in written[0].read_text()
    mk = load_measured(str(tmp_path / "k"))
    assert mk.gemm_s("fp8", 64, 4096, 1024) == pytest.approx((0.050 - 0.001 * 8) * 1e-3)  # 50 us - 8 us = 42 us
    assert "fp8,1,4096,4096,49" in written[0].read_text()  # 50 us - 1 us = 49 us, written as measured
    # read at m = 64's 42 us (monotone_envelope: never slower than a larger shape)
    assert mk.gemm_s("fp8", 1, 4096, 4096) == pytest.approx((0.050 - 0.001 * 8) * 1e-3)
    assert mk.gemm_s("bf16", 64, 4096, 1024) == pytest.approx(0.050e-3)  # other dtypes as measured
    assert mk.gemm_table_named("fp8_dynamic").time_s(64, 4096, 1024) == pytest.approx(0.050e-3)  # the row as is


def test_tensorrt_llms_untuned_nvfp4_gemm_rows_give_way_to_the_fastest_measured_kernel(tmp_path: Path) -> None:
    # aiconfigurator times TensorRT-LLM's NVFP4 GEMM outside its AutoTuner (the fallback tactic); the imported
    # lane is the fastest nvfp4 row of the device over the engines, the measured one kept as nvfp4_fallback
    data = tmp_path / "data"
    trt = [{"framework": "TRTLLM", "version": "1.0", "device": "Test GPU", "op_name": "gemm",
            "kernel_source": "torch_flow", "gemm_dtype": dtype, "m": m, "n": 4096, "k": 4096, "latency": 0.040}
           for dtype in ("bfloat16", "nvfp4") for m in (1, 64)]
    _write_parquet(data / "test_gpu" / "gemm" / "trtllm" / "1.0" / "gemm_perf.parquet", trt)
    fast = {1: 0.020, 64: 0.050}  # vLLM's FlashInfer kernel: faster at m = 1, slower at m = 64
    vllm = [{"framework": "VLLM", "version": "2.0", "device": "Test GPU", "op_name": "gemm",
             "kernel_source": "FlashInferCuteDslNvFp4LinearKernel", "gemm_dtype": "nvfp4", "m": m, "n": 4096, "k": 4096,
             "latency": fast[m]} for m in (1, 64)]
    _write_parquet(data / "test_gpu" / "gemm" / "vllm" / "2.0" / "gemm_perf.parquet", vllm)
    written = import_tables("test_gpu", "trtllm", tmp_path / "k", data_root=data, full=True, families=["gemm"])
    text = written[0].read_text()
    assert "# nvfp4: the fastest measured nvfp4 kernel of the device" in text and "vllm 2.0" in text
    mk = load_measured(str(tmp_path / "k"))
    assert mk.gemm_s("fp4", 1, 4096, 4096) == pytest.approx(20e-6)  # min(40 us, vLLM's 20 us)
    assert mk.gemm_s("fp4", 64, 4096, 4096) == pytest.approx(40e-6)  # min(40 us, vLLM's 50 us): its own row
    assert mk.gemm_table_named("nvfp4_fallback").time_s(1, 4096, 4096) == pytest.approx(40e-6)  # as measured
    assert mk.gemm_s("bf16", 1, 4096, 4096) == pytest.approx(40e-6)  # other dtypes untouched
    # the shipped B200 table (aiconfigurator-core 0.12.0) at m = 4, n = k = 8192: TensorRT-LLM 1.3.0rc20's row
    # 22.45 us, vLLM 0.24.0's 12.79 us, SGLang 0.5.14's 13.51 us -> 12.79 us, read at the 12.72 us of m = 16
    # (monotone_envelope)
    shipped = measured_for("b200", "trtllm")
    assert shipped is not None
    assert shipped.gemm_s("fp4", 4, 8192, 8192) == pytest.approx(12.72e-6, rel=1e-9)
    # TensorRT-LLM's own row 22.45 us, read at m = 8's 22.42 us (monotone_envelope)
    assert shipped.gemm_table_named("nvfp4_fallback").time_s(4, 8192, 8192) == pytest.approx(22.42e-6, rel=1e-9)
    # and the result says where an nvfp4 GEMM's time came from
    r = llmsim.simulate("llama-3.1-70b", "b200", engine="trtllm", batch_size=4, prompt_len=128, gen_len=2,
                        weight_dtype="nvfp4", activation_dtype="nvfp4")
    assert "the fastest nvfp4 kernel measured on b200" in str(r) and "untuned fallback" in str(r)


def test_fp8_activation_scales_pick_the_lane() -> None:
    import warnings

    kw = dict(batch_size=1, prompt_len=6, gen_len=20, weight_dtype="fp8", activation_dtype="fp8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        static = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", **kw)
        dynamic = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", fp8_scales="dynamic", **kw)
        torchao = llmsim.simulate("llama-3.1-8b", "h100-sxm", engine="torch-compile", **kw)  # float8: dynamic
    grids = measured_for("h100-sxm", "vllm")
    down = next(op for op in static.decode.ops if op.name.endswith("down_proj"))  # [1, 14336] x [14336, 4096]
    down_dyn = next(op for op in dynamic.decode.ops if op.name.endswith("down_proj"))
    # the op's time is its table time at m = 1 (plus the graph's launch) per layer and decode step; the lanes differ
    # by the compute-scale rows at (m, k) = (1, 14336), over count layers x 19 decode steps (20 tokens: 1 + 19)
    lane_gap = grids.gemm_table_named("fp8_dynamic").time_s(1, 4096, 14336) - grids.gemm_table_named("fp8").time_s(
        1, 4096, 14336)
    assert lane_gap > 0
    assert (down_dyn.time_s - down.time_s) == pytest.approx(19 * down.count * lane_gap, rel=1e-6)
    assert any("fp8_dynamic rows" in note for note in torchao.measured_tables.values())
    with pytest.raises(OptionError, match="fp8_scales"):
        llmsim.simulate("llama-3.1-8b", "h100-sxm", fp8_scales="per-token", **kw)


def test_an_axis_of_one_measured_size(tmp_path: Path) -> None:

    from llmsim.hardware.kernel_table import GridTable

    grid = GridTable(("tokens",), (np.array([4.0]),), np.array([1e-3]))
    assert grid.time_s(4) == pytest.approx(1e-3)  # the measured point
    assert grid.time_s(1) == pytest.approx(1e-3)  # below: the floor
    assert grid.time_s(8) == pytest.approx(2e-3)  # above: in proportion, 1 ms * 8 / 4


def test_an_fp8_kv_cache_reads_the_fp8_decode_attention_rows() -> None:
    # aiconfigurator-core 0.12.0, b200_sxm/attention/vllm/0.24.0/generation_attention_perf.parquet, head_dim 128,
    # 8 query heads, 1 KV head, batch 64, step 8191 (8192 keys): bfloat16 cache 0.049664 ms, fp8 cache 0.031077 ms
    mk = measured_for("b200", "vllm")
    bf16, _, note16 = mk.attention_slice("decode", "bf16", 128, 8, 1)
    fp8, factor, note8 = mk.attention_slice("decode", "fp8", 128, 8, 1)
    assert bf16.time_s(64.0, 8192.0) == pytest.approx(49.66e-6, rel=1e-9)
    assert fp8.time_s(64.0, 8192.0) == pytest.approx(31.08e-6, rel=1e-9) and factor == 1.0 and note8 == note16 == ""
    # prefill attention keeps bf16 slices only: an fp8 cache reads them and says so
    _, _, prefill_note = mk.attention_slice("prefill", "fp8", 128, 8, 1)
    assert "read from the bf16-cache table" in prefill_note
    # end to end: decode steps at 64 x 8k keys are faster with the fp8 cache, and say which table timed them
    kw = dict(batch_size=64, prompt_len=8192, gen_len=64, tensor_parallel=4, weight_dtype="fp8", engine="vllm")
    fast = llmsim.simulate("llama-3.1-70b", "b200", kv_dtype="fp8", **kw)
    slow = llmsim.simulate("llama-3.1-70b", "b200", kv_dtype="bf16", **kw)
    attn = {op.name: op for op in fast.decode.ops}["layers.attn.flash"]
    assert attn.source == "vllm decode_attention" and fast.tpot_s < slow.tpot_s


def test_importer_keeps_fp8_cache_rows_for_decode_attention_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = {"framework": "vllm", "version": "9.9", "device": "Test GPU", "kernel_source": "flash", "num_heads": 8,
            "num_key_value_heads": 1, "head_dim": 128, "window_size": 0, "beam_width": 1, "attn_dtype": "bfloat16"}
    decode = [{**base, "op_name": "attention_generation", "kv_cache_dtype": dtype, "batch_size": b, "isl": 1,
               "step": keys - 1, "latency": 0.01 * b * keys / 1024 * (0.5 if dtype == "fp8" else 1.0)}
              for dtype in ("bfloat16", "fp8") for b in (1, 2) for keys in (1024, 2048)]
    prefill = [{**base, "op_name": "attention_context", "kv_cache_dtype": dtype, "batch_size": b, "isl": isl,
                "step": 0, "latency": 0.01 * b * isl / 1024} for dtype in ("bfloat16", "fp8") for b in (1, 2)
               for isl in (1024, 2048)]
    _write_parquet(data / "test_gpu" / "attention" / "vllm" / "9.9" / "generation_attention_perf.parquet", decode)
    _write_parquet(data / "test_gpu" / "attention" / "vllm" / "9.9" / "context_attention_perf.parquet", prefill)
    out = tmp_path / "kernels" / "test-gpu" / "vllm"
    import_tables("test_gpu", "vllm", out, data_root=data)  # the compact grid
    decode_rows = [line.split(",")[0] for line in (out / "decode_attention.csv").read_text().splitlines()
                   if line and not line.startswith(("#", "kv_dtype"))]
    prefill_rows = [line.split(",")[0] for line in (out / "prefill_attention.csv").read_text().splitlines()
                    if line and not line.startswith(("#", "kv_dtype"))]
    assert sorted(set(decode_rows)) == ["bf16", "fp8"] and set(prefill_rows) == {"bf16"}
    fp8, _, _ = load_measured(str(out)).attention_slice("decode", "fp8", 128, 8, 1)
    assert fp8.time_s(2.0, 2048.0) == pytest.approx(0.5 * 0.01 * 2 * 2048 / 1024 * 1e-3, rel=1e-9)  # 20 us


def test_block_fp8_experts_read_their_own_moe_rows() -> None:
    from llmsim.hardware.measured import measured_for

    # aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/0.24.0/moe_perf.parquet, power_law_1.01 routing, fp8_block,
    # top-8 of 256 experts, hidden 7168, intermediate 2048, moe_tp 8, moe_ep 1, 4 tokens: 0.083565 ms
    grid = measured_for("h200", "vllm").moe_table("fp8_block", 8, 256, 7168, 2048, 8, 1, "power_law_1.01")
    assert grid.time_s(4) == pytest.approx(0.083565e-3, rel=1e-4)
    r = llmsim.simulate("deepseek-v3", "h200", batch_size=4, prompt_len=1024, gen_len=64, tensor_parallel=8)
    sources = {op.name: op.source for op in r.decode.ops}
    assert sources["layers.moe.mlp.experts.gate_up_proj"] == "vllm moe"  # DeepSeek's 128x128 block-scaled experts


def test_4_bit_experts_read_their_checkpoints_own_moe_rows() -> None:
    from llmsim.hardware.measured import measured_for

    # aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/0.24.0/moe_perf.parquet, power_law_1.2 routing, w4a16_mxfp4
    # (kernel vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic), top-4 of 128 experts, hidden 2880,
    # intermediate 2880, moe_tp 1, moe_ep 1, 4 tokens: 0.116077 ms
    grid = measured_for("h200", "vllm").moe_table("mxfp4_wo", 4, 128, 2880, 2880, 1, 1, "power_law_1.2")
    assert grid.time_s(4) == pytest.approx(0.116077e-3, rel=1e-3)  # the CSV keeps 4 figures: 116.1 us
    # b200_sxm/moe/vllm/0.24.0, nvfp4 (vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_...), power_law_1.01,
    # top-8 of 256, hidden 7168, intermediate 2048, moe_tp 1, moe_ep 8, 1 token: 0.040147 ms, read at 2 tokens'
    # 0.03943 ms (monotone_envelope: never slower than more tokens)
    grid = measured_for("b200", "vllm").moe_table("nvfp4", 8, 256, 7168, 2048, 1, 8, "power_law_1.01")
    assert grid.time_s(1) == pytest.approx(0.03943e-3, rel=1e-4)
    # the checkpoints' experts read them: gpt-oss's MXFP4 experts, Kimi-K2.5's int4 weight-only experts
    for model, hardware, tp in (("gpt-oss-120b", "h200", 1), ("kimi-k2.5", "h200", 8)):
        r = llmsim.simulate(model, hardware, batch_size=4, prompt_len=1024, gen_len=64, tensor_parallel=tp)
        sources = {op.source for op in r.decode.ops if ".experts." in op.name and op.kind == "matmul"}
        assert sources == {"vllm moe"}, (model, sources)


def test_tensorrt_llm_runs_gpt_oss_experts_with_mxfp8_activations_where_that_lane_was_measured() -> None:
    from llmsim.hardware.measured import measured_for

    # aiconfigurator-core 0.12.0, b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet, power_law_1.2, top-4 of 128
    # experts, hidden 2880, intermediate 2880, moe_tp 1, moe_ep 1, 4 tokens: w4a8_mxfp4_mxfp8 0.049926 ms
    grid = measured_for("b200", "trtllm").moe_table("mxfp4_mxfp8", 4, 128, 2880, 2880, 1, 1, "power_law_1.2")
    assert grid.time_s(4) == pytest.approx(0.049926e-3, rel=1e-4)
    r = llmsim.simulate("gpt-oss-120b", "b200", engine="trtllm", batch_size=4, prompt_len=1024, gen_len=16)
    assert "MXFP8 activations x MXFP4 experts" in str(r)
    # the H200 has no such lane (TensorRT-LLM runs BF16 x MXFP4 there), and vLLM keeps its 16-bit lane
    for hardware, engine in (("h200", "trtllm"), ("b200", "vllm")):
        other = llmsim.simulate("gpt-oss-120b", hardware, engine=engine, batch_size=4, prompt_len=1024, gen_len=16)
        assert "MXFP8 activations" not in str(other)


def test_moe_tables_are_read_with_independent_routing() -> None:
    """The package's balanced rows put a call's T k assignments on min(E, T k) distinct experts; tokens routed
    independently (each a uniform k-subset of the E experts) share experts by chance and read fewer."""
    from llmsim.timing.measured import routing_factor

    rng = np.random.default_rng(0)
    calls, tokens, k, experts = 4000, 32, 4, 128
    picks = rng.random((calls, tokens, experts)).argsort(axis=2)[:, :, :k]  # each token: k distinct experts
    distinct = np.array([len(np.unique(call)) for call in picks])  # 128 (1 - (124/128)^32) = 81.66 expected
    assert distinct.mean() == pytest.approx(81.66, abs=0.3)
    assert routing_factor(tokens, k, experts) == pytest.approx(distinct.mean() / min(experts, tokens * k), rel=0.005)
    assert routing_factor(1, k, experts) == 1.0  # one token reads its k experts either way
    assert routing_factor(8192, k, experts) == pytest.approx(1.0)  # prefill-sized calls read every expert
    assert list(routing_factor(np.array([1.0, 32.0]), k, experts)) == pytest.approx([1.0, 81.66 / 128], rel=1e-3)
    # a decode step of gpt-oss-120b (top-4 of 128) at 32 sequences on one B200 reads the model's power-law rows
    # as measured (aiconfigurator's collector drew those loads, experts shared by chance included)
    kw = dict(batch_size=32, prompt_len=1024, gen_len=2, engine="vllm")  # one decode step
    r = llmsim.simulate("gpt-oss-120b", "b200", **kw)
    assert "power_law_1.2 rows" in str(r)  # print(r) says how the MoE table was read
    down = next(op for op in r.decode.ops if op.name.endswith("mlp.experts.down_proj"))
    grid = measured_for("b200", "vllm").moe_table("mxfp4_wo", 4, 128, 2880, 2880, 1, 1, "power_law_1.2")
    assert max(down.compute_s, down.memory_s) / down.count == pytest.approx(grid.time_s(32.0) / 3, rel=1e-6)
    # the shipped compact tables hold no balanced rows: asked for, the experts fall back to the roofline, said so
    balanced = llmsim.simulate("gpt-oss-120b", "b200", moe_routing="balanced", **kw)
    down = next(op for op in balanced.decode.ops if op.name.endswith("mlp.experts.down_proj"))
    assert down.source == "roofline"
    assert any("balanced routing" in why for why in balanced.roofline_reasons)


def test_balanced_moe_rows_are_read_with_the_independent_routing_factor(tmp_path: Path) -> None:
    from llmsim.timing.measured import MeasuredTiming

    (tmp_path / "moe.csv").write_text("# source: written by this test\n"
                                      "dtype,routing,topk,num_experts,hidden,inter,tp,ep,tokens,latency_us\n"
                                      "bf16,balanced,4,128,1024,512,1,1,1,10\nbf16,balanced,4,128,1024,512,1,1,256,100\n"
                                      "bf16,power_law_1.2,4,128,1024,512,1,1,1,11\n"
                                      "bf16,power_law_1.2,4,128,1024,512,1,1,256,120\n")
    kernels = load_measured(str(tmp_path))
    key = ("moe", "bf16", 4, 128, 1024, 512, 1, 1, 1.0, "power_law_1.2")
    read, note, _ = MeasuredTiming(kernels, None).lookup(key)
    assert "power_law_1.2 rows" in note and read(256, 1.0, 1.0) == pytest.approx(120e-6)  # as measured
    read, note, _ = MeasuredTiming(kernels, None, moe_routing="balanced").lookup(key)
    assert "independent routing" in note
    # 32 tokens: log-log line 10 -> 100 us over 1 -> 256 tokens: 10 x 32^(log 10 / log 256) = 10 x 32^0.41524
    # = 42.17 us, x (1 - (124/128)^32) / min(1, 32 x 4 / 128) = 0.63799
    assert read(32, 1.0, 1.0) == pytest.approx(10e-6 * 32 ** (np.log(10) / np.log(256)) * (1 - (124 / 128) ** 32))


def test_every_moe_reading_path_applies_the_routing_factor_alike() -> None:
    from llmsim.hardware.kernel_table import GridTable
    from llmsim.timing.measured import TableRead, routing_factor

    tokens = np.array([1.0, 4, 16, 64, 256, 1024])
    grid = GridTable(("tokens",), (tokens,), 20e-6 + 2e-6 * np.minimum(tokens * 8, 256))  # reads experts, then flat
    read = TableRead(grid, 1, share=2 / 3, routing=(8, 256))
    at = np.array([1.0, 3.0, 32.0, 100.0, 700.0])
    expected = [grid.time_s(float(x)) * 2 / 3 * (1 - (1 - 8 / 256) ** x) / min(1, 8 * x / 256) for x in at]
    assert list(read(at, 1.0, 1.0)) == pytest.approx(expected, rel=1e-12)  # arrays
    assert [read(float(x), 1.0, 1.0) for x in at] == pytest.approx(expected, rel=1e-12)  # scalars
    free = read.fixed_at(None, 1.0, 1.0)  # tokens free, single points
    assert [free(float(x), 1.0) for x in at] == pytest.approx(expected, rel=1e-12)
    sweep = read.fixed_at(None, 1.0, 1.0, arrays=True)
    assert list(sweep(at, 1.0)) == pytest.approx(expected, rel=1e-12)
    for x, e in zip(at, expected):  # tokens held: the factor folded in once
        assert read.fixed_at(float(x), 1.0, 1.0)(float(x), 1.0) == pytest.approx(e, rel=1e-12)
    assert routing_factor(32.0, 8, 256) == pytest.approx(1 - (1 - 8 / 256) ** 32)  # 0.6379


def test_tensorrt_llm_runs_nvfp4_experts_on_its_min_latency_kernel_at_few_tokens() -> None:
    from llmsim.hardware.measured import measured_for
    from llmsim.timing.measured import MeasuredTiming

    # aiconfigurator-core 0.12.0, b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet, power_law_1.01, nvfp4, top-8 of
    # 256 experts, hidden 7168, intermediate 2048, moe_tp 8, moe_ep 1: moe_torch_flow_min_latency 0.031789 ms at 4
    # tokens, 0.127974 ms at 128; moe_torch_flow_cutlass 0.084710 ms at 4, 0.294118 ms at 256 (the CSV keeps 4
    # figures)
    kernels = measured_for("b200", "trtllm")
    lane = kernels.moe_table("nvfp4_min_latency", 8, 256, 7168, 2048, 8, 1, "power_law_1.01")
    assert lane.time_s(4) == pytest.approx(31.79e-6)
    key = ("moe", "nvfp4", 8, 256, 7168, 2048, 8, 1, 1.0, "power_law_1.01")
    read, note, _ = MeasuredTiming(kernels, None).lookup(key)
    assert "min-latency" in note and "power_law_1.01 rows" in note
    # power-law rows drew their own expert loads: read as measured, no routing factor
    assert read(4, 1.0, 1.0) == pytest.approx(31.79e-6)  # <= 128 tokens: the min-latency kernel
    assert read(128, 1.0, 1.0) == pytest.approx(128.0e-6)
    assert read(256, 1.0, 1.0) == pytest.approx(294.1e-6)  # above: the default CUTLASS kernel
    assert list(read(np.array([4.0, 256.0]), 1.0, 1.0)) == pytest.approx([31.79e-6, 294.1e-6])
    # a DeepSeek-V3.1 NVFP4 decode step at batch 4 on 8 B200s reads it (gate/up: 2/3 of the fused kernel's time)
    r = llmsim.simulate("deepseek-v3.1-nvfp4", "b200", engine="trtllm", batch_size=4, prompt_len=1024, gen_len=2,
                        tensor_parallel=8)
    gate_up = next(op for op in r.decode.ops if op.name == "layers.moe.mlp.experts.gate_up_proj")
    # 58 MoE layers, one decode step: the measured time is the op's larger roofline term (launches come on top)
    assert max(gate_up.compute_s, gate_up.memory_s) == pytest.approx(58 * 2 / 3 * 31.79e-6, rel=1e-3)
    # vLLM has no such lane: its own nvfp4 rows
    assert measured_for("b200", "vllm").moe_table("nvfp4_min_latency", 8, 256, 7168, 2048, 8, 1,
                                                  "power_law_1.01") is None


def test_an_engine_without_tables_on_a_device_reads_the_devices_vllm_tables_and_says_so() -> None:
    r = llmsim.simulate("llama-3.1-8b", "l40s", engine="trtllm", batch_size=8, prompt_len=1024, gen_len=64)
    assert any("vLLM's measured tables of this device stand in" in why for why in r.roofline_reasons)
    assert {op.source for op in r.decode.ops if op.kind == "matmul"} == {"vllm gemm"}
    assert "tables      no trtllm kernel tables ship for l40s" in str(r)
    own = llmsim.simulate("llama-3.1-8b", "h200", engine="trtllm", batch_size=8, prompt_len=1024, gen_len=64)
    assert {op.source for op in own.decode.ops if op.kind == "matmul"} == {"trtllm gemm"}  # shipped since 11-24


def test_block_fp8_gemms_read_the_fp8_block_lane_where_an_engine_has_one() -> None:
    # aiconfigurator-core 0.12.0, h100_sxm/gemm/sglang/0.5.14/gemm_perf.parquet, fp8_block
    # (sglang_deepgemm_gemm_nt_f8f8bf16), m 64, n 4096, k 4096: 0.011895111 ms
    grid = measured_for("h100-sxm", "sglang").gemm_table_named("fp8_block")
    assert grid.time_s(64, 4096, 4096) == pytest.approx(11.895111e-6, rel=1e-3)  # the CSV keeps 4 figures: 11.90
    kw = dict(batch_size=4, prompt_len=1024, gen_len=64, tensor_parallel=8)
    r = llmsim.simulate("deepseek-v3", "h100-sxm", engine="sglang", **kw)  # 128x128 block-scaled fp8
    assert {op.source for op in r.decode.ops if op.name.endswith("o_proj")} == {"sglang gemm"}
    assert "per-tensor rows" not in str(r)
    # vLLM ships no fp8_block lane (timed without CUDA graphs): its per-tensor fp8 rows stand in, said so
    assert measured_for("h100-sxm", "vllm").gemm_table_named("fp8_block") is None
    r = llmsim.simulate("deepseek-v3", "h100-sxm", engine="vllm", **kw)
    assert "fp8 per-tensor rows (no fp8_block rows for this engine and device)" in str(r)


def test_importer_keeps_vllms_marlin_mxfp4_moe_kernel_as_a_lane_of_its_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    moe = [{"framework": "VLLM", "version": "1.0", "device": "Test GPU", "op_name": "moe", "kernel_source": source,
            "moe_dtype": "w4a16_mxfp4", "num_tokens": tokens, "hidden_size": hidden, "inter_size": 512, "topk": 2,
            "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1, "distribution": "balanced", "latency": ms * tokens}
           for source, hidden, ms in (("vllm_gptossmxfp4moe_triton", 1024, 0.010),
                                      ("vllm_w4a4mxfp4moe_marlin_marlinexperts", 2048, 0.004))
           for tokens in (1, 16, 256)]
    _write_parquet(data / "test_gpu" / "moe" / "vllm" / "1.0" / "moe_perf.parquet", moe)
    import_tables("test_gpu", "vllm", tmp_path / "k", data_root=data, full=True, families=["moe"])
    mk = load_measured(str(tmp_path / "k"))
    assert mk.moe_table("mxfp4_wo", 2, 8, 1024, 512, 1, 1).time_s(16) == pytest.approx(0.160e-3)  # 0.010 ms x 16
    assert mk.moe_table("mxfp4_wo", 2, 8, 2048, 512, 1, 1) is None  # the Marlin rows are not the default kernel's
    assert mk.moe_table("mxfp4_wo_marlin", 2, 8, 2048, 512, 1, 1).time_s(16) == pytest.approx(0.064e-3)  # 0.004 x 16


def test_marlin_mxfp4_moe_is_carried_to_gpt_oss_at_the_same_tokens_per_expert() -> None:
    from llmsim.timing.measured import MeasuredTiming, marlin_moe_grid

    kernels = measured_for("h200", "vllm")
    # aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/0.24.0, power_law_1.2, w4a16_mxfp4, Marlin kernel, top-16 of
    # 896 experts, hidden 3584, intermediate 3072, tp 1, ep 1: 0.162739 ms at 1 token, 26.475995 ms at 4096 tokens
    exact, how = marlin_moe_grid(kernels, 16, 896, 3584, 3072, 1, 1, "power_law_1.2")
    assert how == "" and exact.time_s(4096) == pytest.approx(26.476e-3, rel=1e-3)
    # gpt-oss-120b (top-4 of 128, 2880 x 2880): T_s = T (4/128) / (16/896) = 1.75 T; x 128*2880*2880 /
    # (896*3584*3072) = 1,061,683,200 / 9,865,003,008 = 0.107621; T = 4096 / 1.75 = 2340.57 reads T_s = 4096:
    # 26.476 ms x 0.107621 = 2.8494 ms
    carried, how = marlin_moe_grid(kernels, 4, 128, 2880, 2880, 1, 1, "power_law_1.2")
    assert "top-16 of 896" in how and "0.108" in how
    assert carried.time_s(4096 / 1.75) == pytest.approx(26.476e-3 * 0.107621, rel=1e-3)
    timing = MeasuredTiming(kernels, None, mxfp4_moe_kernel="marlin")
    read, note, _ = timing.lookup(("moe", "mxfp4_wo", 4, 128, 2880, 2880, 1, 1, 1.0, "power_law_1.2"))
    assert "Marlin" in note
    t = 4096 / 1.75
    assert read(t, 1.0, 1.0) == pytest.approx(26.476e-3 * 0.107621, rel=1e-3)  # power-law rows: no routing factor
    # the default kernel (OpenAI's Triton MoE) keeps its own rows: 4.021049 ms at 8192 tokens
    read, note, _ = MeasuredTiming(kernels, None).lookup(("moe", "mxfp4_wo", 4, 128, 2880, 2880, 1, 1, 1.0,
                                                         "power_law_1.2"))
    assert "Marlin" not in note and read(8192, 1.0, 1.0) == pytest.approx(4.021e-3, rel=1e-3)
    # end to end: an 8k prompt of gpt-oss-120b on one H200 under vLLM is slower on Marlin (its grouped GEMMs reach
    # about 200 TFLOP/s at prefill sizes against the Triton kernel's 560)
    kwargs = {"engine": "vllm", "batch_size": 1, "prompt_len": 8192, "gen_len": 2}
    default = llmsim.simulate("gpt-oss-120b", "h200", **kwargs)
    marlin = llmsim.simulate("gpt-oss-120b", "h200", mxfp4_moe_kernel="marlin", **kwargs)
    assert marlin.ttft_s > 1.5 * default.ttft_s
    assert any("Marlin MXFP4 MoE kernel" in line for line in str(marlin).splitlines())


def test_marlin_asked_for_where_no_marlin_rows_exist_reads_the_default_kernel_and_says_so(tmp_path: Path) -> None:
    from llmsim.timing.measured import MeasuredTiming

    (tmp_path / "moe.csv").write_text("# source: written by this test\n"
                                      "dtype,topk,num_experts,hidden,inter,tp,ep,tokens,latency_us\n"
                                      "mxfp4_wo,2,8,1024,512,1,1,1,10\nmxfp4_wo,2,8,1024,512,1,1,256,100\n")
    read, note, _ = MeasuredTiming(load_measured(str(tmp_path)), None, mxfp4_moe_kernel="marlin").lookup(
        ("moe", "mxfp4_wo", 2, 8, 1024, 512, 1, 1, 1.0, "balanced"))  # a file without a routing column: balanced
    assert "no Marlin MoE rows" in note and read(256, 1.0, 1.0) == pytest.approx(100e-6)


def test_an_unknown_mxfp4_moe_kernel_is_refused_in_one_line() -> None:
    with pytest.raises(OptionError, match="mxfp4_moe_kernel") as info:
        llmsim.simulate("gpt-oss-120b", "h200", engine="vllm", mxfp4_moe_kernel="cutlass")
    assert "\n" not in str(info.value) and "marlin" in str(info.value) and "mxfp8" in str(info.value)


def test_trtllm_gen_block_fp8_experts_read_the_devices_vllm_rows_at_expert_tensor_parallelism() -> None:
    from llmsim.timing.measured import MeasuredTiming

    # aiconfigurator-core 0.12.0, b200_sxm/moe: DeepSeek's block-fp8 experts (top-8 of 256, 7168 x 2048) at moe tp 8
    # x ep 1 and 64 tokens, power_law_1.01: TensorRT-LLM 1.3.0rc20's rows time DeepGEMM, 0.349197 ms; vLLM
    # 0.24.0's time FlashInfer's TRTLLM-gen kernel (TensorRT-LLM's moe_config backend TRTLLM), 0.173056 ms
    key = ("moe", "fp8_block", 8, 256, 7168, 2048, 8, 1, 1.0, "power_law_1.01")
    trt = measured_for("b200", "trtllm")
    read, note, source = MeasuredTiming(trt, None).lookup(key)
    assert read(64, 1.0, 1.0) == pytest.approx(349.2e-6, rel=1e-3)
    read, note, source = MeasuredTiming(trt, None, fp8_block_moe_kernel="trtllm-gen").lookup(key)
    assert source == "vllm moe (proxy)" and "TRTLLM-gen" in note
    assert read(64, 1.0, 1.0) == pytest.approx(173.1e-6, rel=1e-3)
    # expert parallel (tp 1 x ep 8): the engines' collectors count tokens differently there, so the default
    # kernel's rows, and the note says why
    read, note, _ = MeasuredTiming(trt, None, fp8_block_moe_kernel="trtllm-gen").lookup(
        ("moe", "fp8_block", 8, 256, 7168, 2048, 1, 8, 1.0, "power_law_1.01"))
    assert "no TRTLLM-gen fp8_block MoE rows at tp 1, ep 8" in note and "the default kernel's rows" in note
    # Hopper: vLLM's block-fp8 MoE rows there time other kernels (CUTLASS, Triton), so none stands in
    read, note, _ = MeasuredTiming(measured_for("h200", "trtllm"), None, fp8_block_moe_kernel="trtllm-gen").lookup(
        key)
    assert "no TRTLLM-gen fp8_block MoE rows" in note
    with pytest.raises(OptionError, match="fp8_block_moe_kernel") as info:
        llmsim.simulate("deepseek-v3", "b200", engine="trtllm", tensor_parallel=8, fp8_block_moe_kernel="deepgemm")
    assert "\n" not in str(info.value) and "trtllm-gen" in str(info.value)


def test_mxfp8_activations_on_vllm_read_the_devices_trtllm_gen_moe_rows_and_say_so() -> None:
    from llmsim.timing.measured import MeasuredTiming

    # vLLM's B200 tables time gpt-oss's experts with 16-bit activations only; VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1
    # runs the TRTLLM-gen MXFP4 x MXFP8 kernel that TensorRT-LLM's table measures: aiconfigurator-core 0.12.0,
    # b200_sxm/moe/trtllm, power_law_1.2, w4a8_mxfp4_mxfp8, top-4 of 128, 2880 x 2880, tp 1, ep 1: 1.055526 ms at
    # 8192 tokens
    kernels = measured_for("b200", "vllm")
    read, note, source = MeasuredTiming(kernels, None, mxfp4_moe_kernel="mxfp8").lookup(
        ("moe", "mxfp4_wo", 4, 128, 2880, 2880, 1, 1, 1.0, "power_law_1.2"))
    assert "proxy" in note and "MXFP8 activations" in note and source == "trtllm moe (proxy)"
    assert read(8192, 1.0, 1.0) == pytest.approx(1.0555e-3, rel=1e-3)


def test_a_moe_split_the_tables_lack_reads_the_same_gpus_other_split_and_says_so() -> None:
    from llmsim.timing.measured import MeasuredTiming

    # aiconfigurator-core 0.12.0, h200_sxm/moe/trtllm/1.3.0rc20: gpt-oss-120b's experts (w4a16_mxfp4, top-4 of
    # 128, 2880 x 2880) are measured at moe tp 1 with ep 1, 2, 4, 8 only; tp 1 x ep 4 takes 0.099834 ms at 4 tokens
    # (power_law_1.2). moe tp 2 x ep 2 and tp 4 x ep 1 hold the same expert weights per GPU (a quarter), so they
    # read that row
    kernels = measured_for("h200", "trtllm")
    assert kernels.moe_table("mxfp4_wo", 4, 128, 2880, 2880, 2, 2, "power_law_1.2") is None
    for tp, ep in ((2, 2), (4, 1)):
        read, note, _ = MeasuredTiming(kernels, None).lookup(("moe", "mxfp4_wo", 4, 128, 2880, 2880, tp, ep, 1.0,
                                                              "power_law_1.2"))
        assert f"moe tp {tp} x ep {ep} read from the measured tp 1 x ep 4 rows" in note
        assert read(4, 1.0, 1.0) == pytest.approx(99.83e-6, rel=1e-3)
    # a split no table has on any GPU count stays refused with its reason (128 GPUs: the compact grid keeps
    # expert parallelism to 64)
    read, note, _ = MeasuredTiming(kernels, None).lookup(("moe", "mxfp4_wo", 4, 128, 2880, 2880, 16, 8, 1.0,
                                                          "power_law_1.2"))
    assert read is None and "no mxfp4_wo MoE table row" in note


def test_wide_expert_parallelism_reads_measured_rows() -> None:
    from llmsim.timing.measured import MeasuredTiming

    # aiconfigurator-core 0.12.0, b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet: DeepSeek's block-fp8 experts
    # (top-8 of 256, 7168 x 2048) at moe tp 1 x ep 32, 256 tokens, power_law_1.01, DeepGEMM: 0.09199 ms; the compact
    # grid keeps tp 1 x ep 16, 32, 64 (before session 36 such splits had no row and ran on the roofline)
    kernels = measured_for("b200", "trtllm")
    read, note, _ = MeasuredTiming(kernels, None).lookup(("moe", "fp8_block", 8, 256, 7168, 2048, 1, 32, 1.0,
                                                          "power_law_1.01"))
    assert read(256, 1.0, 1.0) == pytest.approx(91.99e-6, rel=1e-3)
    # tp 2 x ep 16 holds the same expert weights per GPU: the tp 1 x ep 32 rows, said
    read, note, _ = MeasuredTiming(kernels, None).lookup(("moe", "fp8_block", 8, 256, 7168, 2048, 2, 16, 1.0,
                                                          "power_law_1.01"))
    assert "read from the measured tp 1 x ep 32 rows" in note and read(256, 1.0, 1.0) == pytest.approx(91.99e-6,
                                                                                                      rel=1e-3)


def test_tensorrt_llms_blackwell_mxfp8_lane_takes_the_other_split_too() -> None:
    from llmsim.timing.measured import MeasuredTiming

    # b200_sxm/moe/trtllm/1.3.0rc20, w4a8_mxfp4_mxfp8, gpt-oss-120b's experts: measured at moe tp 1 only; tp 1 x ep 2
    # takes 0.038054 ms at 4 tokens (power_law_1.2): TP 2 reads the MXFP8 row
    read, note, _ = MeasuredTiming(measured_for("b200", "trtllm"), None).lookup(
        ("moe", "mxfp4_wo", 4, 128, 2880, 2880, 2, 1, 1.0, "power_law_1.2"))
    assert "MXFP8 activations" in note and "read from the measured tp 1 x ep 2 rows" in note
    assert read(4, 1.0, 1.0) == pytest.approx(38.05e-6, rel=1e-3)


def test_importer_keeps_the_power_law_moe_rows_and_balanced_ones_on_the_full_grid(tmp_path: Path) -> None:
    data = tmp_path / "data"
    moe = [{"framework": "VLLM", "version": "1.0", "device": "Test GPU", "op_name": "moe", "kernel_source": "k",
            "moe_dtype": "bfloat16", "num_tokens": tokens, "hidden_size": 1024, "inter_size": 512, "topk": 2,
            "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1, "distribution": routing, "latency": ms * tokens}
           for routing, ms in (("balanced", 0.010), ("power_law_1.01", 0.012), ("power_law_1.2", 0.013),
                               ("power_law_0.8", 0.011))  # a load no model reads: left out
           for tokens in (1, 16, 256)]
    _write_parquet(data / "test_gpu" / "moe" / "vllm" / "1.0" / "moe_perf.parquet", moe)
    import_tables("test_gpu", "vllm", tmp_path / "compact", data_root=data, families=["moe"])
    compact = load_measured(str(tmp_path / "compact"))
    assert {key[1] for key in compact.tables["moe"].grids} == {"power_law_1.01", "power_law_1.2"}
    assert compact.moe_table("bf16", 2, 8, 1024, 512, 1, 1, "power_law_1.2").time_s(16) == pytest.approx(0.208e-3)
    assert compact.moe_table("bf16", 2, 8, 1024, 512, 1, 1) is None  # balanced: only on the full grid
    import_tables("test_gpu", "vllm", tmp_path / "full", data_root=data, full=True, families=["moe"])
    full = load_measured(str(tmp_path / "full"))
    assert {key[1] for key in full.tables["moe"].grids} == {"balanced", "power_law_1.01", "power_law_1.2"}
    assert full.moe_table("bf16", 2, 8, 1024, 512, 1, 1).time_s(16) == pytest.approx(0.160e-3)  # 0.010 ms x 16


def test_a_moe_file_written_before_the_routing_column_reads_as_balanced(tmp_path: Path) -> None:
    (tmp_path / "moe.csv").write_text("# source: written by this test\n"
                                      "dtype,topk,num_experts,hidden,inter,tp,ep,tokens,latency_us\n"
                                      "bf16,2,8,1024,512,1,1,1,10\nbf16,2,8,1024,512,1,1,256,100\n")
    kernels = load_measured(str(tmp_path))
    assert kernels.moe_table("bf16", 2, 8, 1024, 512, 1, 1, "balanced").time_s(256) == pytest.approx(100e-6)
    assert kernels.moe_table("bf16", 2, 8, 1024, 512, 1, 1, "power_law_1.2") is None


def test_each_model_family_reads_the_expert_load_aiconfigurator_reads_for_it() -> None:
    from llmsim.models.loading import load_model

    def routings(name: str) -> set[str]:
        groups = load_model(name).layer_groups
        return {group.layer.mlp.routing for group in groups if hasattr(group.layer.mlp, "routing")}

    # aic-core sdk/models: deepseek.py (DeepSeek, Kimi K2.5) _power_law_alpha = 1.01; moe.py (Mixtral, Qwen3-MoE,
    # gpt-oss, MiniMax-M2) 1.2; qwen35.py "_1.2"
    for name in ("deepseek-v3", "kimi-k2.5"):
        assert routings(name) == {"power_law_1.01"}, name
    for name in ("qwen3-30b-a3b", "gpt-oss-120b", "mixtral-8x7b", "minimax-m2.5", "qwen3.5-397b-a17b"):
        assert routings(name) == {"power_law_1.2"}, name
    with pytest.raises(OptionError, match="moe_routing") as info:
        llmsim.simulate("qwen3-30b-a3b", "h100-sxm", moe_routing="uniform")
    assert "\n" not in str(info.value) and "power_law_1.01" in str(info.value)
    # the option reads another load's rows, said in print(r)
    kw = dict(batch_size=64, prompt_len=2048, gen_len=2, engine="vllm")
    model = llmsim.simulate("qwen3-30b-a3b", "h100-sxm", **kw)
    other = llmsim.simulate("qwen3-30b-a3b", "h100-sxm", moe_routing="power_law_1.01", **kw)
    assert "power_law_1.2 rows" in str(model) and "power_law_1.01 rows" in str(other)
    assert other.ttft_s != model.ttft_s


def test_sglang_deepep_experts_read_the_wide_ep_rows_and_an_unmeasured_ep_size_geometrically() -> None:
    from llmsim.timing.measured import MeasuredTiming

    # aiconfigurator-core 0.12.0, gb200/moe/sglang/0.5.10/wideep_context_moe_perf.parquet (DeepEP normal mode,
    # DeepGEMM on DeepSeek's block-fp8 experts, top-8 of 256, 7168 x 2048, power_law_1.01), tokens of every EP rank:
    # ep 16 at 131072 tokens 6.058 ms; ep 4 at 65536 7.297 ms, ep 16 at 65536 3.581 ms
    sglang = measured_for("gb200", "sglang")

    def key(ep: int) -> tuple:
        return ("moe", "fp8_block", 8, 256, 7168, 2048, 1, ep, 1.0, "power_law_1.01")

    read, note, source = MeasuredTiming(sglang, None, fp8_block_moe_kernel="deepep-normal").lookup(key(16))
    assert source is None and "DeepEP experts in normal mode" in note and "wideep_context_moe_perf" in note
    assert read(131072, 1.0, 1.0) == pytest.approx(6058e-6, rel=1e-3)
    # ep 8 (not measured): between ep 4 and ep 16 at the same tokens, w = log(8/4) / log(16/4) = 1/2:
    # sqrt(7.297 x 3.581) ms = 5.112 ms
    read, note, _ = MeasuredTiming(sglang, None, fp8_block_moe_kernel="deepep-normal").lookup(key(8))
    assert read(65536, 1.0, 1.0) == pytest.approx(math.sqrt(7297e-6 * 3581e-6), rel=1e-3)
    assert "ep 8 not measured: geometric between the measured ep 4 and ep 16" in note
    # low-latency mode (decode servers): wideep_generation_moe_perf, ep 32 at 4096 tokens 0.1589 ms
    read, note, _ = MeasuredTiming(sglang, None, fp8_block_moe_kernel="deepep-low-latency").lookup(key(32))
    assert read(4096, 1.0, 1.0) == pytest.approx(158.9e-6, rel=1e-3) and "low-latency mode" in note
    # the default kernel is SGLang's fused MoE: other rows (4.35x slower at ep 8 and 16384 tokens)
    read, note, _ = MeasuredTiming(sglang, None).lookup(key(8))
    assert "DeepEP" not in note
    # another engine's tables read SGLang's rows of the device as a proxy, and say so
    _, note, source = MeasuredTiming(measured_for("gb200", "vllm"), None,
                                     fp8_block_moe_kernel="deepep-normal").lookup(key(16))
    assert source == "sglang moe (proxy)"
    # a device without DeepEP rows: the default kernel's rows, said
    _, note, _ = MeasuredTiming(measured_for("l40s", "vllm"), None, fp8_block_moe_kernel="deepep-normal").lookup(
        ("moe", "fp8_block", 8, 256, 7168, 2048, 1, 4, 1.0, "power_law_1.01"))
    assert "no SGLang DeepEP rows" in note and "the default kernel's rows" in note


def test_importer_writes_sglangs_deepep_expert_tables_as_lanes_of_the_moe_table(tmp_path: Path) -> None:
    data = tmp_path / "data"
    moe = [{"framework": "SGLang", "version": "1.0", "device": "Test GPU", "op_name": "moe",
            "kernel_source": "sglang_fused_moe_triton", "moe_dtype": "fp8_block", "num_tokens": tokens,
            "hidden_size": 1024, "inter_size": 512, "topk": 2, "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1,
            "distribution": "power_law_1.01", "latency": 0.010 * tokens} for tokens in (1, 16, 256)]
    _write_parquet(data / "test_gpu" / "moe" / "sglang" / "1.0" / "moe_perf.parquet", moe)
    for table, op, ms in (("wideep_context_moe_perf", "moe_context", 0.002),
                          ("wideep_generation_moe_perf", "moe_generation", 0.001)):
        rows = [{"framework": "SGLang", "version": "0.9", "device": "Test GPU", "op_name": op,
                 "kernel_source": "deepepmoe", "moe_dtype": "fp8_block", "num_tokens": tokens, "hidden_size": 1024,
                 "inter_size": 512, "topk": 2, "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": ep,
                 "distribution": distribution, "latency": ms * tokens / ep}
                for ep in (2, 8) for tokens in (64, 65536) for distribution in ("uniform", "power_law_1.01")]
        _write_parquet(data / "test_gpu" / "moe" / "sglang" / "0.9" / f"{table}.parquet", rows)
    written = import_tables("test_gpu", "sglang", tmp_path / "k", data_root=data, full=True, families=["moe"])
    text = written[0].read_text()
    assert "deepep_files: test_gpu/moe/sglang/0.9/wideep_context_moe_perf.parquet" in text
    mk = load_measured(str(tmp_path / "k"))
    # every token count kept (past the compact grid's 16384); the package's uniform load is llmsim's balanced one
    assert mk.moe_table("fp8_block_deepep_normal", 2, 8, 1024, 512, 1, 8, "balanced").time_s(65536.0) == \
        pytest.approx(0.002e-3 * 65536 / 8, rel=1e-3)  # the file keeps 4 significant digits
    assert mk.moe_table("fp8_block_deepep_ll", 2, 8, 1024, 512, 1, 2, "power_law_1.01").time_s(64.0) == \
        pytest.approx(0.001e-3 * 64 / 2, rel=1e-3)
    assert mk.moe_table("fp8_block", 2, 8, 1024, 512, 1, 1, "power_law_1.01").time_s(16.0) == pytest.approx(0.16e-3)
    # another engine: no DeepEP lanes
    _write_parquet(data / "test_gpu" / "moe" / "vllm" / "1.0" / "moe_perf.parquet", moe)
    written = import_tables("test_gpu", "vllm", tmp_path / "v", data_root=data, full=True, families=["moe"])
    assert "deepep" not in written[0].read_text()


def test_a_moe_line_of_one_measured_token_count_is_no_curve() -> None:
    """The b200 vLLM table's bf16 top-1-of-16 line (Llama-4-Scout's experts) at tp 1 x ep 8 holds one row, at 1
    token (49.43 us; the package's collection stopped there). Read past its largest point (x tokens / 1) it priced
    Scout's 4 x 1000-token prefill at 9.5 s; it is read as absent, and the experts come from the same GPUs' tp 8 x
    ep 1 rows, which measure the whole token range, with the reason said."""
    kernels = measured_for("b200", "vllm")
    shape = ("bf16", 1, 16, 5120, 8192, 1, 8, "power_law_1.01")
    stored = kernels.moe_single_point(*shape)
    assert stored is not None and list(stored.points[0]) == [1.0]
    assert stored.time_s(1) == pytest.approx(49.43e-6)
    assert kernels.moe_table(*shape) is None
    r = llmsim.simulate("llama-4-scout", "b200", tensor_parallel=8, expert_parallel=8, batch_size=4, prompt_len=1000,
                        gen_len=10)
    assert r.ttft_s < 0.2  # 0.040 s here; 9.518 s from the one-row line; TensorRT-LLM's tables: 0.046 s
    assert "moe tp 1 x ep 8 read from the measured tp 8 x ep 1 rows" in str(r)
