"""Asks a node's kubelet server (https://127.0.0.1:PORT) what a client of the kubelet asks,
with TOKEN (or none: "-"), and prints one line per answer: `name code body-excerpt`.
The exec goes over WebSocket (v4.channel.k8s.io) with the kubelet's query names.

usage: kubelet_server.py PORT TOKEN POD CONTAINER [probes|logs|endpoints]
("probes": only `/metrics/probes`; "logs": only the container's whole log; "endpoints":
only `/configz`, `/metrics/cadvisor`, `/stats/summary` and `/metrics`)
"""
import json
import ssl
import sys
import urllib.error
import urllib.request

import websocket

port, token, pod, container = sys.argv[1:5]
base = f"https://127.0.0.1:{port}"
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE


def ask(name, path, method="GET", auth=token):
    headers = {} if auth == "-" else {"Authorization": f"Bearer {auth}"}
    req = urllib.request.Request(base + path, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            code, body = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        code, body = e.code, e.read().decode()
    print(name, code, json.dumps(body[:200000]))


if sys.argv[5:] == ["endpoints"]:
    for name, path in [("configz", "/configz"), ("cadvisor", "/metrics/cadvisor"),
                       ("summary", "/stats/summary"), ("metrics", "/metrics")]:
        ask(name, path)
    sys.exit(0)
if sys.argv[5:] == ["logs"]:
    ask("logs-all", f"/containerLogs/default/{pod}/{container}")
    sys.exit(0)
ask("probes", "/metrics/probes")
if sys.argv[5:] == ["probes"]:
    sys.exit(0)
ask("healthz", "/healthz")
ask("healthz-anonymous", "/healthz", auth="-")
ask("healthz-stranger", "/healthz", auth="not-the-token")
ask("pods", "/pods")
ask("logs", f"/containerLogs/default/{pod}/{container}?tailLines=1")
ask("logs-timestamps", f"/containerLogs/default/{pod}/{container}?tailLines=1&timestamps=true")
ask("logs-missing", f"/containerLogs/default/{pod}/nope")
ask("run", f"/run/default/{pod}/{container}?cmd=echo+ran+here", method="POST")
ask("summary", "/stats/summary")
ask("metrics", "/metrics")
ask("resource", "/metrics/resource")
ask("configz", "/configz")
ask("cadvisor", "/metrics/cadvisor")
ask("unknown", "/nothing-here")

ws = websocket.create_connection(
    f"wss://127.0.0.1:{port}/exec/default/{pod}/{container}?command=sh&command=-c&command=echo+out%3B+echo+err+%3E%262%3B+exit+4&output=1&error=1",
    header=[f"Authorization: Bearer {token}"],
    subprotocols=["v4.channel.k8s.io"],
    sslopt={"cert_reqs": ssl.CERT_NONE, "check_hostname": False},
    timeout=30,
)
streams = {}
while True:
    try:
        frame = ws.recv()
    except websocket.WebSocketConnectionClosedException:
        break
    if not frame:
        continue
    data = frame if isinstance(frame, bytes) else frame.encode()
    streams.setdefault(data[0], b"")
    streams[data[0]] += data[1:]
print("exec-stdout", "-", json.dumps(streams.get(1, b"").decode()))
print("exec-stderr", "-", json.dumps(streams.get(2, b"").decode()))
print("exec-status", "-", json.dumps(streams.get(3, b"").decode()))
