"""apply() on a memmap spectrum image several times larger than its memory
bound stays under it (peak resident memory measured in a process of its
own), and gives what an in-memory apply gives."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import driftscan

SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import driftscan
    path, n, h, w, c, bound = sys.argv[1], *map(int, sys.argv[2:7])
    si = np.memmap(path, dtype=np.float32, mode="r", shape=(n, h, w, c))
    r = driftscan.register(sys.argv[8], threads=2)  # the frames of the same scan, from their own file
    def peak_mb():  # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec)
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024.0
    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    before = rss_mb()
    out = r.apply(si, memory_mb=bound)
    peak = peak_mb()
    np.save(sys.argv[7], out)
    print(before, peak)
""")


def test_memmap_apply_stays_within_its_bound(lattice, lattice_frames, tmp_path):
    frames_file = lattice / "series.tif"
    n, h, w = lattice_frames.shape
    c = 256
    bound_mb = 24
    path = tmp_path / "si.raw"
    si = np.memmap(path, dtype=np.float32, mode="w+", shape=(n, h, w, c))
    for k in range(n):
        si[k] = lattice_frames[k][..., None] * np.linspace(1.0, 2.0, c, dtype=np.float32)
    si.flush()
    del si
    data_mb = os.path.getsize(path) / 2**20
    assert data_mb > 3 * bound_mb  # several times the bound
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(path), str(n), str(h), str(w), str(c), str(bound_mb),
                        str(tmp_path / "out.npy"), str(frames_file)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    before, peak = map(float, p.stdout.split())
    # The sums (h * w * c float64) are the output itself, not the data: the bound is on top of them.
    sums_mb = h * w * c * 8 / 2**20 + h * w * c * 4 / 2**20
    assert peak - before < bound_mb + sums_mb, f"peak {peak:.1f} MB, before {before:.1f} MB, data {data_mb:.0f} MB"
    out = np.load(tmp_path / "out.npy")
    r = driftscan.register(lattice_frames, threads=2)
    full = r.coverage == r.coverage.max()
    scale = np.linspace(1.0, 2.0, c, dtype=np.float32)
    for ch in (0, c // 2, c - 1):
        assert np.allclose(out[..., ch][full], scale[ch] * r.average[full], rtol=2e-5, atol=2e-5)
