"""HyperSpy in and out: the axes' calibration is kept; apply takes
spectrum images, lazy ones included."""
import numpy as np
import pytest

hs = pytest.importorskip("hyperspy.api")

import driftscan
import driftscan.hyperspy as dhs


def stack_signal(frames):
    s = hs.signals.Signal2D(frames)
    for ax, name in zip(s.axes_manager.signal_axes, ("x", "y")):
        ax.scale, ax.units, ax.offset, ax.name = 0.0125, "nm", -0.4, name
    s.axes_manager.navigation_axes[0].name = "frame"
    s.metadata.General.title = "HAADF"
    return s


def test_align_keeps_the_calibration(lattice_frames):
    s = stack_signal(lattice_frames)
    aligned = dhs.align(s, threads=2)
    ref = driftscan.register(lattice_frames, threads=2)
    assert isinstance(aligned.average, hs.signals.Signal2D)
    assert np.array_equal(aligned.average.data, ref.average)
    assert np.array_equal(aligned.drift["dx"], ref.drift["dx"])
    for ax in aligned.average.axes_manager.signal_axes:
        assert ax.scale == pytest.approx(0.0125) and ax.units == "nm" and ax.offset == pytest.approx(-0.4)
    assert aligned.average.data.shape == lattice_frames.shape[1:]


def test_a_lazy_stack_is_registered_a_frame_at_a_time(lattice_frames):
    s = stack_signal(lattice_frames).as_lazy()
    aligned = dhs.align(s, threads=2)
    ref = driftscan.register(lattice_frames, threads=2)
    assert np.array_equal(aligned.drift["dx"], ref.drift["dx"])
    assert np.array_equal(aligned.average.data, ref.average)
    assert aligned.average.axes_manager.signal_axes[0].units == "nm"


def test_apply_to_a_4d_stem_scan(lattice_frames):
    r = driftscan.register(lattice_frames, threads=2)
    n, h, w = lattice_frames.shape
    pattern = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    scan = hs.signals.Signal2D(lattice_frames[..., None, None] * pattern)  # (frames, y, x | ky, kx)
    for ax in scan.axes_manager.signal_axes:
        ax.scale, ax.units = 0.5, "1/nm"
    out = dhs.apply(scan, r, memory_mb=1)  # bands of rows, every channel
    by_channels = dhs.apply(scan, r, memory_mb=0.05)  # too small for 16 rows: chunks of channels, whole frames
    assert np.allclose(by_channels.data, out.data, rtol=1e-6, atol=1e-5)
    assert out.data.shape == (h, w, 3, 4)
    assert out.axes_manager.signal_axes[0].units == "1/nm" and out.axes_manager.navigation_dimension == 2
    full = r.coverage == r.coverage.max()
    assert np.allclose(out.data[..., 2, 3][full], pattern[2, 3] * r.average[full], rtol=2e-5, atol=2e-5)


def spectrum_image(frames, channels):
    """(frames, y, x, channels): channel c is the frame times (c + 1)."""
    return frames[..., None] * np.arange(1, channels + 1, dtype=np.float32)


@pytest.mark.parametrize("lazy", [False, True])
def test_apply_to_a_spectrum_image(lattice_frames, lazy):
    r = driftscan.register(lattice_frames, threads=2)
    si = hs.signals.Signal1D(spectrum_image(lattice_frames, 6))
    si.axes_manager.signal_axes[0].scale, si.axes_manager.signal_axes[0].units = 5.0, "eV"
    si.axes_manager.signal_axes[0].offset = 100.0
    nav = si.axes_manager.navigation_axes  # x, y, frame (HyperSpy lists navigation axes x first)
    for ax in nav[:2]:
        ax.scale, ax.units = 0.0125, "nm"
    if lazy:
        si = si.as_lazy()
    out = dhs.apply(si, r)
    assert out.data.shape == lattice_frames.shape[1:] + (6,)
    e = out.axes_manager.signal_axes[0]
    assert e.scale == 5.0 and e.units == "eV" and e.offset == 100.0
    assert out.axes_manager.navigation_axes[0].scale == pytest.approx(0.0125)
    # Channel c is the aligned average times (c + 1), where every frame covered the pixel.
    full = r.coverage == r.coverage.max()
    for c in range(6):
        assert np.allclose(out.data[..., c][full], (c + 1) * r.average[full], rtol=2e-5, atol=2e-5)


def test_apply_to_another_detector(lattice_frames):
    r = driftscan.register(lattice_frames, threads=2)
    other = stack_signal(lattice_frames * 2.0)
    out = r.apply(other)
    assert np.allclose(out.data, 2.0 * r.average, rtol=1e-5, atol=1e-5)
    assert out.axes_manager.signal_axes[0].units == "nm"
