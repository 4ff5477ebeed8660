# Sourced by scripts that make OCI image layout tars without a registry or a container
# engine: layers are plain tars of a directory (byte-for-byte reproducible: sorted, owned
# by root unless the directory says otherwise, mtime 0), images a config and a manifest
# over them, each written as `ctr images import` takes it.

# oci_layer DIR OUT_TAR: DIR as one uncompressed layer.
oci_layer() {
  tar --sort=name --numeric-owner --mtime=@0 --xattrs -C "$1" -cf "$2" .
}

# oci_image NAME CONFIG OUT_TAR LAYER...: an image named NAME (the index annotation
# ctr reads) whose runtime config is the JSON object CONFIG (Env, Entrypoint, Cmd, User,
# WorkingDir) over the layers given, bottom first.
oci_image() {
  local name=$1 cfg=$2 out=$3
  shift 3
  local arch layout diff_ids="" layers="" digest size l
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  layout=$(mktemp -d)
  mkdir -p "$layout/blobs/sha256"
  for l in "$@"; do
    digest=$(sha256sum "$l" | cut -d' ' -f1)
    size=$(stat -c %s "$l")
    cp "$l" "$layout/blobs/sha256/$digest"
    diff_ids+="${diff_ids:+,}\"sha256:$digest\""
    layers+="${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$digest\",\"size\":$size}"
  done
  printf '{"architecture":"%s","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]},"history":[{"created_by":"podvisor scripts/lib/oci.sh"}]}' \
    "$arch" "$cfg" "$diff_ids" >"$layout/config.json"
  read -r digest size < <(oci_blob "$layout/config.json" "$layout")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "$digest" "$size" "$layers" >"$layout/manifest.json"
  read -r digest size < <(oci_blob "$layout/manifest.json" "$layout")
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$digest" "$size" "$arch" "$name" "${name##*:}" >"$layout/index.json"
  rm -f "$layout/config.json" "$layout/manifest.json"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$layout" -cf "$out" .
  rm -rf "$layout"
}

# oci_blob FILE LAYOUT: FILE into LAYOUT's blob store; prints "digest size".
oci_blob() {
  local digest size
  digest=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  cp "$1" "$2/blobs/sha256/$digest"
  echo "$digest $size"
}
