# Sourced by containerd-up and containerd-down: which containerd, and where.
#
#   PODVISOR_CONTAINERD_VERSION  1.6 (default): Debian 12's containerd package, installed
#                                through apt; 1.7: Debian 13's containerd package (1.7.24);
#                                2.1: Debian unstable's (2.1.9), with the machine's runc.
#                                1.7 and 2.1 are unpacked into $PODVISOR_TOOLS/containerd-X
#                                and run from there, never replacing the system's
#                                containerd. 1.7 and 2.1 stream CRI container events (the
#                                evented PLEG); 1.6 does not.
#   PODVISOR_CONTAINERD_DIR      private directory (default /var/lib/podvisor-containerd for
#                                1.6, /var/lib/podvisor-containerd-X for the others, so they
#                                can run side by side)
#   PODVISOR_CONTAINERD_BRIDGE   the bridge and pod subnet of this instance (default: its
#   PODVISOR_CONTAINERD_SUBNET   version's, below), for a second instance of one version
# Each version has its own bridge and pod subnet, so the two side by side never hand out
# one address twice (two instances of one version, in two directories, would, unless the
# second is given a bridge and subnet of its own).
containerd_version=${PODVISOR_CONTAINERD_VERSION:-1.6}
case "$containerd_version" in
  1.6)
    default_base=/var/lib/podvisor-containerd; containerd_prefix=
    bridge=podvisor0; pod_subnet=10.88.0.0/16
    ;;
  1.7)
    default_base=/var/lib/podvisor-containerd-1.7
    bridge=podvisor1; pod_subnet=10.89.0.0/16
    containerd_prefix=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}/containerd-1.7
    ;;
  2.1)
    default_base=/var/lib/podvisor-containerd-2.1
    bridge=podvisor2; pod_subnet=10.90.0.0/16
    containerd_prefix=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}/containerd-2.1
    ;;
  *)
    echo "PODVISOR_CONTAINERD_VERSION must be 1.6, 1.7 or 2.1, not '$containerd_version'" >&2
    exit 2
    ;;
esac
bridge=${PODVISOR_CONTAINERD_BRIDGE:-$bridge}
pod_subnet=${PODVISOR_CONTAINERD_SUBNET:-$pod_subnet}
# Where each version comes from, and its configuration's format.
case "$containerd_version" in
  2.*) containerd_suite=sid; containerd_config=containerd-2.toml ;;
  *) containerd_suite=trixie; containerd_config=containerd.toml ;;
esac
base=${PODVISOR_CONTAINERD_DIR:-$default_base}
sock=$base/containerd.sock

# An instance started afresh hands out the addresses an earlier one gave its pods (its
# address book starts empty), to pods with new MAC addresses; the host's neighbour entries
# for the old ones stay, stale, as long as there are fewer than gc_thresh1 (128) of them,
# and a connection to a reused address then goes to the gone pod's MAC for some 8 s (5 s
# delay, 3 unanswered probes) before the address is resolved again: a pod's probes time out
# and a liveness probe kills it. Forgetting them when an instance starts or stops avoids it.
forget_neighbours() {
  ip neigh flush dev "$bridge" >/dev/null 2>&1 || true
}
