#!/usr/bin/env python3
"""The Python package against the command line, and apply()'s memory.

Prints, for each series, the wall time of driftscan.register() in this
interpreter against `driftscan-engine register` on the same file with the
same threads (the whole command, start-up included; median of --repeat
runs), and for memmap spectrum images of several sizes the peak resident
memory of apply() (in a process of its own) against the data's size.

  PYTHONPATH=build/python /usr/bin/python3 python/bench/bench_python.py [--threads 2] [--repeat 3]
      [--series 200x256,40x512,20x1024] [--apply-gb 0.25,1,4] [--memory-mb 256]
Writes only into a temporary folder of its own (removed at the end).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import driftscan
from driftscan.submit import engine_path

APPLY = textwrap.dedent("""
    import resource, sys, time
    import numpy as np
    import driftscan
    path, n, h, w, c, bound = sys.argv[1], *map(int, sys.argv[2:7])
    si = np.memmap(path, dtype=np.float32, mode="r", shape=(n, h, w, c))
    r = driftscan.register(sys.argv[8], threads=int(sys.argv[7]))  # the HAADF frames of the same scan
    def peak_mb():  # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec)
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024.0
    with open("/proc/self/statm") as f:
        before = int(f.read().split()[1]) * resource.getpagesize() / 2**20
    t = time.time()
    out = r.apply(si, memory_mb=bound, threads=int(sys.argv[7]))
    print(before, peak_mb(), time.time() - t, out.nbytes / 2**20)
""")


def timed_cli(series, out, threads):
    t = time.perf_counter()
    p = subprocess.run([engine_path(), "--progress", "plain", "register", series, "-o", out, "--threads",
                        str(threads)], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"bench_python: driftscan-engine failed: {p.stderr.strip().splitlines()[-1]}")
    return time.perf_counter() - t


def timed_python(series, threads):
    t = time.perf_counter()
    r = driftscan.register(series, threads=threads)
    return time.perf_counter() - t, r


def compare(tmp, frames, size, threads, repeat):
    folder = os.path.join(tmp, f"s{frames}x{size}")
    series = driftscan.synthesize(folder, frames=frames, width=size, height=size, seed=2)["series"]
    cli, py = [], []
    for i in range(repeat):  # interleaved, so that a disturbance hits both
        cli.append(timed_cli(series, os.path.join(tmp, "cli"), threads))
        seconds, r = timed_python(series, threads)
        py.append(seconds)
    same = open(r.files["drift.csv"]).read() == open(os.path.join(tmp, "cli", "drift.csv")).read()
    c, p = statistics.median(cli), statistics.median(py)
    print(f"register {frames} x {size}x{size}, {threads} thread(s): command line {c:.3f} s, Python {p:.3f} s, "
          f"Python/command line {p / c:.3f}; drift.csv identical: {same}", flush=True)


def apply_memory(tmp, gigabytes, bound, threads):
    n, h, w = 20, 128, 128
    c = max(1, int(gigabytes * 2**30 / (n * h * w * 4)))
    path = os.path.join(tmp, "si.raw")
    series = driftscan.synthesize(os.path.join(tmp, "si"), frames=n, width=w, height=h, seed=4)["series"]
    frames = np.asarray(driftscan.read(series))
    si = np.memmap(path, dtype=np.float32, mode="w+", shape=(n, h, w, c))
    ramp = np.linspace(1.0, 2.0, c, dtype=np.float32)
    for k in range(n):
        si[k] = frames[k][..., None] * ramp
    si.flush()
    del si
    data_mb = os.path.getsize(path) / 2**20
    p = subprocess.run([sys.executable, "-c", APPLY, path, str(n), str(h), str(w), str(c), str(bound), str(threads),
                        series],
                       capture_output=True, text=True)
    os.unlink(path)
    if p.returncode:
        sys.exit(f"bench_python: apply failed: {p.stderr.strip().splitlines()[-1]}")
    before, peak, seconds, out_mb = map(float, p.stdout.split())
    print(f"apply memmap {n} x {h}x{w} x {c} channels ({data_mb:.0f} MB): peak resident {peak:.0f} MB "
          f"({peak - before:.0f} MB above the {before:.0f} MB before apply; the output {out_mb:.0f} MB and its sums "
          f"{2 * out_mb:.0f} MB, memory_mb {bound}: bound {3 * out_mb + bound:.0f} MB), {seconds:.1f} s, "
          f"{data_mb / seconds:.0f} MB/s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--series", default="200x256,40x512,20x1024",
                    help="register comparisons: FRAMESxSIZE,... (empty: none)")
    ap.add_argument("--apply-gb", default="0.25,1,4", help="sizes of the memmap spectrum images (GB)")
    ap.add_argument("--memory-mb", type=int, default=256, help="apply()'s bound on the chunks in hand")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-python-")
    try:
        print(f"driftscan {driftscan.__version__}, engine {engine_path()}, {os.cpu_count()} cores", flush=True)
        for item in (x for x in a.series.split(",") if x):
            frames, size = map(int, item.split("x"))
            compare(tmp, frames, size, a.threads, a.repeat)
        for gb in (float(x) for x in a.apply_gb.split(",") if x):
            apply_memory(tmp, gb, a.memory_mb, a.threads)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
