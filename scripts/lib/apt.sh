# Sourced by the scripts that install Debian's packages.

# apt_install PKG...: installs PKG (as root, through sudo when not), first finishing what
# an interrupted dpkg left half done: .ci/run's teardown kills its background builds, and
# an apt-get among them leaves dpkg's journal behind, which refuses every later install
# ("dpkg was interrupted"). Reads the package lists when a fresh machine has none, and
# waits for another install's lock rather than failing at once.
apt_install() {
  local sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  if [ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ]; then
    echo "apt: finishing an interrupted dpkg (dpkg --configure -a)" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive dpkg --configure -a >&2
  fi
  local apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
  "${apt[@]}" install -y -qq "$@" >&2 ||
    { "${apt[@]}" update -qq >&2 && "${apt[@]}" install -y -qq "$@" >&2; }
}
