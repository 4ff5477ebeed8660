//! Compiles proto/runtime/v1/api.proto with protox (pure Rust), so building podvisor never
//! needs `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");
    let api = format!("{proto_root}/runtime/v1/api.proto");
    println!("cargo:rerun-if-changed={api}");
    let fds = protox::compile([&api], [proto_root])?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .compile_fds(fds)?;
    Ok(())
}
