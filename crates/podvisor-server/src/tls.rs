//! The server's TLS: a serving certificate of its own, self-signed for the node's names
//! and addresses (what the kubelet makes without `serverTLSBootstrap`; the API server does
//! not verify it unless told to), and, in a cluster, client certificates verified against
//! the cluster's CA (the API server shows one); a client without one may still bring a
//! bearer token.

use std::sync::{Arc, RwLock};

use rcgen::{CertificateParams, DnType, KeyPair};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ResolvesServerCert;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::CertifiedKey;

use crate::auth::Identity;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot make the serving certificate: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("cannot use the certificates: {0}")]
    Rustls(String),
}

/// The serving certificate, replaceable while the server runs: self-signed at first, the
/// cluster's once it has issued one (`kubernetes.io/kubelet-serving`).
#[derive(Debug)]
pub struct ServingCert {
    current: RwLock<Arc<CertifiedKey>>,
    provider: Arc<CryptoProvider>,
}

impl ServingCert {
    /// A certificate for `hosts` (names and addresses), signed by itself.
    pub fn self_signed(node: &str, hosts: &[String]) -> Result<Arc<Self>, TlsError> {
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
        let certified = certified(
            &provider,
            cert.pem().as_bytes(),
            key.serialize_pem().as_bytes(),
        )?;
        Ok(Arc::new(Self {
            current: RwLock::new(certified),
            provider,
        }))
    }

    /// Serves `cert_pem` (the chain) with `key_pem` from the next handshake on.
    pub fn install(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<(), TlsError> {
        let next = certified(&self.provider, cert_pem, key_pem)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = next;
        Ok(())
    }

    fn now(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.now())
    }
}

fn certified(
    provider: &CryptoProvider,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<CertifiedKey>, TlsError> {
    let bad = |e: &dyn std::fmt::Display| TlsError::Rustls(e.to_string());
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if chain.is_empty() {
        return Err(TlsError::Rustls("no certificate in the PEM".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad(&e))?;
    let key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| bad(&e))?;
    Ok(Arc::new(CertifiedKey::new(chain, key)))
}

/// A server configuration serving `cert`; `client_ca` (PEM) verifies client certificates
/// when given.
pub fn server_config(
    cert: Arc<ServingCert>,
    client_ca: Option<&str>,
) -> Result<rustls::ServerConfig, TlsError> {
    let bad = |e: &dyn std::fmt::Display| TlsError::Rustls(e.to_string());
    let provider = cert.provider.clone();
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
    let mut config = builder.with_cert_resolver(cert);
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
        let cert = ServingCert::self_signed("n1", &["n1".into(), "127.0.0.1".into()]).unwrap();
        let c = server_config(cert, None).unwrap();
        assert_eq!(c.alpn_protocols.len(), 2);
    }

    #[test]
    fn an_installed_certificate_is_served_from_then_on_and_garbage_is_refused() {
        let cert = ServingCert::self_signed("n1", &["n1".into()]).unwrap();
        let before = cert.now().cert[0].clone();
        let key = KeyPair::generate().unwrap();
        let next = CertificateParams::new(vec!["n1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let key_pem = key.serialize_pem();
        cert.install(next.pem().as_bytes(), key_pem.as_bytes())
            .unwrap();
        assert_ne!(cert.now().cert[0], before);
        assert_eq!(cert.now().cert[0], *next.der());
        assert!(cert.install(b"not a pem", key_pem.as_bytes()).is_err());
        assert_eq!(cert.now().cert[0], *next.der(), "kept after a refusal");
    }
}
