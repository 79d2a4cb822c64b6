from __future__ import annotations

import copy
from typing import Any

import pytest

# A device with round numbers, for tests that must not move when a shipped file is corrected.
TEST_GPU: dict[str, Any] = {
    "name": "test-gpu",
    "description": "round numbers for tests",
    "device_type": "gpu",
    "matrix_flops_per_s": {
        "bf16": {"value": 1000e12, "unit": "flop/s", "source": "test"},
        "fp16": {"value": 1000e12, "unit": "flop/s", "source": "test"},
        "fp8": {"value": 2000e12, "unit": "flop/s", "source": "test"},
        "int8": {"value": 2000e12, "unit": "flop/s", "source": "test"},
    },
    "vector_flops_per_s": {
        "fp32": {"value": 50e12, "unit": "flop/s", "source": "test"},
        "fp16": {"value": 100e12, "unit": "flop/s", "source": "test"},
    },
    "memory": {
        "bandwidth_bytes_per_s": {"value": 2e12, "unit": "byte/s", "source": "test"},
        "capacity_bytes": {"value": 80e9, "unit": "byte", "source": "test"},
    },
    "interconnect": {
        "intra_node_bandwidth_bytes_per_s": {"value": 400e9, "unit": "byte/s", "source": "test"},
        "intra_node_latency_s": {"value": 5e-6, "unit": "s", "source": "test"},
        "gpus_per_node": {"value": 8, "unit": "count", "source": "test"},
        "inter_node_bandwidth_bytes_per_s": {"value": 50e9, "unit": "byte/s", "source": "test"},
        "inter_node_latency_s": {"value": 10e-6, "unit": "s", "source": "test"},
    },
    "overhead": {
        "kernel_launch_s": {"value": 4e-6, "unit": "s", "source": "test"},
        "eager_dispatch_s": {"value": 20e-6, "unit": "s", "source": "test"},
        "graph_replay_per_kernel_s": {"value": 1e-6, "unit": "s", "source": "test"},
    },
    "efficiency": {
        "matmul": {"value": 0.8, "unit": "fraction", "source": "test"},
        "memory": {"value": 0.9, "unit": "fraction", "source": "test"},
        "vector": {"value": 0.5, "unit": "fraction", "source": "test"},
    },
}


@pytest.fixture
def test_gpu_dict() -> dict[str, Any]:
    return copy.deepcopy(TEST_GPU)


@pytest.fixture(autouse=True, scope="session")
def _own_disk_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Tests never read the user's disk cache (llmsim.disk_cache): the session starts with an empty one."""
    import os

    old = os.environ.get("LLMSIM_CACHE_DIR")
    os.environ["LLMSIM_CACHE_DIR"] = str(tmp_path_factory.mktemp("llmsim-cache"))
    yield
    if old is None:
        os.environ.pop("LLMSIM_CACHE_DIR", None)
    else:
        os.environ["LLMSIM_CACHE_DIR"] = old
