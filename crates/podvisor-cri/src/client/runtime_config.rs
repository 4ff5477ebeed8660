//! What the runtime says of its own configuration (CRI RuntimeConfig), which the node
//! must match: its cgroup driver.

use super::CriClient;
use crate::error::CriError;
use crate::proto::*;

impl CriClient {
    /// The runtime's cgroup driver (CRI RuntimeConfig): `Some(true)` for systemd,
    /// `Some(false)` for cgroupfs, `None` where the runtime cannot say (containerd 1.6).
    pub async fn systemd_cgroups(&self) -> Result<Option<bool>, CriError> {
        let answer = self
            .unary(
                "RuntimeConfig",
                self.timeouts.call,
                call!(self.runtime, runtime_config, RuntimeConfigRequest {}),
            )
            .await;
        match answer {
            Ok(r) => Ok(r
                .linux
                .map(|l| l.cgroup_driver() == crate::proto::CgroupDriver::Systemd)),
            Err(CriError::Unimplemented { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
