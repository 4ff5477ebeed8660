# Sourced by scripts that need a package of Debian 13 (trixie) on this Debian 12 machine
# without touching the machine's apt state: a private sources list naming Debian's archive
# with suite trixie, private lists and cache, `apt-get download`, then `dpkg-deb -x` into
# a private prefix. Nothing is installed system-wide.

# debian_unpack SUITE PACKAGE PREFIX: unpacks PACKAGE's .deb from Debian's SUITE (trixie,
# sid) into PREFIX (once). Each suite has its own lists and cache.
debian_unpack() {
  local suite=$1 pkg=$2 prefix=$3
  local tools=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}
  local apt=$tools/apt
  [ "$suite" = trixie ] || apt=$tools/apt-$suite
  [ -f "$prefix/.unpacked" ] && return 0
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$prefix"
  echo "deb http://deb.debian.org/debian $suite main" >"$apt/sources.list"
  local opts=(-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
    -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null" -o "APT::Sandbox::User=root")
  if ! ls "$apt"/lists/*"$suite"*Packages* >/dev/null 2>&1; then
    apt-get "${opts[@]}" update -qq >&2
  fi
  rm -f "$apt/${pkg}"_*.deb
  (cd "$apt" && apt-get "${opts[@]}" download "$pkg/$suite" >&2)
  dpkg-deb -x "$apt/${pkg}"_*.deb "$prefix"
  touch "$prefix/.unpacked"
}

# debian13_unpack PACKAGE PREFIX: the package of Debian 13 (trixie).
debian13_unpack() {
  debian_unpack trixie "$1" "$2"
}
