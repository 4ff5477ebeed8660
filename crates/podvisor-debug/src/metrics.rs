//! `/metrics` in the Prometheus text format, per actor kind (per-actor series would grow
//! with the number of pods).

use std::collections::BTreeMap;
use std::fmt::Write;

use podvisor_actors::registry::KindTotals;

pub fn render(kinds: &BTreeMap<&'static str, KindTotals>) -> String {
    let mut out = String::new();
    let gauge = |out: &mut String,
                 name: &str,
                 help: &str,
                 kind_of: &dyn Fn(&KindTotals) -> u64,
                 ty: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {ty}");
        for (kind, t) in kinds {
            let _ = writeln!(out, "{name}{{kind=\"{kind}\"}} {}", kind_of(t));
        }
    };
    gauge(
        &mut out,
        "podvisor_actors",
        "Live actors.",
        &|t| t.actors,
        "gauge",
    );
    gauge(
        &mut out,
        "podvisor_mailbox_queued",
        "Messages waiting in mailboxes.",
        &|t| t.queued,
        "gauge",
    );
    gauge(
        &mut out,
        "podvisor_messages_handled_total",
        "Messages handled.",
        &|t| t.handled,
        "counter",
    );
    gauge(
        &mut out,
        "podvisor_messages_rejected_total",
        "Messages refused (mailbox full or actor stopped).",
        &|t| t.rejected,
        "counter",
    );
    gauge(
        &mut out,
        "podvisor_actor_restarts_total",
        "Actor restarts by their supervisors.",
        &|t| t.restarts,
        "counter",
    );

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
    out
}
