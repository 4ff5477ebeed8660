//! What a CRI call costs while it waits for its turn (the bound on mutations in flight):
//! during a burst of 500 pods nearly all of them wait so, and each waiting call held the
//! whole gRPC call's state, about 60 KiB (30 MiB of the agent's peak heap).

use std::mem::size_of_val;

use podvisor_cri::proto::{ContainerConfig, PodSandboxConfig};
use podvisor_cri::{CriRuntime, Runtime, Timeouts};

/// What one waiting call may hold: copies of its request (a CreateContainer's carries
/// two configs: about 11 KiB in all) and a little state, not the call's own.
const SMALL: usize = 16 * 1024;

#[tokio::test]
async fn a_call_that_has_not_started_holds_its_request_not_the_grpc_state() {
    // Nothing listens there: the channel connects only when a call runs.
    let rt = CriRuntime::new("unix:///nonexistent/podvisor.sock", Timeouts::default()).unwrap();
    let (config, sandbox) = (ContainerConfig::default(), PodSandboxConfig::default());
    let create = rt.create_container("sandbox", &config, &sandbox);
    let run = rt.run_sandbox(&sandbox);
    let stop = rt.stop_container("container", std::time::Duration::from_secs(1));
    let list = rt.list_pods();
    for (call, size) in [
        ("CreateContainer", size_of_val(&*create)),
        ("RunPodSandbox", size_of_val(&*run)),
        ("StopContainer", size_of_val(&*stop)),
        ("list_pods", size_of_val(&*list)),
    ] {
        assert!(size <= SMALL, "{call}: {size} bytes before it runs");
    }
}
