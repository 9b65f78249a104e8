#!/usr/bin/env bash
# register --follow (#15): a writer process appends frames to a multi-page
# TIFF (each page linked before its pixels are all written: a half-written
# page the follow must not read) or puts files into a folder (with a frame of
# another size, a corrupt file and one that never completes) while the
# engine follows; the results then equal a batch `register` over the same
# frames. Also: the followed file deleted mid-run, the idle timeout, a cancel
# that ends the follow, and --resume of a series that has grown.
. "$(dirname "$0")/common.sh"
WRITER="$BIN/follow_writer"
COMPARE="$BIN/tiff_compare"
[ -x "$WRITER" ] && [ -x "$COMPARE" ] || skip "follow_writer / tiff_compare not built"

"$ENGINE" synth --frames 24 --size 96x96 --period 9 --dose 6 --seed 3 --out "$WORK/s.tif" --progress none ||
  die "synth failed"

# Waits (up to 60 s) until $1 holds at least $2 drift rows: the follow is under way.
wait_rows() {
  local i
  for i in $(seq 600); do
    [ -f "$1" ] && [ "$(tail -n +2 "$1" | wc -l)" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# Drift within 0.01 px and average within 1e-5 relative of the batch run in $2.
same_as_batch() {
  local d a
  d=$(max_drift_deviation "$1/drift.csv" "$2/drift.csv")
  a=$("$COMPARE" "$1/average.tif" "$2/average.tif")
  echo "  $3: drift deviation $d px, average relative difference $a"
  check "$3: drift equals the batch run's (<= 0.01 px)" "awk 'BEGIN{exit !($d <= 0.01)}'"
  check "$3: average equals the batch run's (<= 1e-5 relative)" "awk 'BEGIN{exit !($a <= 1e-5)}'"
}

# 1. A growing multi-page TIFF, 20 frames at 20/s, every page half-written for 0.1 s.
"$WRITER" "$WORK/s.tif" "$WORK/live.tif" --frames 20 --rate 20 --link-first-pause 0.1 >/dev/null &
writer=$!
"$ENGINE" register "$WORK/live.tif" --follow --until-frames 20 --idle-timeout 20 --out "$WORK/f1" \
  --progress json >"$WORK/f1.events" 2>"$WORK/f1.err"
rc=$?
wait $writer
check "file: follow exits 0" "[ $rc -eq 0 ]"
check "file: a frame event per frame" "[ \$(grep -c '\"event\":\"frame\"' '$WORK/f1.events') -eq 20 ]"
check "file: the follow saw half-written pages and waited" \
  "grep -q '\"waits_on_incomplete\": [1-9]' '$WORK/f1/report.json'"
check "file: 20 rows in drift.csv" "[ \$(tail -n +2 '$WORK/f1/drift.csv' | wc -l) -eq 20 ]"
"$ENGINE" register "$WORK/live.tif" --out "$WORK/b1" --progress none || die "batch register failed"
same_as_batch "$WORK/f1" "$WORK/b1" "file"

# 2. A folder: renamed-in files, plus bad ones that must be warned about and skipped.
"$WRITER" "$WORK/s.tif" "$WORK/dir" --folder --frames 14 --rate 25 --odd-size-after 3 --corrupt-after 5 \
  --stall-after 8 >/dev/null &
writer=$!
"$ENGINE" register "$WORK/dir" --follow --until-frames 14 --incomplete-timeout 1 --idle-timeout 20 \
  --out "$WORK/f2" --progress plain 2>"$WORK/f2.log"
rc=$?
wait $writer
check "folder: follow exits 0" "[ $rc -eq 0 ]"
check "folder: the frame of another size is warned about by name" "grep -q 'warning: .*frame_0003_odd.tif is 48x48' '$WORK/f2.log'"
check "folder: the corrupt file is warned about by name" "grep -q 'warning: .*frame_0005_bad.tif: not a TIFF' '$WORK/f2.log'"
check "folder: the file that never completes is warned about by name" "grep -q 'warning: .*frame_0008_stall.tif.*did not complete' '$WORK/f2.log'"
"$ENGINE" register "$WORK/dir/frame_????.tif" --out "$WORK/b2" --progress none || die "batch register failed"
same_as_batch "$WORK/f2" "$WORK/b2" "folder"

# 3. The followed file deleted mid-run: a clear error, the results so far kept.
"$WRITER" "$WORK/s.tif" "$WORK/doomed.tif" --frames 24 --rate 10 >/dev/null &
writer=$!
"$ENGINE" register "$WORK/doomed.tif" --follow --idle-timeout 20 --out "$WORK/f3" --progress plain 2>"$WORK/f3.log" &
engine=$!
wait_rows "$WORK/f3/drift.csv" 3 && rm -f "$WORK/doomed.tif"
wait $engine
rc=$?
wait $writer
check "deleted: exit code 3" "[ $rc -eq 3 ]"
check "deleted: the error names the file" "grep -q 'error: .*doomed.tif: the followed file was deleted' '$WORK/f3.log'"
check "deleted: drift.csv, average.tif and the checkpoint are kept" \
  "[ -s '$WORK/f3/drift.csv' ] && [ -s '$WORK/f3/average.tif' ] && [ -s '$WORK/f3/checkpoint.dsck' ]"
check "deleted: no report.json (the folder does not look complete)" "[ ! -e '$WORK/f3/report.json' ]"

# 4. The idle timeout ends a follow over a file that stopped growing (12 of 24 frames).
"$WRITER" "$WORK/s.tif" "$WORK/grow.tif" --frames 12 --rate 0 >/dev/null
start=$(now)
"$ENGINE" register "$WORK/grow.tif" --follow --idle-timeout 1 --out "$WORK/f4" --progress plain 2>"$WORK/f4.log"
rc=$?
check "idle: exits 0 within seconds" "[ $rc -eq 0 ] && awk 'BEGIN{exit !($(elapsed "$start") < 10)}'"
check "idle: says why it stopped" "grep -q 'no frame completed for 1 s' '$WORK/f4.log'"
check "idle: 12 frames registered" "[ \$(tail -n +2 '$WORK/f4/drift.csv' | wc -l) -eq 12 ]"

cp -r "$WORK/f4" "$WORK/f4batch"

# 5. --resume of the grown series (now 24 frames) extends the result, followed or batch.
"$WRITER" "$WORK/s.tif" "$WORK/grow.tif" --frames 24 --rate 0 >/dev/null
"$ENGINE" register "$WORK/grow.tif" --follow --resume --until-frames 24 --out "$WORK/f4" \
  --progress plain 2>"$WORK/f5.log"
rc=$?
check "resume: exits 0" "[ $rc -eq 0 ]"
check "resume: takes the 12 frames done from the checkpoint" "grep -q '12 frames registered before' '$WORK/f5.log'"
check "resume: 12 new operator applications only" "grep -q '\"operator_applications\": 12' '$WORK/f4/report.json'"
"$ENGINE" register "$WORK/grow.tif" --out "$WORK/b4" --progress none || die "batch register failed"
same_as_batch "$WORK/f4" "$WORK/b4" "resume"
"$ENGINE" register "$WORK/grow.tif" --resume --out "$WORK/f4batch" --progress plain 2>"$WORK/f5b.log"
check "batch resume of the grown series: takes the 12 frames done" \
  "grep -q '12 pair elements and 12 scan results done' '$WORK/f5b.log'"
same_as_batch "$WORK/f4batch" "$WORK/b4" "batch resume"

# 6. A cancel (SIGTERM) ends the follow; the results are finished over the frames taken.
"$WRITER" "$WORK/s.tif" "$WORK/stop.tif" --frames 24 --rate 10 >/dev/null &
writer=$!
"$ENGINE" register "$WORK/stop.tif" --follow --idle-timeout 20 --out "$WORK/f6" --progress plain 2>"$WORK/f6.log" &
engine=$!
wait_rows "$WORK/f6/drift.csv" 3
kill -TERM $engine
wait $engine
rc=$?
wait $writer
check "cancel: ends the follow with exit 0 and a report" "[ $rc -eq 0 ] && [ -s '$WORK/f6/report.json' ]"
check "cancel: says so" "grep -q 'follow ended (cancel)' '$WORK/f6.log'"

# 7. The first average.tif one interval after frame 0, with no frame after it
# (it used to wait for a later frame to come).
"$WRITER" "$WORK/s.tif" "$WORK/one.tif" --frames 1 --rate 0 >/dev/null
"$ENGINE" register "$WORK/one.tif" --follow --idle-timeout 20 --average-every-s 0.5 --out "$WORK/f7" \
  --progress plain 2>"$WORK/f7.log" &
engine=$!
wait_rows "$WORK/f7/drift.csv" 1
start=$(now)
for i in $(seq 100); do [ -s "$WORK/f7/average.tif" ] && break; sleep 0.05; done
waited=$(elapsed "$start")
echo "  average.tif ${waited} s after frame 0's row (interval 0.5 s)"
check "first average: written about one interval after frame 0, without a second frame" \
  "[ -s '$WORK/f7/average.tif' ] && awk 'BEGIN{exit !($waited < 2.5)}'"
kill -TERM $engine
wait $engine

exit $fail
