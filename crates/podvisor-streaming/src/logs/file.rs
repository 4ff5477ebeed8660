//! Reading a CRI log file without holding it: whole lines a chunk at a time, and where the
//! last N lines start found by scanning back from the end. `kubectl logs` of a container
//! that wrote gigabytes costs a chunk of memory, not the file (containerd splits long
//! lines into 16 KiB partial lines, so a line never grows a chunk without bound).

use std::path::{Path, PathBuf};

use tokio::fs::File;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

pub(crate) const CHUNK: usize = 64 * 1024;
/// The longest CRI line kept while waiting for its newline (containerd writes at most
/// 16 KiB of text per line). A file with longer lines is not a CRI log; what has no
/// newline by then is dropped up to the next one, so no file makes a reader hold more.
const MAX_LINE: usize = 4 * CHUNK;
/// Enough of a line's start for its time, stream and tag.
const HEAD: u64 = 128;

/// How CRI log lines become output: with their times (`timestamps`), and only from a time
/// on (`sinceSeconds`, `sinceTime`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Decode {
    pub(crate) timestamps: bool,
    pub(crate) since: Option<jiff::Timestamp>,
    /// Whether the next text starts a line of output (a partial line continues one).
    mid_line: bool,
}

impl Decode {
    pub(crate) fn new(timestamps: bool, since: Option<jiff::Timestamp>) -> Self {
        Decode {
            timestamps,
            since,
            mid_line: false,
        }
    }

    /// Turns CRI log lines (`<time> <stream> <P|F> <text>`) into the container's output.
    /// Returns the bytes consumed (whole lines only) and the text.
    pub(crate) fn lines(&mut self, data: &[u8]) -> (usize, Vec<u8>) {
        let mut out = Vec::new();
        let mut consumed = 0;
        while let Some(end) = data[consumed..].iter().position(|b| *b == b'\n') {
            let line = &data[consumed..consumed + end];
            consumed += end + 1;
            let mut parts = line.splitn(4, |b| *b == b' ');
            let (time, _stream, tag, text) =
                (parts.next(), parts.next(), parts.next(), parts.next());
            let partial = tag == Some(b"P");
            if self.too_early(time) {
                continue;
            }
            if self.timestamps && !self.mid_line {
                out.extend_from_slice(time.unwrap_or_default());
                out.push(b' ');
            }
            out.extend_from_slice(text.unwrap_or_default());
            if !partial {
                out.push(b'\n');
            }
            self.mid_line = partial;
        }
        (consumed, out)
    }

    fn too_early(&self, time: Option<&[u8]>) -> bool {
        let Some(since) = self.since else {
            return false;
        };
        let at = time
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        at.is_some_and(|at| at < since)
    }
}

/// Whether a CRI line (its start is enough) ends a line of output: not a partial one.
fn ends_output_line(head: &[u8]) -> bool {
    head.splitn(4, |b| *b == b' ').nth(2) != Some(b"P")
}

async fn read_at(f: &mut File, offset: u64, len: u64) -> Option<Vec<u8>> {
    f.seek(std::io::SeekFrom::Start(offset)).await.ok()?;
    let mut buf = Vec::with_capacity(usize::try_from(len).ok()?);
    f.take(len).read_to_end(&mut buf).await.ok()?;
    Some(buf)
}

/// Counts output lines back from the end, one whole CRI line at a time.
struct TailScan {
    n: usize,
    /// How many ends of output lines to pass: decided by the last CRI line (a trailing
    /// partial line is a line of output of its own).
    ends_to_pass: Option<usize>,
    passed: usize,
}

impl TailScan {
    /// The CRI line that ends with the newline at `end`; `Some` with the offset where the
    /// last `n` lines start, once found.
    fn line(&mut self, end: u64, ends_line: bool) -> Option<u64> {
        let k = *self
            .ends_to_pass
            .get_or_insert(self.n + usize::from(ends_line));
        if k == 0 {
            return Some(end + 1);
        }
        if ends_line {
            self.passed += 1;
            if self.passed == k {
                return Some(end + 1);
            }
        }
        None
    }
}

