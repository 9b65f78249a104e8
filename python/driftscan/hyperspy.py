"""DriftScan for HyperSpy users: align a Signal2D stack, apply its drift to
a spectrum image or a 4-D STEM scan, with the axes' calibration kept."""
from collections import namedtuple

Aligned = namedtuple("Aligned", "average drift result")


def to_signal2d(image, axes, title=""):
    """A float32 image as a Signal2D whose x and y axes are `axes` (dicts:
    name, scale, offset, units; x first)."""
    import hyperspy.api as hs
    h, w = image.shape
    x, y = axes[0], axes[1]
    s = hs.signals.Signal2D(image, axes=[
        {"size": h, "name": y["name"], "scale": y["scale"], "offset": y["offset"], "units": y["units"]},
        {"size": w, "name": x["name"], "scale": x["scale"], "offset": x["offset"], "units": x["units"]}])
    s.metadata.General.title = title
    return s


def align(signal, **settings):
    """Registers a Signal2D stack (one navigation axis: the frames) and
    returns Aligned(average, drift, result): the average as a Signal2D with
    the stack's axes, the drift as a structured array (drift.csv's
    columns), and the Result. `settings`: as for driftscan.register."""
    from .run import register
    r = register(signal, **settings)
    return Aligned(r.average, r.drift, r)


def apply(signal, drift, method="mean", **options):
    """The drift of a Result (or an Aligned) applied to `signal` — a
    spectrum image or 4-D STEM signal, lazy or not, whose first navigation
    axis is the frames; returns the averaged (or summed) signal with the
    other axes kept. `options`: memory_mb, threads, progress."""
    result = drift.result if isinstance(drift, Aligned) else drift
    return result.apply(signal, method=method, **options)
