//! Credentials made at first start and kept in `<state_dir>/pki`: a CA (and its key), a
//! serving certificate for localhost, 127.0.0.1 and the node's address signed by it, and a
//! bearer token; plus the
//! kubeconfig (mode 0600) that points kubectl at the API with them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot use {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make certificates: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("cannot load the serving certificate: {0}")]
    Rustls(String),
}

/// What the API serves with and checks.
pub struct Credentials {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub token: String,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `data` readable by the owner only.
pub fn write_private(path: &Path, data: &[u8]) -> Result<(), TlsError> {
    podvisor_core::private_file::write(path, data).map_err(io(path))
}

/// The names the serving certificate is for: localhost, loopback, and `extra` (the node's
/// address, which pods reach the API by).
fn names(extra: &[std::net::IpAddr]) -> Vec<String> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    names.extend(extra.iter().map(|ip| ip.to_string()));
    names.sort();
    names.dedup();
    names
}

/// The CA's parameters: the same each time, so a serving certificate made later by the
/// kept key names the same issuer.
fn ca_params() -> Result<CertificateParams, TlsError> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name
        .push(DnType::CommonName, "podvisor-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    Ok(ca)
}

/// A serving certificate for `names`, signed by the CA, written with its key.
fn serving(dir: &Path, ca_key: &KeyPair, names: &[String]) -> Result<(String, String), TlsError> {
    let key = KeyPair::generate()?;
    let mut server = CertificateParams::new(names.to_vec())?;
    server
        .distinguished_name
        .push(DnType::CommonName, "podvisor-apiserver");
    let ca = ca_params()?;
    let issuer = Issuer::from_params(&ca, ca_key);
    let cert = server.signed_by(&key, &issuer)?;
    write_private(&dir.join("apiserver.crt"), cert.pem().as_bytes())?;
    write_private(&dir.join("apiserver.key"), key.serialize_pem().as_bytes())?;
    write_private(&dir.join("apiserver.names"), names.join("\n").as_bytes())?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn make(dir: &Path, names: &[String]) -> Result<Credentials, TlsError> {
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params()?.self_signed(&ca_key)?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    write_private(&dir.join("ca.crt"), ca_cert.pem().as_bytes())?;
    write_private(&dir.join("ca.key"), ca_key.serialize_pem().as_bytes())?;
    let (cert_pem, key_pem) = serving(dir, &ca_key, names)?;
    let token =
        uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
    write_private(&dir.join("token"), token.as_bytes())?;
    Ok(Credentials {
        ca_pem: ca_cert.pem(),
        cert_pem,
        key_pem,
        token,
    })
}

/// The credentials in `dir`, made there first if any file is missing; the serving
/// certificate is made again (by the same CA) when the names it must carry changed (the
/// node's address). Without the CA's key (a state directory from before it was kept),
/// everything is made anew.
pub fn load_or_make(dir: &Path, extra: &[std::net::IpAddr]) -> Result<Credentials, TlsError> {
    let names = names(extra);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let (Some(ca_pem), Some(ca_key), Some(cert_pem), Some(key_pem), Some(token)) = (
        read("ca.crt"),
        read("ca.key"),
        read("apiserver.crt"),
        read("apiserver.key"),
        read("token").filter(|t| !t.trim().is_empty()),
    ) else {
        return make(dir, &names);
    };
    let token = token.trim().to_string();
    if read("apiserver.names").as_deref() == Some(names.join("\n").as_str()) {
        return Ok(Credentials {
            ca_pem,
            cert_pem,
            key_pem,
            token,
        });
    }
    let (cert_pem, key_pem) = serving(dir, &KeyPair::from_pem(&ca_key)?, &names)?;
    Ok(Credentials {
        ca_pem,
        cert_pem,
        key_pem,
        token,
    })
}

impl Credentials {
    pub fn server_config(&self) -> Result<rustls::ServerConfig, TlsError> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let bad = |e: &dyn std::fmt::Display| TlsError::Rustls(e.to_string());
        let certs = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).map_err(|e| bad(&e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(&e))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| bad(&e))
    }

    /// A kubeconfig for `server` (`https://127.0.0.1:6443`) with this CA and token.
    pub fn kubeconfig(&self, server: &str, cluster: &str) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {cluster}-admin\n  user:\n    token: {token}\ncontexts:\n- name: {cluster}\n  context:\n    cluster: {cluster}\n    user: {cluster}-admin\n    namespace: default\ncurrent-context: {cluster}\n",
            token = self.token,
        )
    }
}
