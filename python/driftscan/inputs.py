"""What register(), average() and apply() take, told apart: a path, a
Series, a numpy array (memmaps included) or a HyperSpy signal."""
import os
from dataclasses import dataclass, field

import numpy as np

from .series import Series, _check_exists


@dataclass
class Source:
    path: str = ""        # a file the engine reads (with `signal`)
    signal: str = ""
    array: object = None  # else frames (n, height, width) read in place
    lazy: object = None   # else a lazy (dask) stack, computed a frame at a time
    pixel_size: float = 0.0
    unit: str = ""
    name: str = "array"   # how messages name the input
    axes: list = field(default_factory=list)  # a HyperSpy input's signal axes [x, y]: dicts

    @property
    def from_file(self):
        return self.array is None and self.lazy is None

    def staged(self, folder):
        """A lazy stack written to a TIFF in `folder` a frame at a time; the
        Source of that file (any other Source as it is)."""
        if self.lazy is None:
            return self
        import os
        from . import _engine
        n, h, w = (int(v) for v in self.lazy.shape)
        path = os.path.join(folder, "series.tif")
        writer = _engine.SeriesWriter(path, w, h, n, self.pixel_size, self.unit)
        for k in range(n):
            writer.append(np.asarray(self.lazy[k].compute(), dtype=np.float32))
        writer.commit()
        return Source(path=path, pixel_size=self.pixel_size, unit=self.unit, name=self.name, axes=self.axes)


def is_hyperspy_signal(data):
    return hasattr(data, "axes_manager") and hasattr(data, "data")


def signal_axes(signal):
    """The signal axes of a HyperSpy signal as dicts (x first), for the outputs."""
    out = []
    for ax in signal.axes_manager.signal_axes:
        out.append({"name": str(ax.name), "scale": float(ax.scale), "offset": float(ax.offset),
                    "units": "" if ax.units is None or str(ax.units) == "<undefined>" else str(ax.units)})
    return out


def source(data, signal=None):
    """The Source for `data`."""
    if isinstance(data, Source):
        return data
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        _check_exists(path)
        return Source(path=path, signal="" if signal is None else str(signal), name=path)
    if isinstance(data, Series):
        return Source(path=data.path, signal=data.signal, pixel_size=data.pixel_size, unit=data.unit,
                      name=data.path)
    if is_hyperspy_signal(data):
        am = data.axes_manager
        if am.signal_dimension != 2 or am.navigation_dimension != 1:
            raise ValueError(f"{getattr(data.metadata.General, 'title', '') or 'signal'}: a Signal2D with one "
                             f"navigation axis (the frames) is needed; this one has "
                             f"{am.navigation_dimension} navigation and {am.signal_dimension} signal dimension(s)")
        axes = signal_axes(data)
        title = getattr(data.metadata.General, "title", "") or "signal"
        array = data.data
        if not isinstance(array, np.ndarray):  # lazy (dask): computed a frame at a time, never whole
            return Source(lazy=array, pixel_size=axes[0]["scale"], unit=axes[0]["units"], name=title, axes=axes)
        return Source(array=array, pixel_size=axes[0]["scale"], unit=axes[0]["units"], name=title, axes=axes)
    array = data if isinstance(data, np.ndarray) else np.asarray(data)
    if array.ndim != 3:
        raise ValueError(f"array: an image series is an array (frames, height, width); this one has shape "
                         f"{array.shape}")
    if np.iscomplexobj(array):
        raise ValueError("array: complex pixels are not supported (take the modulus or the real part)")
    if array.dtype == np.float16:
        array = array.astype(np.float32)
    return Source(array=array, name="array")
