//! Rotating the node's client certificate before it expires, as the kubelet does: once a
//! share of its lifetime has passed (`rotate_after`; the kubelet picks 70–90 %), a new key
//! and a CSR for the same identity, made with the current certificate (the cluster
//! approves a node's renewal of its own), the files replaced (0600) and every clone of the
//! node's [`RemoteClient`] switched to the new credentials. A failed attempt is tried
//! again every 30 s while the old certificate lasts.
//!
//! Restart: nothing is kept; the certificate on disk says when the next rotation is due.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::Api;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use serde::Serialize;
use tracing::{info, warn};

use crate::RemoteClient;
use crate::bootstrap::{BootstrapError, PEM, obtain, request, write_private};

/// A rotation finished: the new certificate's expiry (to the actor itself).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Rotated(Result<SystemTime, BootstrapError>);

const RETRY: Duration = Duration::from_secs(30);
/// How long a renewal waits for the cluster to sign.
const WAIT: Duration = Duration::from_secs(60);

/// Why a certificate's dates could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} holds no readable certificate: {reason}")]
    Parse { path: String, reason: String },
}

/// When the certificate (the first in the PEM file at `path`) became and stops being
/// valid.
pub fn validity(path: &Path) -> Result<(SystemTime, SystemTime), CertError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| CertError::Read {
        path: shown.clone(),
        source,
    })?;
    let parse = |reason: String| CertError::Parse {
        path: shown.clone(),
        reason,
    };
    let (_, pem) = x509_parser::pem::parse_x509_pem(&bytes).map_err(|e| parse(e.to_string()))?;
    let cert = pem.parse_x509().map_err(|e| parse(e.to_string()))?;
    let at = |t: i64| UNIX_EPOCH + Duration::from_secs(u64::try_from(t).unwrap_or(0));
    let v = cert.validity();
    Ok((at(v.not_before.timestamp()), at(v.not_after.timestamp())))
}

/// When a certificate valid from `from` until `until` is due for rotation.
pub fn due((from, until): (SystemTime, SystemTime), rotate_after: f64) -> SystemTime {
    let life = until.duration_since(from).unwrap_or_default();
    from + life.mul_f64(rotate_after.clamp(0.0, 1.0))
}

/// The rotation's settings.
#[derive(Debug, Clone)]
pub struct Rotation {
    pub node: String,
    /// The credentials directory (`kubelet-client.pem`, `kubelet.kubeconfig`).
    pub dir: PathBuf,
    pub rotate_after: f64,
    /// The lifetime asked of the cluster (`spec.expirationSeconds`); `None`: its default.
    pub lifetime: Option<Duration>,
    /// Counts failed renewals (`kubelet_certificate_manager_client_expiration_renew_errors`).
    pub renew_errors: prometheus::IntCounter,
}

async fn rotate(r: Rotation, remote: RemoteClient) -> Result<SystemTime, BootstrapError> {
    let key = rcgen::KeyPair::generate()?;
    let csr = request(&r.node, &key, r.lifetime)?;
    let api: Api<CertificateSigningRequest> = remote.api(None);
    let both = obtain(&api, &csr, &key, WAIT).await?;
    let pem = r.dir.join(PEM);
    write_private(&pem, &both)?;
    remote.reload(&r.dir.join("kubelet.kubeconfig")).await?;
    Ok(validity(&pem).map(|(_, until)| until).unwrap_or(UNIX_EPOCH))
}

pub struct CertRotation {
    settings: Rotation,
    remote: RemoteClient,
    me: Option<Recipient<Rotated>>,
    rotations: u64,
    next: Option<SystemTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertRotationSummary {
    pub rotations: u64,
    /// Seconds until the next rotation (negative: overdue, being retried).
    pub next_in_seconds: Option<i64>,
}

impl CertRotation {
    pub fn new(settings: Rotation, remote: &RemoteClient) -> Self {
        Self {
            settings,
            remote: remote.clone(),
            me: None,
            rotations: 0,
            next: None,
        }
    }

    /// Waits until the certificate on disk is due, then rotates it.
    fn schedule(&mut self, ctx: &mut Context<Self>) {
        let pem = self.settings.dir.join(PEM);
        let wait = match validity(&pem) {
            Ok(v) => {
                let at = due(v, self.settings.rotate_after);
                self.next = Some(at);
                at.duration_since(SystemTime::now()).unwrap_or_default()
            }
            Err(e) => {
                warn!(error = %e, "cannot tell when the node's certificate expires");
                RETRY
            }
        };
        ctx.run_later(wait, |act, ctx| act.start(ctx));
    }

    fn start(&mut self, ctx: &mut Context<Self>) {
        let Some(me) = self.me.clone() else { return };
        let work = rotate(self.settings.clone(), self.remote.clone());
        ctx.spawn(async move { me.do_send(Rotated(work.await)) }.into_actor(self));
    }
}

impl Actor for CertRotation {
    type Context = Context<Self>;
}

impl SupervisedActor for CertRotation {
    const KIND: &'static str = "cert-rotation";
    type Summary = CertRotationSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.me = Some(start.me.recipient());
        self.schedule(ctx);
    }

    fn summary(&self) -> CertRotationSummary {
        let now = SystemTime::now();
        CertRotationSummary {
            rotations: self.rotations,
            next_in_seconds: self.next.map(|at| match at.duration_since(now) {
                Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
            }),
        }
    }
}

impl Handler<Rotated> for CertRotation {
    type Result = ();
    fn handle(&mut self, Rotated(r): Rotated, ctx: &mut Context<Self>) {
        match r {
            Ok(until) => {
                self.rotations += 1;
                let left = until.duration_since(SystemTime::now()).unwrap_or_default();
                info!(node = %self.settings.node, valid_for_seconds = left.as_secs(), "client certificate rotated");
                self.schedule(ctx);
            }
            Err(e) => {
                self.settings.renew_errors.inc();
                warn!(node = %self.settings.node, error = %e, "client certificate not rotated; trying again in 30 s");
                ctx.run_later(RETRY, |act, ctx| act.start(ctx));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_is_due_at_its_share_of_its_lifetime() {
        let from = UNIX_EPOCH + Duration::from_secs(1000);
        let until = from + Duration::from_secs(100);
        assert_eq!(due((from, until), 0.8), from + Duration::from_secs(80));
        assert_eq!(due((from, until), 2.0), until, "never after it expires");
        assert_eq!(
            due((until, from), 0.8),
            until,
            "a certificate from the future: now-ish"
        );
    }

    #[test]
    fn the_dates_come_from_the_pem() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["n".into()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2026, 1, 1);
        params.not_after = rcgen::date_time_ymd(2027, 1, 1);
        let cert = params.self_signed(&key).unwrap();
        let dir = std::env::temp_dir().join(format!("podvisor-rotation-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.pem");
        std::fs::write(&path, cert.pem()).unwrap();
        let (from, until) = validity(&path).unwrap();
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert_eq!((secs(from), secs(until)), (1_767_225_600, 1_798_761_600));
        std::fs::write(&path, "not a certificate").unwrap();
        assert!(validity(&path).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
