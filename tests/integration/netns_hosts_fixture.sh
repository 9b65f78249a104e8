# Sourced by the multi-host tests after common.sh: hosts that share nothing
# but a network and the file system, built from Linux network namespaces.
#
#   netns_hosts_start N   a private network 10.213.0.0/24 that exists only in
#                         namespaces made here: a "login" host (10.213.0.254,
#                         holding the bridge) and node1..nodeN (10.213.0.i),
#                         each on its own veth into the bridge, each running
#                         its own sshd (root login by a key made in $WORK).
#   host_exec NAME CMD... runs CMD on that host: in its network namespace, with
#                         its own host name (UTS namespace) and a private
#                         /etc/hosts naming every host (mount namespace).
#   host_pids NAME        the pids in that host's network namespace.
#   link_down NAME        takes the host's link down (its bridge port).
#   netns_hosts_stop      kills what runs in the namespaces, deletes them.
#
# Defines NETNS_DIR, NETNS_SSH_CONFIG (ssh -F: root, the key, no host-key
# prompts), NETNS_KEY, NETNS_SUBNET, NETNS_HOSTS (node1 node2 ...).
# Skips (exit 77) when namespaces cannot be made here (not root, no
# CAP_SYS_ADMIN in a container, no iproute2/unshare).

NETNS_SUBNET=10.213.0.0/24
NETNS_PREFIX="ds$$"
NETNS_HOSTS=()

_ns() { echo "$NETNS_PREFIX-$1"; }

host_exec() {
  local name="$1"
  shift
  # The new UTS and mount namespaces live as long as the command: the host
  # name and /etc/hosts are set again on every call (cheap, and nothing is
  # shared with the real machine's /etc). nsenter, not `ip netns exec`: that
  # remounts /sys, hiding /sys/fs/cgroup, and slurmd will not start without it.
  nsenter --net="/run/netns/$(_ns "$name")" unshare --uts --mount -- \
    sh -c 'hostname "$0" && mount --bind "$1" /etc/hosts && shift && exec "$@"' \
    "$name" "$NETNS_DIR/hosts" "$@"
}

host_pids() { ip netns pids "$(_ns "$1")" 2>/dev/null; }

link_down() { ip -n "$(_ns login)" link set "v-$1" down; }

_ns_ok() {
  command -v ip >/dev/null 2>&1 || skip "iproute2 (ip) not installed"
  command -v unshare >/dev/null 2>&1 && command -v nsenter >/dev/null 2>&1 ||
    skip "util-linux (unshare, nsenter) not installed"
  [ "$(id -u)" = 0 ] || skip "network namespaces need root"
  ip netns add "$NETNS_PREFIX-probe" 2>"$WORK/netns-probe.err" ||
    skip "cannot create network namespaces here ($(head -1 "$WORK/netns-probe.err"))"
  ip netns del "$NETNS_PREFIX-probe"
  unshare --uts --mount true 2>/dev/null || skip "cannot create UTS/mount namespaces here"
}

# Namespaces an earlier run of this fixture left behind (the run was killed
# before its exit trap ran): named ds<pid>-<host>, their test process gone.
_ns_clean_stale() {
  local ns pid p
  for ns in $(ip netns list 2>/dev/null | grep -o '^ds[0-9]*-[a-z0-9]*'); do
    pid=${ns%%-*}; pid=${pid#ds}
    kill -0 "$pid" 2>/dev/null && continue
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
}

netns_hosts_start() {
  local n="$1" i name ns
  _ns_ok
  _ns_clean_stale
  NETNS_DIR="$WORK/netns"
  mkdir -p "$NETNS_DIR" /run/sshd
  at_exit netns_hosts_stop
  {
    echo "127.0.0.1 localhost"
    echo "10.213.0.254 login"
    for i in $(seq "$n"); do echo "10.213.0.$i node$i"; done
  } > "$NETNS_DIR/hosts"
  ip netns add "$(_ns login)" || return 1
  ip -n "$(_ns login)" link set lo up
  ip -n "$(_ns login)" link add br0 type bridge
  ip -n "$(_ns login)" addr add 10.213.0.254/24 dev br0
  ip -n "$(_ns login)" link set br0 up
  for i in $(seq "$n"); do
    name="node$i"
    ns=$(_ns "$name")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    # v-nodeI (bridge port, login side) <-> eth0 (the host's interface)
    ip -n "$(_ns login)" link add "v-$name" type veth peer name eth0 netns "$ns"
    ip -n "$(_ns login)" link set "v-$name" master br0 up
    ip -n "$ns" addr add "10.213.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    NETNS_HOSTS+=("$name")
  done

  ssh-keygen -q -t ed25519 -N '' -f "$NETNS_DIR/user_key"
  cp "$NETNS_DIR/user_key.pub" "$NETNS_DIR/authorized_keys"
  chmod 600 "$NETNS_DIR/authorized_keys"
  NETNS_KEY="$NETNS_DIR/user_key"
  NETNS_SSH_CONFIG="$NETNS_DIR/ssh_config"
  cat > "$NETNS_SSH_CONFIG" <<CONF
Host login node*
  User root
  IdentityFile $NETNS_KEY
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
  ConnectTimeout 5
CONF
  local sshd_bin
  sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
  for name in "${NETNS_HOSTS[@]}"; do
    ssh-keygen -q -t ed25519 -N '' -f "$NETNS_DIR/$name.host_key"
    cat > "$NETNS_DIR/$name.sshd_config" <<CONF
Port 22
ListenAddress 0.0.0.0
HostKey $NETNS_DIR/$name.host_key
AuthorizedKeysFile $NETNS_DIR/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
PidFile $NETNS_DIR/$name.sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
SetEnv PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
MaxStartups 100
MaxSessions 100
CONF
    host_exec "$name" "$sshd_bin" -f "$NETNS_DIR/$name.sshd_config" -E "$NETNS_DIR/$name.sshd.log" || return 1
  done
  # Every host reaches every other by name (the login host reaches all).
  for name in "${NETNS_HOSTS[@]}"; do
    for i in $(seq 50); do
      host_exec login ssh -F "$NETNS_SSH_CONFIG" "$name" true 2>/dev/null && break
      sleep 0.1
    done
    host_exec login ssh -F "$NETNS_SSH_CONFIG" "$name" '[ "$(hostname)" = '"$name"' ]' ||
      { echo "sshd on $name does not answer (see $NETNS_DIR/$name.sshd.log)" >&2; return 1; }
  done
  host_exec node1 ssh -F "$NETNS_SSH_CONFIG" "${NETNS_HOSTS[-1]}" true ||
    { echo "node1 cannot reach ${NETNS_HOSTS[-1]} by ssh" >&2; return 1; }
}

netns_hosts_stop() {
  local name ns p
  for name in login "${NETNS_HOSTS[@]}"; do
    ns=$(_ns "$name")
    ip netns list 2>/dev/null | grep -q "^$ns\b" || continue
    # Only what this test started runs in its namespaces.
    for p in $(host_pids "$name"); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  NETNS_HOSTS=()
}
