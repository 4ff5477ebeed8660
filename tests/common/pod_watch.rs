//! `kubectl get pods -w` read as it streams: which pods exist, are ready, and run which
//! image at every moment, with a check run after each event (a poll could miss a dip).

use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::Value;

use super::kubectl::Kubectl;

/// One pod as the watch last saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub ready: bool,
    pub deleting: bool,
    pub phase: String,
    pub image: String,
    pub template_hash: String,
}

pub type Pods = BTreeMap<String, Seen>;

/// Called with the pods after each event; what it returns is kept as a violation.
pub type Check = Box<dyn Fn(&Pods) -> Option<String> + Send>;

pub struct PodWatch {
    child: Child,
    reader: Option<JoinHandle<()>>,
    pub violations: Arc<Mutex<Vec<String>>>,
    pub pods: Arc<Mutex<Pods>>,
    /// Every pod name ever seen.
    pub names: Arc<Mutex<Vec<String>>>,
}

fn seen(p: &Value) -> Seen {
    let ready = p["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    Seen {
        ready,
        deleting: !p["metadata"]["deletionTimestamp"].is_null(),
        phase: p["status"]["phase"].as_str().unwrap_or("").to_string(),
        image: p["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        template_hash: p["metadata"]["labels"]["pod-template-hash"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    }
}

impl PodWatch {
    /// Watches the pods labelled `selector`, running `check` after each event.
    pub fn start(k: &Kubectl, selector: &str, check: Check) -> Self {
        let mut child = k
            .command(&[
                "get",
                "pods",
                "-l",
                selector,
                "-w",
                "--output-watch-events",
                "-o",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl runs");
        let out = child.stdout.take().unwrap();
        let violations = Arc::new(Mutex::new(Vec::new()));
        let pods = Arc::new(Mutex::new(Pods::new()));
        let names = Arc::new(Mutex::new(Vec::new()));
        let (v, p, n) = (violations.clone(), pods.clone(), names.clone());
        let reader = std::thread::spawn(move || {
            let stream = serde_json::Deserializer::from_reader(BufReader::new(out));
            for event in stream.into_iter::<Value>().map_while(Result::ok) {
                let o = &event["object"];
                let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
                let mut pods = p.lock().unwrap();
                if event["type"] == "DELETED" {
                    pods.remove(&name);
                } else {
                    pods.insert(name.clone(), seen(o));
                    let mut all = n.lock().unwrap();
                    if !all.contains(&name) {
                        all.push(name);
                    }
                }
                if let Some(why) = check(&pods) {
                    v.lock().unwrap().push(why);
                }
            }
        });
        Self {
            child,
            reader: Some(reader),
            violations,
            pods,
            names,
        }
    }

    /// Stops watching; the violations seen.
    pub fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.violations.lock().unwrap().clone()
    }
}
