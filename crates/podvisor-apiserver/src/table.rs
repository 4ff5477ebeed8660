//! `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`: rows with the columns kubectl
//! prints for a kube-apiserver (pods with `-o wide`, nodes, replicasets, and the simpler
//! kinds), each row carrying the object's metadata so `--show-labels` works.

use podvisor_core::Kind;
use podvisor_store::StoredObject;
use serde_json::{Value, json};

mod cells;

/// What `includeObject` asked each row to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(s: Option<&str>) -> Include {
        match s {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

/// (name, type, priority): priority 1 columns show only with `-o wide`.
type Column = (&'static str, &'static str, u8);

fn columns(kind: Kind) -> &'static [Column] {
    match kind {
        Kind::Pod => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        Kind::Node => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        Kind::ReplicaSet => &[
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        Kind::Namespace => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Age", "string", 0),
        ],
        Kind::ConfigMap => &[
            ("Name", "string", 0),
            ("Data", "integer", 0),
            ("Age", "string", 0),
        ],
        Kind::Secret => &[
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Data", "integer", 0),
            ("Age", "string", 0),
        ],
        Kind::Event => &[
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        Kind::Deployment | Kind::Job => workload_columns(kind),
        _ => access_columns(kind),
    }
}

/// The columns of Deployments and Jobs.
fn workload_columns(kind: Kind) -> &'static [Column] {
    match kind {
        Kind::Deployment => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "string", 0),
            ("Available", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        _ => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
    }
}

/// The columns of the kinds of access control.
fn access_columns(kind: Kind) -> &'static [Column] {
    match kind {
        Kind::ServiceAccount => &[
            ("Name", "string", 0),
            ("Secrets", "string", 0),
            ("Age", "string", 0),
        ],
        Kind::Role | Kind::ClusterRole => &[("Name", "string", 0), ("Created At", "date", 0)],
        _ => &[
            ("Name", "string", 0),
            ("Role", "string", 0),
            ("Age", "string", 0),
            ("Users", "string", 1),
            ("Groups", "string", 1),
            ("ServiceAccounts", "string", 1),
        ],
    }
}

fn definitions(kind: Kind) -> Value {
    columns(kind)
        .iter()
        .map(|(name, ty, priority)| {
            let format = if *name == "Name" { "name" } else { "" };
            json!({"name": name, "type": ty, "format": format, "description": "", "priority": priority})
        })
        .collect()
}

fn row(o: &StoredObject, include: Include) -> Value {
    let v = o.value();
    let cells = cells::of(o.kind, &v);
    let object = match include {
        Include::None => Value::Null,
        Include::Object => v,
        Include::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": v["metadata"],
        }),
    };
    json!({"cells": cells, "object": object})
}

/// A table of `items`. Watch events after the first carry no column definitions.
pub fn table(
    kind: Kind,
    items: &[&StoredObject],
    revision: u64,
    continue_token: Option<&str>,
    include: Include,
    with_columns: bool,
) -> Value {
    let mut meta = json!({"resourceVersion": revision.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = c.into();
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": if with_columns { definitions(kind) } else { json!([]) },
        "rows": items.iter().map(|o| row(o, include)).collect::<Vec<_>>(),
    })
}

/// Whether the Accept header asks for a Table.
pub fn wanted(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}