/// Where the last `n` lines of output start in the file (0 when it holds no more). Reads
/// back from the end a chunk at a time and keeps nothing but counts.
pub(crate) async fn tail_offset(path: &Path, n: usize) -> u64 {
    let Ok(mut f) = File::open(path).await else {
        return 0;
    };
    let Ok(len) = f.metadata().await.map(|m| m.len()) else {
        return 0;
    };
    let mut scan = TailScan {
        n,
        ends_to_pass: None,
        passed: 0,
    };
    // The newline that ends the line whose start the scan looks for next.
    let mut line_end: Option<u64> = None;
    let mut hi = len;
    while hi > 0 {
        let lo = hi.saturating_sub(CHUNK as u64);
        // A little past `hi`, for the start of a line that begins just before it.
        let Some(buf) = read_at(&mut f, lo, (hi + HEAD).min(len) - lo).await else {
            return 0;
        };
        for i in (0..(hi - lo) as usize).rev() {
            if buf[i] != b'\n' {
                continue;
            }
            let q = lo + i as u64;
            if let Some(end) = line_end {
                let head = &buf[i + 1..buf.len().min(i + 1 + (end - q) as usize)];
                if let Some(start) = scan.line(end, ends_output_line(head)) {
                    return start;
                }
            }
            line_end = Some(q);
        }
        hi = lo;
    }
    // The first line of the file.
    if let Some(end) = line_end {
        let head = read_at(&mut f, 0, HEAD.min(end)).await.unwrap_or_default();
        if let Some(start) = scan.line(end, ends_output_line(&head)) {
            return start;
        }
    }
    0
}

/// A container's output from an offset of its log file, decoded a chunk at a time, up to
/// an optional number of bytes (`limitBytes`).
pub(crate) struct LogReader {
    path: PathBuf,
    decode: Decode,
    file: Option<File>,
    offset: u64,
    pending: Vec<u8>,
    /// Dropping an overlong line up to its newline.
    skipping: bool,
    left: Option<u64>,
}

impl LogReader {
    pub(crate) fn new(path: PathBuf, offset: u64, limit: Option<u64>, decode: Decode) -> Self {
        Self {
            path,
            decode,
            file: None,
            offset,
            pending: Vec::new(),
            skipping: false,
            left: limit,
        }
    }

    /// Whether the path now names another file than the one open (a rotation).
    async fn rotated(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(f) = &self.file else { return false };
        let (Ok(open), Ok(now)) = (f.metadata().await, tokio::fs::metadata(&self.path).await)
        else {
            return false;
        };
        (open.dev(), open.ino()) != (now.dev(), now.ino())
    }

    /// The output of the whole lines `raw` completes; an overlong line is dropped.
    fn decode_chunk(&mut self, mut raw: &[u8]) -> Vec<u8> {
        if self.skipping {
            let Some(end) = raw.iter().position(|b| *b == b'\n') else {
                return Vec::new();
            };
            raw = &raw[end + 1..];
            self.skipping = false;
        }
        self.pending.extend_from_slice(raw);
        let (used, text) = self.decode.lines(&self.pending);
        self.pending.drain(..used);
        if self.pending.len() > MAX_LINE {
            self.pending = Vec::new();
            self.skipping = true;
        }
        text
    }

    /// Whether `limitBytes` has been given out.
    pub(crate) fn done(&self) -> bool {
        self.left == Some(0)
    }

