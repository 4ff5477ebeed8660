//! The `podvisor` command: the node agent and the tools that talk to it.

mod agent;
mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let result = match args.command {
        cli::Command::Run(run) => cli::run::run(run, args.global),
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
            // One line, the whole cause chain: what an operator needs to act.
            eprintln!("podvisor: {e:#}");
            ExitCode::FAILURE
        }
    }
}
