# Sourced by scripts that need a package of Debian 13 (trixie) on this Debian 12 machine
# without touching the machine's apt state: a private sources list naming Debian's archive
# with suite trixie, private lists and cache, `apt-get download`, then `dpkg-deb -x` into
# a private prefix. Nothing is installed system-wide.

# debian13_unpack PACKAGE PREFIX: unpacks PACKAGE's .deb into PREFIX (once).
debian13_unpack() {
  local pkg=$1 prefix=$2
  local apt=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}/apt
  [ -f "$prefix/.unpacked" ] && return 0
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$prefix"
  echo "deb http://deb.debian.org/debian trixie main" >"$apt/sources.list"
  local opts=(-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
    -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null" -o "APT::Sandbox::User=root")
  if ! ls "$apt"/lists/*trixie*Packages* >/dev/null 2>&1; then
    apt-get "${opts[@]}" update -qq >&2
  fi
  rm -f "$apt/${pkg}"_*.deb
  (cd "$apt" && apt-get "${opts[@]}" download "$pkg/trixie" >&2)
  dpkg-deb -x "$apt/${pkg}"_*.deb "$prefix"
  touch "$prefix/.unpacked"
}
