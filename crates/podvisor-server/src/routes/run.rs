//! `POST /run/{namespace}/{pod}[/{uid}]/{container}?cmd=...`: runs a command in a running
//! container and answers its output, as the kubelet does (the command split on blanks).

use std::time::Duration;

use actix_web::{HttpResponse, web};
use serde::Deserialize;

use super::ServerState;
use crate::paths::pod_path;

/// The most a command may run: the kubelet sets none, but an answer must come.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Deserialize)]
pub(super) struct RunQuery {
    cmd: Option<String>,
}

pub(super) async fn serve(
    state: web::Data<ServerState>,
    path: web::Path<String>,
    q: web::Query<RunQuery>,
) -> HttpResponse {
    let segs: Vec<&str> = path.split('/').collect();
    let Some(target) = pod_path(&segs, true) else {
        return HttpResponse::BadRequest()
            .body("expected /run/{namespace}/{pod}[/{uid}]/{container}\n");
    };
    let cmd: Vec<String> = q
        .cmd
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    if cmd.is_empty() {
        return HttpResponse::BadRequest().body("the cmd parameter names no command\n");
    }
    let name = target.container.unwrap_or_default();
    let instances = match state.streams.instances(&target.pod, &name).await {
        Ok(i) => i,
        Err(e) => return HttpResponse::NotFound().body(format!("{e}\n")),
    };
    let Some(running) = instances
        .iter()
        .find(|c| c.state == podvisor_cri::ContainerState::Running)
    else {
        return HttpResponse::NotFound().body(format!("container {name:?} is not running\n"));
    };
    match state
        .streams
        .runtime()
        .exec_sync(&running.id, &cmd, RUN_TIMEOUT)
        .await
    {
        Ok(r) => HttpResponse::Ok().body([r.stdout, r.stderr].concat()),
        Err(e) => HttpResponse::InternalServerError().body(format!("{e}\n")),
    }
}
