"""Lazy imports and load caches: what `import llmsim` pulls in, and cached loads equal fresh ones.

No timings here (benchmarks/ prints those): these tests pin the behaviour the speed rests on.
"""

from __future__ import annotations

import subprocess
import sys

import llmsim


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


def test_simulate_by_name_needs_no_scipy() -> None:
    loaded = _modules_after('import llmsim\nllmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=2)')
    assert not loaded & {"scipy", "matplotlib"}
