#!/usr/bin/env bash
# A 1-D signal is not an image series: a DM4 holding an EELS spectrum of
# 2048 channels (as DigitalMicrograph saves it, one row high, and with a
# single dimension). `info` lists it as a spectrum; `convert` and `register`
# refuse it with exit 2 and one line naming the file, and write nothing
# (convert used to write it as a 2048x1 "image" in eV).
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
TOOL="$TESTS_DIR/formats_tool.py"
python3 "$TOOL" dm4-spectrum eels.dm4 2048x1
python3 "$TOOL" dm4-spectrum eels1d.dm4 2048

for f in eels.dm4 eels1d.dm4; do
  "$ENGINE" info "$f" > info.txt
  cat info.txt
  grep -q "EELS Spectrum .*1-D spectrum, 2048 channels, not an image series  0.5 eV/channel" info.txt ||
    die "info $f: not listed as a spectrum"
  "$ENGINE" info --json "$f" |
    python3 -c 'import json,sys; s=json.load(sys.stdin)["signals"][0]; assert s["dimensions"]==1 and s["width"]==2048, s' ||
    die "info --json $f: dimensions"

  set +e
  "$ENGINE" convert "$f" --out out.tif --progress none 2> convert.err; rc1=$?
  "$ENGINE" register "$f" --out reg --progress none 2> register.err; rc2=$?
  "$ENGINE" convert "$f" --signal "EELS Spectrum" --out out.tif --progress none 2> named.err; rc3=$?
  set -e
  for c in convert register named; do
    err=$(cat $c.err)
    case $c in convert) rc=$rc1 ;; register) rc=$rc2 ;; *) rc=$rc3 ;; esac
    [ "$rc" -eq 2 ] || die "$c $f: exit $rc, $err"
    [ "$(grep -c . $c.err)" -eq 1 ] || die "$c $f: not one line: $err"
    grep -q "$f: signal 'EELS Spectrum' is a 1-D spectrum, 2048 channels, not an image series" $c.err ||
      die "$c $f: $err"
  done
  [ ! -e out.tif ] && [ ! -e reg/drift.csv ] || die "$f: output written for a spectrum"
done
echo "formats spectrum: ok"
