"""Progress of a run: the engine's progress events (docs/protocol.md) to a
bar, or to a callable of the user's.

``progress=True`` shows a bar — tqdm's when tqdm is installed (a widget in
Jupyter with ipywidgets 7 or later, text otherwise), else a line redrawn on
stderr. A callable receives each event as a dict:
``{"event": "progress", "phase": "scan", "done": 40, "total": 199,
"elapsed_s": 0.8, "eta_s": 3.2}``, ``{"event": "log", "level": "warning",
"message": ...}``, ...
"""
import sys


class _TextBar:
    def __init__(self):
        self.width = 0

    def show(self, phase, done, total, eta):
        frac = done / total if total else 0.0
        bar = "#" * int(30 * frac)
        line = f"\r{phase:>12} [{bar:<30}] {done}/{total}" + (f" ETA {eta:.0f} s" if eta else "")
        sys.stderr.write(line.ljust(self.width))
        self.width = len(line)
        sys.stderr.flush()

    def close(self):
        if self.width:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Bar:
    """A callable that draws the events as a bar, one per phase."""

    def __init__(self):
        try:
            try:  # a widget in Jupyter needs ipywidgets (7 or later: nbclient and JupyterLab speak its protocol)
                import ipywidgets
                if int(ipywidgets.__version__.split(".")[0]) < 7:
                    raise ImportError
                from tqdm.auto import tqdm
            except (ImportError, ValueError):
                from tqdm.std import tqdm  # text, in a terminal and in a notebook's output alike
            self._tqdm = tqdm
        except ImportError:
            self._tqdm = None
        self._bar = None
        self._text = None
        self._phase = None

    def __call__(self, event):
        kind = event.get("event")
        if kind == "progress":
            phase, done, total = event.get("phase", ""), event.get("done", 0), event.get("total", 0)
            if self._tqdm is not None:
                if phase != self._phase:
                    self._close_tqdm()
                    self._bar = self._tqdm(total=total, desc=phase, leave=False)
                self._bar.n = done
                self._bar.refresh()
            else:
                self._text = self._text or _TextBar()
                self._text.show(phase, done, total, event.get("eta_s"))
            self._phase = phase
        elif kind == "log" and event.get("level") == "warning":
            self._write("warning: " + event.get("message", ""))
        elif kind in ("result", "error", "cancelled"):
            self.close()

    def _write(self, text):
        if self._tqdm is not None:
            self._tqdm.write(text, file=sys.stderr)
        else:
            sys.stderr.write(text + "\n")

    def _close_tqdm(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self):
        self._close_tqdm()
        if self._text is not None:
            self._text.close()
            self._text = None


def callback(progress):
    """The callable for a `progress=` argument (None: no events)."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return Bar()
    if callable(progress):
        return progress
    raise ValueError("progress: True, False, None or a callable taking an event dict")
