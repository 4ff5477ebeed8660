//! `/debug`: the actor tree as an HTML table that refreshes itself, readable in any
//! browser without JavaScript.

use std::fmt::Write;

use podvisor_actors::TreeSnapshot;

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The first `max` characters, with an ellipsis when cut (the full text goes in a tooltip).
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    s.chars().take(max).chain(std::iter::once('…')).collect()
}

/// One table row per actor.
fn rows(tree: &TreeSnapshot) -> String {
    let mut rows = String::new();
    for a in &tree.actors {
        let m = &a.mailbox;
        let state = a.state.as_ref().map(|s| s.to_string()).unwrap_or_default();
        let busy = if m.queued > 0 { " class=\"busy\"" } else { "" };
        let _ = writeln!(
            rows,
            "<tr{busy}><td style=\"padding-left:{pad}em\">{id}</td><td>{kind}</td><td>{life}</td>\
             <td class=\"n\">{queued}/{cap}</td><td class=\"n\">{oldest:.1}</td><td class=\"n\">{handled}</td>\
             <td class=\"n\">{mean:.0}</td><td class=\"n\">{p50:.0}</td><td class=\"n\">{p99:.0}</td><td class=\"n\">{rejected}</td>\
             <td class=\"n\">{restarts}</td><td>{last}</td><td title=\"{panic}\">{panic_short}</td><td><code>{state}</code></td></tr>",
            pad = 0.5 + 1.5 * a.depth as f64,
            id = escape(a.id.as_str()),
            kind = escape(a.kind),
            life = escape(&format!("{:?}", m.lifecycle).to_lowercase()),
            queued = m.queued,
            cap = m.capacity,
            oldest = m.oldest_queued_ms,
            handled = m.handled,
            mean = m.handle_time.mean_us,
            p50 = m.handle_time.p50_us,
            p99 = m.handle_time.p99_us,
            rejected = m.rejected,
            restarts = m.restarts,
            last = escape(m.last_message.unwrap_or("")),
            panic = escape(m.last_panic.as_deref().unwrap_or("")),
            panic_short = escape(&shorten(m.last_panic.as_deref().unwrap_or(""), 48)),
            state = escape(&state),
        );
    }
    rows
}

pub fn render(tree: &TreeSnapshot, charts: &str) -> String {
    let rows = rows(tree);
    let more = if tree.truncated {
        format!(
            "<p>Showing {} of {} actors. <a href=\"?offset={}\">next page</a></p>",
            tree.actors.len(),
            tree.total,
            tree.offset + tree.actors.len()
        )
    } else {
        format!("<p>{} actors.</p>", tree.total)
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>podvisor actors</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; white-space: nowrap; }}
th {{ background: #f3f3f3; position: sticky; top: 0; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.busy {{ background: #fff4d6; }}
code {{ font-size: 12px; }}
.charts {{ display: flex; flex-wrap: wrap; gap: 0.5em 1.5em; }}
figure {{ margin: 0; }} figcaption {{ font-size: 12px; color: #555; }}
</style></head><body>
<h1>podvisor: actors and mailboxes</h1>
<h2>the last minutes</h2>
{charts}
{more}
<table>
<tr><th>actor</th><th>kind</th><th>state</th><th>queued/cap</th><th>oldest ms</th><th>handled</th><th>mean µs</th><th>p50 µs</th><th>p99 µs</th><th>rejected</th><th>restarts</th><th>last message</th><th>last panic</th><th>summary</th></tr>
{rows}</table>
<p>Quantiles are histogram bucket bounds (1-2-5 series): they can overstate by up to 2.5×; the mean is exact. Refreshes every 2 s. JSON: <a href="/debug/actors">/debug/actors</a> · <a href="/metrics">/metrics</a></p>
</body></html>
"#
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::escape("<a href='x'>&</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
