"""register() and average() in this process: the engine's serial executor
with OpenMP threads, no MPI in the interpreter."""
import errno
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np

from . import _engine
from . import job as jobs
from .inputs import source as _source
from .progress import Bar, callback as _callback
from .result import Result
from .submit import Submission
from .tables import write_drift_table


def default_threads():
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _close(cb):
    if isinstance(cb, Bar):
        cb.close()


def register(data, *, model="translation", scan_distortion=False, threads=None, progress=None, signal=None,
             output=None, **fields):
    """Registers a series and averages it; returns a Result.

    data: a path (any format the engine reads; `signal` picks one of a
    multi-signal file), a Series, a numpy array (frames, height, width) of
    any real dtype (read in place, memmaps included), or a HyperSpy
    Signal2D with one navigation axis (the outputs then are Signal2Ds with
    its axes). model: translation, rigid or affine. scan_distortion: the
    drift line by line (needs the scan timing: scan={"dwell": ...}, or one
    the file records). threads: OpenMP threads (default: every core).
    progress: True for a bar, or a callable taking each event dict.
    output: the results folder (default: a temporary one, removed with the
    Result). fields: any job field by its JSON name (pyramid_levels=4,
    method="median", exclude_frames=[3, 7], scan={"dwell": 2e-6}, ...).

    Runs the engine's serial executor in this process; a run whose plan
    needs another executor (the scan-distortion phase is the distributed
    executor's) is run by driftscan-engine on one rank through the
    launcher, with the same job."""
    src = _source(data, signal)
    if src.lazy is not None:  # a lazy HyperSpy stack: staged as a file, a frame at a time
        with tempfile.TemporaryDirectory(prefix="driftscan-input-") as staging:
            return register(src.staged(staging), model=model, scan_distortion=scan_distortion, threads=threads,
                            progress=progress, output=output, **fields)
    settings = dict(fields)
    settings["registration.model"] = model
    if scan_distortion:
        settings["scan.correct_distortion"] = True
    job = jobs.build("register", settings)
    threads = int(threads or default_threads())
    job.setdefault("execution", {})["threads"] = threads
    owned = output is None
    folder = tempfile.mkdtemp(prefix="driftscan-") if owned else os.path.abspath(os.fspath(output))
    job["input"] = os.path.abspath(src.path) if src.from_file else src.name
    job["output"] = folder
    if src.signal:
        job["signal"] = src.signal
    try:
        job = jobs.checked(job, "driftscan.register")
        plan = _engine.plan(json.dumps(job), src.from_file)
        if plan["executor"] == "serial":
            cb = _callback(progress)
            try:
                _engine.register(json.dumps(job), src.array, src.pixel_size, src.unit, cb)
            finally:
                _close(cb)
            return Result(folder, owned=owned, axes=src.axes, input_name=src.name)
        return _register_with_engine(src, json.loads(plan["job"]), threads, progress, owned)
    except BaseException:
        if owned:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _register_with_engine(src, job, threads, progress, owned):
    staged = None
    try:
        if not src.from_file:  # the engine reads a file: the frames, as float32 (what it reads them as)
            staged = tempfile.mkdtemp(prefix="driftscan-input-")
            job["input"] = os.path.join(staged, "series.tif")
            _engine.write_series(job["input"], src.array, src.pixel_size, src.unit)
        job.setdefault("execution", {})["ranks"] = 1
        run = Submission("local", job, ranks=1, threads=threads, progress=progress, axes=src.axes, owned=owned)
        return run.result()
    finally:
        if staged:
            shutil.rmtree(staged, ignore_errors=True)


@dataclass
class Average:
    """average()'s outcome."""
    average: object
    coverage: object
    quality: np.ndarray
    used: np.ndarray
    warnings: list = field(default_factory=list)
    sigma: object = None  # the standard error of each pixel of the average (sigma.tif's)


def drift_table_path(drift, folder):
    """A drift table's path for `drift`: a Result, a path, or a structured
    array (written into `folder`)."""
    if isinstance(drift, Result):
        return drift.files["drift.csv"]
    if isinstance(drift, (str, os.PathLike)):
        path = os.fspath(drift)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, f"{path}: no such drift table", path)
        return path
    path = os.path.join(folder, "drift.csv")
    write_drift_table(path, np.asarray(drift))
    return path


def average(data, drift, method="mean", *, threads=None, progress=None, signal=None, **fields):
    """Averages a series again with a given drift (a Result, a structured
    array with drift.csv's columns, or a drift.csv path): another method,
    excluded frames (exclude_frames=[...]), max_sigma, weights, ...
    Returns an Average (average, coverage, quality, used, warnings)."""
    src = _source(data, signal)
    if src.lazy is not None:
        with tempfile.TemporaryDirectory(prefix="driftscan-input-") as staging:
            return average(src.staged(staging), drift, method, threads=threads, progress=progress, **fields)
    settings = dict(fields)
    settings["averaging.method"] = method
    job = jobs.build("average", settings)
    threads = int(threads or default_threads())
    job.setdefault("execution", {})["threads"] = threads
    with tempfile.TemporaryDirectory(prefix="driftscan-") as tmp:
        job.setdefault("averaging", {})["drift"] = os.path.abspath(drift_table_path(drift, tmp))
        job["input"] = os.path.abspath(src.path) if src.from_file else src.name
        job["output"] = tmp
        if src.signal:
            job["signal"] = src.signal
        job = jobs.checked(job, "driftscan.average")
        cb = _callback(progress)
        try:
            out = _engine.average(json.dumps(job), src.array, src.pixel_size, src.unit, cb)
        finally:
            _close(cb)
    avg, cov, sigma = out["average"], out["coverage"], out["sigma"]
    if src.axes:
        from .hyperspy import to_signal2d
        avg, cov = to_signal2d(avg, src.axes, "average"), to_signal2d(cov, src.axes, "coverage")
        sigma = None if sigma is None else to_signal2d(sigma, src.axes, "sigma")
    return Average(avg, cov, np.asarray(out["quality"]), np.asarray(out["used"], dtype=bool), list(out["warnings"]),
                   sigma)


def synthesize(folder, *, progress=None, **fields):
    """Writes a synthetic series with known drift into `folder` (created):
    series.tif and its truth (series_truth.csv; series_lines_truth.csv when
    scanned). `fields`: the synth job's fields (frames, width, height,
    period, dose, drift_step, seed, ...; scan={"dwell": 2e-6} scans each
    frame line by line). Returns the paths written (dict)."""
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    job = jobs.build("synth", fields)
    job["output"] = os.path.abspath(folder)
    job = jobs.checked(job, "driftscan.synthesize")
    cb = _callback(progress)
    try:
        out = _engine.synth(json.dumps(job), os.path.join(folder, "series.tif"), cb)
    finally:
        _close(cb)
    return {k: v for k, v in out.items() if v}
