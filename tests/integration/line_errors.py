#!/usr/bin/env python3
"""How far a scan-distortion run's lines are from the synthetic truth.

    line_errors.py RUN_FOLDER LINES_TRUTH.csv

Prints one line of five values, in this order (for `read` in the integration scripts):
  corrected  RMS of the per-line drift error of RUN_FOLDER/lines.csv (px; the
             mean difference removed: a common offset is a gauge, not an error)
  rigid      the same for one shift per frame (RUN_FOLDER/drift.csv)
  jitter     RMS jitter error, each frame's mean true jitter removed (it is
             drift to any estimate)
  zero       the same for an estimate of 0 (the jitter's own RMS)
  angles     the frames' scan angles in lines.csv, comma-separated (none
             without an angle_deg column)
"""
import collections
import csv
import math
import sys


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def drift_rms(estimates, truth):
    ex = [e[0] - float(t["dx"]) for e, t in zip(estimates, truth)]
    ey = [e[1] - float(t["dy"]) for e, t in zip(estimates, truth)]
    mx, my = sum(ex) / len(ex), sum(ey) / len(ey)
    return math.sqrt(sum((a - mx) ** 2 + (b - my) ** 2 for a, b in zip(ex, ey)) / len(ex))


def main():
    run, truth_path = sys.argv[1], sys.argv[2]
    lines, truth = rows(f"{run}/lines.csv"), rows(truth_path)
    if len(lines) != len(truth):
        sys.exit(f"{run}/lines.csv has {len(lines)} lines, {truth_path} {len(truth)}")
    corrected = drift_rms([(float(r["dx"]), float(r["dy"])) for r in lines], truth)
    by_frame = {int(r["frame"]): (float(r["dx"]), float(r["dy"])) for r in rows(f"{run}/drift.csv")}
    rigid = drift_rms([by_frame[int(r["frame"])] for r in lines], truth)
    frames = collections.defaultdict(list)
    for e, t in zip(lines, truth):
        frames[e["frame"]].append((float(e["jitter"]), float(t["jitter"])))
    err = zero = n = 0.0
    for pairs in frames.values():
        m = sum(t for _, t in pairs) / len(pairs)
        for e, t in pairs:
            err, zero, n = err + (e - (t - m)) ** 2, zero + (t - m) ** 2, n + 1
    angles = sorted({r["angle_deg"] for r in lines}, key=float) if "angle_deg" in lines[0] else ["none"]
    print(f"{corrected:.6f} {rigid:.6f} {math.sqrt(err / n):.6f} {math.sqrt(zero / n):.6f} {','.join(angles)}")


if __name__ == "__main__":
    main()
