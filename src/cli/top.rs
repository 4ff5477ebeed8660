//! `podvisor top`: what pods and the node use, read from the agent's `metrics.k8s.io`
//! (what `kubectl top` reads too), in kubectl's columns: CPU in millicores (rounded up),
//! memory in MiB of working set.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::Value;

use super::pods::ApiArgs;

#[derive(Debug, Subcommand)]
pub enum TopCommand {
    /// CPU and memory of each pod (the sum of its containers).
    Pods(TopPodsArgs),
    /// CPU and memory of the node.
    Node(TopNodeArgs),
}

#[derive(Debug, Args)]
pub struct TopPodsArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// Pods of every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// One row per container.
    #[arg(long)]
    pub containers: bool,
}

#[derive(Debug, Args)]
pub struct TopNodeArgs {
    #[command(flatten)]
    pub api: ApiArgs,
}

/// "1500000n" → nanocores; "4096Ki" → bytes (the forms the agent writes, and whole units).
fn nanocores(q: &str) -> u64 {
    if let Some(n) = q.strip_suffix('n') {
        return n.parse().unwrap_or(0);
    }
    podvisor_core::quantity::parse_milli(q).map_or(0, |m| m.max(0) as u64 * 1_000_000)
}

fn bytes(q: &str) -> u64 {
    podvisor_core::quantity::parse_units(q).map_or(0, |b| b.max(0) as u64)
}

/// kubectl's way: millicores rounded up, MiB rounded down.
fn columns(cpu_nano: u64, memory: u64) -> (String, String) {
    (
        format!("{}m", cpu_nano.div_ceil(1_000_000)),
        format!("{}Mi", memory >> 20),
    )
}

fn usage(containers: &[Value]) -> (u64, u64) {
    containers.iter().fold((0, 0), |(c, m), x| {
        (
            c + nanocores(x["usage"]["cpu"].as_str().unwrap_or("0")),
            m + bytes(x["usage"]["memory"].as_str().unwrap_or("0")),
        )
    })
}

pub async fn run(cmd: TopCommand) -> anyhow::Result<()> {
    match cmd {
        TopCommand::Pods(args) => pods(args).await,
        TopCommand::Node(args) => node(args).await,
    }
}

async fn get(api: &ApiArgs, path: &str) -> anyhow::Result<Value> {
    let body = api.endpoint()?.get(path).await.context("the metrics API")?;
    Ok(serde_json::from_str(&body)?)
}

async fn pods(args: TopPodsArgs) -> anyhow::Result<()> {
    let path = if args.all_namespaces {
        "/apis/metrics.k8s.io/v1beta1/pods".to_string()
    } else {
        format!(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{}/pods",
            args.api.namespace
        )
    };
    let list = get(&args.api, &path).await?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        anyhow::bail!("metrics not available yet");
    }
    let mut rows = Vec::new();
    for p in &items {
        let (ns, name) = (
            p["metadata"]["namespace"].as_str(),
            p["metadata"]["name"].as_str(),
        );
        let containers = p["containers"].as_array().cloned().unwrap_or_default();
        let lead: Vec<String> = args
            .all_namespaces
            .then(|| ns.unwrap_or("").to_string())
            .into_iter()
            .chain(std::iter::once(name.unwrap_or("").to_string()))
            .collect();
        if args.containers {
            for c in &containers {
                let (c_cpu, c_mem) = usage(std::slice::from_ref(c));
                let (cpu, mem) = columns(c_cpu, c_mem);
                let mut row = lead.clone();
                row.extend([c["name"].as_str().unwrap_or("").to_string(), cpu, mem]);
                rows.push(row);
            }
        } else {
            let (c, m) = usage(&containers);
            let (cpu, mem) = columns(c, m);
            let mut row = lead;
            row.extend([cpu, mem]);
            rows.push(row);
        }
    }
    let mut head: Vec<&str> = Vec::new();
    if args.all_namespaces {
        head.push("NAMESPACE");
    }
    head.extend(if args.containers {
        vec!["POD", "NAME"]
    } else {
        vec!["NAME"]
    });
    head.extend(["CPU(cores)", "MEMORY(bytes)"]);
    print_table(&head, &rows);
    Ok(())
}

async fn node(args: TopNodeArgs) -> anyhow::Result<()> {
    let list = get(&args.api, "/apis/metrics.k8s.io/v1beta1/nodes").await?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        anyhow::bail!("metrics not available yet");
    }
    let rows = items
        .iter()
        .map(|n| {
            let (cpu, mem) = columns(
                nanocores(n["usage"]["cpu"].as_str().unwrap_or("0")),
                bytes(n["usage"]["memory"].as_str().unwrap_or("0")),
            );
            vec![
                n["metadata"]["name"].as_str().unwrap_or("").to_string(),
                cpu,
                mem,
            ]
        })
        .collect::<Vec<_>>();
    print_table(&["NAME", "CPU(cores)", "MEMORY(bytes)"], &rows);
    Ok(())
}

fn print_table(head: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("   ").trim_end());
    };
    line(head.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_printed_as_kubectl_prints_them() {
        assert_eq!(nanocores("1500000n"), 1_500_000);
        assert_eq!(bytes("4096Ki"), 4 << 20);
        assert_eq!(
            columns(1_500_000, 4 << 20),
            ("2m".to_string(), "4Mi".to_string())
        );
        assert_eq!(
            columns(0, (1 << 20) - 1),
            ("0m".to_string(), "0Mi".to_string())
        );
    }
}
