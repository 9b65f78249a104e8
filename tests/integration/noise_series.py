#!/usr/bin/env python3
"""Helper of test_registration_failure.sh, standard library only.

  noise_series.py OUT.tif FRAMES SIZE SEED   a uint16 multi-page TIFF of pure noise:
                                             every pixel uniform in 0..20, independent
"""
import random
import struct
import sys


def write_stack(path, frames, w, h):
    """Uncompressed little-endian uint16 TIFF, one IFD per frame."""
    out = bytearray(b"II*\0" + struct.pack("<I", 0))
    ifd_offsets = []
    for pixels in frames:
        data_at = len(out)
        out += struct.pack("<%dH" % (w * h), *pixels)
        if len(out) % 2:
            out += b"\0"
        ifd_offsets.append(len(out))
        tags = [(256, 4, 1, w), (257, 4, 1, h), (258, 3, 1, 16), (259, 3, 1, 1), (262, 3, 1, 1),
                (273, 4, 1, data_at), (277, 3, 1, 1), (278, 4, 1, h), (279, 4, 1, 2 * w * h), (339, 3, 1, 1)]
        out += struct.pack("<H", len(tags))
        for tag, typ, count, value in tags:
            out += struct.pack("<HHII", tag, typ, count, value)
        out += struct.pack("<I", 0)
    struct.pack_into("<I", out, 4, ifd_offsets[0])
    for a, b in zip(ifd_offsets, ifd_offsets[1:]):
        n = struct.unpack_from("<H", out, a)[0]
        struct.pack_into("<I", out, a + 2 + 12 * n, b)
    open(path, "wb").write(bytes(out))


def main():
    path, frames, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    write_stack(path, [[rng.randint(0, 20) for _ in range(size * size)] for _ in range(frames)], size, size)


if __name__ == "__main__":
    main()
