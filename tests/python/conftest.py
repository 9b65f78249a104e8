"""Shared fixtures of the Python package's tests (run by CTest through
pytest with PYTHONPATH=BUILD/python; see tests/CMakeLists.txt)."""
import os
import subprocess

import numpy as np
import pytest

BIN = os.environ.get("DRIFTSCAN_BIN", "")
ENGINE = os.path.join(BIN, "driftscan-engine")


def sample_data_folder():
    return os.environ.get("DRIFTSCAN_SAMPLE_DATA") or os.environ.get("DRIFTSCAN_SAMPLE_DATA_CONFIGURED", "")


def sample_file(name):
    """The path of a sample-data file, or a skip naming it."""
    path = os.path.join(sample_data_folder(), name)
    if not os.path.exists(path):
        pytest.skip(f"sample data absent: {path} (set DRIFTSCAN_SAMPLE_DATA to the sample-data folder to run this test)")
    return path


def engine(*args, check=True):
    """Runs driftscan-engine; returns the completed process."""
    p = subprocess.run([ENGINE, "--progress", "plain", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"driftscan-engine {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


@pytest.fixture(scope="session")
def lattice(tmp_path_factory):
    """A 24-frame 96x96 synthetic lattice series (its folder: series.tif, series_truth.csv)."""
    folder = tmp_path_factory.mktemp("lattice")
    engine("synth", "--frames", "24", "--width", "96", "--height", "96", "--seed", "3", "-o", str(folder))
    return folder


@pytest.fixture(scope="session")
def lattice_frames(lattice):
    import driftscan
    return np.asarray(driftscan.read(str(lattice / "series.tif")))
