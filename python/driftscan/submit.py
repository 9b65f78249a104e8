"""Runs on a launch profile — local mpirun over several ranks, a host over
ssh, a Slurm queue — through the launcher library, exactly as the app
starts them. Profiles: the launcher's profiles file (see the README), or
the built-in "local"."""
import json
import os
import shutil
import tempfile

from . import _engine
from . import job as jobs
from .inputs import source as _source
from .progress import callback as _callback
from .result import Result


def engine_path():
    """The driftscan-engine a local profile runs: $DRIFTSCAN_ENGINE, this
    build's (BUILD/bin, beside BUILD/python), the installed one
    (PREFIX/bin), then the PATH's."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("DRIFTSCAN_ENGINE", ""),
                  os.path.join(here, "..", "..", "bin", "driftscan-engine"),
                  os.path.join(here, "..", "..", "..", "..", "bin", "driftscan-engine"),
                  shutil.which("driftscan-engine") or ""]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return os.path.normpath(c)
    return "driftscan-engine"


class Submission:
    """A run started on a profile: ``progress()`` (the latest progress
    event), ``events()``, ``cancel()``, ``done()``, ``result()`` (waits;
    the Result read from the results folder)."""

    def __init__(self, profile, job, ranks=None, threads=None, progress=None, axes=None, owned=False):
        self._job = job
        self._folder = job["output"]
        self._owned = owned
        self._axes = axes
        self._callback = _callback(progress)
        self._last_progress = None
        self._log = []
        self._outcome = None
        spec = json.dumps(profile) if isinstance(profile, dict) else str(profile)
        self._run = _engine.Submission(spec, json.dumps(job), engine_path(), int(ranks or 0), int(threads or 0))

    def _drain(self):
        for text in self._run.events():
            e = json.loads(text)
            if e.get("event") == "progress":
                self._last_progress = e
            elif e.get("event") == "log":
                self._log.append(e)
            if self._callback is not None:
                self._callback(e)

    def events(self):
        """Log events seen so far (dicts)."""
        self._drain()
        return list(self._log)

    def progress(self):
        """The latest progress event (dict: phase, done, total, eta_s), or None."""
        self._drain()
        return self._last_progress

    def cancel(self):
        """Asks the run to stop (the engine stops at its next unit of work)."""
        self._run.cancel()

    def done(self):
        return self._run.finished()

    def wait(self, timeout=None):
        """Waits for the end (Ctrl-C cancels the run, then raises); the
        launcher's outcome as a dict, or None when `timeout` passed first."""
        try:
            while self._outcome is None:
                step = 0.1 if timeout is None else min(0.1, max(0.0, timeout))
                self._outcome = self._run.wait(step)
                self._drain()
                if timeout is not None:
                    timeout -= step
                    if timeout <= 0 and self._outcome is None:
                        return None
        except KeyboardInterrupt:
            self._run.cancel()
            self._outcome = self._run.wait(-1)
            self._drain()
            raise
        self._drain()
        return self._outcome

    def result(self):
        """The Result (waits for the end). The engine's error as the
        exception of its kind (ValueError, RuntimeError, KeyboardInterrupt)."""
        out = self.wait()
        code = out["exit_code"]
        if out["status"] == "done":
            return Result(self._folder, owned=self._owned, axes=self._axes, input_name=self._job.get("input", ""))
        message = out["message"] or f"the run ended with code {code}"
        if code == 2:
            raise ValueError(message)
        if code == 4 or out["status"] == "cancelled":
            raise KeyboardInterrupt(message)
        if code == 5:
            raise _engine.RegistrationFailed(message)
        raise RuntimeError(message)


def submit(path, profile="local", *, ranks=None, threads=None, output=None, progress=None, **fields):
    """Starts ``register`` (or the job's ``command``) of the series at `path`
    on launch profile `profile` (a name from the profiles file, "local", or
    a profile as a dict); returns a Submission at once. `fields`: job fields
    by their JSON names, as for register(); `output`: the results folder
    (default: a temporary one, removed with the Result)."""
    src = _source(path)
    if not src.from_file:
        raise ValueError("submit: a file is needed (the run may be on another host); write the array first "
                         "(driftscan.write_series)")
    command = fields.pop("command", "register")
    settings = dict(fields)
    job = jobs.build(command, settings)
    owned = output is None
    job["input"] = os.path.abspath(src.path)
    job["output"] = os.path.abspath(output) if output else tempfile.mkdtemp(prefix="driftscan-")
    if src.signal:
        job["signal"] = src.signal
    if threads:
        job.setdefault("execution", {})["threads"] = int(threads)
    if ranks:
        job.setdefault("execution", {})["ranks"] = int(ranks)
    job = jobs.checked(job, "driftscan.submit")
    return Submission(profile, job, ranks=ranks, threads=threads, progress=progress, owned=owned)
