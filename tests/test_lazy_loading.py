"""Lazy imports and load caches: what `import llmsim` pulls in, and cached loads equal fresh ones.

No timings here (benchmarks/ prints those): these tests pin the behaviour the speed rests on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib

import llmsim
from llmsim import disk_cache
from llmsim.hardware.measured import FAMILIES
from llmsim.hardware.spec import hardware_from_dict
from llmsim.hardware.table_file import read_table_file, read_table_file_cached
from llmsim.models import loading
from llmsim.models.hf_config import read_config_file, spec_from_hf_config
from llmsim.models.spec import ModelSpec
from llmsim.shipped import hardware_dir, kernels_dir, model_configs_dir, shipped_model_names

from .tiny_configs import TINY_CONFIGS


def _modules_after(code: str) -> set[str]:
    """The top-level modules a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_every_public_name_resolves() -> None:
    assert set(llmsim.__all__) == {*llmsim._LAZY, "__version__"}
    for name in llmsim.__all__:
        assert getattr(llmsim, name) is not None, name
    assert set(llmsim.__all__) <= set(dir(llmsim))
    namespace: dict[str, object] = {}
    exec("from llmsim import *", namespace)
    assert namespace["simulate"] is llmsim.simulate


def test_import_llmsim_loads_no_heavy_library() -> None:
    loaded = _modules_after("import llmsim")
    assert not loaded & {"numpy", "scipy", "pydantic", "transformers", "torch"}


def test_simulate_by_name_needs_no_scipy_and_once_cached_no_transformers() -> None:
    # the spec read in this process fills the (session's) disk cache; a fresh process reads it from there
    loading._SPECS.clear()
    llmsim.load_model("llama-3.1-8b")
    loaded = _modules_after('import llmsim\nllmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=2)')
    assert not loaded & {"scipy", "matplotlib", "transformers", "torch"}


# ---- memoised loads ------------------------------------------------------------------------------
def _touch_later(path: Path) -> None:
    """Move the file's modification time on by a second (a rewrite within one clock tick keeps it)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_shipped_specs_are_memoised_and_equal_fresh_reads() -> None:
    for name in ("llama-3.1-8b", "deepseek-v3", "gemma-3-27b"):
        fresh = spec_from_hf_config(read_config_file(model_configs_dir() / f"{name}.json"), name=name)
        assert llmsim.load_model(name) == fresh
        assert llmsim.load_model(name) is llmsim.load_model(name)
    assert llmsim.load_model("llama-3.1-8b", name="other").name == "other"  # the name is part of the key
    hw = llmsim.load_hardware("h100-sxm")
    assert hw is llmsim.load_hardware("h100-sxm")
    assert hw == hardware_from_dict(tomllib.loads((hardware_dir() / "h100-sxm.toml").read_text()),
                                    origin="x").model_copy(update={"path": hw.path})


def test_a_changed_config_file_is_read_again(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text(json.dumps(TINY_CONFIGS["llama-gqa"]))
    first = llmsim.load_model(tmp_path)
    assert llmsim.load_model(file) == first  # the folder and its config.json: one file
    file.write_text(json.dumps({**TINY_CONFIGS["llama-gqa"], "hidden_size": 128}))
    _touch_later(file)
    assert llmsim.load_model(tmp_path).hidden_size == 128  # was 64
    file.unlink()
    with pytest.raises(llmsim.ConfigError, match="no file"):
        llmsim.load_model(file)


def test_a_changed_hardware_file_is_read_again(tmp_path: Path, test_gpu_dict: dict[str, Any]) -> None:
    file = tmp_path / "gpu.toml"
    file.write_text(_toml(test_gpu_dict))
    assert llmsim.load_hardware(file).memory_bandwidth_bytes_per_s == 2e12
    test_gpu_dict["memory"]["bandwidth_bytes_per_s"]["value"] = 3e12
    file.write_text(_toml(test_gpu_dict))
    _touch_later(file)
    assert llmsim.load_hardware(str(file)).memory_bandwidth_bytes_per_s == 3e12


def test_a_dict_changed_in_place_is_not_served_stale(test_gpu_dict: dict[str, Any]) -> None:
    config = dict(TINY_CONFIGS["llama-gqa"])
    assert llmsim.load_model(config).hidden_size == 64
    config["hidden_size"] = 128
    assert llmsim.load_model(config).hidden_size == 128
    assert llmsim.load_hardware(test_gpu_dict).memory_bandwidth_bytes_per_s == 2e12
    test_gpu_dict["memory"]["bandwidth_bytes_per_s"]["value"] = 4e12  # a nested change
    assert llmsim.load_hardware(test_gpu_dict).memory_bandwidth_bytes_per_s == 4e12


def _toml(data: dict[str, Any]) -> str:
    """The test GPU as TOML: top-level strings, then one inline table per quantity."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for section, values in data.items():
        if isinstance(values, dict):
            lines.append(f"[{section}]")
            lines += [f"{k} = {{ value = {q['value']!r}, unit = {json.dumps(q['unit'])}, "
                      f"source = {json.dumps(q['source'])} }}" for k, q in values.items()]
    return "\n".join(lines) + "\n"


