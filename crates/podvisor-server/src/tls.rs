//! The server's TLS: a serving certificate of its own, self-signed for the node's names
//! and addresses (what the kubelet makes without `serverTLSBootstrap`; the API server does
//! not verify it unless told to), and, in a cluster, client certificates verified against
//! the cluster's CA (the API server shows one); a client without one may still bring a
//! bearer token.

use std::sync::Arc;

use rcgen::{CertificateParams, DnType, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

use crate::auth::Identity;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot make the serving certificate: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("cannot use the certificates: {0}")]
    Rustls(String),
}

/// A server configuration for `hosts` (names and addresses); `client_ca` (PEM) verifies
/// client certificates when given.
pub fn server_config(
    node: &str,
    hosts: &[String],
    client_ca: Option<&str>,
) -> Result<rustls::ServerConfig, TlsError> {
    let bad = |e: &dyn std::fmt::Display| TlsError::Rustls(e.to_string());
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(hosts.to_vec())?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{node}@{stamp}"));
    let cert = params.self_signed(&key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?;
    let builder = match client_ca {
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(c.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| bad(&e))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).map_err(|e| bad(&e))?;
    let mut config = builder
        .with_single_cert(vec![cert.der().clone()], key)
        .map_err(|e| bad(&e))?;
    config.alpn_protocols = podvisor_streaming::front::ALPN
        .iter()
        .map(|p| p.to_vec())
        .collect();
    Ok(config)
}

/// Who a verified client certificate names: its common name, and its organizations as
/// groups (as Kubernetes reads an X.509 client certificate).
pub fn identity(leaf: &CertificateDer<'_>) -> Option<Identity> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref()).ok()?;
    let subject = cert.subject();
    let user = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(Identity { user, groups })
}

/// The identity of a TLS connection's verified client certificate, if it showed one.
pub fn peer_identity(conn: &rustls::ServerConnection) -> Option<Identity> {
    identity(conn.peer_certificates()?.first()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificates_subject_is_its_identity() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver-kubelet-client");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        let cert = params.self_signed(&key).unwrap();
        let who = identity(cert.der()).unwrap();
        assert_eq!(who.user, "kube-apiserver-kubelet-client");
        assert_eq!(who.groups, ["system:masters"]);
    }

    #[test]
    fn a_config_serves_both_protocols_and_asks_for_certificates_only_with_a_ca() {
        let c = server_config("n1", &["n1".into(), "127.0.0.1".into()], None).unwrap();
        assert_eq!(c.alpn_protocols.len(), 2);
    }
}