    /// The next output the file holds (possibly empty: a partial line), or `None` at its
    /// end for now (or while it does not exist yet). At the end of a file that was rotated
    /// (renamed aside, a new one in its place), it goes on with the new file.
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        if self.file.is_none() {
            self.file = File::open(&self.path).await.ok();
        }
        let f = self.file.as_mut()?;
        let mut raw = read_at(f, self.offset, CHUNK as u64).await?;
        if raw.is_empty() {
            if !self.rotated().await {
                return None;
            }
            // The runtime may have written to the old file until it reopened the new one:
            // what it wrote is read out before going on.
            let f = self.file.as_mut()?;
            raw = read_at(f, self.offset, CHUNK as u64).await?;
            if raw.is_empty() {
                self.file = None;
                self.offset = 0;
                return Some(Vec::new());
            }
        }
        self.offset += raw.len() as u64;
        let mut text = self.decode_chunk(&raw);
        if let Some(left) = self.left.as_mut() {
            text.truncate(usize::try_from(*left).unwrap_or(usize::MAX));
            *left -= text.len() as u64;
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(tag: &str, text: &str) -> String {
        format!("2026-11-22T10:00:00.123456789Z stdout {tag} {text}\n")
    }

    #[test]
    fn cri_log_lines_become_plain_output() {
        let data = b"2026-11-22T10:00:00.1Z stdout F hello\n2026-11-22T10:00:00.2Z stderr P par\n2026-11-22T10:00:00.3Z stderr F tial\n2026-11-22T10:00:00.4Z stdout F incompl";
        let (used, out) = Decode::default().lines(data);
        assert_eq!(out, b"hello\npartial\n");
        assert_eq!(&data[used..], b"2026-11-22T10:00:00.4Z stdout F incompl");
    }

    #[test]
    fn timestamps_lead_each_line_and_since_drops_older_ones() {
        let data = b"2026-11-22T10:00:00.1Z stdout F old\n2026-11-22T10:00:02Z stdout P new\n2026-11-22T10:00:03Z stdout F er\n";
        let since = "2026-11-22T10:00:01Z".parse().ok();
        let (_, out) = Decode::new(true, since).lines(data);
        assert_eq!(out, b"2026-11-22T10:00:02Z newer\n");
        let (_, out) = Decode::new(true, None).lines(data);
        assert_eq!(
            out,
            b"2026-11-22T10:00:00.1Z old\n2026-11-22T10:00:02Z newer\n"
        );
    }

    async fn tail_of(content: &str, n: usize) -> String {
        let dir = std::env::temp_dir().join(format!("podvisor-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{n}-{}.log", content.len()));
        std::fs::write(&path, content).unwrap();
        let mut r = LogReader::new(
            path.clone(),
            tail_offset(&path, n).await,
            None,
            Decode::default(),
        );
        let mut out = Vec::new();
        while let Some(t) = r.next().await {
            out.extend(t);
        }
        let _ = std::fs::remove_file(&path);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_line_without_end_is_dropped_and_holds_no_more_than_the_bound() {
        let mut r = LogReader::new(PathBuf::new(), 0, None, Decode::default());
        for _ in 0..64 {
            assert!(r.decode_chunk(&[b'x'; CHUNK]).is_empty());
            assert!(
                r.pending.capacity() <= MAX_LINE + 2 * CHUNK,
                "{}",
                r.pending.capacity()
            );
        }
        let next = [b"xxx\n".as_slice(), line("F", "after").as_bytes()].concat();
        assert_eq!(r.decode_chunk(&next), b"after\n");
        assert!(r.pending.is_empty());
    }

    #[tokio::test]
    async fn tail_starts_at_the_last_lines_partial_lines_included() {
        let log = [
            line("F", "a"),
            line("P", "b1"),
            line("F", "b2"),
            line("F", "c"),
        ]
        .concat();
        assert_eq!(tail_of(&log, 1).await, "c\n");
        assert_eq!(tail_of(&log, 2).await, "b1b2\nc\n");
        assert_eq!(tail_of(&log, 3).await, "a\nb1b2\nc\n");
        assert_eq!(tail_of(&log, 9).await, "a\nb1b2\nc\n");
        assert_eq!(tail_of(&log, 0).await, "", "--tail=0 panicked once");
        // A trailing partial line is a line of its own; an unfinished write is not yet.
        let open = [
            log.clone(),
            line("P", "d1"),
            "2026-11-22T10:00:01Z std".into(),
        ]
        .concat();
        assert_eq!(tail_of(&open, 1).await, "d1");
        assert_eq!(tail_of(&open, 2).await, "c\nd1");
    }

    #[tokio::test]
    async fn a_tail_across_chunks_matches_the_whole_output() {
        let lines: Vec<String> = (0..20_000)
            .map(|i| line("F", &format!("line {i}")))
            .collect();
        let log = lines.concat();
        assert!(log.len() > 10 * CHUNK);
        let tail = tail_of(&log, 15_000).await;
        let want: String = (5_000..20_000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(tail, want);
    }

    #[tokio::test]
    async fn limit_bytes_cuts_the_output() {
        let dir = std::env::temp_dir().join(format!("podvisor-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("0.log");
        std::fs::write(&path, [line("F", "hello"), line("F", "world")].concat()).unwrap();
        let mut r = LogReader::new(path, 0, Some(8), Decode::default());
        assert_eq!(r.next().await.unwrap(), b"hello\nwo");
        assert!(r.done());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
