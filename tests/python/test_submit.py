"""Runs through the launcher: several ranks on the local profile, and the
scan-distortion correction (the distributed executor's phase) on one."""
import numpy as np
import pytest

import driftscan
from conftest import engine


def test_local_profile_over_two_ranks(lattice):
    series = str(lattice / "series.tif")
    run = driftscan.submit(series, "local", ranks=2, threads=1)
    r = run.result()
    assert r.report["execution"]["ranks"] == 2
    here = driftscan.register(series, threads=2)
    assert np.allclose(r.drift["dx"], here.drift["dx"], atol=1e-4)
    assert np.allclose(r.drift["dy"], here.drift["dy"], atol=1e-4)
    assert run.progress() is not None and run.done()


def test_a_bad_profile_is_named():
    with pytest.raises(ValueError, match="no-such-cluster"):
        driftscan.submit(__file__, "no-such-cluster")


def test_scan_distortion_matches_command_line(tmp_path):
    synth = tmp_path / "raster"
    engine("synth", "--frames", "8", "--width", "96", "--height", "96", "--seed", "5", "--scan-dwell", "2e-6",
           "--jitter", "0.3", "-o", str(synth))
    series = str(synth / "series.tif")
    cli = tmp_path / "cli"
    engine("register", series, "--scan-distortion", "--scan-dwell", "2e-6", "-o", str(cli), "--threads", "2")
    events = []
    r = driftscan.register(series, scan_distortion=True, scan={"dwell": 2e-6}, threads=2, progress=events.append)
    assert open(r.files["drift.csv"]).read() == open(cli / "drift.csv").read()
    assert open(r.files["lines.csv"]).read() == open(cli / "lines.csv").read()
    assert np.array_equal(r.average, np.asarray(driftscan.read(str(cli / "average.tif"))[0]))
    assert r.lines is not None and len(r.lines) == 8 * 96
    assert any(e.get("phase") == "distortion" for e in events if e["event"] == "progress")
