#!/usr/bin/env python3
"""A small client of roomd's control socket, standard library only.

Copy it into a game's tools, or import it: `RoomClient` sends verbs and
follows events; `follow` reconnects and resumes with `since`. The protocol
is in Sources/Control/PROTOCOL.md and protocol.schema.json.

    roomctl.py status
    roomctl.py request move '{"id": "bard", "position": [2, 0, -1], "overMs": 500}'
    roomctl.py request moves '{"sources": {"bard": [2, 0, -1], "hearth": [0, 0, -3]}, "overMs": 33}'
    roomctl.py events [--since SEQ [--stream NAME]] [--only speechStarted,speechEnded] [--follow] [--count N]

Exit codes: 0 done, 1 roomd refused or is gone, 2 usage.
"""
import argparse
import json
import os
import socket
import sys
import time

PROTOCOL_VERSION = 1


def default_socket_path():
    """$XDG_RUNTIME_DIR/roomd.sock, or roomd's fallback folder under /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "roomd.sock")
    return f"/tmp/roomd-{os.getuid()}/roomd.sock"


class Refused(Exception):
    """roomd answered ok: false; the message says why."""


class RoomClient:
    """One connection to roomd: requests one at a time, or one event stream."""

    def __init__(self, path=None, timeout=10.0):
        self.path = path or default_socket_path()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(self.path)
        except OSError:
            self.sock.close()
            raise
        self.lines = self.sock.makefile("r", encoding="utf-8", newline="\n")

    def close(self):
        self.lines.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def _send(self, verb, args):
        line = json.dumps({"v": PROTOCOL_VERSION, "verb": verb, "args": args}, separators=(",", ":"))
        self.sock.sendall(line.encode("utf-8") + b"\n")

    def _read(self):
        line = self.lines.readline()
        if not line.endswith("\n"):
            # Nothing, or a line cut off: roomd went mid-write.
            raise ConnectionError("roomd closed the connection")
        return json.loads(line)

    def request(self, verb, **args):
        """Sends one verb and returns its result; raises Refused with roomd's reason."""
        self._send(verb, args)
        reply = self._read()
        if not reply.get("ok"):
            raise Refused(reply.get("error", "refused"))
        return reply.get("result", {})

    def events(self, since=None, only=None, stream=None):
        """Subscribes and yields each event record (a dict with seq, t, event, ...).

        The first thing yielded is the answer: {"stream", "lastSeq", "replayed",
        "missed"}. `since` counts in `stream`, the name an earlier answer gave;
        roomd replays all it keeps for a stream that is not its own.
        Blocks between events; the generator ends when roomd goes.
        """
        args = {}
        if since is not None:
            args["since"] = since
        if stream is not None:
            args["stream"] = stream
        if only:
            args["only"] = list(only)
        self.sock.settimeout(None)
        self._send("events", args)
        reply = self._read()
        if not reply.get("ok"):
            raise Refused(reply.get("error", "refused"))
        yield reply["result"]
        while True:
            try:
                message = self._read()
            except (ConnectionError, OSError):
                return
            yield message["event"]


def follow(path=None, since=None, stream=None, only=None, retry_seconds=(0.5, 10.0), on_notice=None):
    """Yields events for ever, reconnecting after roomd goes (waiting 0.5 s,
    doubling to 10 s) and resuming after the last seq seen, so nothing kept
    is missed. A roomd started anew has a stream of its own: all it kept
    is replayed."""
    notice = on_notice or (lambda text: print(text, file=sys.stderr, flush=True))
    delay = retry_seconds[0]
    last, name = since, stream
    while True:
        try:
            with RoomClient(path) as client:
                events = client.events(since=last, only=only, stream=name)
                answer = next(events)
                delay = retry_seconds[0]
                if name is not None and answer["stream"] != name:
                    notice(f"roomd started anew (stream {answer['stream']}); replaying what it kept")
                    last = 0
                if last is not None and answer["missed"]:
                    notice(f"events {last + 1} to {last + answer['missed']} are no longer kept")
                name = answer["stream"]
                if last is None:
                    # Count from here, so a reconnect replays what came meanwhile.
                    last = answer["lastSeq"]
                for event in events:
                    last = event["seq"]
                    yield event
                notice("roomd went; reconnecting")
        except (OSError, ValueError):
            pass
        time.sleep(delay)
        delay = min(2 * delay, retry_seconds[1])


def main():
    parser = argparse.ArgumentParser(description="Talk to roomd over its control socket.")
    parser.add_argument("--socket", help="roomd's socket (default: $XDG_RUNTIME_DIR/roomd.sock)")
    verbs = parser.add_subparsers(dest="command", required=True)
    verbs.add_parser("status", help="print the room's status as JSON")
    request = verbs.add_parser("request", help="send any verb with its arguments as a JSON object")
    request.add_argument("verb")
    request.add_argument("args", nargs="?", default="{}", help="the arguments, a JSON object")
    events = verbs.add_parser("events", help="print events as JSON lines")
    events.add_argument("--since", type=int, help="replay the kept events after this seq first")
    events.add_argument("--stream", help="the stream --since counts in, as an earlier answer named it")
    events.add_argument("--only", help="comma-separated event names")
    events.add_argument("--follow", action="store_true", help="reconnect when roomd goes, resuming after the last seq")
    events.add_argument("--count", type=int, help="stop after this many events")
    options = parser.parse_args()
    if options.command == "events" and options.since is not None and options.since < 0:
        parser.error("--since must be 0 or more")
    if options.command == "events" and options.count is not None and options.count < 1:
        parser.error("--count must be 1 or more")

    try:
        if options.command == "status":
            with RoomClient(options.socket) as client:
                print(json.dumps(client.request("status"), indent=2, sort_keys=True))
        elif options.command == "request":
            try:
                args = json.loads(options.args)
            except json.JSONDecodeError as error:
                parser.error(f"args: not JSON: {error}")
            if not isinstance(args, dict):
                parser.error("args: expected a JSON object")
            with RoomClient(options.socket) as client:
                print(json.dumps(client.request(options.verb, **args), sort_keys=True))
        else:
            only = options.only.split(",") if options.only else None
            if options.follow:
                stream = follow(options.socket, since=options.since, stream=options.stream, only=only)
            else:
                client = RoomClient(options.socket)
                stream = client.events(since=options.since, only=only, stream=options.stream)
                answer = next(stream)
                if options.since is not None and answer["missed"]:
                    print(f"events {options.since + 1} to {options.since + answer['missed']} are no longer kept",
                          file=sys.stderr)
            for seen, event in enumerate(stream, start=1):
                print(json.dumps(event, sort_keys=True), flush=True)
                if options.count and seen >= options.count:
                    break
    except Refused as refusal:
        print(f"roomctl: {refusal}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"roomctl: roomd answered something that is not JSON: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"roomctl: no roomd at {options.socket or default_socket_path()}: {error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
