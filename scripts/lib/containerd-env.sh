# Sourced by containerd-up and containerd-down: which containerd, and where.
#
#   PODVISOR_CONTAINERD_VERSION  1.6 (default): Debian 12's containerd package, installed
#                                through apt; 1.7: Debian 13's containerd package (1.7.24),
#                                unpacked into $PODVISOR_TOOLS/containerd-1.7 and run from
#                                there, never replacing the system's containerd. 1.7 streams
#                                CRI container events (the evented PLEG); 1.6 does not.
#   PODVISOR_CONTAINERD_DIR      private directory (default /var/lib/podvisor-containerd for
#                                1.6, /var/lib/podvisor-containerd-1.7 for 1.7, so both can
#                                run side by side)
containerd_version=${PODVISOR_CONTAINERD_VERSION:-1.6}
case "$containerd_version" in
  1.6) default_base=/var/lib/podvisor-containerd; containerd_prefix= ;;
  1.7)
    default_base=/var/lib/podvisor-containerd-1.7
    containerd_prefix=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}/containerd-1.7
    ;;
  *)
    echo "PODVISOR_CONTAINERD_VERSION must be 1.6 or 1.7, not '$containerd_version'" >&2
    exit 2
    ;;
esac
base=${PODVISOR_CONTAINERD_DIR:-$default_base}
sock=$base/containerd.sock
