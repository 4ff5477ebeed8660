//! `podvisor get pods`, `podvisor describe pod`, `podvisor logs`: thin clients of the
//! agent's Kubernetes API (what kubectl talks to), for a machine without kubectl. The
//! table is the server's own (the columns kubectl prints); files in the manifest directory
//! that could not be used come from the debug endpoint.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use podvisor_debug::client::Endpoint;
use serde_json::Value;

use super::EndpointArgs;
use crate::agent::AgentConfig;

#[derive(Debug, Subcommand)]
pub enum GetCommand {
    /// Pods: name, ready containers, status, restarts, age.
    Pods(GetPodsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Wide,
    Yaml,
    Json,
}

/// Where the agent's Kubernetes API is: a kubeconfig.
#[derive(Debug, Args)]
pub struct ApiArgs {
    /// The kubeconfig to use. Default: the agent's own, `<state_dir>/kubeconfig` (state_dir
    /// from `$PODVISOR_CONFIG`, else the default), readable by the agent's user only.
    #[arg(long, env = "PODVISOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace.
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
}

impl ApiArgs {
    pub(super) fn endpoint(&self) -> anyhow::Result<Endpoint> {
        let path = match &self.kubeconfig {
            Some(p) => p.clone(),
            None => {
                let config = std::env::var_os("PODVISOR_CONFIG").map(PathBuf::from);
                AgentConfig::load(config.as_deref())?
                    .state_dir
                    .join("kubeconfig")
            }
        };
        Endpoint::from_kubeconfig(&path).context("cannot reach the agent's API")
    }
}

#[derive(Debug, Args)]
pub struct GetPodsArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// Pods of every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// `wide` adds IP and node; `json` prints a Kubernetes PodList; `yaml` the same as YAML.
    #[arg(short, long)]
    pub output: Option<Output>,
    /// The debug endpoint, asked for manifest files that could not be used.
    #[command(flatten)]
    pub debug: EndpointArgs,
}

#[derive(Debug, Subcommand)]
pub enum DescribeCommand {
    /// One pod: status, IP, each container's state and restarts, conditions, events.
    Pod(DescribeArgs),
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// The pod's name (as `get pods` shows it).
    pub name: String,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    pub pod: String,
    /// The container (needed when the pod has several).
    #[arg(short, long)]
    pub container: Option<String>,
    /// Keep printing what the container writes.
    #[arg(short, long)]
    pub follow: bool,
    /// The previous instance's log (before the last restart).
    #[arg(short, long)]
    pub previous: bool,
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// A cell as kubectl prints it.
fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<none>".into(),
        other => other.to_string(),
    }
}

/// Renders a `meta.k8s.io/v1` Table as kubectl does: upper-case headers, priority-1
/// columns only when `wide`, a NAMESPACE column first when `namespaces`.
pub fn render_table(t: &Value, wide: bool, namespaces: bool) -> String {
    let defs = t["columnDefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let shown: Vec<usize> = (0..defs.len())
        .filter(|i| wide || defs[*i]["priority"].as_i64().unwrap_or(0) == 0)
        .collect();
    let mut header: Vec<String> = shown
        .iter()
        .map(|i| defs[*i]["name"].as_str().unwrap_or("").to_uppercase())
        .collect();
    if namespaces {
        header.insert(0, "NAMESPACE".into());
    }
    let mut rows = vec![header];
    for r in t["rows"].as_array().into_iter().flatten() {
        let mut row: Vec<String> = shown.iter().map(|i| cell(&r["cells"][*i])).collect();
        if namespaces {
            let ns = r["object"]["metadata"]["namespace"].as_str().unwrap_or("");
            row.insert(0, ns.to_string());
        }
        rows.push(row);
    }
    align(&rows)
}

fn align(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
                .collect();
            line.join("   ").trim_end().to_string() + "\n"
        })
        .collect()
}

fn pods_path(args: &GetPodsArgs) -> String {
    if args.all_namespaces {
        "/api/v1/pods".into()
    } else {
        format!("/api/v1/namespaces/{}/pods", args.api.namespace)
    }
}

