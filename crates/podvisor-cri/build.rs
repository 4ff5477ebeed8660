//! Compiles proto/runtime/v1/api.proto with protox (pure Rust), so building podvisor never
//! needs `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not when it is compiled: two checkouts sharing one target
    // dir share this script's binary, and one baked-in path pointed at the other checkout.
    let proto_root = format!("{}/../../proto", std::env::var("CARGO_MANIFEST_DIR")?);
    let api = format!("{proto_root}/runtime/v1/api.proto");
    println!("cargo:rerun-if-changed={api}");
    let fds = protox::compile([&api], [&proto_root])?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        // Labels and annotations as BTreeMaps, as the model keeps them: a relist of 500
        // pods decoded some 30,000 entries into HashMaps (SipHash and all) and then copied
        // them into BTreeMaps, every second; most of the idle agent's CPU at 500 pods.
        .btree_map(".")
        .compile_fds(fds)?;
    Ok(())
}
