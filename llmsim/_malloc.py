"""glibc malloc settings for sweeps: large numpy temporaries reused from the heap, not mapped afresh each time.

A sweep block allocates and frees many arrays of a few hundred kB. glibc maps each block above its mmap
threshold afresh and gives heap space back above its trim threshold; both start at 128 kB and rise only
slowly, so in a fresh process every temporary costs page faults on first touch (the kernel zeroing pages):
half a 1M-point sweep's time. `keep_large_blocks` sets the thresholds to where glibc's own dynamic
adjustment ends up in a long numpy session (mmap threshold 32 MB, its maximum; trim threshold twice that),
once per process; other C libraries, or a failure to find mallopt, leave everything as it is.
"""

from __future__ import annotations

import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
_done = False


def keep_large_blocks() -> None:
    """Set glibc's mmap and trim thresholds as above (once; a no-op off glibc)."""
    global _done
    if _done:
        return
    _done = True
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        if libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES):
            libc.mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # not glibc
        return
