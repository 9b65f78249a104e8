# Sourced by the Slurm tests after common.sh: a munged for Slurm's
# authentication. start_munge reuses a running munged, else starts one with
# the machine's key (created if absent) and stops it at exit. Skips when
# there is no munge user.
start_munge() {
  munge -n </dev/null >/dev/null 2>&1 && return 0
  id munge >/dev/null 2>&1 || skip "no munge user"
  mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
  chmod 0400 /etc/munge/munge.key
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged 2>"$WORK/munged.err" ||
    { echo "FAIL: munged did not start: $(cat "$WORK/munged.err")"; return 1; }
  local i
  for i in $(seq 20); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  cp /run/munge/munged.pid "$WORK/munged.pid"
  at_exit 'kill "$(cat "$WORK/munged.pid")" 2>/dev/null'
  for i in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
}
