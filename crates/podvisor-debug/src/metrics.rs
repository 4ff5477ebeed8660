//! `/metrics` in the Prometheus text format, per actor kind (per-actor series would grow
//! with the number of pods).

use std::collections::BTreeMap;
use std::fmt::Write;

use podvisor_actors::registry::KindTotals;

type Field = fn(&KindTotals) -> u64;

/// The per-kind series: name, help, the field, and the Prometheus type.
const SERIES: [(&str, &str, Field, &str); 5] = [
    ("podvisor_actors", "Live actors.", |t| t.actors, "gauge"),
    (
        "podvisor_mailbox_queued",
        "Messages waiting in mailboxes.",
        |t| t.queued,
        "gauge",
    ),
    (
        "podvisor_messages_handled_total",
        "Messages handled.",
        |t| t.handled,
        "counter",
    ),
    (
        "podvisor_messages_rejected_total",
        "Messages refused (mailbox full or actor stopped).",
        |t| t.rejected,
        "counter",
    ),
    (
        "podvisor_actor_restarts_total",
        "Actor restarts by their supervisors.",
        |t| t.restarts,
        "counter",
    ),
];

pub fn render(kinds: &BTreeMap<&'static str, KindTotals>) -> String {
    let mut out = String::new();
    for (name, help, field, ty) in SERIES {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {ty}");
        for (kind, t) in kinds {
            let _ = writeln!(out, "{name}{{kind=\"{kind}\"}} {}", field(t));
        }
    }
    handle_times(&mut out, kinds);
    out
}

fn handle_times(out: &mut String, kinds: &BTreeMap<&'static str, KindTotals>) {
    let name = "podvisor_message_handle_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Time spent in message handlers.\n# TYPE {name} histogram"
    );
    for (kind, t) in kinds {
        for (le, count) in t.handle_time.cumulative() {
            let le = if le.is_infinite() {
                "+Inf".to_string()
            } else {
                format!("{le}")
            };
            let _ = writeln!(out, "{name}_bucket{{kind=\"{kind}\",le=\"{le}\"}} {count}");
        }
        let _ = writeln!(
            out,
            "{name}_sum{{kind=\"{kind}\"}} {}",
            t.handle_time.sum_ns as f64 / 1e9
        );
        let _ = writeln!(
            out,
            "{name}_count{{kind=\"{kind}\"}} {}",
            t.handle_time.count()
        );
    }
}
