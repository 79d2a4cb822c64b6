"""Memos for loaded specs: a value read from a file is kept while the file is unchanged; a value built from
a dict is kept under a hash of the dict's content, so a dict changed in place is never served stale.

Plain functions over small bounded dicts; imports only llmsim.shipped (models and hardware both use it).
Approximation: a file counts as unchanged while its modification time (ns), size and inode are; an edit
that keeps all three (same size, within the file system's timestamp resolution) goes unseen.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .shipped import find_shipped

T = TypeVar("T")


class Memo:
    """At most `size` values, each kept with the stamp it was computed under; oldest-first eviction."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._entries: dict[Hashable, tuple[Hashable, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, stamp: Hashable, compute: Callable[[], T]) -> T:
        """The value kept under `key` if it was computed under `stamp`, else compute() (kept, then returned).
        An exception from compute() is raised and nothing is kept."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] == stamp:
            return entry[1]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:  # eviction iterates the dict: not while another thread changes it
            self._entries.pop(key, None)
            while len(self._entries) >= self.size:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = (stamp, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def file_stamp(path: str | Path) -> tuple[int, int, int] | None:
    """What tells a file's versions apart: (mtime ns, size, inode); None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def content_key(data: Mapping[str, Any]) -> str | None:
    """A hash of a JSON-like dict's whole content (None: not JSON-serialisable, so not memoised)."""
    try:
        text = json.dumps(data, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):
        return None
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


_SHIPPED = Memo(256)
# (folder, name, suffix) -> the file of a name found exactly (its own file, not a case-folded match): which file
# such a name means does not depend on the folder's other files, only on that file still being there
_EXACT: dict[tuple[str, str, str], str] = {}


def shipped_file_stamp(kind: str, name: str, folder: Path, suffix: str) -> tuple[str, Any]:
    """(the absolute path of the shipped file `name` as find_shipped finds it, that file's file_stamp), looked
    up again when the folder changes; an unknown name raises find_shipped's error with the closest names.
    A name found exactly before is its file while that file is there (one stat, not two: the folder's stamp is
    read only where another file could change the answer)."""
    key = (str(folder), name, suffix)
    exact = _EXACT.get(key)
    if exact is not None:
        stamp = file_stamp(exact)
        if stamp is not None:
            return exact, stamp
        _EXACT.pop(key, None)  # the file is gone: looked up again (find_shipped says what is left)

    def find() -> str:
        names = sorted(p.stem for p in folder.glob(f"*{suffix}"))
        return str(find_shipped(kind, name, names, folder, suffix).absolute())

    file = _SHIPPED.get(key, file_stamp(folder), find)
    if os.path.basename(file) == name + suffix:
        if len(_EXACT) >= 256:
            _EXACT.clear()
        _EXACT[key] = file
    return file, file_stamp(file)


def names_a_path(source: str) -> bool:
    """Whether `source` (~ expanded) is an existing path: os.path.exists, without raising and catching an
    error where it is not (the by-name hot path asks this of every shipped name)."""
    try:
        return os.access(os.path.expanduser(source) if source[:1] == "~" else source, os.F_OK)
    except (OSError, ValueError):  # as os.path.exists: an unusable path (an embedded null) does not exist
        return False
