//! `GET /containerLogs/{namespace}/{pod}/{container}`: what `kubectl logs` reaches through
//! the API server, with the kubelet's options (follow, previous, tailLines, limitBytes,
//! sinceSeconds, sinceTime, timestamps), read from the instance's CRI log file.

use actix_web::{HttpResponse, web};
use podvisor_cri::ContainerState;
use podvisor_streaming::PodTarget;
use podvisor_streaming::logs::{LogOptions, log_stream};
use serde::Deserialize;

use super::ServerState;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogQuery {
    follow: Option<bool>,
    previous: Option<bool>,
    tail_lines: Option<i64>,
    limit_bytes: Option<i64>,
    since_seconds: Option<i64>,
    since_time: Option<String>,
    timestamps: Option<bool>,
}

pub(super) async fn serve(
    state: web::Data<ServerState>,
    path: web::Path<(String, String, String)>,
    q: web::Query<LogQuery>,
) -> HttpResponse {
    let (namespace, name, container) = path.into_inner();
    let options = match options(&q) {
        Ok(o) => o,
        Err(e) => return HttpResponse::BadRequest().body(format!("{e}\n")),
    };
    let pod = PodTarget {
        namespace,
        name,
        uid: String::new(),
    };
    let instances = match state.streams.instances(&pod, &container).await {
        Ok(i) => i,
        Err(e) => return HttpResponse::NotFound().body(format!("{e}\n")),
    };
    let index = usize::from(q.previous == Some(true));
    let Some(instance) = instances.get(index) else {
        return HttpResponse::BadRequest().body(format!(
            "previous terminated container {container:?} not found\n"
        ));
    };
    let follow = (q.follow == Some(true) && instance.state == ContainerState::Running).then(|| {
        let (runtime, id) = (state.streams.runtime().clone(), instance.id.clone());
        move || {
            let (runtime, id) = (runtime.clone(), id.clone());
            async move {
                let status = runtime.container_status(&id).await;
                status.is_ok_and(|s| s.state == ContainerState::Running)
            }
        }
    });
    let output = log_stream(instance.log_path.clone().into(), &options, follow).await;
    HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(output)
}

/// A log query the kubelet would refuse, and why.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadLogQuery {
    #[error("{0} must be at least 0")]
    Negative(&'static str),
    #[error("sinceSeconds must be greater than 0")]
    SinceSeconds,
    #[error("sinceTime: {0}")]
    SinceTime(#[from] jiff::Error),
}

fn options(q: &LogQuery) -> Result<LogOptions, BadLogQuery> {
    let count = |v: Option<i64>, what: &'static str| {
        v.map(|n| u64::try_from(n).map_err(|_| BadLogQuery::Negative(what)))
            .transpose()
    };
    let since = match (q.since_seconds, q.since_time.as_deref()) {
        (Some(s), _) if s <= 0 => return Err(BadLogQuery::SinceSeconds),
        (Some(s), _) => jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_secs(s))
            .ok(),
        (None, Some(t)) => Some(t.parse()?),
        (None, None) => None,
    };
    Ok(LogOptions {
        tail_lines: count(q.tail_lines, "tailLines")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        limit_bytes: count(q.limit_bytes, "limitBytes")?,
        timestamps: q.timestamps == Some(true),
        since,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_as_the_kubelet_checks_them() {
        let q = LogQuery {
            tail_lines: Some(-1),
            ..LogQuery::default()
        };
        assert!(options(&q).is_err());
        let q = LogQuery {
            since_seconds: Some(0),
            ..LogQuery::default()
        };
        assert!(options(&q).is_err());
        let q = LogQuery {
            since_time: Some("yesterday".into()),
            ..LogQuery::default()
        };
        assert!(options(&q).is_err());
        let q = LogQuery {
            tail_lines: Some(3),
            limit_bytes: Some(10),
            timestamps: Some(true),
            ..LogQuery::default()
        };
        let o = options(&q).unwrap();
        assert_eq!(
            (o.tail_lines, o.limit_bytes, o.timestamps),
            (Some(3), Some(10), true)
        );
    }
}
