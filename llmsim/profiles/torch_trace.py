"""torch.profiler Chrome traces (prof.export_chrome_trace(path)) -> Profile.

Events read (Chrome trace format, times in microseconds): "cpu_op" (aten ops, with "Input Dims", "Input
type" and "Concrete Inputs" under record_shapes=True), and on CUDA "kernel" / "gpu_memcpy" / "gpu_memset"
(device work) linked through args["correlation"] to "cuda_runtime" / "cuda_driver" launch calls.

CPU trace (no device events): the kernels are the aten ops, each timed by its self time (its span less
its child ops), so the kernel times add up to the time covered by top-level ops; span_s runs from the
first op's start to the last op's end, idle_s is the part of it outside every op (Python, module code).
CUDA trace: the kernels are the device events, each named by its kernel and grouped with the shapes of the
aten op that launched it; span_s and idle_s are the device timeline's; host_launch_s sums the launch calls.
FLOPs and bytes come from the recorded shapes (profiles.shapes), counted once: on the innermost op that has
a rule (aten::mm, not the aten::linear around it).
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LlmsimError
from .classify import aten_class, kernel_class, name_precision
from .model import Kernel
from .profile import Profile
from .shapes import ShapeError, op_cost
from .timeline import covered_s

_US = 1e-6
_DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
_OP_CATS = ("cpu_op", "operator")


@dataclass
class _Op:
    name: str
    ts: float
    end: float
    args: dict[str, Any]
    children: list[_Op] = field(default_factory=list)
    cost: tuple[float, float, str] | None = None
    rule_below: bool = False  # a descendant has a FLOPs rule: this op's FLOPs are counted there

    @property
    def self_us(self) -> float:
        return (self.end - self.ts) - sum(c.end - c.ts for c in self.children)

    @property
    def shapes(self) -> str:
        dims = self.args.get("Input Dims")
        return json.dumps([d for d in dims if d != []]) if dims else ""


def load_trace(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt") as handle:
            data = json.load(handle)
    except (OSError, EOFError, json.JSONDecodeError) as exc:  # EOFError: a gzip file cut short
        raise LlmsimError(f"torch.profiler trace {path}: not readable JSON ({exc})") from None
    except UnicodeDecodeError:
        raise LlmsimError(f"torch.profiler trace {path}: not UTF-8 text (export_chrome_trace writes UTF-8 JSON; "
                          "was it re-saved in another encoding?)") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise LlmsimError(f"torch.profiler trace {path}: no 'traceEvents' list; export it with "
                          "prof.export_chrome_trace(path)")
    return data


def read_torch_trace(path: Path) -> Profile:
    data = load_trace(path)
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e]
    for e in events:  # a hand-edited or damaged trace is refused by event and field, never read half-way
        _check_event(path, e)
    ops = [e for e in events if str(e.get("cat", "")).lower() in _OP_CATS]
    device = [e for e in events if e.get("cat") in _DEVICE_CATS]
    if not ops and not device:
        raise LlmsimError(f"torch.profiler trace {path}: no 'cpu_op' or 'kernel' events in traceEvents (needed: "
                          "aten ops or device kernels); profile with activities=[CPU] or [CPU, CUDA]")
    try:
        roots_by_thread = _op_trees(ops)
    except ShapeError as exc:
        raise LlmsimError(f"torch.profiler trace {path}: {exc}") from None
    notes = []
    if ops and not any("Input Dims" in e.get("args", {}) for e in ops):
        notes.append("recorded without record_shapes=True: FLOPs and bytes from shapes are unknown")
    if device:
        return _device_profile(path, device, events, roots_by_thread, notes)
    return _cpu_profile(path, roots_by_thread, notes)


def _check_event(path: Path, e: dict[str, Any]) -> None:
    """A complete event as export_chrome_trace writes it: a name, dur and ts in microseconds (numbers >= 0),
    args a mapping, pid/tid/correlation plain values, Input Dims lists of sizes >= 0."""
    name = e.get("name")
    if not isinstance(name, str) or not name:
        raise LlmsimError(f"torch.profiler trace {path}: an event (ts={e.get('ts')!r}) has name={name!r}; each "
                          "complete ('X') event needs a name")
    where = f"torch.profiler trace {path}: event {name[:60]!r}"
    try:
        times = float(e["dur"]), float(e["ts"])
    except (KeyError, TypeError, ValueError):
        times = (math.nan,)
    if not all(math.isfinite(t) and t >= 0 for t in times):
        raise LlmsimError(f"{where} has dur={e['dur']!r}, ts={e.get('ts')!r}: each must be a number of "
                          "microseconds >= 0")
    args = e.get("args", {})
    if not isinstance(args, dict):
        raise LlmsimError(f"{where} has args={str(args)[:40]!r}: a mapping of the op's details expected")
    for key in ("pid", "tid"):
        if isinstance(e.get(key), (list, dict)):
            raise LlmsimError(f"{where} has {key}={e[key]!r}: a process or thread id (a number or a name) expected")
    if isinstance(args.get("correlation"), (list, dict)):
        raise LlmsimError(f"{where} has correlation={args['correlation']!r}: a number expected")
    dims = args.get("Input Dims", [])
    if not (isinstance(dims, list) and all(_sizes(d) for d in dims)):
        raise LlmsimError(f"{where} has Input Dims={str(dims)[:60]}: a list of each input's sizes (integers >= 0) "
                          "expected")


def _sizes(d: Any) -> bool:
    """One input's recorded sizes: a list of integers >= 0, a TensorList's list of such lists (aten::cat's
    [[4, 8], [4, 8]]), or nothing recorded ([], None, "")."""
    if d is None or d == "":
        return True
    return isinstance(d, list) and all((type(x) is int and x >= 0) or (isinstance(x, list) and _sizes(x))
                                       for x in d)


def _op_trees(ops: list[dict[str, Any]]) -> dict[tuple[Any, Any], list[_Op]]:
    """Per (pid, tid): the top-level ops, each with its nested child ops (nesting by time containment)."""
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for e in ops:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    roots: dict[tuple[Any, Any], list[_Op]] = {}
    for thread, evs in by_thread.items():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[_Op] = []
        top: list[_Op] = []
        for e in evs:
            node = _Op(e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"]), e.get("args", {}))
            while stack and (node.ts >= stack[-1].end or node.end > stack[-1].end):  # nested: inside it whole
                stack.pop()
            (stack[-1].children if stack else top).append(node)
            stack.append(node)
        for node in top:
            _cost(node)
        roots[thread] = top
    return roots


def _family(name: str) -> str:
    return "compute" if aten_class(name) in ("matmul", "attention") else "memory"


def _cost(node: _Op) -> set[str]:
    """Fill node.cost where a rule covers it and no descendant of its family (matmul and attention, or the
    rest) has one: aten::linear's FLOPs are its aten::addmm's, aten::layer_norm's its
    aten::native_layer_norm's, while aten::addmm keeps its own beside the bias copy_ it calls. Returns the
    families with a rule in the subtree."""
    below: set[str] = set()
    for child in node.children:
        below |= _cost(child)
    args = node.args
    cost = op_cost(node.name, args.get("Input Dims", []), args.get("Input type", []), args.get("Concrete Inputs"))
    family = _family(node.name)
    node.rule_below = family in below or (cost is None and bool(below & {"compute"}))
    node.cost = None if node.rule_below else cost
    return below | ({family} if cost is not None else set())


def _walk(nodes: list[_Op]) -> Any:
    for node in nodes:
        yield node
        yield from _walk(node.children)


def _cpu_profile(path: Path, roots: dict[tuple[Any, Any], list[_Op]], notes: list[str]) -> Profile:
    groups: dict[tuple[str, str], list[_Op]] = defaultdict(list)
    for top in roots.values():
        for node in _walk(top):
            groups[(node.name, node.shapes)].append(node)
    kernels = []
    for (name, shapes), nodes in groups.items():
        op_class = aten_class(name)
        if op_class != "host" and any(_wrapper(n) for n in nodes):
            op_class = "host"  # its work is a child op's: what is left is dispatch around it
        kernels.append(_kernel(name, shapes, op_class, [n.self_us * _US for n in nodes], [n.cost for n in nodes]))
    intervals = [(n.ts, n.end) for top in roots.values() for n in top]
    span_us = max(e for _, e in intervals) - min(s for s, _ in intervals)
    idle_us = span_us - covered_s(intervals)
    return Profile(format="torch.profiler (CPU)", path=str(path), device="cpu", kernels=_sorted(kernels),
                   span_s=span_us * _US, idle_s=idle_us * _US, notes=notes)


def _wrapper(node: _Op) -> bool:
    """An op whose work a child op does: a FLOPs rule below it (aten::linear over aten::addmm), or no rule
    of its own and a child that computes (aten::layer_norm over aten::native_layer_norm). A matmul or attention
    op hands its work only to a child of that family: aten::addmm traced without shapes (no rule applies) stays
    a matmul beside the bias copy_ it calls, not host dispatch."""
    compute = _family(node.name) == "compute"
    return node.rule_below or (node.cost is None and any(
        aten_class(c.name) not in ("host", "other") and (not compute or _family(c.name) == "compute")
        for c in node.children))


def _kernel(name: str, shapes: str, op_class: str, times_s: list[float],
            costs: list[tuple[float, float, str] | None]) -> Kernel:
    known = all(c is not None for c in costs)
    precision = next((c[2] for c in costs if c is not None), None) or name_precision(name)
    return Kernel(name=name, calls=len(times_s), time_s=sum(times_s), op_class=op_class, shapes=shapes,
                  precision=precision,
                  flops=sum(c[0] for c in costs if c is not None) if known else None,
                  flops_source="shapes" if known else None,
                  bytes=sum(c[1] for c in costs if c is not None) if known else None,
                  bytes_source="shapes" if known else None)


def _sorted(kernels: list[Kernel]) -> list[Kernel]:
    return sorted(kernels, key=lambda k: -k.time_s)


def _device_profile(path: Path, device: list[dict[str, Any]], events: list[dict[str, Any]],
                    roots: dict[tuple[Any, Any], list[_Op]], notes: list[str]) -> Profile:
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    launcher: dict[Any, _Op] = {}  # correlation id -> the innermost aten op around its launch call
    for call in launches:
        correlation = call.get("args", {}).get("correlation")
        op = _innermost(roots.get((call.get("pid"), call.get("tid")), []), float(call["ts"]))
        if correlation is not None and op is not None:
            launcher[correlation] = op
    by_op: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in device:
        op = launcher.get(e.get("args", {}).get("correlation"))
        if op is not None:
            by_op[id(op)].append(e)
    # an op's FLOPs and bytes go to the longest kernel it launched (approximation: its other kernels, e.g. a
    # split-K reduction, get none)
    carries = {id(max(kernels, key=lambda e: float(e["dur"]))) for kernels in by_op.values()}
    groups: dict[tuple[str, str], list[tuple[float, Any]]] = defaultdict(list)
    classes: dict[tuple[str, str], str] = {}
    for e in device:
        op = launcher.get(e.get("args", {}).get("correlation"))
        cost = op.cost if op is not None and id(e) in carries else None
        key = (e["name"], op.shapes if op is not None else "")
        groups[key].append((float(e["dur"]) * _US, cost))
        classes[key] = _device_class(e, op)
    kernels = [_kernel(name, shapes, classes[(name, shapes)], [t for t, _ in items], [c for _, c in items])
               for (name, shapes), items in groups.items()]
    intervals = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in device]
    span_us = max(e for _, e in intervals) - min(s for s, _ in intervals)
    host_us = sum(float(c["dur"]) for c in launches if "Launch" in c.get("name", ""))
    return Profile(format="torch.profiler (CUDA)", path=str(path), device="gpu", kernels=_sorted(kernels),
                   span_s=span_us * _US, idle_s=(span_us - covered_s(intervals)) * _US,
                   host_launch_s=host_us * _US, notes=notes)


def _device_class(event: dict[str, Any], op: _Op | None) -> str:
    """The class of the aten op that launched a kernel where it names one (aten::mm -> matmul), else the
    kernel name's (copies are "copy")."""
    if event.get("cat") != "kernel":
        return "copy"
    launched_by = aten_class(op.name) if op is not None else "other"
    return launched_by if launched_by not in ("other", "host") else kernel_class(event["name"])


def _innermost(nodes: list[_Op], ts: float) -> _Op | None:
    """The deepest op running at time ts (nodes: siblings in start order)."""
    i = bisect.bisect_right([n.ts for n in nodes], ts) - 1
    if i < 0 or ts > nodes[i].end:
        return None
    return _innermost(nodes[i].children, ts) or nodes[i]
