# Sourced first by every integration script (. "$(dirname "$0")/common.sh"):
# the programs under test, a scratch folder removed on exit, mpirun as this
# machine needs it, the check helpers and the skip convention.
#
# A test that cannot run here (a tool, a privilege or data missing) calls
# `skip REASON`: exit code 77, which tests/CMakeLists.txt declares as
# SKIP_RETURN_CODE, so CTest reports it skipped rather than passed.

BIN=${DRIFTSCAN_BIN:?DRIFTSCAN_BIN must point at build/bin}
ENGINE="$BIN/driftscan-engine"
LAUNCH="$BIN/driftscan-launch"
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# OpenMPI as root, more ranks than the 2 cores, idle ranks yielding the CPU
# (also set by CTest; exported here for a script run by hand).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=(mpirun --bind-to none)

skip() { echo "SKIP: $*"; exit 77; }

# The optional sample data (a real STEM series, vendor-format samples):
# $DRIFTSCAN_SAMPLE_DATA when set, else the folder the build was configured
# with (CTest passes it), else the folder ../shared/data beside the checkout.
SAMPLE_DATA=${DRIFTSCAN_SAMPLE_DATA:-${DRIFTSCAN_SAMPLE_DATA_CONFIGURED:-$TESTS_DIR/../../../shared/data}}
# Skips unless every named file of the sample data is there ("stem_abf_series.tif",
# "formats/test-1.dm3"); a fresh clone has none.
require_sample_data() {
  local f
  for f in "$@"; do
    [ -e "$SAMPLE_DATA/$f" ] ||
      skip "sample data absent: $SAMPLE_DATA/$f (set DRIFTSCAN_SAMPLE_DATA to the sample-data folder to run this test)"
  done
}
# Skips unless every named program is installed (daemons may sit in /usr/sbin, off a user's PATH).
require_programs() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "$b not installed"
  done
}

# Commands run on exit, the last registered first; the scratch folder goes last.
# A failing clean-up step never changes the script's exit code.
_at_exit=()
at_exit() { _at_exit=("$1" "${_at_exit[@]}"); }
_run_at_exit() {
  local c
  for c in "${_at_exit[@]}"; do eval "$c" || true; done
}
trap _run_at_exit EXIT
WORK=$(mktemp -d "${TMPDIR:-/tmp}/driftscan-$(basename "$0" .sh).XXXXXX")
at_exit 'rm -rf "$WORK"'

# check NAME CONDITION: prints ok/FAIL and remembers a failure in $fail
# (scripts that go on after a failed check end with `exit $fail`).
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
# die MESSAGE: the first failure ends the script (set -e scripts).
die() { echo "FAIL: $*"; exit 1; }

now() { date +%s.%N; }
elapsed() { python3 -c "print(round($(now) - $1, 2))"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1]); s.close()'; }

# Max |drift(a) - drift(b)| over the frames of two drift tables, in px.
max_drift_deviation() {
  paste -d, <(cut -d, -f1-3 "$1") <(cut -d, -f1-3 "$2") |
    awk -F, 'NR>1 { if ($1 != $4) { print "frame-mismatch"; exit 1 }
                    d = sqrt(($2-$5)^2 + ($3-$6)^2); if (d > m) m = d }
             END { printf "%.6f\n", m + 0 }'
}
