#!/usr/bin/env python3
"""A paddock runner in Python, written from docs/protocol.md alone: standard library only, Python >= 3.9.

It greets the sender word by word (config: greeting, pauseMs), honours run/cancel, and counts the
conversation's turns in host state when the binding grants state/get and state/set.

Protocol v1 in brief: JSON-RPC 2.0, one JSON object per line on stdin/stdout; stdout carries the
protocol only (logs go to stderr). The host sends initialize, run, run/cancel, shutdown; the runner
streams run/update notifications (seq 1, 2, ...) and may send host requests (state/get, ...).
"""
import json
import sys
import threading

PROTOCOL_VERSION = 1
NAME, VERSION = "python-runner", "1.0.0"

# JSON-RPC error codes (docs/protocol.md, "Error codes").
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
PROTOCOL_VERSION_UNSUPPORTED, RUNNER_BUSY = -32010, -32011

_write_lock = threading.Lock()


def log(message):
    """stderr is the runner's log; the host keeps its tail and never parses it."""
    print(f"[{NAME}] {message}", file=sys.stderr, flush=True)


def send(message):
    """One message, one line. Written under a lock: the run thread and the reader both send."""
    line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
    with _write_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def answer(msg_id, result):
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def fail(msg_id, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    send({"jsonrpc": "2.0", "id": msg_id, "error": error})


class HostError(Exception):
    """A host request answered with an error (PolicyDenied, NotSupported, ...)."""

    def __init__(self, error):
        super().__init__(error.get("message", "host request failed"))
        self.code = error.get("code")
        self.data = error.get("data")


class Runner:
    def __init__(self):
        self.initialized = False
        self.active = None  # (run_id, cancel event) of the run in progress
        self.lock = threading.Lock()
        self.next_id = 0
        self.pending = {}  # our request id -> [threading.Event, response]
        self.thread = None  # the thread of the run in progress

    # --- runner -> host requests -------------------------------------------------------------
    def request(self, method, params, timeout=30.0):
        """Send a host request and wait for its answer (the reader thread delivers it)."""
        with self.lock:
            self.next_id += 1
            req_id = f"py-{self.next_id}"
            waiter = [threading.Event(), None]
            self.pending[req_id] = waiter
        send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        if not waiter[0].wait(timeout):
            with self.lock:
                self.pending.pop(req_id, None)
            raise HostError({"code": INTERNAL_ERROR, "message": f"{method}: no answer within {timeout} s"})
        response = waiter[1]
        if "error" in response:
            raise HostError(response["error"])
        return response.get("result")

    def deliver(self, message):
        with self.lock:
            waiter = self.pending.pop(message.get("id"), None)
        if waiter is None:
            log(f"answer to an unknown request id {message.get('id')!r}; ignored")
            return
        waiter[1] = message
        waiter[0].set()

    # --- host -> runner ----------------------------------------------------------------------
    def handle(self, message):
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            msg_id = message.get("id") if isinstance(message, dict) else None
            fail(msg_id, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return True
        method = message.get("method")
        if method is None:  # an answer to one of our host requests
            if "result" in message or "error" in message:
                self.deliver(message)
            return True
        msg_id = message.get("id")
        params = message.get("params") or {}
        is_request = "id" in message

        if method == "initialize":
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            if version != PROTOCOL_VERSION:
                fail(
                    msg_id,
                    PROTOCOL_VERSION_UNSUPPORTED,
                    f"this runner speaks protocol {PROTOCOL_VERSION}, not {version}",
                )
                return True
            self.initialized = True
            answer(
                msg_id,
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "runner": {"name": NAME, "version": VERSION},
                    "capabilities": {"cancel": True},
                },
            )
        elif method == "run":
            self.start_run(msg_id, params)
        elif method == "run/cancel":  # a notification: never answered
            with self.lock:
                active = self.active
            if active and isinstance(params, dict) and params.get("runId") == active[0]:
                active[1].set()
        elif method == "shutdown":
            active = self.active
            if active:
                active[1].set()
            answer(msg_id, {})
            return False
        elif is_request:
            fail(msg_id, METHOD_NOT_FOUND, f"unknown method {method}")
        # An unknown notification is ignored.
        return True

    def start_run(self, msg_id, params):
        if not self.initialized:
            fail(msg_id, INVALID_REQUEST, "run before initialize")
            return
        problem = invalid_run_params(params)
        if problem:
            fail(msg_id, INVALID_PARAMS, f"invalid run params: {problem}")
            return
        with self.lock:
            if self.active:
                fail(msg_id, RUNNER_BUSY, "a run is already in progress")
                return
            cancel = threading.Event()
            self.active = (params["run"]["runId"], cancel)
        self.thread = threading.Thread(target=self.execute, args=(msg_id, params, cancel), daemon=True)
        self.thread.start()

    def execute(self, msg_id, params, cancel):
        run_id = params["run"]["runId"]
        seq = 0

        def emit(update):
            nonlocal seq
            seq += 1
            send({"jsonrpc": "2.0", "method": "run/update", "params": {"runId": run_id, "seq": seq, "update": update}})

        try:
            result = greet(params, cancel, emit, lambda method, p: self.request(method, {"runId": run_id, **p}))
        except Exception as error:  # a bug here fails this run, not the process
            log(f"run {run_id} failed: {error!r}")
            result = {"status": "failed", "error": {"code": "runner_error", "message": str(error)}}
        if cancel.is_set():
            result = {"status": "cancelled"}
        with self.lock:
            self.active = None
        answer(msg_id, result)


def invalid_run_params(params):
    """The fields this runner relies on (the host sends a full RunParams: docs/protocol.md, Types)."""
    if not isinstance(params, dict):
        return "params must be an object"
    run, event, binding = params.get("run"), params.get("event"), params.get("binding")
    if not isinstance(run, dict) or not isinstance(run.get("runId"), str) or not run["runId"]:
        return "run.runId must be a non-empty string"
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("message"), dict)
        or not isinstance(event["message"].get("parts"), list)
    ):
        return "event.message.parts must be a list"
    if not isinstance(binding, dict):
        return "binding must be an object"
    return None


