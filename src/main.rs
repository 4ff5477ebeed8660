//! The `podvisor` command: the node agent and the tools that talk to it.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(&args.global);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("podvisor: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(cli::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, the whole cause chain: what an operator needs to act.
            eprintln!("podvisor: {e:#}");
            ExitCode::FAILURE
        }
    }
}
