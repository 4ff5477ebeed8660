//! The Prometheus text format (0.0.4) the kubelet's metric paths answer in.

use std::fmt::Write as _;

/// One metric family and its samples (each a whole line but the newline).
pub(super) struct Family {
    pub name: &'static str,
    pub kind: &'static str,
    pub help: &'static str,
    pub samples: Vec<String>,
}

impl Family {
    pub(super) fn new((name, kind, help): (&'static str, &'static str, &'static str)) -> Self {
        Self {
            name,
            kind,
            help,
            samples: Vec::new(),
        }
    }
}

/// A label's value, escaped.
pub(super) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `{a="x",b="y"}` from pairs in the order given.
pub(super) fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Every family with samples: `# HELP`, `# TYPE`, its lines. `stability` goes before the
/// help text (`[STABLE] `, as the kubelet's stable metrics say), or nothing.
pub(super) fn render(families: &[Family], stability: &str) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(
            out,
            "# HELP {} {stability}{}\n# TYPE {} {}",
            f.name, f.help, f.name, f.kind
        );
        for s in &f.samples {
            let _ = writeln!(out, "{s}");
        }
    }
    out
}
