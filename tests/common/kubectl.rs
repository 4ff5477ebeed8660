//! kubectl, unmodified, against a test agent's API with the kubeconfig the agent wrote.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use super::agent::Agent;

/// The kubectl binary: `$KUBECTL`, or `kubectl` on PATH. A missing kubectl fails the test
/// with what to do: these tests never skip themselves.
pub fn binary() -> String {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let found = Command::new(&bin)
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "kubectl not found ({bin}): run scripts/test-deps (or set KUBECTL)"
    );
    bin
}

#[derive(Clone)]
pub struct Kubectl {
    bin: String,
    pub kubeconfig: PathBuf,
}

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Kubectl {
    /// kubectl with the kubeconfig at `kubeconfig`.
    pub fn with(kubeconfig: PathBuf) -> Self {
        Kubectl {
            bin: binary(),
            kubeconfig,
        }
    }

    pub fn for_agent(agent: &Agent) -> Self {
        Kubectl {
            bin: binary(),
            kubeconfig: agent.dir.join("state").join("kubeconfig"),
        }
    }

    /// Lets the default namespace hold pods the baseline Pod Security level refuses (the
    /// tests' pods write into a hostPath).
    pub fn privileged(self) -> Self {
        self.ok(&[
            "label",
            "namespace",
            "default",
            "pod-security.kubernetes.io/enforce=privileged",
        ]);
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.command(args).output().expect("kubectl runs").into()
    }

    /// Runs with `stdin` as input.
    pub fn run_with(&self, args: &[&str], stdin: &str) -> Run {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap().into()
    }

    /// Runs and expects success; the output.
    pub fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args);
        assert!(r.ok, "kubectl {args:?} failed:\n{}\n{}", r.stdout, r.stderr);
        r.stdout
    }

    pub fn apply(&self, yaml: &str) -> String {
        let r = self.run_with(&["apply", "-f", "-"], yaml);
        assert!(r.ok, "kubectl apply failed:\n{}\n{}", r.stdout, r.stderr);
        r.stdout
    }

    /// The default namespace's events with `reason`, as the API serves them.
    pub fn events(&self, reason: &str) -> Vec<serde_json::Value> {
        let all: serde_json::Value =
            serde_json::from_str(&self.ok(&["get", "events", "-o", "json"])).unwrap();
        let items = all["items"].as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .collect()
    }

    /// `kubectl get ... -o jsonpath=...`.
    pub fn jsonpath(&self, what: &[&str], path: &str) -> String {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        let p = format!("-o=jsonpath={path}");
        args.push(&p);
        self.run(&args).stdout
    }
}

impl Kubectl {
    /// Starts `kubectl port-forward` with `args` (a `:PORT` among them): the process and the
    /// local port it forwards from. Its output is drained: kubectl writes a line per
    /// connection, and a closed pipe would kill it (SIGPIPE).
    pub fn port_forward(&self, args: &[&str]) -> (std::process::Child, u16) {
        use std::io::BufRead;
        let mut pf = self
            .command(&[&["port-forward"][..], args].concat())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl runs");
        let mut stdout = std::io::BufReader::new(pf.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        // "Forwarding from 127.0.0.1:NNNNN -> 8080"
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        (pf, port)
    }
}

/// `GET /index.html` from 127.0.0.1:`port` over HTTP/1.0: the answer, with a read error in
/// brackets after what came.
pub fn http_get(port: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    s.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    if let Err(e) = s.read_to_string(&mut out) {
        out += &format!("[{e}]");
    }
    out
}