pub async fn get(cmd: GetCommand) -> anyhow::Result<()> {
    let GetCommand::Pods(args) = cmd;
    let api = args.api.endpoint()?;
    let path = pods_path(&args);
    match args.output {
        Some(Output::Json) => {
            let list: Value = serde_json::from_str(&api.get(&path).await?)?;
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        Some(Output::Yaml) => {
            let list: Value = serde_json::from_str(&api.get(&path).await?)?;
            print!("{}", serde_yaml_ng::to_string(&list)?);
        }
        wide => {
            let table: Value = serde_json::from_str(&api.get_as(&path, TABLE).await?)?;
            if table["rows"].as_array().is_none_or(Vec::is_empty) {
                println!("No resources found.");
            } else {
                let wide = wide == Some(Output::Wide);
                print!("{}", render_table(&table, wide, args.all_namespaces));
            }
        }
    }
    warn_manifest_errors(&args.debug).await;
    Ok(())
}

/// Files that could not be used are part of the answer: said on stderr (stdout stays
/// parseable in every format). Best effort: the debug endpoint may be elsewhere.
async fn warn_manifest_errors(debug: &EndpointArgs) {
    let token = debug.token();
    let Ok(text) =
        podvisor_debug::client::get(&debug.endpoint, "/debug/manifest-errors", token.as_deref())
            .await
    else {
        return;
    };
    let errors: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
    for e in errors {
        let (path, reason) = (e["path"].as_str(), e["reason"].as_str());
        eprintln!(
            "warning: {}: {}",
            path.unwrap_or("?"),
            reason.unwrap_or("?")
        );
    }
}

fn time(t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> String {
    t.as_ref().map_or("-".into(), |t| t.0.to_string())
}

/// A container state in one line.
fn state_line(s: Option<k8s_openapi::api::core::v1::ContainerState>) -> String {
    let s = s.unwrap_or_default();
    if let Some(r) = s.running {
        format!("Running (since {})", time(&r.started_at))
    } else if let Some(t) = s.terminated {
        format!(
            "Terminated: {} (exit code {}, {} → {})",
            t.reason.unwrap_or_default(),
            t.exit_code,
            time(&t.started_at),
            time(&t.finished_at)
        )
    } else if let Some(w) = s.waiting {
        let msg = w.message.map(|m| format!(": {m}")).unwrap_or_default();
        format!("Waiting: {}{msg}", w.reason.unwrap_or_default())
    } else {
        "Unknown".into()
    }
}

fn describe_header(p: &Pod, st: &k8s_openapi::api::core::v1::PodStatus, out: &mut String) {
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<14}{v}\n"));
    let m = &p.metadata;
    line("Name:", m.name.clone().unwrap_or_default());
    line("Namespace:", m.namespace.clone().unwrap_or_default());
    line("UID:", m.uid.clone().unwrap_or_default());
    let spec = p.spec.as_ref();
    line(
        "Node:",
        spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
    );
    line("Start Time:", time(&st.start_time));
    let annotations = m.annotations.as_ref();
    if let Some(f) = annotations.and_then(|a| a.get("podvisor.io/manifest")) {
        line("Manifest:", f.clone());
    }
    if m.deletion_timestamp.is_some() {
        line("Status:", "Terminating".into());
    } else {
        line("Status:", st.phase.clone().unwrap_or_default());
    }
    if let Some(r) = &st.reason {
        line("Reason:", r.clone());
    }
    if let Some(msg) = &st.message {
        line("Message:", msg.clone());
    }
    line("IP:", st.pod_ip.clone().unwrap_or_else(|| "<none>".into()));
}

fn describe_containers(title: &str, list: &[ContainerStatus], out: &mut String) {
    if list.is_empty() {
        return;
    }
    out.push_str(title);
    out.push('\n');
    for c in list {
        out.push_str(&format!("  {}:\n", c.name));
        out.push_str(&format!("    Image:          {}\n", c.image));
        if let Some(id) = &c.container_id {
            out.push_str(&format!("    Container ID:   {id}\n"));
        }
        let state = state_line(c.state.clone());
        out.push_str(&format!("    State:          {state}\n"));
        if c.last_state
            .as_ref()
            .is_some_and(|l| l.terminated.is_some())
        {
            let last = state_line(c.last_state.clone());
            out.push_str(&format!("    Last State:     {last}\n"));
        }
        out.push_str(&format!("    Ready:          {}\n", c.ready));
        out.push_str(&format!("    Restart Count:  {}\n", c.restart_count));
    }
}

fn describe_events(events: &[Event], out: &mut String) {
    out.push_str("Events:\n");
    if events.is_empty() {
        out.push_str("  <none>\n");
    }
    let now = podvisor_core::time::now().0.as_second();
    for e in events {
        let last = e.last_timestamp.as_ref().map_or(now, |t| t.0.as_second());
        let count = match e.count {
            Some(n) if n > 1 => format!(" (x{n})"),
            _ => String::new(),
        };
        let (t, reason) = (
            e.type_.as_deref().unwrap_or(""),
            e.reason.as_deref().unwrap_or(""),
        );
        let message = e.message.as_deref().unwrap_or("");
        out.push_str(&format!(
            "  {t:<8} {reason:<16} {:>5}s ago{count}  {message}\n",
            (now - last).max(0)
        ));
    }
}

pub fn describe_text(p: &Pod, events: &[Event]) -> String {
    let st = p.status.clone().unwrap_or_default();
    let mut out = String::new();
    describe_header(p, &st, &mut out);
    let inits = st.init_container_statuses.clone().unwrap_or_default();
    describe_containers("Init Containers:", &inits, &mut out);
    let apps = st.container_statuses.clone().unwrap_or_default();
    describe_containers("Containers:", &apps, &mut out);
    out.push_str("Conditions:\n");
    for c in st.conditions.iter().flatten() {
        out.push_str(&format!("  {:<16}{}\n", c.type_, c.status));
    }
    describe_events(events, &mut out);
    out
}

pub async fn describe(cmd: DescribeCommand) -> anyhow::Result<()> {
    let DescribeCommand::Pod(args) = cmd;
    let api = args.api.endpoint()?;
    let ns = &args.api.namespace;
    let body = api
        .get(&format!("/api/v1/namespaces/{ns}/pods/{}", args.name))
        .await?;
    let pod: Pod = serde_json::from_str(&body)?;
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let events = api
        .get(&format!(
            "/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{},involvedObject.uid%3D{uid}",
            args.name
        ))
        .await?;
    let list: Value = serde_json::from_str(&events)?;
    let mut events: Vec<Event> = serde_json::from_value(list["items"].clone())?;
    events.sort_by_key(|e| e.last_timestamp.as_ref().map(|t| t.0));
    print!("{}", describe_text(&pod, &events));
    Ok(())
}

pub async fn logs(args: LogsArgs) -> anyhow::Result<()> {
    let api = args.api.endpoint()?;
    let mut path = format!(
        "/api/v1/namespaces/{}/pods/{}/log?follow={}&previous={}",
        args.api.namespace, args.pod, args.follow, args.previous
    );
    if let Some(c) = &args.container {
        path.push_str(&format!("&container={c}"));
    }
    let mut stdout = std::io::stdout();
    api.get_stream(&path, |bytes| {
        let _ = stdout.write_all(bytes);
        let _ = stdout.flush();
    })
    .await?;
    Ok(())
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
