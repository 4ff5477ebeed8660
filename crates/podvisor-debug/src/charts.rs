//! The debug page's charts, drawn by the server as SVG (no script, no library): a line per
//! series over the last minutes, the newest on the right.

use std::fmt::Write;

use crate::history::{History, Line};

const W: f64 = 560.0;
const H: f64 = 150.0;
const LEFT: f64 = 48.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A round top for the y axis, at least `max`.
fn top(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let step = 10f64.powf(max.log10().floor());
    (max / step).ceil() * step
}

/// A number for an axis: at most three significant digits, no trailing zeros.
fn number(v: f64) -> String {
    if v >= 100.0 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One chart: `title` (with `unit`), the lines, and the samples' ages in seconds.
pub fn chart(title: &str, unit: &str, lines: &[Line], ages: &[f64]) -> String {
    let span = ages.first().copied().unwrap_or(0.0).max(1.0);
    let max = lines
        .iter()
        .flat_map(|l| l.1.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let y_top = top(max);
    let x = |age: f64| LEFT + (W - LEFT) * (1.0 - age / span);
    let y = |v: f64| H - 20.0 - (H - 40.0) * (v / y_top);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" role=\"img\">\
         <line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{W}\" y2=\"{b}\" stroke=\"#888\"/>\
         <line x1=\"{LEFT}\" y1=\"20\" x2=\"{LEFT}\" y2=\"{b}\" stroke=\"#888\"/>\
         <text x=\"2\" y=\"24\" font-size=\"10\">{top_label} {unit}</text><text x=\"2\" y=\"{b}\" font-size=\"10\">0</text>\
         <text x=\"{LEFT}\" y=\"{bl}\" font-size=\"10\">-{span:.0} s</text><text x=\"{nl}\" y=\"{bl}\" font-size=\"10\">now</text>",
        escape(title),
        top_label = number(y_top),
        b = H - 20.0,
        bl = H - 6.0,
        nl = W - 24.0,
    );
    for (i, (name, points)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<String> = points
            .iter()
            .zip(ages)
            .filter_map(|(v, age)| v.map(|v| format!("{:.1},{:.1}", x(*age), y(v))))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>\
             <text x=\"{lx}\" y=\"{ly}\" font-size=\"10\" fill=\"{colour}\">{}</text>",
            pts.join(" "),
            escape(name),
            lx = LEFT + 6.0 + 110.0 * (i % 4) as f64,
            ly = 12 + 11 * (i / 4),
        );
    }
    if lines.is_empty() {
        svg.push_str("<text x=\"60\" y=\"70\" font-size=\"11\">nothing yet</text>");
    }
    svg.push_str("</svg></figure>");
    svg
}

/// Every chart of the page: mailboxes waiting and handling time of the busiest kinds, and
/// the agent's own series.
pub fn all(h: &History, extras: &crate::history::Extras, now_ms: u64) -> String {
    let ages = h.ages(now_ms);
    let mut out = String::from("<div class=\"charts\">");
    out.push_str(&chart(
        "messages waiting, per actor kind",
        "",
        &h.queued(5),
        &ages,
    ));
    out.push_str(&chart(
        "mean handling time, per actor kind",
        "µs",
        &h.handling_us(5),
        &ages,
    ));
    for (i, e) in extras.0.iter().enumerate() {
        let line = (e.name.to_string(), h.extra(i));
        let title = format!("{} (mean per 5 s)", e.name);
        out.push_str(&chart(&title, e.unit, &[line], &ages));
    }
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_svg_with_a_line_per_series_and_a_round_top() {
        assert_eq!(top(7.3), 8.0);
        assert_eq!(top(0.0), 1.0);
        assert_eq!(top(120.0), 200.0);
        assert_eq!(number(0.7000000000000001), "0.7");
        assert_eq!(number(900.0), "900");
        let lines = vec![("pleg".to_string(), vec![Some(1.0), None, Some(3.0)])];
        let svg = chart("waiting <x>", "", &lines, &[10.0, 5.0, 0.0]);
        assert!(svg.contains("<svg") && svg.contains("waiting &lt;x&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("points=\"48.0,"), "{svg}");
    }
}
