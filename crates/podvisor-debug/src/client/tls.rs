//! TLS toward the agent's API: only its own CA is trusted, and the server must present a
//! certificate for the host the kubeconfig names.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

pub(super) struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl Tls {
    /// For `host` (`127.0.0.1:6443`), trusting the CA in `ca_pem`.
    pub fn new(host: &str, ca_pem: &[u8]) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem) {
            roots
                .add(cert.map_err(|e| format!("the CA: {e}"))?)
                .map_err(|e| format!("the CA: {e}"))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let bare = host.rsplit_once(':').map_or(host, |(h, _)| h);
        let bare = bare.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(bare.to_string()).map_err(|e| format!("{bare}: {e}"))?;
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            name,
        })
    }

    pub async fn wrap(&self, tcp: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        self.connector.connect(self.name.clone(), tcp).await
    }
}