def greet(params, cancel, emit, host_request):
    event, binding = params["event"], params["binding"]
    config = binding.get("config") or {}
    greeting = config.get("greeting", "Hello")
    pause = config.get("pauseMs", 50) / 1000.0
    text = " ".join(p.get("text", "") for p in event["message"]["parts"] if p.get("type") == "text").strip()
    name = text or event.get("sender", {}).get("name") or "there"

    turn = None
    granted = binding.get("hostRequests") or []
    if "state/get" in granted and "state/set" in granted:
        try:
            stored = host_request("state/get", {"key": "turns"})  # -> {"found": bool, "value"?: any}
            turn = (stored.get("value") if stored.get("found") else 0) + 1
            host_request("state/set", {"key": "turns", "value": turn})
        except HostError as error:
            emit({"kind": "log", "level": "warn", "message": f"state unavailable ({error.code}): {error}"})

    words = f"{greeting}, {name}!".split(" ") + ([f"(turn {turn})"] if turn else [])
    emit({"kind": "progress", "message": f"greeting in {len(words)} words"})
    for i, word in enumerate(words):
        if cancel.wait(pause):  # waits, and wakes at once on run/cancel
            return {"status": "cancelled"}
        emit({"kind": "message.delta", "text": word if i == 0 else f" {word}"})
    reply = " ".join(words)
    return {"status": "completed", "output": {"parts": [{"type": "text", "text": reply}]}}


def main():
    runner = Runner()
    for raw in sys.stdin.buffer:  # one message per line; the loop ends when stdin closes
        line = raw.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            fail(None, PARSE_ERROR, "not JSON")
            continue
        if not runner.handle(message):
            break
    # shutdown answered, or stdin closed: stop a run still going (it answers "cancelled"), then exit.
    active = runner.active
    if active:
        active[1].set()
        runner.thread.join(1.0)


if __name__ == "__main__":
    main()
