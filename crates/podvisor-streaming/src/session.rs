//! What a client asks of a streaming request, from its query as kubectl and client-go
//! send it (`command`, `container`, `stdin`, `stdout`, `stderr`, `tty`; `ports`).

use podvisor_cri::StreamIo;

use crate::error::StreamError;

/// Which kind of session a path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Exec,
    Attach,
    PortForward,
}

impl Verb {
    /// The API subresource (`exec`, `attach`, `portforward`).
    pub fn from_subresource(s: &str) -> Option<Verb> {
        match s {
            "exec" => Some(Verb::Exec),
            "attach" => Some(Verb::Attach),
            "portforward" => Some(Verb::PortForward),
            _ => None,
        }
    }
}

/// A session's options, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    Exec {
        container: Option<String>,
        command: Vec<String>,
        io: StreamIo,
    },
    Attach {
        container: Option<String>,
        io: StreamIo,
    },
    PortForward {
        ports: Vec<u16>,
    },
}

/// What a query calls the streams: the API's `stdin`, `stdout`, `stderr`, or the
/// kubelet's `input`, `output`, `error` (what the API server sends a node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamNames {
    pub stdin: &'static str,
    pub stdout: &'static str,
    pub stderr: &'static str,
}

pub const API_NAMES: StreamNames = StreamNames {
    stdin: "stdin",
    stdout: "stdout",
    stderr: "stderr",
};

pub const KUBELET_NAMES: StreamNames = StreamNames {
    stdin: "input",
    stdout: "output",
    stderr: "error",
};

impl Session {
    /// A request to the API (`pods/{name}/exec?stdin=true&...`).
    pub fn parse(verb: Verb, query: &str) -> Result<Session, StreamError> {
        Session::parse_with(verb, query, API_NAMES)
    }

    pub fn parse_with(verb: Verb, query: &str, names: StreamNames) -> Result<Session, StreamError> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let all = |k: &'static str| pairs.iter().filter(move |(n, _)| n == k).map(|(_, v)| v);
        let container = all("container").next().filter(|c| !c.is_empty()).cloned();
        match verb {
            Verb::Exec => {
                let command: Vec<String> = all("command").cloned().collect();
                if command.is_empty() {
                    return Err(bad("you must specify at least 1 command"));
                }
                let io = io(&pairs, names)?;
                Ok(Session::Exec {
                    container,
                    command,
                    io,
                })
            }
            Verb::Attach => Ok(Session::Attach {
                container,
                io: io(&pairs, names)?,
            }),
            Verb::PortForward => {
                let ports = all("ports").chain(all("port"));
                let ports = ports.flat_map(|v| v.split(',')).map(port);
                Ok(Session::PortForward {
                    ports: ports.collect::<Result<_, _>>()?,
                })
            }
        }
    }

    /// The container named, if any (port-forward names none).
    pub fn container(&self) -> Option<&str> {
        match self {
            Session::Exec { container, .. } | Session::Attach { container, .. } => {
                container.as_deref()
            }
            Session::PortForward { .. } => None,
        }
    }

    /// The same session for the container `name` (the pod's only one, defaulted).
    pub fn with_container(mut self, name: &str) -> Session {
        if let Session::Exec { container, .. } | Session::Attach { container, .. } = &mut self {
            *container = Some(name.to_string());
        }
        self
    }
}

fn io(pairs: &[(String, String)], names: StreamNames) -> Result<StreamIo, StreamError> {
    let flag = |k: &str| {
        pairs
            .iter()
            .rfind(|(n, _)| n == k)
            .is_some_and(|(_, v)| matches!(v.as_str(), "true" | "1" | "True"))
    };
    let tty = flag("tty");
    let io = StreamIo {
        stdin: flag(names.stdin),
        stdout: flag(names.stdout),
        // A terminal merges stderr into stdout, as the API server's options do.
        stderr: flag(names.stderr) && !tty,
        tty,
    };
    if !(io.stdin || io.stdout || io.stderr) {
        return Err(bad(&format!(
            "you must specify at least 1 of {}, {}, {}",
            names.stdin, names.stdout, names.stderr
        )));
    }
    Ok(io)
}

fn port(text: &str) -> Result<u16, StreamError> {
    match text.trim().parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(bad(&format!("invalid port {text:?}: must be 1-65535"))),
    }
}

fn bad(msg: &str) -> StreamError {
    StreamError::BadRequest(msg.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_takes_every_command_word_and_its_streams() {
        let q = "command=sh&command=-c&command=echo+a%26b&container=app&stdin=true&stdout=true&stderr=true";
        let s = Session::parse(Verb::Exec, q).unwrap();
        let Session::Exec {
            container,
            command,
            io,
        } = s
        else {
            panic!("not exec")
        };
        assert_eq!(container.as_deref(), Some("app"));
        assert_eq!(command, ["sh", "-c", "echo a&b"]);
        assert!(io.stdin && io.stdout && io.stderr && !io.tty);
    }

    #[test]
    fn a_terminal_has_no_stderr_of_its_own() {
        let s = Session::parse(Verb::Attach, "stdout=true&stderr=true&tty=true").unwrap();
        let Session::Attach { io, .. } = s else {
            panic!("not attach")
        };
        assert!(io.tty && io.stdout && !io.stderr);
    }

    #[test]
    fn exec_without_command_or_streams_is_refused() {
        let e = Session::parse(Verb::Exec, "stdout=true").unwrap_err();
        assert!(e.to_string().contains("at least 1 command"), "{e}");
        let e = Session::parse(Verb::Exec, "command=ls").unwrap_err();
        assert!(e.to_string().contains("stdin, stdout, stderr"), "{e}");
        assert_eq!(e.code(), 400);
    }

    #[test]
    fn port_forward_reads_ports_and_refuses_bad_ones() {
        let s = Session::parse(Verb::PortForward, "ports=80,8080&port=9000").unwrap();
        assert_eq!(
            s,
            Session::PortForward {
                ports: vec![80, 8080, 9000]
            }
        );
        assert!(Session::parse(Verb::PortForward, "").is_ok());
        for bad in ["ports=0", "ports=70000", "ports=http"] {
            assert!(Session::parse(Verb::PortForward, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_kubelets_names_are_input_output_and_error() {
        let q = "command=ls&input=1&output=1&error=1";
        let Session::Exec { io, .. } = Session::parse_with(Verb::Exec, q, KUBELET_NAMES).unwrap()
        else {
            panic!("not exec")
        };
        assert!(io.stdin && io.stdout && io.stderr);
        let e = Session::parse_with(Verb::Exec, "command=ls&stdout=1", KUBELET_NAMES).unwrap_err();
        assert!(e.to_string().contains("input, output, error"), "{e}");
    }

    #[test]
    fn a_defaulted_container_is_named() {
        let s = Session::parse(Verb::Exec, "command=ls&stdout=1").unwrap();
        assert_eq!(s.container(), None);
        assert_eq!(s.with_container("only").container(), Some("only"));
    }
}
