//! Links the agent's functions in the order `packaging/podvisor.order.gz` gives (made by
//! `scripts/order-file`): the functions an agent runs sit together at the start of its code,
//! so the pages the kernel maps around each of them hold code that runs, not neighbours
//! that never do. An idle agent held 23 MiB of its 40 MiB of code that way, for 4 MiB of
//! functions it ran (docs/benchmarks.md, issue 46).
//!
//! Its relative relocations are packed (`-z pack-relative-relocs`, glibc 2.36 and later:
//! Debian 12 has 2.36): the dynamic loader reads 1.4 MiB of `.rela.dyn` once at start, and
//! those pages stayed resident for the agent's life.
//!
//! Only release-like builds for x86_64 Linux with the toolchain's own linker (rust-lld)
//! take either. Names the order file lists but the build does not have (other code, another
//! compiler) are skipped: a stale order file costs pages, never correctness.

use std::path::PathBuf;
use std::process::Command;
use std::{env, fs};

const ORDER: &str = "packaging/podvisor.order.gz";

fn main() {
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-env-changed=PODVISOR_NO_ORDER_FILE");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = env::var("TARGET").unwrap_or_default();
    if !release || target != "x86_64-unknown-linux-gnu" {
        return;
    }
    let arg = "cargo:rustc-link-arg-bin=podvisor";
    println!("{arg}=-Wl,-z,pack-relative-relocs");
    if env::var_os("PODVISOR_NO_ORDER_FILE").is_some() {
        return;
    }
    let Some(out) = env::var_os("OUT_DIR").map(|d| PathBuf::from(d).join("podvisor.order")) else {
        return;
    };
    match Command::new("gzip").arg("-dc").arg(ORDER).output() {
        Ok(unpacked) if unpacked.status.success() => {
            if let Err(e) = fs::write(&out, unpacked.stdout) {
                println!("cargo:warning=cannot write {}: {e}", out.display());
                return;
            }
            println!("{arg}=-Wl,--symbol-ordering-file={}", out.display());
            println!("{arg}=-Wl,--no-warn-symbol-ordering");
        }
        _ => println!(
            "cargo:warning={ORDER} not unpacked (gzip?): functions in the compiler's order"
        ),
    }
}
