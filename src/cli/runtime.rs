//! `podvisor runtime …`: direct questions to the container runtime.

use clap::Subcommand;
use podvisor_cri::Runtime;

use super::RuntimeArgs;

#[derive(Debug, Subcommand)]
pub enum RuntimeCommand {
    /// Print the runtime's conditions (RuntimeReady, NetworkReady).
    Status(RuntimeArgs),
}

pub async fn run(cmd: RuntimeCommand) -> anyhow::Result<()> {
    match cmd {
        RuntimeCommand::Status(args) => status(&args).await,
    }
}

async fn status(args: &RuntimeArgs) -> anyhow::Result<()> {
    let runtime = super::connect(args)?;
    let conditions = runtime.conditions().await?;
    println!(
        "{:<16} {:<7} {:<24} MESSAGE",
        "CONDITION", "STATUS", "REASON"
    );
    for c in &conditions {
        println!(
            "{:<16} {:<7} {:<24} {}",
            c.kind,
            if c.status { "True" } else { "False" },
            c.reason,
            c.message
        );
    }
    if conditions.iter().any(|c| !c.status) {
        anyhow::bail!("the runtime reports a condition that is not met");
    }
    Ok(())
}
