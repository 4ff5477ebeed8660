//! TLS toward the agent's API: only its own CA is trusted, and the server must present a
//! certificate for the host the kubeconfig names.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Why the kubeconfig's CA or server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the CA: {0}")]
    Pem(#[from] rustls::pki_types::pem::Error),
    #[error("the CA: {0}")]
    Ca(#[source] rustls::Error),
    #[error("{0}")]
    Config(#[source] rustls::Error),
    #[error("{host}: {source}")]
    Name {
        host: String,
        source: rustls::pki_types::InvalidDnsNameError,
    },
}

pub(super) struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl Tls {
    /// For `host` (`127.0.0.1:6443`), trusting the CA in `ca_pem`.
    pub fn new(host: &str, ca_pem: &[u8]) -> Result<Self, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem) {
            roots.add(cert?).map_err(TlsError::Ca)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let bare = host.rsplit_once(':').map_or(host, |(h, _)| h);
        let bare = bare.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(bare.to_string()).map_err(|source| TlsError::Name {
            host: bare.to_string(),
            source,
        })?;
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            name,
        })
    }

    pub async fn wrap(&self, tcp: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        self.connector.connect(self.name.clone(), tcp).await
    }
}
