"""A run's drift applied to another signal recorded with the same frames.

An image stack (another detector: a path, Series, (frames, y, x) array or
a Signal2D) is averaged again exactly as the run's own frames were
(driftscan.average with the run's drift). A spectrum image (frames, y, x,
channels) or a 4-D STEM scan (frames, y, x, ky, kx) — a numpy array, a
memmap, or a HyperSpy signal (lazy ones included) whose first navigation
axis is the frames — is warped and summed frame by frame, a chunk of
channels at a time: memory holds the sums (one float64 per output value)
and one chunk, never the series. A memmap is read with pread, so its pages
never count against the process either.
"""
import mmap
import os

import numpy as np

from . import _engine
from .inputs import is_hyperspy_signal
from .progress import Bar, callback as _callback


class _Frames:
    """Frame k's channels [c0, c1) as a float32 (height, width, c1 - c0) array."""

    def __init__(self, data):
        self.lazy = not isinstance(data, np.ndarray)
        self.data = data
        self.shape = tuple(int(s) for s in data.shape)
        self.n, self.h, self.w = self.shape[:3]
        self.channels = int(np.prod(self.shape[3:], dtype=np.int64)) if len(self.shape) > 3 else 1
        self.dtype = np.dtype(data.dtype)
        self.file = None
        # A memmap as numpy.memmap opened it (not a view of one: its offset
        # would not be the view's) is read with pread.
        if isinstance(data, np.memmap) and isinstance(data.base, mmap.mmap) and data.flags.c_contiguous:
            self.file = os.open(data.filename, os.O_RDONLY)
            self.offset = int(data.offset)

    def close(self):
        if self.file is not None:
            os.close(self.file)
            self.file = None

    def chunk(self, k, c0, c1, budget):
        if self.file is not None:
            return self._pread(k, c0, c1, budget)
        frame = self.data[k]
        if self.lazy:
            frame = frame.reshape((self.h, self.w, self.channels))[:, :, c0:c1].compute()
            return np.ascontiguousarray(frame, dtype=np.float32)
        return np.ascontiguousarray(frame.reshape((self.h, self.w, self.channels))[:, :, c0:c1], dtype=np.float32)

    def rows(self, k, first, last):
        """Rows [first, last) of frame k, every channel: (rows, width, channels) float32."""
        if self.file is not None:
            row = self.w * self.channels * self.dtype.itemsize
            raw = os.pread(self.file, (last - first) * row, self.offset + (k * self.h + first) * row)
            if len(raw) != (last - first) * row:
                raise OSError(f"{self.data.filename}: truncated at frame {k}")
            return np.frombuffer(raw, dtype=self.dtype).reshape((last - first, self.w, self.channels)).astype(
                np.float32, copy=self.dtype != np.float32)
        band = self.data[k, first:last]
        if self.lazy:
            band = band.compute()
        return np.ascontiguousarray(np.asarray(band).reshape((last - first, self.w, self.channels)), dtype=np.float32)

    def _pread(self, k, c0, c1, budget):
        """Channels [c0, c1) of frame k, read a band of rows (every channel) at a time."""
        out = np.empty((self.h, self.w, c1 - c0), np.float32)
        rows = max(1, min(self.h, budget // max(1, self.w * self.channels * self.dtype.itemsize)))
        for y0 in range(0, self.h, rows):
            y1 = min(self.h, y0 + rows)
            out[y0:y1] = self.rows(k, y0, y1)[:, :, c0:c1]
        return out


def _signal_data(other):
    """(array-like (frames, y, x, ...), the HyperSpy signal or None)."""
    if is_hyperspy_signal(other):
        return other.data, other
    return other, None


def _output_signal(data, signal):
    """The summed data as a signal like `signal`, without its frame axis."""
    import hyperspy.api as hs
    axes = sorted(signal.axes_manager._axes, key=lambda a: a.index_in_array)[1:]
    dicts = [{"size": int(s), "scale": float(a.scale), "offset": float(a.offset), "name": str(a.name),
              "units": a.units, "navigate": bool(a.navigate)} for a, s in zip(axes, data.shape)]
    name = type(signal).__name__
    cls = getattr(hs.signals, name[4:], None) if name.startswith("Lazy") else type(signal)
    try:
        out = (cls or hs.signals.BaseSignal)(data, axes=dicts)
    except Exception:  # a signal class that wants more than data and axes
        out = hs.signals.BaseSignal(data, axes=dicts)
    out.metadata.General.title = (signal.metadata.General.title or "signal") + " (drift applied)"
    return out


def apply_drift(result, other, method="mean", memory_mb=256, threads=None, progress=None):
    from .run import average, default_threads
    if method not in ("mean", "sum"):
        raise ValueError(f"apply: method {method!r}: mean or sum")
    data, signal = _signal_data(other)
    ndim = len(getattr(data, "shape", ())) if not isinstance(other, (str, os.PathLike)) else 3
    drift = result.drift
    if ndim == 3 or not hasattr(data, "shape"):  # another detector's image stack
        unused = [int(f) for f, u in zip(drift["frame"], drift["used"]) if not u] if "used" in drift.dtype.names else []
        out = average(other, result, "mean", threads=threads, progress=progress, exclude_frames=unused)
        if method == "sum":
            out.average = out.average * out.coverage
        return out.average
    frames = _Frames(data)
    if frames.n != len(drift):
        raise ValueError(f"apply: the signal has {frames.n} frames, the drift {len(drift)}")
    used = drift["used"].astype(bool) if "used" in drift.dtype.names else np.ones(frames.n, bool)
    budget = max(1, int(memory_mb * 2**20))
    plane = frames.h * frames.w
    # A chunk in hand three times: as read, as float32, transposed into planes.
    per_chunk = max(1, min(frames.channels, budget // 3 // max(1, plane * 4)))
    acc = _engine.SignalAccumulator(result.files["drift.csv"], frames.h, frames.w, frames.channels,
                                    int(threads or default_threads()))
    cb = _callback(progress)
    todo = [k for k in range(frames.n) if used[k]]
    # Bands of rows, every channel, when 16 rows fit the budget three times
    # (as read, as float32, as planes): each frame is then read once. Else
    # chunks of channels over the whole frame (a 4-D STEM scan's rows are large).
    row_bytes = frames.w * frames.channels * 4
    band = budget // 3 // max(1, row_bytes) - 8  # the taps' rows on either side
    try:
        for i, k in enumerate(todo):
            if band >= 16:
                for y0 in range(0, frames.h, band):
                    y1 = min(frames.h, y0 + band)
                    first, last = acc.source_rows(k, y0, y1)
                    acc.add(k, frames.rows(k, first, last), 0, first, y0, y1)
            else:
                for c0 in range(0, frames.channels, per_chunk):
                    c1 = min(frames.channels, c0 + per_chunk)
                    acc.add(k, frames.chunk(k, c0, c1, budget // 3), c0, 0, 0, frames.h)
            if cb is not None:
                cb({"event": "progress", "phase": "apply", "done": i + 1, "total": len(todo)})
    finally:
        frames.close()
        if isinstance(cb, Bar):
            cb.close()
    out = acc.result(method == "mean").reshape((frames.h, frames.w) + frames.shape[3:])
    return _output_signal(out, signal) if signal is not None else out
