"""A series in a file, read by the engine's readers (TIFF stacks, folders
and globs of TIFFs, DM3/DM4, MRC, TIA SER/EMI, Velox and Berkeley EMD)."""
import errno
import os

import numpy as np

from . import _engine


def _check_exists(path):
    if any(c in path for c in "*?["):
        return  # a glob: the engine says what it matches
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, f"{path}: no such file or folder", path)


class Series:
    """One signal of a file: ``len(s)``, ``s.shape`` (frames, height, width),
    ``s[k]`` (frame k, decoded alone, as float32 — the engine's pixels),
    ``s[a:b]``, ``numpy.asarray(s)`` (the whole stack)."""

    def __init__(self, path, signal=None):
        path = os.fspath(path)
        _check_exists(path)
        self._file = _engine.FileSeries(path, "" if signal is None else str(signal))

    @property
    def path(self):
        return self._file.path

    @property
    def signal(self):
        """The signal read (a detector's name, or "image")."""
        return self._file.signal

    @property
    def signals(self):
        """The names of every signal the file holds."""
        return list(self._file.signals)

    @property
    def format(self):
        return self._file.format

    @property
    def shape(self):
        return (len(self._file), self._file.height, self._file.width)

    @property
    def dtype(self):
        """The pixel type the file stores (frames are served as float32)."""
        try:
            return np.dtype(self._file.pixel_type)
        except TypeError:
            return np.dtype(np.float32)

    @property
    def pixel_size(self):
        """Physical size of a pixel (0.0 when the file does not say)."""
        return self._file.pixel_size

    @property
    def unit(self):
        return self._file.unit

    def __len__(self):
        return len(self._file)

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            first, last, step = index.indices(n)
            if step == 1:
                return self._file.frames(first, max(first, last))
            return np.stack([self._file.frames(k, k + 1)[0] for k in range(first, last, step)]) \
                if len(range(first, last, step)) else np.empty((0,) + self.shape[1:], np.float32)
        k = int(index)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"{self.path}: frame {index} is not in the series ({n} frames)")
        return self._file.frames(k, k + 1)[0]

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def __array__(self, dtype=None):
        a = self._file.frames(0, len(self))
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        n, h, w = self.shape
        size = f", pixel {self.pixel_size:g} {self.unit}" if self.pixel_size else ""
        return f"<driftscan.Series {self.path!r} signal {self.signal!r}: {n} x {w}x{h} {self.dtype}{size}>"


def read(path, signal=None):
    """The series in `path` (`signal`: which one of a multi-signal file, by
    name or index; None: the first image)."""
    return Series(path, signal)
