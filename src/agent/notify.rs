//! systemd's readiness protocol (`Type=notify` units): `READY=1` once the agent serves,
//! `WATCHDOG=1` every half of `WatchdogSec` while the PLEG is healthy (so a wedged agent is
//! restarted by systemd), `STOPPING=1` on the way out. Without `$NOTIFY_SOCKET` (not
//! started by systemd) nothing is sent.

use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::Duration;

use podvisor_kubelet::pleg::PlegHealth;
use tracing::warn;

/// Sends `state` to the service manager, if one asked for it.
pub(crate) fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&path, state) {
        warn!(error = %e, state, "cannot notify the service manager");
    }
}

fn send(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path);
    match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            socket.send_to_addr(state.as_bytes(), &addr)?;
        }
        None => {
            socket.send_to(state.as_bytes(), path)?;
        }
    }
    Ok(())
}

/// Half of the watchdog period systemd gives (`$WATCHDOG_USEC`), if it gives one to us.
fn watchdog_period() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    let pid_ok = std::env::var("WATCHDOG_PID")
        .ok()
        .is_none_or(|p| p.parse::<u32>().ok() == Some(std::process::id()));
    (pid_ok && usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Tells systemd the agent is ready, then keeps its watchdog fed while the PLEG is healthy.
pub(crate) fn ready(pleg: Arc<PlegHealth>) {
    notify("READY=1");
    let Some(period) = watchdog_period() else {
        return;
    };
    actix::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            match pleg.check() {
                Ok(()) => notify("WATCHDOG=1"),
                Err(e) => warn!(error = %e, "unhealthy: the service manager's watchdog is not fed"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reaches_a_path_socket_and_an_abstract_one() {
        let dir = std::env::temp_dir().join(format!("podvisor-notify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let server = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        use std::os::linux::net::SocketAddrExt;
        let name = format!("podvisor-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let abstract_server = UnixDatagram::bind_addr(&addr).unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), "WATCHDOG=1").unwrap();
        let n = abstract_server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"WATCHDOG=1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
