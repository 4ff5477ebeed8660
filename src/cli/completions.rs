//! `podvisor completions SHELL`: the completion script for bash, zsh, fish (what the
//! Debian package installs for bash and zsh).

use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

pub fn print(args: &CompletionsArgs) {
    let mut command = super::Cli::command();
    clap_complete::generate(args.shell, &mut command, "podvisor", &mut std::io::stdout());
}
