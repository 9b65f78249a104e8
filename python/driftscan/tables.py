"""The CSV tables a run writes (drift.csv, lines.csv, line_field.csv,
quality.csv) as numpy structured arrays: one field per column, named as in
the header; integer columns as int64, numbers as float64 (empty: NaN), text
as str."""
import csv

import numpy as np


def _column(values):
    if all(v == "" for v in values):  # a text column with nothing in it (flags)
        return np.array(values, dtype="U1")
    try:
        return np.array([int(v) for v in values], dtype=np.int64)
    except ValueError:
        pass
    try:
        return np.array([float(v) if v != "" else np.nan for v in values], dtype=np.float64)
    except ValueError:
        return np.array(values, dtype=str)


def read_table(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise OSError(f"{path}: empty table")
    names, body = rows[0], rows[1:]
    columns = [_column([r[i] if i < len(r) else "" for r in body]) for i in range(len(names))]
    dtype = [(n, c.dtype) for n, c in zip(names, columns)]
    out = np.empty(len(body), dtype=dtype)
    for n, c in zip(names, columns):
        out[n] = c
    return out


def write_drift_table(path, drift):
    """A structured array with drift.csv's columns (frame, dx, dy, ...) as a drift.csv."""
    names = drift.dtype.names
    if names is None or not {"frame", "dx", "dy"} <= set(names):
        raise ValueError("drift: a structured array with at least the columns frame, dx, dy is needed "
                         "(a Result's .drift, or read from drift.csv)")
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names)
        for row in drift:
            w.writerow([repr(float(v)) if isinstance(v, (float, np.floating)) else v for v in row.tolist()])
