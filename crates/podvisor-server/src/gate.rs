//! `/exec`, `/attach` and `/portForward`: the sessions the API server relays (kubectl
//! exec, attach, port-forward, cp through a cluster), checked, then proxied to the runtime.

use std::sync::Arc;

use podvisor_streaming::front::{Gate, TlsConn};
use podvisor_streaming::{
    KUBELET_NAMES, RequestHead, Session, Sniffed, StreamError, Streams, Verb, refuse,
};

use crate::auth::{Guard, Refusal, attributes};
use crate::paths::{PodPath, streaming};
use crate::tls::peer_identity;

pub(crate) struct KubeletGate {
    pub(crate) guard: Arc<Guard>,
    pub(crate) streams: Arc<Streams>,
}

impl Gate for KubeletGate {
    type Route = (Verb, PodPath);

    fn route(&self, head: &RequestHead) -> Option<Self::Route> {
        head.is_upgrade().then(|| streaming(head.path())).flatten()
    }

    async fn serve(&self, mut io: TlsConn, sniffed: Sniffed, route: Self::Route) {
        if let Err(e) = self.session(&mut io, &sniffed, route).await {
            tracing::debug!(error = %e, path = sniffed.head.path(), "kubelet server: streaming request refused");
            let _ = refuse(&mut io, &e).await;
        }
    }
}

impl KubeletGate {
    async fn session(
        &self,
        io: &mut TlsConn,
        sniffed: &Sniffed,
        (verb, path): (Verb, PodPath),
    ) -> Result<(), StreamError> {
        let head = &sniffed.head;
        let who = peer_identity(io.get_ref().1);
        let what = attributes(&head.method, head.path());
        self.guard
            .check(who, head.header("authorization"), what)
            .await
            .map_err(refusal)?;
        let mut session = Session::parse_with(verb, head.query(), KUBELET_NAMES)?;
        if let Some(c) = &path.container {
            session = session.with_container(c);
        }
        let rest = sniffed.rest();
        self.streams
            .serve(io, head, rest, &path.pod, &session)
            .await
    }
}

pub(crate) fn refusal(r: Refusal) -> StreamError {
    match r {
        Refusal::Unauthenticated => StreamError::Unauthorized,
        Refusal::Forbidden { .. } => StreamError::Forbidden(r.to_string()),
        Refusal::Unavailable(m) => StreamError::Unavailable(m),
    }
}
