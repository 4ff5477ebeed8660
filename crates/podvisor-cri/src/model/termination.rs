//! A container's termination message, as the kubelet's runtime manager reads it when the
//! container has exited: the file its `terminationMessagePath` was bound to (the host path
//! is in the container's annotations), at most 4 KiB; with `FallbackToLogsOnError`, a
//! failed container that wrote none gets the tail of its log instead (80 lines, 2 KiB).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::{ContainerState, ContainerStatus};
use crate::labels::{TERMINATION_LOG, TERMINATION_POLICY};

const MAX_MESSAGE: u64 = 4096;
const MAX_LOG_LINES: usize = 80;
const MAX_LOG_BYTES: usize = 2048;
/// How much of the log's end is read to find its last lines.
const LOG_WINDOW: u64 = 64 * 1024;

fn read_head(path: &Path, max: u64) -> Option<String> {
    let mut text = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_end(&mut text)
        .ok()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// The last lines of a CRI log file (`<time> <stream> <P|F> <text>`), as text.
fn log_tail(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(LOG_WINDOW)))
        .ok()?;
    let mut raw = Vec::new();
    f.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw);
    let mut lines: Vec<String> = Vec::new();
    let mut partial = String::new();
    // The first line may be cut by the window: skipped unless the window is the file.
    let skip = usize::from(len > LOG_WINDOW);
    for line in raw.lines().skip(skip) {
        let mut parts = line.splitn(4, ' ');
        let (_, _, tag, text) = (parts.next(), parts.next(), parts.next(), parts.next());
        partial.push_str(text.unwrap_or(""));
        if tag != Some("P") {
            lines.push(std::mem::take(&mut partial));
        }
    }
    // An unterminated last line (`echo -n DONE`) is logged as partial: it is the last
    // line, without a newline, as the kubelet's log reader gives it.
    let unterminated = !partial.is_empty();
    if unterminated {
        lines.push(partial);
    }
    let start = lines.len().saturating_sub(MAX_LOG_LINES);
    let mut text = lines[start..].join("\n");
    if !unterminated && !text.is_empty() {
        text.push('\n');
    }
    if text.len() > MAX_LOG_BYTES {
        let mut cut = text.len() - MAX_LOG_BYTES;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = text.split_off(cut);
    }
    Some(text)
}

fn written(c: &ContainerStatus) -> Option<String> {
    c.annotations
        .get(TERMINATION_LOG)
        .and_then(|p| read_head(Path::new(p), MAX_MESSAGE))
        .filter(|m| !m.is_empty())
}

/// Whether an exited container's message is the tail of its log: a failure under
/// `FallbackToLogsOnError` that wrote no termination message.
fn from_log(c: &ContainerStatus) -> bool {
    let fallback =
        c.annotations.get(TERMINATION_POLICY).map(String::as_str) == Some("FallbackToLogsOnError");
    fallback && c.exit_code != 0 && !c.log_path.is_empty()
}

/// The message of an exited container, when the runtime gave none.
pub(crate) fn message(c: &ContainerStatus) -> Option<String> {
    if c.state != ContainerState::Exited || !c.message.is_empty() {
        return None;
    }
    if let Some(m) = written(c) {
        return Some(m);
    }
    from_log(c)
        .then(|| log_tail(Path::new(&c.log_path)))
        .flatten()
        .filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("podvisor-term-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn exited(code: i32, annotations: &[(&str, String)], log: String) -> ContainerStatus {
        ContainerStatus {
            id: "c".into(),
            sandbox_id: String::new(),
            name: "c".into(),
            attempt: 0,
            state: ContainerState::Exited,
            created_at: 0,
            started_at: 0,
            finished_at: 0,
            exit_code: code,
            image: String::new(),
            image_ref: String::new(),
            reason: "Error".into(),
            message: String::new(),
            labels: Default::default(),
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            log_path: log,
            user: None,
            resources: None,
        }
    }

    #[test]
    fn the_file_is_the_message_cut_at_4_kib() {
        let d = dir("file");
        let f = d.join("log");
        std::fs::write(&f, "x".repeat(5000)).unwrap();
        let c = exited(
            1,
            &[(TERMINATION_LOG, f.display().to_string())],
            String::new(),
        );
        assert_eq!(message(&c).unwrap().len(), 4096);
        let mut running = c.clone();
        running.state = ContainerState::Running;
        assert_eq!(message(&running), None);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn the_log_tail_only_for_a_failure_with_fallback() {
        let d = dir("fallback");
        let (empty, log) = (d.join("empty"), d.join("0.log"));
        std::fs::write(&empty, "").unwrap();
        let mut text = String::new();
        for i in 0..100 {
            text.push_str(&format!("2026-11-26T10:00:00Z stdout F line {i}\n"));
        }
        text.push_str("2026-11-26T10:00:01Z stderr P par\n2026-11-26T10:00:01Z stderr F tial\n");
        std::fs::write(&log, text).unwrap();
        let ann = [
            (TERMINATION_LOG, empty.display().to_string()),
            (TERMINATION_POLICY, "FallbackToLogsOnError".to_string()),
        ];
        let m = message(&exited(2, &ann, log.display().to_string())).unwrap();
        assert!(m.ends_with("line 99\npartial\n"), "{m}");
        assert_eq!(m.lines().count(), 80);
        assert!(m.starts_with("line 21\n"), "{m}");
        assert_eq!(message(&exited(0, &ann, log.display().to_string())), None);
        let file_policy = [(TERMINATION_LOG, empty.display().to_string())];
        assert_eq!(
            message(&exited(2, &file_policy, log.display().to_string())),
            None
        );
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn an_unterminated_last_line_ends_the_message_without_a_newline() {
        let d = dir("partial");
        let log = d.join("0.log");
        let ann = [(TERMINATION_POLICY, "FallbackToLogsOnError".to_string())];
        let c = exited(1, &ann, log.display().to_string());
        std::fs::write(&log, "2026-11-28T17:21:57Z stdout P DONE\n").unwrap();
        assert_eq!(message(&c).as_deref(), Some("DONE"));
        let two = "2026-11-28T17:21:57Z stderr F first\n2026-11-28T17:21:57Z stdout P DO\n\
                   2026-11-28T17:21:58Z stdout P NE\n";
        std::fs::write(&log, two).unwrap();
        assert_eq!(message(&c).as_deref(), Some("first\nDONE"));
        std::fs::remove_dir_all(d).unwrap();
    }
}
