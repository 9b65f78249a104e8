"""DriftScan in Python: the engine of driftscan-engine, in the interpreter.

    import driftscan
    s = driftscan.read("series.tif")            # a Series: len, shape, s[k]
    r = driftscan.register(s, progress=True)    # or a numpy array, a HyperSpy Signal2D
    r.drift["dx"], r.average, r.coverage, r.report
    r.save("results/")                          # the files the command line writes
    si_aligned = r.apply(spectrum_image)        # the same drift on another signal
    run = driftscan.submit("series.tif", "my-cluster", ranks=8)   # through the launcher
    run.result()
"""
from ._engine import RegistrationFailed, __version__
from . import job
from .apply import apply_drift
from .result import Result
from .run import Average, average, register, synthesize
from .series import Series, read
from .submit import Submission, submit


def write_series(path, array, pixel_size=0.0, unit=""):
    """Writes an array (frames, height, width) as a float32 TIFF stack."""
    import os
    from . import _engine
    _engine.write_series(os.fspath(path), array, float(pixel_size), unit)


__all__ = ["read", "register", "average", "submit", "synthesize", "write_series", "Series", "Result", "Average", "Submission",
           "RegistrationFailed", "job", "apply_drift", "__version__"]
