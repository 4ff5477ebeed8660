//! The kubelet server's certificate from the cluster (the kubelet's `serverTLSBootstrap`):
//! a key of the node's own and a CertificateSigningRequest to signer
//! `kubernetes.io/kubelet-serving` for `system:node:<node>` (O `system:nodes`) naming the
//! node's host names and addresses, made with the node's own credentials. The controller
//! manager does not approve these by itself (a node could claim any address): an operator
//! or an approver does (`kubectl certificate approve`). Until then the server keeps its
//! self-signed certificate. The issued pair is kept (0600) and used again after a restart
//! while it is within `rotate_after` of its life; past that a new CSR is made.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::Api;

use crate::RemoteClient;
use crate::bootstrap::{BootstrapError, CsrKind, node_csr, obtain, write_private};
use crate::rotation::{due, validity};

const SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The server's certificate and key, in the credentials directory.
const PEM: &str = "kubelet-server.pem";

/// What the certificate is for, and where it is kept.
#[derive(Debug, Clone)]
pub struct Serving {
    pub node: String,
    /// Host names and IP addresses the certificate names.
    pub hosts: Vec<String>,
    /// The credentials directory.
    pub dir: PathBuf,
    /// The share of its life after which a certificate is replaced.
    pub rotate_after: f64,
    /// The cluster's CA (PEM): a kept certificate another CA issued (the cluster was made
    /// again) is not used.
    pub cluster_ca: String,
}

/// An issued serving certificate: its PEM chain, its key's PEM, and when to replace it.
#[derive(Debug, Clone)]
pub struct Issued {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    pub renew_at: SystemTime,
}

impl Serving {
    fn pem(&self) -> PathBuf {
        self.dir.join(PEM)
    }

    /// The kept certificate, if it is still within its rotation share.
    pub fn kept(&self) -> Option<Issued> {
        let renew_at = due(validity(&self.pem()).ok()?, self.rotate_after);
        if renew_at <= SystemTime::now() {
            return None;
        }
        let both = std::fs::read(self.pem()).ok()?;
        issued_by(&both, self.cluster_ca.as_bytes()).then_some(())?;
        split(&both, renew_at)
    }

    /// Asks the cluster for a certificate and waits at most `wait` for it; logs the CSR's
    /// name so an operator can approve it.
    pub async fn request(
        &self,
        remote: &RemoteClient,
        wait: Duration,
    ) -> Result<Issued, BootstrapError> {
        let key = rcgen::KeyPair::generate()?;
        let csr = csr(&self.node, &self.hosts, &key)?;
        let api: Api<CertificateSigningRequest> = remote.api(None);
        let both = obtain(&api, &csr, &key, wait).await?;
        write_private(&self.pem(), &both)?;
        let renew_at = validity(&self.pem())
            .map(|v| due(v, self.rotate_after))
            .unwrap_or_else(|_| SystemTime::now());
        split(&both, renew_at).ok_or(BootstrapError::NotIssued {
            name: csr.metadata.generate_name.unwrap_or_default(),
            waited: wait,
        })
    }
}

/// Whether the first certificate in `pem` names `ca_pem`'s subject as its issuer.
fn issued_by(pem: &[u8], ca_pem: &[u8]) -> bool {
    let first = |bytes: &[u8]| x509_parser::pem::parse_x509_pem(bytes).ok().map(|(_, p)| p);
    let (Some(cert), Some(ca)) = (first(pem), first(ca_pem)) else {
        return false;
    };
    match (cert.parse_x509(), ca.parse_x509()) {
        (Ok(cert), Ok(ca)) => cert.issuer().as_raw() == ca.subject().as_raw(),
        _ => false,
    }
}

/// The certificates and the key of a PEM file that holds both.
fn split(both: &[u8], renew_at: SystemTime) -> Option<Issued> {
    let text = std::str::from_utf8(both).ok()?;
    let at = text.find("-----BEGIN PRIVATE KEY-----")?;
    Some(Issued {
        cert_pem: both[..at].to_vec(),
        key_pem: both[at..].to_vec(),
        renew_at,
    })
}

/// The CSR for `node`'s serving certificate naming `hosts`.
fn csr(
    node: &str,
    hosts: &[String],
    key: &rcgen::KeyPair,
) -> Result<CertificateSigningRequest, BootstrapError> {
    let kind = CsrKind {
        signer: SIGNER,
        // An ECDSA key: no key encipherment (as the kubelet asks for one).
        usages: &["digital signature", "server auth"],
        hosts,
        prefix: "csr-serving",
        lifetime: None,
    };
    node_csr(node, key, &kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    #[test]
    fn the_request_names_the_node_its_hosts_and_the_serving_signer() {
        let key = rcgen::KeyPair::generate().unwrap();
        let hosts = vec!["n1".to_string(), "10.0.0.7".to_string()];
        let csr = csr("n1", &hosts, &key).unwrap();
        assert_eq!(csr.spec.signer_name, SIGNER);
        assert_eq!(
            csr.spec.usages.unwrap(),
            ["digital signature", "server auth"]
        );
        let pem = String::from_utf8(csr.spec.request.0).unwrap();
        let der = der_of(&pem);
        let (_, req) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&der).unwrap();
        let subject = req.certification_request_info.subject.to_string();
        assert!(subject.contains("CN=system:node:n1"), "{subject}");
        assert!(subject.contains("O=system:nodes"), "{subject}");
        let sans = format!(
            "{:?}",
            req.requested_extensions().map(|e| e.collect::<Vec<_>>())
        );
        assert!(sans.contains("\"n1\""), "{sans}");
        assert!(sans.contains("[10, 0, 0, 7]"), "an IP SAN: {sans}");
    }

    fn der_of(pem: &str) -> Vec<u8> {
        let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        p.contents
    }

    #[test]
    fn a_kept_certificate_counts_only_if_the_clusters_ca_issued_it() {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "cluster-ca");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["n1".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let other = rcgen::CertificateParams::new(vec!["other-ca".to_string()])
            .unwrap()
            .self_signed(&rcgen::KeyPair::generate().unwrap())
            .unwrap();
        let leaf = leaf.pem();
        assert!(issued_by(leaf.as_bytes(), ca.pem().as_bytes()));
        assert!(!issued_by(leaf.as_bytes(), other.pem().as_bytes()));
        assert!(!issued_by(b"garbage", ca.pem().as_bytes()));
    }

    #[test]
    fn a_kept_pair_is_split_into_its_certificate_and_key() {
        let both = b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nBB==\n-----END PRIVATE KEY-----\n";
        let issued = split(both, SystemTime::now()).unwrap();
        assert!(
            String::from_utf8(issued.cert_pem)
                .unwrap()
                .ends_with("END CERTIFICATE-----\n")
        );
        assert!(
            String::from_utf8(issued.key_pem)
                .unwrap()
                .starts_with("-----BEGIN PRIVATE KEY")
        );
    }
}
