//! `podvisor get pods`, `podvisor describe pod`, `podvisor logs`: the running agent's pods,
//! read through its local API.

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use podvisor_debug::client;
use podvisor_kubelet::protocol::manifests::ManifestError;
use podvisor_kubelet::protocol::status::PodRecord;

use super::EndpointArgs;

#[derive(Debug, Subcommand)]
pub enum GetCommand {
    /// The agent's pods: name, ready containers, status, restarts, age.
    Pods(GetPodsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Wide,
    Yaml,
    Json,
}

#[derive(Debug, Args)]
pub struct GetPodsArgs {
    #[command(flatten)]
    pub at: EndpointArgs,
    /// `wide` adds IP and node; `json` prints a Kubernetes PodList; `yaml` the same as YAML.
    #[arg(short, long)]
    pub output: Option<Output>,
}

#[derive(Debug, Subcommand)]
pub enum DescribeCommand {
    /// One pod: status, IP, each container's state and restarts, conditions, events.
    Pod(DescribeArgs),
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    #[command(flatten)]
    pub at: EndpointArgs,
    /// The pod's name (as `get pods` shows it) or UID.
    pub name: String,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    #[command(flatten)]
    pub at: EndpointArgs,
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

fn age(pod: &Pod) -> String {
    let Some(start) = pod.status.as_ref().and_then(|s| s.start_time.as_ref()) else {
        return "-".into();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let secs = (now - start.0.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The status column, as kubectl words it: a waiting or terminated reason beats the phase.
pub fn status_word(pod: &Pod) -> String {
    let Some(status) = &pod.status else {
        return "Unknown".into();
    };
    if pod.metadata.deletion_timestamp.is_some() {
        return "Terminating".into();
    }
    if let Some(r) = &status.reason {
        return r.clone();
    }
    let inits = status.init_container_statuses.as_deref().unwrap_or(&[]);
    for (i, c) in inits.iter().enumerate() {
        let st = c.state.clone().unwrap_or_default();
        if st.terminated.as_ref().is_some_and(|t| t.exit_code == 0) {
            continue;
        }
        if let Some(w) = st
            .waiting
            .and_then(|w| w.reason)
            .filter(|r| r != "PodInitializing")
        {
            return format!("Init:{w}");
        }
        if let Some(t) = st.terminated {
            return format!(
                "Init:{}",
                t.reason
                    .unwrap_or_else(|| format!("ExitCode:{}", t.exit_code))
            );
        }
        return format!("Init:{i}/{}", inits.len());
    }
    let mut word = status.phase.clone().unwrap_or_else(|| "Unknown".into());
    let mut running = false;
    for c in status.container_statuses.iter().flatten().rev() {
        let st = c.state.clone().unwrap_or_default();
        if let Some(r) = st.waiting.and_then(|w| w.reason) {
            word = r;
        } else if let Some(t) = st.terminated {
            word = t
                .reason
                .unwrap_or_else(|| format!("ExitCode:{}", t.exit_code));
        } else if st.running.is_some() {
            running = true;
        }
    }
    if running && word == "Completed" {
        word = "Running".into();
    }
    word
}

fn containers(pod: &Pod) -> &[ContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[])
}

pub fn table(pods: &[Pod], wide: bool) -> String {
    let mut rows = vec![{
        let mut h = vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE"];
        if wide {
            h.extend(["IP", "NODE"]);
        }
        h.into_iter().map(String::from).collect::<Vec<_>>()
    }];
    for p in pods {
        let cs = containers(p);
        let total = p.spec.as_ref().map_or(0, |s| s.containers.len());
        let mut row = vec![
            p.metadata.name.clone().unwrap_or_default(),
            format!("{}/{}", cs.iter().filter(|c| c.ready).count(), total),
            status_word(p),
            cs.iter().map(|c| c.restart_count).sum::<i32>().to_string(),
            age(p),
        ];
        if wide {
            row.push(
                p.status
                    .as_ref()
                    .and_then(|s| s.pod_ip.clone())
                    .unwrap_or_else(|| "<none>".into()),
            );
            row.push(
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default(),
            );
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
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

pub async fn get(cmd: GetCommand) -> anyhow::Result<()> {
    let GetCommand::Pods(args) = cmd;
    let body = client::get(
        &args.at.endpoint,
        "/api/v1/pods",
        args.at.token().as_deref(),
    )
    .await?;
    let list: serde_json::Value = serde_json::from_str(&body)?;
    match args.output {
        Some(Output::Json) => println!("{}", serde_json::to_string_pretty(&list)?),
        Some(Output::Yaml) => print!("{}", serde_yaml_ng::to_string(&list)?),
        wide => {
            let pods: Vec<Pod> = serde_json::from_value(list["items"].clone())?;
            if pods.is_empty() {
                println!("No pods.");
            } else {
                print!("{}", table(&pods, wide == Some(Output::Wide)));
            }
        }
    }
    // Files that could not be used are part of the answer: say so, on stderr (stdout stays
    // parseable in every format).
    if let Ok(text) = client::get(
        &args.at.endpoint,
        "/api/v1/manifest-errors",
        args.at.token().as_deref(),
    )
    .await
        && let Ok(errors) = serde_json::from_str::<Vec<ManifestError>>(&text)
    {
        for e in errors {
            eprintln!("warning: {}: {}", e.path, e.reason);
        }
    }
    Ok(())
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
    line("Name:", p.metadata.name.clone().unwrap_or_default());
    line(
        "Namespace:",
        p.metadata.namespace.clone().unwrap_or_default(),
    );
    line("UID:", p.metadata.uid.clone().unwrap_or_default());
    line(
        "Node:",
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
    );
    line("Start Time:", time(&st.start_time));
    let manifest = p
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("podvisor.io/manifest"));
    if let Some(m) = manifest {
        line("Manifest:", m.clone());
    }
    line("Status:", status_word(p));
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
        out.push_str(&format!(
            "    State:          {}\n",
            state_line(c.state.clone())
        ));
        if c.last_state
            .as_ref()
            .is_some_and(|l| l.terminated.is_some())
        {
            out.push_str(&format!(
                "    Last State:     {}\n",
                state_line(c.last_state.clone())
            ));
        }
        out.push_str(&format!("    Ready:          {}\n", c.ready));
        out.push_str(&format!("    Restart Count:  {}\n", c.restart_count));
    }
}

fn describe_events(r: &PodRecord, out: &mut String) {
    out.push_str("Events:\n");
    if r.events.is_empty() {
        out.push_str("  <none>\n");
    }
    let now_ms = podvisor_core::time::now_unix_ms();
    for e in &r.events {
        let ago = now_ms.saturating_sub(e.time_unix_ms) / 1000;
        let count = if e.count > 1 {
            format!(" (x{})", e.count)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  {:<8} {:<16} {:>5}s ago{count}  {}\n",
            e.kind, e.reason, ago, e.message
        ));
    }
}

pub fn describe_text(r: &PodRecord) -> String {
    let p = &r.pod;
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
    describe_events(r, &mut out);
    out
}

pub async fn describe(cmd: DescribeCommand) -> anyhow::Result<()> {
    let DescribeCommand::Pod(args) = cmd;
    let body = client::get(
        &args.at.endpoint,
        &format!("/api/v1/pods/{}", args.name),
        args.at.token().as_deref(),
    )
    .await?;
    let record: PodRecord = serde_json::from_str(&body)?;
    print!("{}", describe_text(&record));
    Ok(())
}

pub async fn logs(args: LogsArgs) -> anyhow::Result<()> {
    let mut path = format!(
        "/api/v1/pods/{}/log?follow={}&previous={}",
        args.pod, args.follow, args.previous
    );
    if let Some(c) = &args.container {
        path.push_str(&format!("&container={c}"));
    }
    let mut stdout = std::io::stdout();
    client::get_stream(
        &args.at.endpoint,
        &path,
        args.at.token().as_deref(),
        |bytes| {
            let _ = stdout.write_all(bytes);
            let _ = stdout.flush();
        },
    )
    .await?;
    Ok(())
}
