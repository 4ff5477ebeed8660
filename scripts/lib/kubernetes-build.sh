# Sourced by scripts/cluster-up: builds Kubernetes' own control-plane binaries (and, when
# asked, its kubelet) from the k8s.io/kubernetes Go module with the machine's Go, once per
# version, into $PODVISOR_TOOLS/kubernetes/<version>/bin. Go's module and build caches live
# beside them, so a second version (or a rebuild) is short.
#
# `go install k8s.io/kubernetes/cmd/...@version` is refused: k8s.io/kubernetes replaces its
# staging modules (k8s.io/api, apimachinery, client-go, ...) with ./staging paths at v0.0.0.
# So a small module of our own requires k8s.io/kubernetes and replaces each of those staging
# modules with its published version (v0.<minor>.<patch>), read from that version's go.mod.

# Every command the module is resolved for; a build makes those asked for (the control
# plane by default: the kubelet is needed only to compare podvisor with it).
K8S_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
K8S_CONTROL_PLANE=(kube-apiserver kube-controller-manager kube-scheduler)

# k8s_build VERSION [COMMAND...]: prints the directory holding the binaries, building those
# missing.
k8s_build() {
  local version=$1 tools=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}
  shift
  local wanted=("$@")
  [ ${#wanted[@]} -gt 0 ] || wanted=("${K8S_CONTROL_PLANE[@]}")
  local dir=$tools/kubernetes/$version
  local bin=$dir/bin
  if k8s_built "$bin" "${wanted[@]}"; then
    echo "$bin"
    return 0
  fi
  export GOMODCACHE=$tools/go/mod GOCACHE=$tools/go/cache GOFLAGS=-mod=mod
  local mod=$dir/module
  mkdir -p "$bin"
  k8s_locked "$dir/.module.lock" "the k8s.io/kubernetes module" k8s_resolve "$version" "$mod" ||
    return 1
  local minor=${version#v1.}
  minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local c
  for c in "${wanted[@]}"; do
    k8s_locked "$bin/.$c.lock" "$c" k8s_command "$mod" "$bin/$c" "$ldflags" \
      "k8s.io/kubernetes/cmd/$c" || return 1
  done
  echo "$bin"
}

# k8s_command MODULE OUTPUT LDFLAGS PACKAGE: builds PACKAGE into OUTPUT unless it is there.
k8s_command() {
  local mod=$1 out=$2 ldflags=$3 pkg=$4 t0=$SECONDS c
  c=$(basename "$out")
  [ -x "$out" ] && return 0
  echo "kubernetes-build: building $c (cold: many minutes on 2 cores)" >&2
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg") ||
    return 1
  mv "$out.tmp" "$out"
  echo "kubernetes-build: $c built in $((SECONDS - t0)) s" >&2
}

# k8s_resolve VERSION MODULE: the consumer module, resolved unless it is.
k8s_resolve() {
  [ -f "$2/go.sum" ] && return 0
  rm -rf "$2" && mkdir -p "$2"
  k8s_module "$1" "$2"
}

# k8s_locked LOCK WHAT COMMAND...: runs COMMAND holding LOCK, so two scripts (.ci/run's
# background scripts/prebuild and a step that needs the same binary now) never build one
# thing twice at once: the second waits, then finds it built.
k8s_locked() {
  local lock=$1 what=$2 fd
  shift 2
  exec {fd}>"$lock"
  if ! flock -n "$fd"; then
    echo "kubernetes-build: waiting for another build of $what" >&2
    flock "$fd"
  fi
  "$@"
  local rc=$?
  exec {fd}>&-
  return $rc
}

k8s_built() { # BIN COMMAND...
  local bin=$1 c
  shift
  for c in "$@"; do
    [ -x "$bin/$c" ] || return 1
  done
}

# k8s_module VERSION DIR: writes the consumer module into DIR and resolves its dependencies.
k8s_module() {
  local version=$1 mod=$2
  local staging=v0.${version#v1.}
  echo "kubernetes-build: resolving k8s.io/kubernetes $version" >&2
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$version" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -f "$gomod" ] || {
    echo "kubernetes-build: cannot download k8s.io/kubernetes $version's go.mod" >&2
    return 1
  }
  {
    echo "module podvisor.local/kubernetes-build"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    # Every staging module k8s.io/kubernetes replaces with a ./staging path.
    sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/.*#replace \1 => \1 '"$staging"'#p' "$gomod"
  } >"$mod/go.mod"
  local c pkgs=()
  for c in "${K8S_COMMANDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (cd "$mod" && go get "${pkgs[@]}") >&2
}