# ---- the disk cache ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", shipped_model_names())
def test_cached_spec_of_every_shipped_config_equals_the_transformers_one(name: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(tmp_path))
    file = model_configs_dir() / f"{name}.json"
    reference = spec_from_hf_config(read_config_file(file), name=name)  # through transformers
    loading._SPECS.clear()
    assert llmsim.load_model(name) == reference  # built, then stored
    assert len(list((tmp_path / "specs").iterdir())) == 1
    loading._SPECS.clear()
    cached = llmsim.load_model(name)  # read back from the disk cache
    assert cached == reference and cached.model_dump() == reference.model_dump()


def _grids_equal(a: Any, b: Any) -> bool:
    return (a.family, a.path, a.provenance, a.keys, a.axes) == (b.family, b.path, b.provenance, b.keys, b.axes) and (
        a.grids.keys() == b.grids.keys() and all(
            g.axes == h.axes and all(np.array_equal(p, q) for p, q in zip(g.points, h.points, strict=True))
            and np.array_equal(g.times_s, h.times_s) for g, h in ((a.grids[k], b.grids[k]) for k in a.grids)))


def _check_tables(files: list[Path], folder: Path) -> None:
    for file in files:
        keys, axes, fill = FAMILIES[file.stem]
        parsed = read_table_file(file, file.stem, keys, axes, fill)
        assert _grids_equal(read_table_file_cached(file, file.stem, keys, axes, fill), parsed)  # stored
        assert _grids_equal(read_table_file_cached(file, file.stem, keys, axes, fill), parsed)  # read back
    assert len(list((folder / "kernel-tables").iterdir())) == len(files)


def test_cached_kernel_tables_equal_parsed_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(tmp_path))
    _check_tables(sorted((kernels_dir() / "h100-sxm" / "vllm").glob("*.csv")), tmp_path)


@pytest.mark.slow
def test_every_shipped_kernel_table_cached_equals_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(tmp_path))
    _check_tables(sorted(kernels_dir().glob("*/*/*.csv")), tmp_path)


def test_disk_cache_location_and_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.cache_root() == tmp_path / "llmsim"
    monkeypatch.setenv("LLMSIM_CACHE_DIR", "")
    assert disk_cache.cache_root() is None
    calls = []
    for _ in range(2):  # off: derived every time
        disk_cache.cached("t", b"x", "f", lambda: calls.append(1) or 1, dump=lambda v: v, load=lambda d: d)
    assert len(calls) == 2
    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(tmp_path))
    for _ in range(2):  # source that could not be read (no fingerprint): derived every time, nothing written
        disk_cache.cached("t", b"x", None, lambda: calls.append(1) or 1, dump=lambda v: v, load=lambda d: d)
    assert len(calls) == 4 and not (tmp_path / "t").exists()
    assert disk_cache.source_fingerprint([tmp_path / "missing.py"]) is None


