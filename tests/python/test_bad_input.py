"""Each bad input raises the exception of its kind with the engine's
one-line message; the interpreter lives on."""
import numpy as np
import pytest

import driftscan


def test_a_single_frame(lattice_frames):
    with pytest.raises(ValueError, match=r"1 frame\(s\): registration needs at least 2 frames"):
        driftscan.register(lattice_frames[:1])


def test_nan_reference_frame(lattice_frames):
    bad = lattice_frames.copy()
    bad[0, :, :] = np.nan
    with pytest.raises(ValueError, match="frame 0"):
        driftscan.register(bad)


def test_not_a_series():
    with pytest.raises(ValueError, match="frames, height, width"):
        driftscan.register(np.zeros((4, 8, 8, 2), np.float32))
    with pytest.raises(ValueError, match="complex"):
        driftscan.register(np.zeros((4, 8, 8), np.complex64))


def test_mismatched_shapes(lattice_frames):
    with pytest.raises(ValueError):
        driftscan.register([lattice_frames[0], lattice_frames[1][:50]])


def test_a_drift_of_another_series(lattice_frames):
    r = driftscan.register(lattice_frames, threads=2)
    with pytest.raises(ValueError, match="frames, but"):
        driftscan.average(lattice_frames[:10], r)


def test_settings_named_in_the_message(lattice_frames):
    with pytest.raises(ValueError, match="pyramid_levels"):
        driftscan.register(lattice_frames, pyramid_levels=0)
    with pytest.raises(ValueError, match="no job field"):
        driftscan.register(lattice_frames, pyramid_levelz=2)
    with pytest.raises(ValueError, match="method"):
        driftscan.register(lattice_frames, method="mode")


def test_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        driftscan.read(tmp_path / "absent.tif")
    with pytest.raises(FileNotFoundError):
        driftscan.register(str(tmp_path / "absent.tif"))
    corrupt = tmp_path / "corrupt.tif"
    corrupt.write_bytes(b"II*\x00" + b"\x07" * 100)
    with pytest.raises(OSError, match="corrupt.tif"):
        driftscan.read(corrupt)
    text = tmp_path / "notes.txt"
    text.write_text("not an image\n")
    with pytest.raises(OSError, match="notes.txt"):
        driftscan.register(str(text))


def test_truncated_tiff(lattice, tmp_path):
    data = (lattice / "series.tif").read_bytes()
    cut = tmp_path / "cut.tif"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(OSError, match="cut.tif"):
        s = driftscan.read(cut)
        np.asarray(s)
    assert (lattice / "series.tif").read_bytes() == data  # inputs are never modified
