"""Hostile streaming clients against the node's API (WebSocket, v4.channel.k8s.io):
opens N exec sessions running `cat` at once and abandons them (closes the sockets without
a word), then opens one session running `yes` and never reads from it for SECONDS.
Prints `opened <n>` and `refused <n>`.

usage: abandon.py KUBECONFIG N SECONDS
"""
import socket
import ssl
import sys
import time

import websocket
from kubernetes import client, config

kubeconfig, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
cfg = client.Configuration()
config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
auth = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
url = cfg.host.replace("https://", "wss://") + "/api/v1/namespaces/default/pods/shell/exec"
sslopt = {"cert_reqs": ssl.CERT_NONE, "check_hostname": False}


def session(command):
    return websocket.create_connection(
        f"{url}?container=main&stdin=true&stdout=true&{command}",
        header=[f"Authorization: {auth}"],
        subprotocols=["v4.channel.k8s.io"],
        sslopt=sslopt,
        timeout=30,
    )


opened, refused = [], 0
for _ in range(n):
    try:
        opened.append(session("command=cat"))
    except websocket.WebSocketBadStatusException:
        refused += 1
print("opened", len(opened))
print("refused", refused)
for ws in opened:
    # Abandoned: the TCP connection just goes.
    ws.sock.shutdown(socket.SHUT_RDWR)
    ws.sock.close()

slow = session("command=yes")
time.sleep(seconds)
slow.sock.close()