def test_a_corrupt_or_unwritable_cache_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(tmp_path))
    spec = llmsim.load_model(TINY_CONFIGS["llama-gqa"])

    def via_cache() -> ModelSpec:
        return disk_cache.cached("specs", b"tiny", "f", lambda: spec, dump=lambda s: s.model_dump(mode="json"),
                                 load=ModelSpec.model_validate)

    assert via_cache() == spec
    (entry,) = (tmp_path / "specs").iterdir()
    entry.write_text('{"name": "truncated')  # a corrupt entry: derived again and rewritten
    assert via_cache() == spec
    assert ModelSpec.model_validate_json(entry.read_text()) == spec
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(blocked))  # a file where the folder should be: nothing written
    assert via_cache() == spec


def test_memo_keeps_the_newest_values_and_recomputes_on_a_new_stamp() -> None:
    from llmsim.memo import Memo

    memo, calls = Memo(2), []

    def compute(value: int) -> Any:
        return lambda: calls.append(value) or value

    assert [memo.get(k, 0, compute(k)) for k in (1, 2, 1)] == [1, 2, 1] and calls == [1, 2]  # 1 kept
    memo.get(3, 0, compute(3))  # evicts the oldest entry, 1
    assert memo.get(1, 0, compute(1)) == 1 and calls == [1, 2, 3, 1]
    assert memo.get(1, "changed", compute(10)) == 10  # a new stamp: computed again


def test_a_cached_spec_warns_its_assumptions_as_a_built_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmsim.errors import AssumptionWarning

    monkeypatch.setenv("LLMSIM_CACHE_DIR", str(tmp_path / "cache"))
    config = {k: v for k, v in TINY_CONFIGS["llama-gqa"].items() if k not in ("torch_dtype", "dtype")}
    file = tmp_path / "no-dtype.json"
    file.write_text(json.dumps(config))
    for _ in range(2):  # built (then on disk), then read back from the disk cache
        loading._SPECS.clear()
        with pytest.warns(AssumptionWarning, match="states no torch_dtype"):
            assert llmsim.load_model(file).dtype == "bfloat16"
    with pytest.warns(AssumptionWarning, match="states no torch_dtype"):  # from the in-process memo
        llmsim.load_model(file)
    with pytest.warns(AssumptionWarning, match="states no torch_dtype"):  # a dict, twice
        llmsim.load_model(config)
    with pytest.warns(AssumptionWarning, match="states no torch_dtype"):
        llmsim.load_model(config)


def test_a_shipped_name_found_exactly_is_its_file_while_that_file_is_there(tmp_path: Path) -> None:
    """shipped_file_stamp keeps an exact name's file without the folder's stamp (other files cannot change
    which file it means); a removed file is looked up again, and a case-folded name follows the folder."""
    from llmsim.errors import LlmsimError
    from llmsim.memo import file_stamp, shipped_file_stamp

    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "alpha.json").write_text("{}")
    path, stamp = shipped_file_stamp("model", "alpha", folder, ".json")
    assert path == str((folder / "alpha.json").absolute()) and stamp == file_stamp(path)
    (folder / "ALPHA-2.json").write_text("{}")  # another file: the same answer
    assert shipped_file_stamp("model", "alpha", folder, ".json") == (path, stamp)
    (folder / "alpha.json").write_text("{ }")  # changed: its new stamp
    assert shipped_file_stamp("model", "alpha", folder, ".json") == (path, file_stamp(path))
    (folder / "alpha.json").unlink()
    with pytest.raises(LlmsimError, match="not a shipped name"):
        shipped_file_stamp("model", "alpha", folder, ".json")
    assert shipped_file_stamp("model", "Alpha-2", folder, ".json")[0] == str((folder / "ALPHA-2.json").absolute())


def test_names_a_path_is_os_path_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmsim.memo import names_a_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "llama-3.1-8b").mkdir()
    (tmp_path / "file.toml").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("llama-3.1-8b", "file.toml", "h100-sxm", "~/file.toml", "~/nothing", "a\0b", ""):
        assert names_a_path(name) == os.path.exists(os.path.expanduser(name)), name
