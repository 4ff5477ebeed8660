//! TLS bootstrapping, as the kubelet does it: with a bootstrap kubeconfig (a bootstrap
//! token), make a key of the node's own, ask the cluster for a client certificate through a
//! CertificateSigningRequest (signer `kubernetes.io/kube-apiserver-client-kubelet`, CN
//! `system:node:<node>`, O `system:nodes`), wait until the controller manager has approved
//! and signed it, and write a kubeconfig that acts as the node from then on. The key never
//! leaves the node; the files are written 0600.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::config::{AuthInfo, Kubeconfig, NamedAuthInfo};

use crate::error::ConnectError;

/// The signer of node client certificates.
const SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The user the written kubeconfig names.
const USER: &str = "node";
/// The node's certificate and key, in the credentials directory.
pub(crate) const PEM: &str = "kubelet-client.pem";
/// The bootstrap kubeconfig's CA when the credentials were made.
const CA_SEEN: &str = "bootstrap-ca.crt";

/// Why the node could not get its credentials.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("cannot make the node's key or CSR: {0}")]
    Key(#[from] rcgen::Error),
    #[error("the CSR could not be submitted or read: {0}")]
    Api(#[source] kube::Error),
    #[error("the CSR {name} was refused ({condition}): {message}")]
    Refused {
        name: String,
        condition: String,
        message: String,
    },
    #[error(
        "the CSR {name} was not issued within {waited:?} (does the cluster approve node CSRs?)"
    )]
    NotIssued { name: String, waited: Duration },
    #[error("cannot read the bootstrap kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("cannot read the cluster's CA {path}: {source}")]
    ReadCa {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot encode the node's kubeconfig: {0}")]
    Encode(#[from] serde_yaml_ng::Error),
}

/// The node's kubeconfig in `dir` (`kubelet.kubeconfig`), made with the bootstrap
/// kubeconfig at `bootstrap` if it is not there yet, waiting at most `wait` for the
/// certificate.
pub async fn node_credentials(
    bootstrap: &Path,
    node: &str,
    dir: &Path,
    (wait, lifetime): (Duration, Option<Duration>),
) -> Result<PathBuf, BootstrapError> {
    let kubeconfig = dir.join("kubelet.kubeconfig");
    let pem = dir.join(PEM);
    // The cluster the credentials are for, as its CA says: another cluster (a control
    // plane made again) needs new ones.
    let ca = cluster_ca(bootstrap)?;
    if kubeconfig.exists() && kept_usable(node, &pem, &dir.join(CA_SEEN), &ca) {
        return Ok(kubeconfig);
    }
    let key = rcgen::KeyPair::generate()?;
    let csr = request(node, &key, lifetime)?;
    let client = crate::RemoteClient::from_kubeconfig(bootstrap).await?;
    let api: Api<CertificateSigningRequest> = client.api(None);
    let both = obtain(&api, &csr, &key, wait).await?;
    write_private(&pem, &both)?;
    let config = node_kubeconfig(bootstrap, &pem)?;
    write_private(&kubeconfig, serde_yaml_ng::to_string(&config)?.as_bytes())?;
    write_private(&dir.join(CA_SEEN), &ca)?;
    Ok(kubeconfig)
}

/// Whether the kept certificate at `pem` can still act for the node: readable, not
/// expired, and from the cluster whose CA is `ca` (recorded in `seen` at bootstrap).
fn kept_usable(node: &str, pem: &Path, seen: &Path, ca: &[u8]) -> bool {
    let why = match crate::rotation::validity(pem) {
        Err(e) => format!("unreadable ({e})"),
        Ok((_, until)) if until <= std::time::SystemTime::now() => "expired".to_string(),
        Ok(_) if std::fs::read(seen).ok().as_deref() != Some(ca) => {
            "from another cluster (its CA differs)".to_string()
        }
        Ok(_) => return true,
    };
    tracing::warn!(
        node,
        "the node's client certificate is {why}; bootstrapping again"
    );
    false
}

/// The CA of the bootstrap kubeconfig's first cluster, as its bytes (inline data or file).
pub(crate) fn cluster_ca(bootstrap: &Path) -> Result<Vec<u8>, BootstrapError> {
    let config = Kubeconfig::read_from(bootstrap).map_err(|source| BootstrapError::Kubeconfig {
        path: bootstrap.display().to_string(),
        source,
    })?;
    let cluster = config.clusters.first().and_then(|c| c.cluster.as_ref());
    let Some(cluster) = cluster else {
        return Ok(Vec::new());
    };
    if let Some(data) = &cluster.certificate_authority_data {
        return Ok(data.as_bytes().to_vec());
    }
    let Some(file) = &cluster.certificate_authority else {
        return Ok(Vec::new());
    };
    let path = bootstrap.parent().unwrap_or(Path::new(".")).join(file);
    std::fs::read(&path).map_err(|source| BootstrapError::ReadCa {
        path: path.display().to_string(),
        source,
    })
}

/// What a CSR of the node asks for: which signer, for what, naming which hosts.
pub(crate) struct CsrKind<'a> {
    pub signer: &'a str,
    pub usages: &'a [&'a str],
    /// Host names and addresses (a serving certificate's); none for a client one.
    pub hosts: &'a [String],
    /// The start of the CSR's generated name.
    pub prefix: &'a str,
    /// The lifetime asked (`spec.expirationSeconds`); `None`: the signer's default.
    pub lifetime: Option<Duration>,
}

