#!/usr/bin/env python3
"""Helpers of test_formats_apply_to.sh and test_formats_spectrum.sh, standard library only.

  formats_tool.py dm4 SERIES.tif FRAMES OUT.dm4   a DM4 file with three signals of the series:
                                                 HAADF = v, ABF = 1000 - v, "EDX Fe" = 2 v (float32)
  formats_tool.py dm4-spectrum OUT.dm4 DIMS       a DM4 holding an EELS spectrum of 2048 channels
                                                 (0.5 eV each), Dimensions DIMS ("2048" or "2048x1")
  formats_tool.py compare A.tif B.tif COV.tif SCALE OFFSET
                                                 max |B - (SCALE A + OFFSET)| where COV > 0
Reads the uncompressed stacks driftscan's TIFF writer makes (frames back to back after IFD 0).
"""
import struct
import sys


def read_tiff(path, frames=1):
    b = open(path, "rb").read()
    assert b[:4] == b"II*\0", path + ": not a little-endian classic TIFF"
    ifd = struct.unpack_from("<I", b, 4)[0]
    n = struct.unpack_from("<H", b, ifd)[0]
    tags = {}
    for i in range(n):
        tag, typ, count, value = struct.unpack_from("<HHII", b, ifd + 2 + 12 * i)
        if typ == 3 and count == 1:
            value &= 0xFFFF
        if count > 1 and tag == 273:
            value = struct.unpack_from("<I", b, value)[0]
        tags[tag] = value
    w, h, bps = tags[256], tags[257], tags[258]
    fmt = tags.get(339, 1)
    code = {(16, 1): "H", (32, 3): "f", (8, 1): "B", (32, 1): "I"}[(bps, fmt)]
    count = w * h * frames
    return w, h, list(struct.unpack_from("<%d%s" % (count, code), b, tags[273]))


def be(n, size):
    return n.to_bytes(size, "big")


# DM4 tags (big-endian header counts, little-endian data).
def entry(kind, name):
    return bytes([kind]) + be(len(name), 2) + name.encode() + be(0, 8)


def group(name, children):
    return entry(20, name) + b"\0\1" + be(len(children), 8) + b"".join(children)


def data(name, info, value):
    return entry(21, name) + b"%%%%" + be(len(info), 8) + b"".join(be(i, 8) for i in info) + value


def long(name, x):
    return data(name, [3], struct.pack("<i", x))


def text(name, s):
    return data(name, [20, 4, len(s)], b"".join(struct.pack("<H", ord(c)) for c in s))


def dm_image(name, values, dims, scale, unit):
    """A float32 image of ImageList with its Dimensions and calibration."""
    cal = group("", [data("Scale", [6], struct.pack("<f", scale)), text("Units", unit)])
    pixels = struct.pack("<%df" % len(values), *values)
    return group("", [group("ImageData", [
        data("Data", [20, 6, len(values)], pixels), long("DataType", 2),
        group("Dimensions", [long("", d) for d in dims]),
        group("Calibrations", [group("Dimension", [cal] * len(dims))])]), text("Name", name)])


def write_dm4(out, images):
    body = group("ImageList", images)
    head = be(4, 4) + be(0, 8) + be(1, 4) + b"\0\1" + be(1, 8)
    open(out, "wb").write(head + body)


def dm4(series, frames, out):
    w, h, v = read_tiff(series, frames)
    dims = [w, h, frames]
    images = [dm_image("HAADF", v, dims, 0.05, "nm"), dm_image("ABF", [1000.0 - x for x in v], dims, 0.05, "nm"),
              dm_image("EDX Fe", [2.0 * x for x in v], dims, 0.05, "nm")]
    write_dm4(out, images)


def dm4_spectrum(out, dims):
    """An EELS spectrum of 2048 channels, 0.5 eV each, as DigitalMicrograph saves it."""
    values = [float(100 + (k % 64)) for k in range(2048)]
    write_dm4(out, [dm_image("EELS Spectrum", values, dims, 0.5, "eV")])


def compare(a, b, cov, scale, offset):
    _, _, va = read_tiff(a)
    _, _, vb = read_tiff(b)
    _, _, vc = read_tiff(cov)
    worst = 0.0
    for x, y, c in zip(va, vb, vc):
        if c > 0:
            worst = max(worst, abs(y - (scale * x + offset)))
    print("%.6g" % worst)


if __name__ == "__main__":
    if sys.argv[1] == "dm4":
        dm4(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "dm4-spectrum":
        dm4_spectrum(sys.argv[2], [int(d) for d in sys.argv[3].split("x")])
    else:
        compare(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6]))
