use std::io::Write as _;
use std::os::fd::AsRawFd as _;

use super::*;

const PAGE: usize = 4096;

#[test]
fn file_runs_join_neighbouring_file_pages_and_skip_holes_and_copies() {
    let file = PRESENT | FILE;
    let copy = PRESENT;
    let entries = [file, file, 0, file, copy, file, file, file];
    let runs = file_runs(&entries, 0x10_000, PAGE);
    assert_eq!(
        runs,
        vec![0x10_000..0x12_000, 0x13_000..0x14_000, 0x15_000..0x18_000]
    );
    assert!(
        file_runs(&[0, copy, FILE], 0, PAGE).is_empty(),
        "nothing present from the file"
    );
}

fn header(p_type: u32, p_flags: u32, p_vaddr: u64, p_memsz: u64) -> libc::Elf64_Phdr {
    libc::Elf64_Phdr {
        p_type,
        p_flags,
        p_offset: p_vaddr,
        p_vaddr,
        p_paddr: p_vaddr,
        p_filesz: p_memsz,
        p_memsz,
        p_align: PAGE as u64,
    }
}

#[test]
fn segments_are_the_unwritable_loads_cut_to_whole_pages() {
    let base = 0x5555_0000_0000usize;
    let headers = [
        header(libc::PT_PHDR, libc::PF_R, 0x40, 0x2a0),
        header(libc::PT_LOAD, libc::PF_R, 0, 0x12_345),
        header(libc::PT_LOAD, libc::PF_R | libc::PF_X, 0x13_345, 0x20_000),
        header(libc::PT_LOAD, libc::PF_R | libc::PF_W, 0x34_345, 0x3_000),
        header(libc::PT_GNU_RELRO, libc::PF_R, 0x34_345, 0x1_000),
        header(libc::PT_LOAD, libc::PF_R, 0x40_000, 0x800),
    ];
    let got = segments(&headers, base + 0x40, PAGE);
    assert_eq!(
        got,
        vec![base..base + 0x12_000, base + 0x14_000..base + 0x33_000],
        "the writable load is left out, and a load smaller than a page has no whole page"
    );
    assert!(
        segments(&headers[1..], base, PAGE).is_empty(),
        "no PT_PHDR: nothing is placed"
    );
}

/// Four pages of a file mapped privately: three read (mapped from the file), the third
/// written (a private copy, as a breakpoint is).
struct Mapped {
    at: *mut u8,
    path: std::path::PathBuf,
}

impl Mapped {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("podvisor-code-pages-{}", std::process::id()));
        let mut f = File::create(&path).expect("a temporary file");
        for byte in [b'a', b'b', b'c', b'd'] {
            f.write_all(&[byte; PAGE]).expect("written");
        }
        let f = File::open(&path).expect("reopened");
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a new private mapping of a file of four pages; unmapped in `drop`.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4 * PAGE,
                prot,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        Self {
            at: at.cast(),
            path,
        }
    }

    fn byte(&self, page: usize) -> u8 {
        // SAFETY: within the four mapped pages.
        unsafe { self.at.add(page * PAGE).read_volatile() }
    }

    fn range(&self) -> Range<usize> {
        self.at as usize..self.at as usize + 4 * PAGE
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, of that length.
        unsafe { libc::munmap(self.at.cast(), 4 * PAGE) };
        let _ = std::fs::remove_file(&self.path);
    }
}

#[test]
fn file_pages_are_unmapped_and_a_private_copy_keeps_its_bytes() {
    let m = Mapped::new();
    for page in [0, 1, 3] {
        assert_eq!(m.byte(page), b"abcd"[page]);
    }
    // SAFETY: within the mapping, which is writable.
    unsafe { m.at.add(2 * PAGE).write_volatile(b'X') };
    let present = |m: &Mapped| {
        let mut pagemap = File::open("/proc/self/pagemap").expect("pagemap");
        let e = entries(&mut pagemap, &m.range(), PAGE).expect("entries");
        e.iter().map(|e| e & PRESENT != 0).collect::<Vec<_>>()
    };
    assert_eq!(present(&m), [true, true, true, true]);

    let unmapped = trim(&[m.range()]).expect("trimmed");

    assert_eq!(unmapped, 3 * PAGE, "the three pages read from the file");
    assert_eq!(
        present(&m),
        [false, false, true, false],
        "the copy stays mapped"
    );
    assert_eq!(m.byte(2), b'X', "the written byte is kept");
    assert_eq!(m.byte(0), b'a', "an unmapped page reads the file again");
}

fn rss_file_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let line = status.lines().find_map(|l| l.strip_prefix("RssFile:"));
    let kib = line.and_then(|v| v.split_whitespace().next()?.parse().ok());
    kib.expect("RssFile")
}

#[test]
fn the_running_binary_s_code_is_unmapped_and_runs_on() {
    let segments = read_only_segments();
    let code = file_runs as *const () as usize;
    assert!(
        segments.iter().any(|s| s.contains(&code)),
        "{segments:x?} hold this binary's code at {code:x}"
    );
    let before = rss_file_kib();

    let unmapped = trim(&segments).expect("trimmed");

    let after = rss_file_kib();
    assert!(unmapped > 0, "the code this test runs was mapped");
    assert!(
        after < before,
        "RssFile {before} KiB before, {after} KiB after"
    );
    assert_eq!(
        file_runs(&[PRESENT | FILE], 0, PAGE),
        vec![0..PAGE],
        "and runs on"
    );
}
