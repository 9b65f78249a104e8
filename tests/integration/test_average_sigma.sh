#!/usr/bin/env bash
# sigma.tif, the average's standard error, through the command line: one
# register, then `average --drift drift.csv --exclude <the odd frames>` and
# `--exclude <the even frames>` (mean, clipped, inverse-variance weights; the
# weighted one on 2 ranks): the difference of the two averages over
# sqrt(sigma_even^2 + sigma_odd^2) has RMS 0.9-1.1 over the pixels >= 90% of
# each half's frames cover, and 2 ranks give 1 rank's map. The same for a
# scan-distortion run with `average --lines lines.csv --exclude`.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
TIMING=(--scan-dwell 2e-6 --line-flyback 0.25)
"$ENGINE" synth --frames 40 --size 128x128 --period 9 --dose 6 --seed 13 --out s.tif --progress none
"$ENGINE" register s.tif --out reg --threads 2 --progress none
[ -s reg/sigma.tif ] || die "register wrote no sigma.tif"
evens=$(seq -s, 0 2 39) odds=$(seq -s, 1 2 39)
for m in mean clipped; do
  "$ENGINE" average s.tif --drift reg/drift.csv --method $m --exclude "$odds" --out ${m}_even --progress none
  "$ENGINE" average s.tif --drift reg/drift.csv --method $m --exclude "$evens" --out ${m}_odd --progress none
done
"$ENGINE" average s.tif --drift reg/drift.csv --weights inverse-variance --exclude "$odds" --out ivw_even \
  --progress none
"${MPIRUN[@]}" -np 2 "$ENGINE" average s.tif --drift reg/drift.csv --weights inverse-variance --exclude "$evens" \
  --out ivw_odd --threads 1 --progress none
"$ENGINE" average s.tif --drift reg/drift.csv --weights inverse-variance --exclude "$evens" --out ivw_odd1 \
  --progress none

"$ENGINE" synth --frames 16 --size 128x128 --dose 10 --drift-linear 2,1 --drift-wobble 1 --jitter 0.2 --seed 3 \
  "${TIMING[@]}" --out sc.tif --progress none
"$ENGINE" register sc.tif --out sd --threads 1 --scan-distortion "${TIMING[@]}" --progress none
[ -s sd/sigma.tif ] && [ -s sd/sigma_rigid.tif ] || die "register --scan-distortion wrote no sigma.tif / sigma_rigid.tif"
"$ENGINE" average sc.tif --lines sd/lines.csv "${TIMING[@]}" --exclude "$(seq -s, 1 2 15)" --out sd_even --progress none
"$ENGINE" average sc.tif --lines sd/lines.csv "${TIMING[@]}" --exclude "$(seq -s, 0 2 15)" --out sd_odd --progress none

python3 - <<'PY' || die "sigma.tif is not calibrated"
import json, math, struct

def read_tiff_f32(path):  # a one-page float32 TIFF as this engine writes it: (width, height, values)
    b = open(path, "rb").read()
    e = "<" if b[:2] == b"II" else ">"
    ifd = struct.unpack(e + "I", b[4:8])[0]
    n = struct.unpack(e + "H", b[ifd:ifd + 2])[0]
    tags = {}
    for i in range(n):
        tag, typ, cnt, val = struct.unpack(e + "HHII", b[ifd + 2 + 12 * i: ifd + 14 + 12 * i])
        if typ == 3 and cnt == 1:
            val = struct.unpack(e + "H", b[ifd + 10 + 12 * i: ifd + 12 + 12 * i])[0]
        tags[tag] = (typ, cnt, val)
    w, h = tags[256][2], tags[257][2]
    typ, cnt, off = tags[273]
    offs = [off] if cnt == 1 else list(struct.unpack(e + ("I" if typ == 4 else "H") * cnt, b[off: off + (4 if typ == 4 else 2) * cnt]))
    per = 4 * w * h // cnt
    data = b"".join(b[o: o + per] for o in offs)
    return w, h, struct.unpack(e + "f" * (w * h), data[: 4 * w * h])

def z_rms(even, odd, n_even, n_odd, shift=(0, 0)):
    we, he, ae = read_tiff_f32(f"{even}/average.tif")
    _, _, ce = read_tiff_f32(f"{even}/coverage.tif")
    _, _, se = read_tiff_f32(f"{even}/sigma.tif")
    wo, ho, ao = read_tiff_f32(f"{odd}/average.tif")
    _, _, co = read_tiff_f32(f"{odd}/coverage.tif")
    _, _, so = read_tiff_f32(f"{odd}/sigma.tif")
    z2, m = 0.0, 0
    for j in range(ho):
        for i in range(wo):
            x, y = i + shift[0], j + shift[1]
            if not (0 <= x < we and 0 <= y < he):
                continue
            a, b = y * we + x, j * wo + i
            if ce[a] < 0.9 * n_even or co[b] < 0.9 * n_odd:
                continue
            v = se[a] ** 2 + so[b] ** 2
            assert v > 0, (even, odd, i, j)
            z2 += (ae[a] - ao[b]) ** 2 / v
            m += 1
    assert m > 3000, (even, odd, m)
    return math.sqrt(z2 / m)

def origin(d):
    return json.load(open(f"{d}/report.json")).get("files", {}).get("specimen_origin")

for even, odd in (("mean_even", "mean_odd"), ("clipped_even", "clipped_odd"), ("ivw_even", "ivw_odd")):
    z = z_rms(even, odd, 20, 20)
    print(f"{even} / {odd}: z-RMS {z:.3f}")
    assert 0.9 <= z <= 1.1, z
oe, oo = origin("sd_even"), origin("sd_odd")
z = z_rms("sd_even", "sd_odd", 8, 8, (round(oo[0] - oe[0]), round(oo[1] - oe[1])))
print(f"average --lines halves: z-RMS {z:.3f}")
assert 0.9 <= z <= 1.15, z  # 8 frames a half: an exact sigma gives sqrt(14/12) = 1.08
_, _, s1 = read_tiff_f32("ivw_odd1/sigma.tif")
_, _, s2 = read_tiff_f32("ivw_odd/sigma.tif")
worst = max(abs(a - b) / max(abs(b), 1e-3) for a, b in zip(s2, s1) if not (math.isnan(a) and math.isnan(b)))
print(f"2 ranks vs 1: sigma.tif within {worst:.2e} relative")
assert worst <= 1e-5, worst
PY
echo "ok: sigma.tif calibrated on the odd/even split (mean, clipped, weighted, 2 ranks, average --lines)"
