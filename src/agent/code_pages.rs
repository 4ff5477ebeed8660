//! The agent's own code, unmapped where it is no longer run. An agent runs its start once
//! and a burst's code while the burst lasts, but the kernel keeps every page of the binary
//! it once mapped in the process for as long as it lives (and reclaims mapped code last):
//! an idle node agent held the 10 MiB of code its start and its last burst had run.
//!
//! Every `PERIOD` the pages of the executable's read-only segments (code, constants) that
//! are mapped from the file are unmapped (`MADV_DONTNEED`), as the kernel frees its own
//! start-up code once booted. Nothing is lost: those pages were never written, so what runs
//! again is mapped again from the page cache by a minor fault, and the rest stays there as
//! any file read does, clean and reclaimable. A page that is a private copy (a debugger's
//! or a uprobe's breakpoint) is left alone: unmapping it would lose the breakpoint.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::ops::Range;
use std::time::{Duration, Instant};

use tracing::{debug, warn};

/// How often what was not run since is unmapped.
pub(crate) const PERIOD: Duration = Duration::from_secs(10);

/// A `/proc/self/pagemap` entry's bits: the page is present; it is mapped from a file (or
/// shared), not a private copy.
const PRESENT: u64 = 1 << 63;
const FILE: u64 = 1 << 61;

/// Set (to anything), the agent keeps its code mapped: `scripts/order-file` reads which
/// pages an agent ran from what stayed mapped.
const KEEP: &str = "PODVISOR_KEEP_CODE_MAPPED";

/// Unmaps, every `PERIOD`, the code pages not run since the last time; on the current
/// thread's runtime, for as long as the agent runs.
pub(crate) fn trim_every(period: Duration) {
    if std::env::var_os(KEEP).is_some() {
        debug!("{KEEP} is set: the agent's code stays mapped");
        return;
    }
    let segments = read_only_segments();
    if segments.is_empty() {
        warn!("cannot find the agent's own code segments; its code stays mapped");
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let t0 = Instant::now();
            match trim(&segments) {
                Ok(bytes) => debug!(bytes, took = ?t0.elapsed(), "code pages unmapped"),
                Err(e) => {
                    warn!(error = %e, "cannot unmap the agent's code pages; they stay mapped");
                    return;
                }
            }
        }
    });
}

/// The executable's loaded segments that are never written, from its program headers.
fn read_only_segments() -> Vec<Range<usize>> {
    // SAFETY: getauxval reads the auxiliary vector the kernel gave the process; no
    // preconditions.
    let (at, count) = unsafe {
        (
            libc::getauxval(libc::AT_PHDR) as usize,
            libc::getauxval(libc::AT_PHNUM) as usize,
        )
    };
    if at == 0 || count == 0 {
        return Vec::new();
    }
    // SAFETY: the kernel loaded `count` program headers at `at` (AT_PHDR, AT_PHNUM), in a
    // read-only segment mapped for the process's whole life; they are copied out here.
    let headers = unsafe { std::slice::from_raw_parts(at as *const libc::Elf64_Phdr, count) };
    segments(headers, at, page_size())
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// The loaded segments of `headers` without write permission, in memory (the headers sit at
/// `at`, which places the executable), each cut to the whole pages inside it: a page shared
/// with a writable neighbour is never included.
fn segments(headers: &[libc::Elf64_Phdr], at: usize, page: usize) -> Vec<Range<usize>> {
    let Some(own) = headers.iter().find(|h| h.p_type == libc::PT_PHDR) else {
        return Vec::new();
    };
    let base = at.wrapping_sub(own.p_vaddr as usize);
    headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W == 0)
        .map(|h| {
            let start = base.wrapping_add(h.p_vaddr as usize);
            let end = start + h.p_memsz as usize;
            start.next_multiple_of(page)..end / page * page
        })
        .filter(|r| r.start < r.end)
        .collect()
}

/// Unmaps the pages of `segments` mapped from the file; answers how many bytes.
fn trim(segments: &[Range<usize>]) -> io::Result<usize> {
    let page = page_size();
    let mut pagemap = File::open("/proc/self/pagemap")?;
    let mut unmapped = 0;
    for segment in segments {
        let entries = entries(&mut pagemap, segment, page)?;
        for run in file_runs(&entries, segment.start, page) {
            // SAFETY: `run` lies in a segment of the executable that is never written, and
            // each of its pages is mapped from the file (not a private copy): unmapping it
            // changes no byte the process can read, the next access maps the same file
            // page again.
            let rc = unsafe { libc::madvise(run.start as *mut _, run.len(), libc::MADV_DONTNEED) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            unmapped += run.len();
        }
    }
    Ok(unmapped)
}

/// The pagemap entries of `range`'s pages.
fn entries(pagemap: &mut File, range: &Range<usize>, page: usize) -> io::Result<Vec<u64>> {
    let pages = (range.end - range.start) / page;
    let mut bytes = vec![0u8; pages * 8];
    pagemap.seek(SeekFrom::Start((range.start / page * 8) as u64))?;
    pagemap.read_exact(&mut bytes)?;
    let words = bytes.chunks_exact(8).map(|b| {
        let word: [u8; 8] = b.try_into().unwrap_or_default();
        u64::from_ne_bytes(word)
    });
    Ok(words.collect())
}

/// Runs of pages present and mapped from the file, among `entries` (one per page from
/// `start`).
fn file_runs(entries: &[u64], start: usize, page: usize) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e & (PRESENT | FILE) != PRESENT | FILE {
            continue;
        }
        let at = start + i * page;
        match runs.last_mut() {
            Some(last) if last.end == at => last.end = at + page,
            _ => runs.push(at..at + page),
        }
    }
    runs
}

#[cfg(test)]
mod tests;
