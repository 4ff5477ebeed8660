//! `podvisor inspect mailboxes`: the actor table of a running podvisor, read from its debug
//! endpoint.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;

#[derive(Debug, Subcommand)]
pub enum InspectCommand {
    /// Every actor with its mailbox: queued, oldest, handled, p99 handling time, restarts.
    Mailboxes(MailboxArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    Queued,
    Handled,
    Restarts,
}

#[derive(Debug, Args)]
pub struct MailboxArgs {
    #[command(flatten)]
    pub target: super::EndpointArgs,
    /// Refresh every two seconds until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// Sort by this column, largest first (default: supervision-tree order).
    #[arg(long, value_enum)]
    pub sort: Option<SortKey>,
}

pub async fn run(cmd: InspectCommand) -> anyhow::Result<()> {
    let InspectCommand::Mailboxes(args) = cmd;
    loop {
        let body = podvisor_debug::client::get(
            &args.target.endpoint,
            "/debug/actors?limit=5000",
            args.target.token.as_deref(),
        )
        .await?;
        let tree: Value = serde_json::from_str(&body)?;
        let table = render(&tree, args.sort);
        if !args.watch {
            print!("{table}");
            return Ok(());
        }
        // Clear the screen and redraw in place.
        print!("\x1b[2J\x1b[H{table}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn fmt_ms(ms: f64) -> String {
    match ms {
        0.0 => "-".into(),
        ms if ms < 1000.0 => format!("{ms:.0}ms"),
        ms => format!("{:.1}s", ms / 1000.0),
    }
}

fn fmt_us(us: f64) -> String {
    match us {
        0.0 => "-".into(),
        us if us < 1000.0 => format!("{us:.0}µs"),
        us if us < 1e6 => format!("{:.1}ms", us / 1000.0),
        us => format!("{:.1}s", us / 1e6),
    }
}

/// One actor's row.
fn row(a: &Value, indented: bool) -> [String; 9] {
    let m = &a["mailbox"];
    let indent = if indented {
        a["depth"].as_u64().unwrap_or(0) as usize * 2
    } else {
        0
    };
    let mut state = m["lifecycle"].as_str().unwrap_or("?").to_string();
    if let Some(s) = a.get("state").filter(|s| !s.is_null()) {
        let mut s = s.to_string();
        if s.chars().count() > 60 {
            s = s.chars().take(59).collect::<String>() + "…";
        }
        state = format!("{state} {s}");
    }
    [
        format!("{}{}", " ".repeat(indent), a["id"].as_str().unwrap_or("?")),
        a["kind"].as_str().unwrap_or("?").to_string(),
        a["key"].as_str().unwrap_or("-").to_string(),
        format!("{}/{}", m["queued"], m["capacity"]),
        fmt_ms(num(&m["oldest_queued_ms"])),
        m["handled"].to_string(),
        fmt_us(num(&m["handle_time"]["p99_us"])),
        m["restarts"].to_string(),
        state,
    ]
}

const HEADER: [&str; 9] = [
    "ACTOR", "KIND", "ID", "QUEUED", "OLDEST", "HANDLED", "P99", "RESTARTS", "STATE",
];

/// The rows under the header, each column as wide as its widest cell.
fn aligned(rows: &[[String; 9]]) -> String {
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&HEADER.map(String::from));
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// The table, as text. Pure, so tests check it without a server.
pub fn render(tree: &Value, sort: Option<SortKey>) -> String {
    let mut actors: Vec<&Value> = tree["actors"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    if let Some(key) = sort {
        let field = match key {
            SortKey::Queued => "queued",
            SortKey::Handled => "handled",
            SortKey::Restarts => "restarts",
        };
        actors.sort_by(|a, b| num(&b["mailbox"][field]).total_cmp(&num(&a["mailbox"][field])));
    }
    let rows: Vec<[String; 9]> = actors.iter().map(|a| row(a, sort.is_none())).collect();
    let mut out = aligned(&rows);
    if tree["truncated"].as_bool() == Some(true) {
        out.push_str(&format!(
            "… {} actors in all; showing {}\n",
            tree["total"],
            rows.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        serde_json::json!({
            "total": 3, "offset": 0, "truncated": false,
            "actors": [
                {"id": "supervisor/root", "kind": "supervisor", "key": "root", "depth": 0,
                 "mailbox": {"queued": 0, "capacity": 1024, "oldest_queued_ms": 0.0, "handled": 3,
                             "handle_time": {"p99_us": 5.0}, "restarts": 0, "lifecycle": "running"},
                 "state": {"strategy": "one_for_one", "children": 2, "restarting": 0}},
                {"id": "pod-worker/u1", "kind": "pod-worker", "key": "u1", "depth": 1,
                 "mailbox": {"queued": 2, "capacity": 16, "oldest_queued_ms": 1500.0, "handled": 10,
                             "handle_time": {"p99_us": 20000.0}, "restarts": 1, "lifecycle": "running"},
                 "state": null},
                {"id": "pleg", "kind": "pleg", "key": null, "depth": 1,
                 "mailbox": {"queued": 0, "capacity": 1024, "oldest_queued_ms": 0.0, "handled": 99,
                             "handle_time": {"p99_us": 50.0}, "restarts": 3, "lifecycle": "restarting"},
                 "state": null}
            ]
        })
    }

    #[test]
    fn renders_the_tree_with_indentation() {
        let t = render(&sample(), None);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("ACTOR"));
        assert!(lines[1].starts_with("supervisor/root"));
        assert!(lines[2].starts_with("  pod-worker/u1"));
        assert!(
            lines[2].contains("2/16") && lines[2].contains("1.5s") && lines[2].contains("20.0ms")
        );
        assert!(lines[1].contains("running {\"children\":2"), "{}", lines[1]);
        assert!(lines[3].contains("restarting"));
    }

    #[test]
    fn sorts_largest_first() {
        let t = render(&sample(), Some(SortKey::Restarts));
        let ids: Vec<&str> = t
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(ids, ["pleg", "pod-worker/u1", "supervisor/root"]);
        let t = render(&sample(), Some(SortKey::Queued));
        assert!(t.lines().nth(1).unwrap().starts_with("pod-worker/u1"));
    }
}
