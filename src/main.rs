//! The `podvisor` command: the node agent and the tools that talk to it.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod agent;
mod cli;

use std::process::ExitCode;

use clap::Parser;

/// jemalloc, not glibc's allocator. With 500 pods running, glibc's arenas held 30-32 MiB
/// for 17 MB of live heap, and 34-36 MiB once a burst had come and gone, even trimmed
/// every minute: each page that keeps one long-lived block stays, and a burst leaves
/// long-lived blocks on most of the pages it used. jemalloc keeps blocks of one size
/// together and gives back what stays free (docs/benchmarks.md, issue 46).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read once at its start (`_RJEM_MALLOC_CONF` overrides them): one
/// arena (one thread does most of the agent's work; more only spread a burst's pages),
/// no per-thread caches (each kept freed blocks out of every other thread's reach), and
/// pages free for a second handed back to the system (`MADV_DONTNEED`, not kept as lazily
/// freed) by a thread of jemalloc's own: left to the agent's own allocations, an idle
/// agent handed back what refused input had taken only slowly (7 MiB held after it).
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 108] = b"narenas:1,tcache:false,dirty_decay_ms:1000,muzzy_decay_ms:0,\
    background_thread:true,max_background_threads:1\0";

fn main() -> ExitCode {
    let args = cli::Cli::parse_from(cli::default_to_run(std::env::args_os().collect()));
    let result = match args.command {
        cli::Command::Run(run) => cli::run::run(*run, args.global),
        command => {
            cli::init_logging(args.global.log.as_deref().unwrap_or("warn"), false);
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(cli::dispatch(command)),
                Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("podvisor: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// One line, the whole cause chain: what an operator needs to act. A cause whose text its
/// parent already quotes (our errors say "cannot bind X: {source}") is not said twice.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain().map(ToString::to_string) {
        if !line.contains(&cause) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&cause);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    /// One of jemalloc's settings, by its NUL-terminated name.
    fn allocator_option<T: Copy + Default>(name: &[u8]) -> T {
        let (mut value, mut len) = (T::default(), std::mem::size_of::<T>());
        // SAFETY: `name` ends in NUL; `value` is a `T` and `len` its size, which mallctl
        // checks against the option's own before it writes.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr().cast(),
                (&raw mut value).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(rc, 0, "mallctl {}", String::from_utf8_lossy(name));
        value
    }

    #[test]
    fn the_allocator_runs_with_the_agent_s_settings() {
        assert_eq!(allocator_option::<u32>(b"opt.narenas\0"), 1, "arenas");
        assert!(!allocator_option::<bool>(b"opt.tcache\0"), "thread caches");
        assert!(
            allocator_option::<bool>(b"opt.background_thread\0"),
            "its thread"
        );
        let decay = |name: &[u8]| allocator_option::<isize>(name);
        assert_eq!(decay(b"opt.dirty_decay_ms\0"), 1000, "dirty pages kept, ms");
        assert_eq!(
            decay(b"opt.muzzy_decay_ms\0"),
            0,
            "lazily freed pages kept, ms"
        );
    }

    #[test]
    fn a_cause_already_quoted_is_not_repeated_but_a_new_one_is_added() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use");
        let e = anyhow::Error::new(io).context("cannot bind 127.0.0.1:1: Address already in use");
        assert_eq!(
            super::one_line(&e),
            "cannot bind 127.0.0.1:1: Address already in use"
        );
        let e = e.context("starting the agent");
        assert_eq!(
            super::one_line(&e),
            "starting the agent: cannot bind 127.0.0.1:1: Address already in use"
        );
    }
}