/// The CertificateSigningRequest for `node`'s client certificate.
pub(crate) fn request(
    node: &str,
    key: &rcgen::KeyPair,
    lifetime: Option<Duration>,
) -> Result<CertificateSigningRequest, BootstrapError> {
    let kind = CsrKind {
        signer: SIGNER,
        usages: &["digital signature", "client auth"],
        hosts: &[],
        prefix: "node-csr",
        lifetime,
    };
    node_csr(node, key, &kind)
}

/// A CSR for `system:node:<node>` (O `system:nodes`) with `key`, as `kind` says.
pub(crate) fn node_csr(
    node: &str,
    key: &rcgen::KeyPair,
    kind: &CsrKind<'_>,
) -> Result<CertificateSigningRequest, BootstrapError> {
    let mut params = rcgen::CertificateParams::new(kind.hosts.to_vec())?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "system:nodes");
    dn.push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    params.distinguished_name = dn;
    let pem = params.serialize_request(key)?.pem()?;
    let expiration = kind
        .lifetime
        .map(|d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX));
    Ok(CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-{node}-", kind.prefix)),
            ..ObjectMeta::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: kind.signer.into(),
            usages: Some(kind.usages.iter().map(|u| u.to_string()).collect()),
            expiration_seconds: expiration,
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

/// Submits `csr` made with `key` and waits at most `wait` for it to be issued: the
/// certificate with the key after it, as one PEM.
pub(crate) async fn obtain(
    api: &Api<CertificateSigningRequest>,
    csr: &CertificateSigningRequest,
    key: &rcgen::KeyPair,
    wait: Duration,
) -> Result<Vec<u8>, BootstrapError> {
    let made = api
        .create(&PostParams::default(), csr)
        .await
        .map_err(BootstrapError::Api)?;
    let name = made.metadata.name.unwrap_or_default();
    tracing::info!(csr = %name, signer = %csr.spec.signer_name, "asked the cluster for a certificate (kubectl certificate approve {name}, if nothing approves it)");
    let mut both = issued(api, &name, wait).await?;
    both.extend_from_slice(key.serialize_pem().as_bytes());
    Ok(both)
}

/// The first look at a new CSR's status comes this soon after asking: the cluster's
/// approver issues a client certificate within about a second.
const POLL_FIRST: Duration = Duration::from_millis(250);
/// Looks slow down to this: a CSR nobody approves (kubelet-serving, until an operator
/// runs `kubectl certificate approve`) was asked for four times a second for 15 minutes.
const POLL_MAX: Duration = Duration::from_secs(5);

fn next_poll(after: Duration) -> Duration {
    (after * 2).min(POLL_MAX)
}

/// The certificate, once the CSR `name` is issued.
pub(crate) async fn issued(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    wait: Duration,
) -> Result<Vec<u8>, BootstrapError> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut poll = POLL_FIRST;
    loop {
        let csr = api.get(name).await.map_err(BootstrapError::Api)?;
        let status = csr.status.unwrap_or_default();
        let refused = status
            .conditions
            .iter()
            .flatten()
            .find(|c| matches!(c.type_.as_str(), "Denied" | "Failed") && c.status == "True");
        if let Some(c) = refused {
            return Err(BootstrapError::Refused {
                name: name.into(),
                condition: c.type_.clone(),
                message: c.message.clone().unwrap_or_default(),
            });
        }
        if let Some(cert) = status.certificate.filter(|c| !c.0.is_empty()) {
            return Ok(cert.0);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(BootstrapError::NotIssued {
                name: name.into(),
                waited: wait,
            });
        }
        tokio::time::sleep(poll).await;
        poll = next_poll(poll);
    }
}

/// The bootstrap kubeconfig with its user replaced by the node's certificate (and a
/// relative CA path made absolute, since the new file lives elsewhere).
fn node_kubeconfig(bootstrap: &Path, pem: &Path) -> Result<Kubeconfig, BootstrapError> {
    let mut config =
        Kubeconfig::read_from(bootstrap).map_err(|source| BootstrapError::Kubeconfig {
            path: bootstrap.display().to_string(),
            source,
        })?;
    let base = bootstrap.parent().unwrap_or(Path::new("."));
    for c in config
        .clusters
        .iter_mut()
        .filter_map(|c| c.cluster.as_mut())
    {
        if let Some(ca) = c.certificate_authority.as_mut() {
            *ca = base.join(&*ca).display().to_string();
        }
    }
    let pem = pem.display().to_string();
    config.auth_infos = vec![NamedAuthInfo {
        name: USER.into(),
        auth_info: Some(AuthInfo {
            client_certificate: Some(pem.clone()),
            client_key: Some(pem),
            ..AuthInfo::default()
        }),
        other: Default::default(),
    }];
    for c in config
        .contexts
        .iter_mut()
        .filter_map(|c| c.context.as_mut())
    {
        c.user = Some(USER.into());
    }
    Ok(config)
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), BootstrapError> {
    podvisor_core::private_file::write(path, bytes).map_err(|source| BootstrapError::Write {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_at_a_csr_slow_down_to_one_in_five_seconds() {
        let mut d = POLL_FIRST;
        let mut waits = Vec::new();
        for _ in 0..8 {
            waits.push(d.as_millis());
            d = next_poll(d);
        }
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
        // Fifteen minutes unapproved: 184 looks, not 3,600.
        let mut left = Duration::from_secs(15 * 60);
        let (mut d, mut looks) = (POLL_FIRST, 1);
        while left >= d {
            left -= d;
            d = next_poll(d);
            looks += 1;
        }
        assert_eq!(looks, 184);
    }
}
