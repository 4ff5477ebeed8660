//! A streaming session to prepare (CRI Exec, Attach, PortForward).

/// Which of a session's streams exist, and whether it has a terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamIo {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamRequest {
    Exec {
        container_id: String,
        cmd: Vec<String>,
        io: StreamIo,
    },
    Attach {
        container_id: String,
        io: StreamIo,
    },
    /// Ports the session may forward to; empty leaves them to the client's streams.
    PortForward {
        sandbox_id: String,
        ports: Vec<u16>,
    },
}
