//! `podvisor version`

use podvisor_cri::Runtime;

use super::RuntimeArgs;

pub async fn run(args: &RuntimeArgs) -> anyhow::Result<()> {
    let runtime = super::connect(args)?;
    let v = runtime.version().await?;
    println!("podvisor:    {}", env!("CARGO_PKG_VERSION"));
    println!("runtime:     {} {}", v.runtime_name, v.runtime_version);
    println!("runtime API: {}", v.runtime_api_version);
    Ok(())
}
