# Sourced by scripts/conformance (after scripts/lib/kubernetes-build.sh): builds Kubernetes'
# own end-to-end suite and what it runs, from the k8s.io/kubernetes Go module of the version
# asked for, in the same consumer module as the control plane (so the module and build
# caches are shared), once per version, into $PODVISOR_TOOLS/kubernetes/<version>/e2e:
#   e2e.test   the suite (`go test -c k8s.io/kubernetes/test/e2e`; no wrapper is needed)
#   ginkgo     the runner at the version the suite pins (runs specs in parallel)
#   kubectl    the version's own kubectl, what the framework shells out to
#   agnhost    the e2e images' Swiss army knife (test/images/agnhost)
#   nnp        the nonewprivs image's program (prints its effective uid)
#   pause      the sandbox program, static, from build/pause/linux/pause.c
# Nothing here is kept in the repository: it is fetched and built on the machine.

# e2e_build VERSION: prints the directory holding them, building what is missing.
e2e_build() {
  local version=$1 tools=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}
  local dir=$tools/kubernetes/$version
  local out=$dir/e2e
  k8s_build "$version" >/dev/null || return 1 # the consumer module, resolved
  mkdir -p "$out"
  export GOMODCACHE=$tools/go/mod GOCACHE=$tools/go/cache GOFLAGS=-mod=mod
  local minor=${version#v1.}
  minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean"
  e2e_go "$out/e2e.test" test -c -trimpath -ldflags "$ldflags" k8s.io/kubernetes/test/e2e || return 1
  e2e_go "$out/ginkgo" build -trimpath github.com/onsi/ginkgo/v2/ginkgo || return 1
  e2e_go "$out/kubectl" build -trimpath -ldflags "$ldflags" k8s.io/kubernetes/cmd/kubectl || return 1
  e2e_go "$out/agnhost" build -trimpath -ldflags "-s -w" k8s.io/kubernetes/test/images/agnhost || return 1
  e2e_go "$out/nnp" build -trimpath -ldflags "-s -w" k8s.io/kubernetes/test/images/nonewprivs || return 1
  k8s_locked "$out/pause.lock" pause e2e_pause "$version" "$out" || return 1
  echo "$out"
}

# e2e_pause VERSION OUT: the sandbox program, static, unless it is built.
e2e_pause() {
  local version=$1 out=$2
  if [ ! -x "$out/pause" ]; then
    local src=$GOMODCACHE/k8s.io/kubernetes@$version/build/pause/linux/pause.c
    gcc -Os -static -Wall -Werror -DVERSION=v3.10.2 -o "$out/pause.tmp" "$src" && strip "$out/pause.tmp" &&
      mv "$out/pause.tmp" "$out/pause" || return 1
  fi
}

# e2e_go OUTPUT GO-ARGS...: runs `go GO-ARGS -o OUTPUT` in the consumer module unless OUTPUT
# exists; statically linked (the images have no libc of their own to offer some of them).
e2e_go() {
  k8s_locked "$1.lock" "$(basename "$1")" e2e_go_unlocked "$@"
}

e2e_go_unlocked() {
  local output=$1 t0=$SECONDS
  shift
  [ -x "$output" ] && return 0
  local verb=$1
  shift
  echo "conformance-build: building $(basename "$output") (cold: e2e.test takes ~18 min on 2 cores)" >&2
  (cd "$(dirname "$(dirname "$output")")/module" &&
    CGO_ENABLED=0 go "$verb" -o "$output.tmp" "$@") || return 1
  mv "$output.tmp" "$output"
  echo "conformance-build: $(basename "$output") built in $((SECONDS - t0)) s" >&2
}
