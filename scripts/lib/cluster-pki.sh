# Sourced by scripts/cluster-up: the test cluster's certificates, keys and kubeconfigs,
# made once with openssl into $pki (kept while the cluster's directory lives).
#
#   ca.crt/key                 the cluster CA: client certificates, and the controller
#                              manager signs node CSRs with it
#   apiserver.crt/key          serving certificate (127.0.0.1, localhost, kubernetes.default...)
#   apiserver-kubelet-client   the apiserver's identity towards nodes' :10250
#   sa.key/pub                 service-account token signing
#   admin, controller-manager, scheduler: client certificates and kubeconfigs

pki_cert() { # NAME SUBJECT [EXTFILE]: a key and a certificate signed by the cluster CA
  local name=$1 subject=$2 ext=${3:-}
  [ -f "$pki/$name.crt" ] && return 0
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 365 -out "$pki/$name.crt" ${ext:+-extfile "$ext"} 2>/dev/null
  rm -f "$pki/$name.csr"
  chmod 600 "$pki/$name.key"
}

pki_kubeconfig() { # NAME USER [CREDENTIALS]: a kubeconfig (client certificate NAME by default)
  local name=$1 user=$2
  local credentials=${3:-"client-certificate: \"$pki/$name.crt\", client-key: \"$pki/$name.key\""}
  cat >"$pki/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: podvisor-test
  cluster: {server: "$apiserver_url", certificate-authority: "$pki/ca.crt"}
users:
- name: $user
  user: {$credentials}
contexts:
- name: $user@podvisor-test
  context: {cluster: podvisor-test, user: $user}
current-context: $user@podvisor-test
EOF
  chmod 600 "$pki/$name.kubeconfig"
}

pki_make() {
  mkdir -p "$pki"
  if [ ! -f "$pki/ca.crt" ]; then
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=podvisor-test-cluster-ca" \
      -days 3650 -out "$pki/ca.crt"
    chmod 600 "$pki/ca.key"
  fi
  local ext=$pki/apiserver.ext
  cat >"$ext" <<EOF
subjectAltName = IP:127.0.0.1, IP:$service_ip, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage = serverAuth
EOF
  pki_cert apiserver "/CN=kube-apiserver" "$ext"
  echo "extendedKeyUsage = clientAuth" >"$pki/client.ext"
  pki_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$pki/client.ext"
  pki_cert admin "/O=system:masters/CN=podvisor-test-admin" "$pki/client.ext"
  pki_cert controller-manager "/CN=system:kube-controller-manager" "$pki/client.ext"
  pki_cert scheduler "/CN=system:kube-scheduler" "$pki/client.ext"
  pki_kubeconfig admin admin
  pki_kubeconfig controller-manager system:kube-controller-manager
  pki_kubeconfig scheduler system:kube-scheduler
  if [ ! -f "$pki/sa.key" ]; then
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    chmod 600 "$pki/sa.key"
  fi
}

# A bootstrap token (kube-system Secret) and the kubeconfig a node joins with.
pki_bootstrap_kubeconfig() {
  local id secret
  if [ -f "$pki/bootstrap-token" ]; then
    IFS=. read -r id secret <"$pki/bootstrap-token"
  else
    # [a-z0-9]{6}.[a-z0-9]{16}, as the bootstrap authenticator requires (a shorter token
    # is refused as an invalid bearer token): plenty of random bytes, then the length cut.
    id=$(head -c 4096 /dev/urandom | tr -dc 'a-z0-9' | head -c 6)
    secret=$(head -c 4096 /dev/urandom | tr -dc 'a-z0-9' | head -c 16)
    if [ ${#id} -ne 6 ] || [ ${#secret} -ne 16 ]; then
      echo "cluster-up: cannot make a bootstrap token" >&2
      return 1
    fi
    echo "$id.$secret" >"$pki/bootstrap-token"
    chmod 600 "$pki/bootstrap-token"
  fi
  pki_kubeconfig bootstrap bootstrap "token: \"$id.$secret\""
  bootstrap_id=$id
  bootstrap_secret=$secret
}
