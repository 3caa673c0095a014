#!/usr/bin/python3
"""Checks roomd's control-protocol traffic against its JSON Schema.

    check-protocol.py SCHEMA [LOG...] [--events FILE]... [--no-requests]

A LOG is a wire trace as `roomd --protocol-log FILE` writes it, one line per
line on the wire:

    CLIENT DIR JSON

CLIENT is the connection's number, DIR is `>` for a request as roomd
received it and `<` for a reply or an event as roomd sent it. Every `<`
line is checked against the schema's `reply` (an object with `ok`) or
`event` (an object with `event`); every `>` line against `request`, unless
--no-requests (for a test that sends malformed requests on purpose).

--events FILE checks a file of event records, one JSON object per line
(`scenectl render --events`, `scenectl events`), against `eventRecord`.

Each failure is printed as `FILE:LINE: DIR: message (path in the
instance)`. Exit status: 0 when every line is valid, 1 when one is not,
2 for a usage error (a missing file, a schema that is not one).
"""

import argparse
import json
import sys

try:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
except ImportError:
    sys.stderr.write("check-protocol.py: needs the jsonschema package (Debian: python3-jsonschema)\n")
    sys.exit(2)

SHOWN = 160  # characters of a failing line shown in a message


def shorten(text, limit=SHOWN):
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def instance_path(error):
    """`$.result.sources[0].gain`: where in the line the error is."""
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def message(error):
    """The validator's message, saying plainly what a `false` subschema means."""
    if error.message.startswith("False schema does not allow"):
        field = error.absolute_path[-1] if error.absolute_path else "this value"
        return f"{field!r} is not allowed here"
    return error.message


def deepest(error):
    """The most telling error under a oneOf/anyOf: follow the context down."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.absolute_schema_path)))
    return error


class Checker:
    def __init__(self, schema):
        definitions = schema.get("$defs", {})
        missing = [name for name in ("request", "reply", "event", "eventRecord") if name not in definitions]
        if missing:
            raise SchemaError(f"no $defs/{', $defs/'.join(missing)}")
        # One validator per definition, each resolving $refs in the whole schema.
        self.validators = {
            name: Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": definitions})
            for name in ("request", "reply", "event", "eventRecord")
        }
        self.counts = {"requests": 0, "replies": 0, "events": 0, "event records": 0}
        self.failures = 0
        self.invalid = set()  # the lines with a failure
        self.lines = 0

    def fail(self, where, direction, message):
        self.failures += 1
        self.invalid.add(where)
        print(f"{where}: {direction}: {message}")

    def check(self, where, direction, text, kind):
        """Checks one JSON line; `kind` is a $defs name, or None to tell reply from event."""
        try:
            value = json.loads(text)
        except ValueError as error:
            self.fail(where, direction, f"not JSON ({error.msg} at column {error.colno}): {shorten(text)}")
            return
        if kind is None:
            if isinstance(value, dict) and "event" in value:
                kind = "event"
            elif isinstance(value, dict) and "ok" in value:
                kind = "reply"
            else:
                self.fail(where, direction, f"neither a reply (no \"ok\") nor an event (no \"event\"): {shorten(text)}")
                return
        self.counts[{"request": "requests", "reply": "replies", "event": "events", "eventRecord": "event records"}[kind]] += 1
        errors = [deepest(error) for error in self.validators[kind].iter_errors(value)]
        # What is wrong with a value first, then what is missing or not allowed.
        errors.sort(key=lambda e: (e.validator in ("required", None), list(map(str, e.absolute_path))))
        said = set()
        for error in errors:
            line = f"{kind}: {message(error)} ({instance_path(error)})"
            if line not in said:  # the same fault found through two subschemas
                said.add(line)
                self.fail(where, direction, f"{line}: {shorten(text)}")

    def trace(self, path, requests):
        for number, line in read_lines(path):
            self.lines += 1
            where = f"{path}:{number}"
            fields = line.split(" ", 2)
            if len(fields) < 3 or not fields[0].isdigit() or fields[1] not in (">", "<"):
                self.fail(where, "?", f"not a trace line (CLIENT > JSON or CLIENT < JSON): {shorten(line)}")
                continue
            client, direction, text = fields
            if direction == ">":
                if requests:
                    self.check(where, ">", text, "request")
            else:
                self.check(where, "<", text, None)

    def records(self, path):
        for number, line in read_lines(path):
            self.lines += 1
            if line.strip():
                self.check(f"{path}:{number}", "event", line, "eventRecord")

    def summary(self, traces, requests, records):
        parts = []
        if traces:
            parts += [f"requests {self.counts['requests']}" if requests else "requests not checked",
                      f"replies {self.counts['replies']}", f"events {self.counts['events']}"]
        if records:
            parts.append(f"event records {self.counts['event records']}")
        verdict = "all valid" if self.failures == 0 else f"{len(self.invalid)} invalid"
        return f"{', '.join(parts)}: {verdict}"


def read_lines(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as file:
        for number, line in enumerate(file, start=1):
            yield number, line.rstrip("\n")


def main():
    parser = argparse.ArgumentParser(
        description="Checks roomd protocol traces (roomd --protocol-log) and event files against protocol.schema.json.")
    parser.add_argument("schema", metavar="SCHEMA", help="the protocol's JSON Schema (Sources/Control/protocol.schema.json)")
    parser.add_argument("logs", metavar="LOG", nargs="*", help="a wire trace: CLIENT > REQUEST or CLIENT < REPLY/EVENT per line")
    parser.add_argument("--events", metavar="FILE", action="append", default=[],
                        help="a file of event records, one JSON object per line (repeatable)")
    parser.add_argument("--no-requests", action="store_true", help="do not check the requests (> lines)")
    arguments = parser.parse_intermixed_args()
    if not arguments.logs and not arguments.events:
        parser.error("give a LOG or --events FILE")

    try:
        with open(arguments.schema, encoding="utf-8") as file:
            schema = json.load(file)
        Draft202012Validator.check_schema(schema)
        checker = Checker(schema)
    except OSError as error:
        parser.exit(2, f"check-protocol.py: {arguments.schema}: {error.strerror}\n")
    except ValueError as error:
        parser.exit(2, f"check-protocol.py: {arguments.schema}: not JSON: {error}\n")
    except SchemaError as error:
        parser.exit(2, f"check-protocol.py: {arguments.schema}: not a valid draft 2020-12 schema: {error.message}\n")

    for path, check in [(log, lambda p: checker.trace(p, not arguments.no_requests)) for log in arguments.logs] + \
                       [(events, checker.records) for events in arguments.events]:
        try:
            check(path)
        except OSError as error:
            parser.exit(2, f"check-protocol.py: {path}: {error.strerror}\n")

    print(checker.summary(bool(arguments.logs), not arguments.no_requests, bool(arguments.events)))
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
