#!/usr/bin/env python3
"""Writes a small multi-page Deflate-compressed uint16 TIFF (one strip a
page) of a drifting lattice, for the fault tests; with --corrupt K the
compressed strip of frame K is made undecodable (an invalid Deflate block
type) while every page's directory stays intact, so the series opens and only
a read of frame K fails. Usage: deflate_series.py OUT.tif FRAMES SIZE [--corrupt K]"""
import math
import struct
import sys
import zlib

out, frames, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
corrupt = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--corrupt" else -1


def page(k):
    dx, dy = 0.3 * k, 0.2 * k
    px = []
    for y in range(size):
        for x in range(size):
            v = 1000 + 400 * math.cos(2 * math.pi * (x + dx) / 9) * math.cos(2 * math.pi * (y + dy) / 9)
            px.append(int(v))
    return struct.pack(f"<{size * size}H", *px)


data = bytearray(b"II*\0\0\0\0\0")
previous_next = 4  # where the offset of the next IFD goes
for k in range(frames):
    strip = bytearray(zlib.compress(page(k)))
    if k == corrupt:
        strip[2:] = b"\xff" * (len(strip) - 2)  # BTYPE 11: invalid
    strip_at = len(data)
    data += strip
    if len(data) % 2:
        data += b"\0"
    ifd_at = len(data)
    struct.pack_into("<I", data, previous_next, ifd_at)
    tags = [(256, 4, size), (257, 4, size), (258, 3, 16), (259, 3, 8), (262, 3, 1), (273, 4, strip_at),
            (277, 3, 1), (278, 4, size), (279, 4, len(strip)), (284, 3, 1), (339, 3, 1)]
    data += struct.pack("<H", len(tags))
    for tag, kind, value in tags:
        data += struct.pack("<HHII", tag, kind, 1, value) if kind == 4 else struct.pack("<HHIHH", tag, kind, 1, value, 0)
    previous_next = len(data)
    data += b"\0\0\0\0"
open(out, "wb").write(bytes(data))
