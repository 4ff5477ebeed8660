"""Exec through the node's API with the Python client, which speaks WebSocket
(v4.channel.k8s.io): a line in on stdin, stdout and stderr apart, the exit code from the
error channel. Prints what it saw, one line each."""
import sys
import time

from kubernetes import client, config
from kubernetes.stream import stream

config.load_kube_config(config_file=sys.argv[1])
api = client.CoreV1Api()
resp = stream(
    api.connect_get_namespaced_pod_exec,
    "shell",
    "default",
    container="main",
    # v4 has no way to end stdin: the command reads one line.
    command=["sh", "-c", "head -n1 | tr a-z A-Z; echo oops >&2; exit 7"],
    stdin=True,
    stdout=True,
    stderr=True,
    tty=False,
    _preload_content=False,
)
resp.write_stdin("hello\n")
out, err = "", ""
deadline = time.monotonic() + 30
while resp.is_open() and time.monotonic() < deadline:
    resp.update(timeout=1)
    if resp.peek_stdout():
        out += resp.read_stdout()
    if resp.peek_stderr():
        err += resp.read_stderr()
print(f"out:{out.strip()}")
print(f"err:{err.strip()}")
print(f"code:{resp.returncode}")

# A terminal: the command sees one.
resp = stream(
    api.connect_get_namespaced_pod_exec,
    "shell",
    "default",
    container="main",
    command=["tty"],
    stdin=True,
    stdout=True,
    stderr=False,
    tty=True,
    _preload_content=False,
)
out = ""
deadline = time.monotonic() + 30
while resp.is_open() and time.monotonic() < deadline:
    resp.update(timeout=1)
    if resp.peek_stdout():
        out += resp.read_stdout()
print(f"tty:{out.strip()}")
