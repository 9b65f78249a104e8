# Sourced by the launcher tests after common.sh: a real sshd on 127.0.0.1 on a
# free port with throw-away host and user keys.
# Defines SSHD_PORT, SSH_KEY, SSHD_DIR; stop_sshd stops it (at_exit stop_sshd).
start_sshd() {
  local work="$1"
  SSHD_DIR="$work/sshd"
  mkdir -p "$SSHD_DIR" /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/user_key"
  cp "$SSHD_DIR/user_key.pub" "$SSHD_DIR/authorized_keys"
  chmod 600 "$SSHD_DIR/authorized_keys"
  SSH_KEY="$SSHD_DIR/user_key"
  local sshd_bin
  sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
  for attempt in 1 2 3 4 5; do
    SSHD_PORT=$(free_port)
    cat > "$SSHD_DIR/sshd_config" <<CONF
Port $SSHD_PORT
ListenAddress 127.0.0.1
HostKey $SSHD_DIR/host_key
AuthorizedKeysFile $SSHD_DIR/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
PidFile $SSHD_DIR/sshd.pid
AcceptEnv LANG
Subsystem sftp /usr/lib/openssh/sftp-server
SetEnv PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
CONF
    "$sshd_bin" -f "$SSHD_DIR/sshd_config" -E "$SSHD_DIR/sshd.log" || continue
    for i in $(seq 50); do
      if ssh -i "$SSH_KEY" -p "$SSHD_PORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
           -o BatchMode=yes -o ConnectTimeout=2 -o LogLevel=ERROR "$(id -un)@127.0.0.1" true 2>/dev/null; then
        return 0
      fi
      sleep 0.1
    done
    stop_sshd
  done
  echo "could not start sshd (see $SSHD_DIR/sshd.log)" >&2
  return 1
}

stop_sshd() {
  if [ -n "${SSHD_DIR:-}" ] && [ -f "$SSHD_DIR/sshd.pid" ]; then
    kill "$(cat "$SSHD_DIR/sshd.pid")" 2>/dev/null || true
    rm -f "$SSHD_DIR/sshd.pid"
  fi
}

# Writes a profiles.json entry for the loopback sshd. Args: name kind extra-json
# Remote shells do not inherit this environment: a sanitizer build's options
# (scripts/test --sanitize sets them; MPI's own allocations would otherwise
# fail every remote run as leaks) travel in the profile's setup lines.
sanitizer_env_line() {
  if [ -n "${ASAN_OPTIONS:-}" ]; then
    printf 'export ASAN_OPTIONS=%s UBSAN_OPTIONS=%s' "$ASAN_OPTIONS" "${UBSAN_OPTIONS:-}"
  fi
}

ssh_profile_json() {
  local name="$1" kind="$2" extra="${3:-}"
  if [ -n "$(sanitizer_env_line)" ] && [[ "$extra" != *setup_lines* ]]; then
    extra="$extra,\"setup_lines\":[\"$(sanitizer_env_line)\"]"
  fi
  cat <<JSON
{"name":"$name","kind":"$kind","host":"127.0.0.1","user":"$(id -un)","port":$SSHD_PORT,
 "identity_file":"$SSH_KEY","ssh_options":["StrictHostKeyChecking=no","UserKnownHostsFile=/dev/null","LogLevel=ERROR"],
 "connect_timeout_s":5 $extra}
JSON
}
