#!/usr/bin/python3
"""A minimal stdio MCP server for the spawner attack: tool `nap` reports where the server runs
(pid, cgroups, uid, descriptors, environment names) and starts a setsid sleeper (marker 99931)."""
import json, os, subprocess, sys

def reply(id_, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()

def info():
    fds = []
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            fds.append(f"{fd}->{os.readlink('/proc/self/fd/' + fd)}")
        except OSError:
            fds.append(fd)
    with open("/proc/self/cgroup") as f:
        cg = f.read().strip().replace("\n", " | ")
    return (f"pid={os.getpid()} ppid={os.getppid()} uid={os.getuid()} cgroup={cg} "
            f"fds={' '.join(fds)} env={','.join(sorted(os.environ))}")

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        reply(id_, {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "sleeper", "version": "0.0.1"}})
    elif method == "tools/list":
        reply(id_, {"tools": [{"name": "nap", "description": "report and leave a sleeper",
                               "inputSchema": {"type": "object", "properties": {}}}]})
    elif method == "tools/call":
        subprocess.Popen(["setsid", "-f", "sleep", "99931"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        reply(id_, {"content": [{"type": "text", "text": info()}], "isError": False})
    elif method == "ping":
        reply(id_, {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no"}}) + "\n")
        sys.stdout.flush()
