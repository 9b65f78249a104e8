"""Ctrl-C (SIGINT, a KeyboardInterrupt) cancels a run within a second and
raises; the interpreter lives on and leaves no output that looks complete."""
import os
import signal
import subprocess
import sys
import textwrap
import time

SCRIPT = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import driftscan
    rng = np.random.default_rng(1)
    y, x = np.mgrid[0:256, 0:256]
    pattern = 3 * (np.sin(x / 3.0) + np.cos(y / 4.0) + np.sin((x + y) / 7.0))
    frames = (rng.normal(size=(400, 256, 256)) + pattern[None]).astype(np.float32)
    out = sys.argv[1]
    started = {"t": None}
    def first(e):
        if started["t"] is None and e.get("phase") == "pairs":
            started["t"] = time.time()
            print("running", flush=True)
    try:
        driftscan.register(frames, threads=1, progress=first, output=out)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted %.3f" % time.time(), flush=True)
    # the interpreter still works, and so does the engine
    r = driftscan.register(sys.argv[2], threads=1)
    print("alive", len(r.drift), os.path.exists(os.path.join(out, "drift.csv")), flush=True)
""")


def test_keyboard_interrupt_cancels_within_a_second(tmp_path, lattice):
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "out"), str(lattice / "series.tif")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    assert line.strip() == "running", line + p.stderr.read()
    time.sleep(0.3)
    sent = time.time()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    lines = out.split("\n")
    assert lines[0].startswith("interrupted"), out + err
    assert float(lines[0].split()[1]) - sent < 1.0
    assert lines[1] == "alive 24 False", out + err
    assert p.returncode == 0
