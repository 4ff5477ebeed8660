//! A sync's writes, against the API: the plan's ReplicaSet creates, rewrites (each against
//! the resourceVersion it was planned from, so a stale plan fails and is planned again)
//! and deletes, the Deployment's revision annotation, then its status when it changed.
//! A Recreate rollout first lists the pods of the old ReplicaSets: none may still run.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use podvisor_client::{Api, Client, DeleteParams, Error, ListParams, PostParams, Subresource};
use podvisor_core::PodExt;
use podvisor_core::labels::selector_string;
use podvisor_machinery::controller::SyncError;

use super::plan::{self, Plan};
use super::util::{self, REVISION};
use super::world::{Scaled, Write};

/// What a sync did, for events and retries.
#[derive(Debug, Default)]
pub struct Report {
    pub scaled: Vec<Scaled>,
    pub requeue: Option<Duration>,
    pub error: Option<SyncError>,
}

fn namespace(d: &Deployment) -> &str {
    d.metadata.namespace.as_deref().unwrap_or_default()
}

/// Whether a pod of one of the Deployment's old ReplicaSets has not finished (being
/// deleted included: it may still run).
async fn old_pods_running(
    client: &Client,
    d: &Deployment,
    sets: &[Arc<ReplicaSet>],
) -> Result<bool, Error> {
    let template = d.spec.template.clone();
    let uid = d.metadata.uid.as_deref();
    let old: Vec<&str> = sets
        .iter()
        .filter(|rs| {
            rs.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| Some(r.uid.as_str()) == uid)
        })
        .filter(|rs| !util::same_template(&util::rs_template(rs), &template))
        .filter_map(|rs| rs.metadata.uid.as_deref())
        .collect();
    if old.is_empty() {
        return Ok(false);
    }
    let selector = selector_string(&d.spec.selector);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace(d));
    let labels = podvisor_client::selector::LabelSelector::parse(&selector)?;
    let list = pods.list(&ListParams::default().labels(labels)).await?;
    Ok(list.items.iter().any(|p| {
        let owner = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true));
        owner.is_some_and(|r| old.contains(&r.uid.as_str())) && !p.is_terminal()
    }))
}

async fn write(sets: &Api<ReplicaSet>, w: Write) -> Result<(), Error> {
    let pp = PostParams::default();
    match w {
        Write::Create(rs) => sets.create(&pp, rs).await.map(|_| ()),
        Write::Update(rs) => sets.replace(&pp, rs).await.map(|_| ()),
        Write::Delete { name, uid } => {
            match sets.delete(&name, &DeleteParams::if_uid(&uid)).await {
                Ok(_) | Err(Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

async fn carry_out(client: &Client, d: &Deployment, plan: &Plan) -> Result<(), Error> {
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace(d));
    for w in plan.writes.iter().cloned() {
        write(&sets, w).await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace(d));
    let name = d.metadata.name.as_deref().unwrap_or_default();
    let uid = d.metadata.uid.as_deref();
    if let Some(revision) = &plan.revision {
        deployments
            .edit(name, uid, Subresource::Main, 3, |d| {
                let a = d.metadata.annotations.get_or_insert_with(Default::default);
                a.insert(REVISION.into(), revision.clone()) != Some(revision.clone())
            })
            .await?;
    }
    if super::status::differs(d, &plan.status) {
        let status = plan.status.clone();
        deployments
            .edit(name, uid, Subresource::Status, 3, |d| {
                d.status = Some(status.clone());
                true
            })
            .await?;
    }
    Ok(())
}

/// Plans and carries out one sync of `d` given the ReplicaSets of its namespace.
pub async fn run(
    client: Client,
    d: Arc<Deployment>,
    sets: Vec<Arc<ReplicaSet>>,
    now_ms: i64,
) -> Report {
    let mut report = Report::default();
    let running = if util::is_recreate(&d) {
        match old_pods_running(&client, &d, &sets).await {
            Ok(r) => r,
            Err(e) => {
                report.error = Some(SyncError::new("listing old pods", e));
                return report;
            }
        }
    } else {
        false
    };
    let plan = plan::plan(&d, &sets, running, now_ms);
    report.requeue = plan.requeue;
    match carry_out(&client, &d, &plan).await {
        Ok(()) => report.scaled = plan.scaled,
        Err(e) => report.error = Some(SyncError::new("writing the rollout", e)),
    }
    report
}
