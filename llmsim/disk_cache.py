"""A disk cache of values derived from files, so a later run skips the slow derivation.

Two derivations use it: a model config -> ModelSpec (through transformers, whose import takes seconds) and
a measured kernel table's CSV -> its grids (parsing thousands of rows). An entry is JSON, stored under a
key that hashes the input's bytes with a fingerprint of everything else the result depends on (llmsim's
version, the source of the deriving modules, any library version): a changed input, llmsim or library is
a new key, so nothing stale is ever read. The cache is an optimisation only: an unreadable, unwritable or
corrupt cache is skipped silently and the value is derived as without it.

Where: $LLMSIM_CACHE_DIR (set it empty to turn the cache off), else $XDG_CACHE_HOME/llmsim, else
~/.cache/llmsim; one small JSON file per entry under a folder per kind.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def cache_root() -> Path | None:
    """The cache folder (None: turned off by LLMSIM_CACHE_DIR="")."""
    override = os.environ.get("LLMSIM_CACHE_DIR")
    if override is not None:
        return Path(override).expanduser() if override.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llmsim"


def source_fingerprint(files: Iterable[Path], *extra: str) -> str | None:
    """A hash of llmsim's version, the given source files' bytes and any extra strings (library versions);
    None where a source file cannot be read (then nothing is cached: a change to it would go unseen)."""
    from . import __version__

    digest = hashlib.blake2b(digest_size=16)
    for part in (f"llmsim {__version__}", *extra):
        digest.update(part.encode() + b"\0")
    try:
        for file in files:
            digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def cached(kind: str, content: bytes, fingerprint: str | None, derive: Callable[[], T],
           dump: Callable[[T], Any], load: Callable[[Any], T]) -> T:
    """load(the JSON cached for this content) where an entry exists and loads, else derive() (stored as
    dump(value) for later runs). `content` is the input's bytes (and anything else naming it, such as a name)."""
    root = cache_root()
    if root is None or fingerprint is None:
        return derive()
    key = hashlib.blake2b(content + b"\0" + fingerprint.encode(), digest_size=20).hexdigest()
    entry = root / kind / f"{key}.json"
    try:
        return load(json.loads(entry.read_bytes()))
    except Exception:  # absent, unreadable, corrupt or of another shape: derived again below
        pass
    value = derive()
    try:
        text = json.dumps(dump(value), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # not JSON-like: not cached
        return value
    _write(entry, text.encode())
    return value


def _write(entry: Path, data: bytes) -> None:
    """Write atomically (a temporary file, then a rename); any failure leaves the cache as it was."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_name(f".{entry.stem}.{os.getpid()}.tmp")
        try:
            temporary.write_bytes(data)
            os.replace(temporary, entry)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError:
        pass
