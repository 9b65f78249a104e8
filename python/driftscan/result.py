"""What a register run gives back: the files of its results folder, read."""
import json
import os
import shutil
import tempfile
import weakref

import numpy as np

from . import _engine
from .tables import read_table



def _read_image(path):
    return _engine.FileSeries(path, "").frames(0, 1)[0]


class Result:
    """A register run's results, read from its folder.

    ``drift``      structured array, the columns of drift.csv
    ``average``    float32 image (a HyperSpy Signal2D when the input was one)
    ``coverage``   frames (or weight) behind each pixel of the average
    ``sigma``      standard error of each pixel of the average, where the run wrote it
    ``lines``, ``line_field``  per-line drift (scan-distortion runs), else None
    ``report``     report.json as a dict
    ``files``      name -> path in the results folder
    """

    def __init__(self, folder, owned=False, axes=None, input_name=""):
        self.folder = os.path.abspath(folder)
        self._axes = axes or []
        self._input = input_name
        self._cache = {}
        if owned:  # a temporary folder of this result's own: gone with it
            self._finalizer = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.files = {name: os.path.join(self.folder, name) for name in sorted(os.listdir(self.folder))
                      if not name.startswith(".") and  # the lock, staged temporaries
                      os.path.isfile(os.path.join(self.folder, name))}

    def _get(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _image(self, name, title):
        path = self.files.get(name)
        if path is None:
            return None
        image = self._get(name, lambda: _read_image(path))
        if not self._axes:
            return image
        from .hyperspy import to_signal2d
        return to_signal2d(image, self._axes, title=title)

    @property
    def drift(self):
        return self._get("drift", lambda: read_table(self.files["drift.csv"]))

    @property
    def average(self):
        return self._image("average.tif", "average")

    @property
    def coverage(self):
        return self._image("coverage.tif", "coverage")

    @property
    def sigma(self):
        return self._image("sigma.tif", "sigma")

    @property
    def average_rigid(self):
        return self._image("average_rigid.tif", "average (rigid)")

    @property
    def lines(self):
        return self._get("lines", lambda: read_table(self.files["lines.csv"]) if "lines.csv" in self.files else None)

    @property
    def line_field(self):
        return self._get("line_field", lambda: read_table(self.files["line_field.csv"])
                         if "line_field.csv" in self.files else None)

    @property
    def report(self):
        def load():
            with open(self.files["report.json"]) as f:
                return json.load(f)
        return self._get("report", load)

    def to_pandas(self):
        """drift as a pandas DataFrame (pandas must be installed)."""
        import pandas as pd
        return pd.DataFrame(self.drift)

    def save(self, folder):
        """Writes the run's files into `folder` (created): the same files, byte
        for byte, a command-line run writes. Each file is written under a
        temporary name, then renamed."""
        folder = os.fspath(folder)
        os.makedirs(folder, exist_ok=True)
        for name, path in self.files.items():
            fd, tmp = tempfile.mkstemp(prefix="." + name + ".", dir=folder)
            os.close(fd)
            try:
                shutil.copyfile(path, tmp)
                os.replace(tmp, os.path.join(folder, name))
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        return folder

    def apply(self, other, method="mean", *, memory_mb=256, threads=None, progress=None):
        """This run's drift applied to `other`, a signal recorded with the same
        frames: an image stack (another detector) is averaged as this run's
        frames were; a spectrum image (frames, y, x, channels) or a 4-D STEM
        scan (frames, y, x, ky, kx) — numpy, memmap, HyperSpy (lazy ones
        too) — is warped and summed chunk by chunk, within `memory_mb` for
        the chunks in hand. `method`: "mean" or "sum". See driftscan.apply."""
        from .apply import apply_drift
        return apply_drift(self, other, method=method, memory_mb=memory_mb, threads=threads, progress=progress)

    def __repr__(self):
        n = len(self.drift)
        return f"<driftscan.Result of {self._input or 'a series'}: {n} frames, folder {self.folder}>"
