//! Credentials made at first start and kept in `<state_dir>/pki`: a CA, a serving
//! certificate for localhost and 127.0.0.1 signed by it, and a bearer token; plus the
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

fn make(dir: &Path) -> Result<Credentials, TlsError> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name
        .push(DnType::CommonName, "podvisor-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let key = KeyPair::generate()?;
    let mut server =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
    server
        .distinguished_name
        .push(DnType::CommonName, "podvisor-apiserver");
    let issuer = Issuer::from_params(&ca, &ca_key);
    let cert = server.signed_by(&key, &issuer)?;
    let token =
        uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
    let c = Credentials {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        token,
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    write_private(&dir.join("ca.crt"), c.ca_pem.as_bytes())?;
    write_private(&dir.join("apiserver.crt"), c.cert_pem.as_bytes())?;
    write_private(&dir.join("apiserver.key"), c.key_pem.as_bytes())?;
    write_private(&dir.join("token"), c.token.as_bytes())?;
    Ok(c)
}

/// The credentials in `dir`, made there first if any file is missing.
pub fn load_or_make(dir: &Path) -> Result<Credentials, TlsError> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    match (
        read("ca.crt"),
        read("apiserver.crt"),
        read("apiserver.key"),
        read("token"),
    ) {
        (Some(ca_pem), Some(cert_pem), Some(key_pem), Some(token)) if !token.trim().is_empty() => {
            Ok(Credentials {
                ca_pem,
                cert_pem,
                key_pem,
                token: token.trim().to_string(),
            })
        }
        _ => make(dir),
    }
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
