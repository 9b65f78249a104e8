"""The package runs the engine's own code: its outputs equal the command
line's on the same frames and settings."""
import filecmp
import os
import subprocess

import numpy as np
import pytest

import driftscan
from conftest import BIN, engine


def same_file(a, b):
    return filecmp.cmp(a, b, shallow=False)


@pytest.mark.parametrize("settings, flags", [
    ({}, []),
    ({"method": "median", "pyramid_levels": 2}, ["--method", "median", "--pyramid-levels", "2"]),
    ({"model": "rigid", "exclude_frames": [4, 9]}, ["--model", "rigid", "--exclude", "4,9"]),
])
def test_register_matches_command_line(lattice, lattice_frames, tmp_path, settings, flags):
    series = str(lattice / "series.tif")
    cli = tmp_path / "cli"
    engine("register", series, "-o", str(cli), "--threads", "2", *flags)
    from_file = driftscan.register(series, threads=2, **settings)
    from_array = driftscan.register(lattice_frames, threads=2, **settings)
    for r in (from_file, from_array):
        assert same_file(r.files["drift.csv"], cli / "drift.csv")
        cli_average = np.asarray(driftscan.read(str(cli / "average.tif"))[0])
        assert np.array_equal(r.average, cli_average)
        assert np.array_equal(r.coverage, np.asarray(driftscan.read(str(cli / "coverage.tif"))[0]))
        assert np.array_equal(r.sigma, np.asarray(driftscan.read(str(cli / "sigma.tif"))[0]), equal_nan=True)
    # The structured array holds drift.csv's columns and numbers (to its six decimals).
    text = np.genfromtxt(cli / "drift.csv", delimiter=",", names=True)
    assert np.allclose(from_array.drift["dx"], text["dx"], atol=5e-7)
    assert {"frame", "dx", "dy", "sigma_dx", "sigma_dy", "cov_dxdy", "used"} <= set(from_array.drift.dtype.names)
    saved = from_array.save(tmp_path / "saved")
    for name in ("drift.csv", "average.tif", "coverage.tif"):
        assert same_file(os.path.join(saved, name), cli / name)


@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.float64])
def test_any_real_dtype_and_layout(lattice_frames, dtype):
    scaled = (lattice_frames * 100).astype(dtype)
    ref = driftscan.register(scaled.astype(np.float32), threads=2)
    r = driftscan.register(scaled, threads=2)
    assert np.array_equal(r.drift["dx"], ref.drift["dx"])
    # The same frames in Fortran order (other strides, read in place) register the same.
    fortran = np.asfortranarray(scaled)
    assert np.array_equal(driftscan.register(fortran, threads=2).drift["dy"], ref.drift["dy"])


def test_average_again_matches_command_line(lattice, tmp_path):
    series = str(lattice / "series.tif")
    first = driftscan.register(series, threads=2)
    cli = tmp_path / "again"
    engine("average", series, "--drift", first.files["drift.csv"], "--method", "clipped", "--exclude", "2,3",
           "-o", str(cli), "--threads", "2")
    for drift in (first, first.files["drift.csv"], first.drift):
        again = driftscan.average(series, drift, "clipped", exclude_frames=[2, 3], threads=2)
        assert np.array_equal(again.average, np.asarray(driftscan.read(str(cli / "average.tif"))[0]))
        # sigma.tif is NaN where fewer than 2 frames covered; the engine's reader serves NaN as 0
        assert np.array_equal(np.nan_to_num(again.sigma, nan=0.0), np.asarray(driftscan.read(str(cli / "sigma.tif"))[0]))
        assert not again.used[2] and not again.used[3] and again.used[4]


def test_progress_events_reach_a_callable(lattice_frames):
    events = []
    driftscan.register(lattice_frames, threads=1, progress=events.append)
    phases = {e.get("phase") for e in events if e["event"] == "progress"}
    assert {"pairs", "scan", "average"} <= phases
    assert events[0]["event"] == "start" and events[-1]["event"] == "result"


def test_synthesize_writes_what_synth_writes(tmp_path):
    engine("synth", "--frames", "5", "--width", "64", "--height", "48", "--seed", "9", "--scan-dwell", "1e-6",
           "-o", str(tmp_path / "cli"))
    made = driftscan.synthesize(tmp_path / "py", frames=5, width=64, height=48, seed=9, scan={"dwell": 1e-6})
    for key in ("series", "truth", "lines_truth"):
        name = os.path.basename(made[key])
        assert same_file(made[key], tmp_path / "cli" / name), name


def test_scan_rotations_from_the_file_as_the_command_line_takes_them(tmp_path):
    # A Velox series whose frames' metadata record an orthogonal pair cycle:
    # both take scan.rotation 0,90 from it, and register the same.
    emd = tmp_path / "pairs.emd"
    subprocess.run([os.path.join(BIN, "velox_scanned_series"), str(emd), "--frames", "6", "--size", "96",
                    "--scan-rotation", "0,90"], check=True, stdout=subprocess.DEVNULL)
    cli = tmp_path / "cli"
    engine("register", str(emd), "-o", str(cli), "--threads", "2", "--auto-scan-distortion", "off")
    r = driftscan.register(str(emd), threads=2, **{"scan.auto_distortion": False})
    assert r.report["job"]["scan"]["rotation"] == [0, 90]
    assert same_file(r.files["drift.csv"], cli / "drift.csv")
    assert np.array_equal(r.average, np.asarray(driftscan.read(str(cli / "average.tif"))[0]))
