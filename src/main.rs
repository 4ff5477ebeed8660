//! The `podvisor` command: the node agent and the tools that talk to it.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod agent;
mod cli;

use std::process::ExitCode;

use clap::Parser;

/// glibc raises its mmap threshold to the size of the largest block freed (up to 32 MiB),
/// after which blocks that large come from its heaps and stay in the process once freed:
/// one refused 9 MiB manifest left the agent 25 MiB larger for good. A fixed threshold
/// keeps every block of 256 KiB or more in a mapping of its own, returned when freed.
fn keep_large_blocks_returnable() {
    // SAFETY: mallopt only sets an allocator parameter; it is called before any thread
    // is started, and an unknown parameter is refused by returning 0.
    let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10) };
    debug_assert_eq!(set, 1, "mallopt(M_MMAP_THRESHOLD)");
    // SAFETY: as above. Each thread otherwise gets an arena of its own (up to 8 per core),
    // which keeps what was freed in it: a few threads share two.
    let set = unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
    debug_assert_eq!(set, 1, "mallopt(M_ARENA_MAX)");
}

fn main() -> ExitCode {
    keep_large_blocks_returnable();
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
