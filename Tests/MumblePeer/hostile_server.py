#!/usr/bin/env python3
"""A hostile Mumble server for the tests: just enough of a server for roomd
to log in and join a channel, then a flood of what no server should send.

Python 3's standard library only. A test starts it as a child process:

  hostile_server.py [--port 0] [--cert PEM --key PEM] [--decoy]
                    [--stages garbage,huge] [--go PREFIX] [--cutoffs]
                    [--seed 5] [--oversize-seconds 20] [--time-limit 300]

It listens on 127.0.0.1 (port 0: a free one) with TLS, with a self-signed
certificate made by `openssl req` in a temporary folder unless --cert and
--key name one. Standard output is JSON, one object a line, each flushed:

  {"event": "listening", "port": P, "fingerprint": SHA256, "decoyFingerprint": SHA256 | null}
      first, always. The fingerprint is the SHA-256 of the certificate's
      DER in lowercase hex, as roomd pins it; with --decoy a second
      certificate is made and its fingerprint given too (for a pin that
      does not match).
  {"event": "connection", "connection": N} / {"event": "joined", "connection": N}
  {"event": "tlsFailed", "connection": N, "error": "..."}
  {"event": "stage", "stage": K, "name": ..., "seconds": ..., "sent": {...},
   "expected": {reason: count}, "maybe": {reason: count}, "voiceReceived": n,
   "marker": {"reason": "a message of an unknown type", "count": n} | null,
   "completed": bool}
      after each stage. `expected` holds, in roomd's own words (the
      reasons of MumbleClient's and MumbleRoom's `drop`, VoicePacketError's
      descriptions: the constants below), what roomd's `status`
      `network.dropped` must count for the stage; `maybe` the most that may
      be counted besides, for seeded random protobufs that may or may not
      parse; `voiceReceived` the packets that must count as received from
      users in the channel. The server follows what roomd knows (its users,
      up to 10 000, and channels, who is in Tavern, who of them has one of
      the 16 places roomd has for talkers), and judges each voice packet
      by a port of roomd's VoicePacket rules. A stage ends with a frame of
      an unknown type, the marker: once roomd counts `marker.count` of
      those in all, it has read the stage.
  {"event": "summary", ...}  the stages' totals, after the last.
  {"event": "cutoff", "connection": N, "how": ...}
  {"event": "connectionLost", "connection": N, "error": "..."}

Stages run on the first connection, after the login, in the order given.
With --go PREFIX, stage K waits until the file PREFIX.K exists (so that a
test can measure roomd before it), answering pings meanwhile.

  garbage   frames of unknown types (a sweep of 500 distinct ones too);
            bad protobufs for every type roomd parses (truncated varints,
            invalid wire types, field 0, overlong varints, lengths past the
            end, unfinished groups, missing required fields, a UserState
            without a session), and fields of the wrong wire type where
            that does no harm; seeded random protobufs for types where any
            parse is harmless; frames of exactly 1 MiB (kept) and 1 MiB + 1
            (skipped); 16 MiB frames and 32 frames of distinct lengths just
            over 1 MiB, streamed in full; voice packets that are empty,
            header-only, cut in each varint, with frames past the end, empty
            mid-spurt, out-of-range fields, every other codec type, NaN and
            infinite positions, 11 and 13 trailing bytes, sessions not in
            the channel, a 100 000-byte run of varint complement prefixes;
            valid-looking packets of the ghost user whose Opus is random
            (paced over a second, then a burst), with extreme sequence
            numbers; and 5000 seeded random packets.
  huge      one frame of length 2^31, streamed as far as --oversize-seconds
            allow; if it ends in time, the marker follows; if not, the
            connection is closed in the middle of it.
  sessions  5000 users with distinct sessions, half of them in Tavern
            (2485 more than the 15 places left beside the ghost), and voice
            from one of those roomd could not place.
  textures  200 UserStates of known users with textures of almost 1 MiB
            and 64 KiB comments (which roomd has no use for).
  names     96 users (not in Tavern) whose names are almost 1 MiB, 32
            channels whose names are, and 32 users whose plugin contexts are.
  crowd     24 users entering Tavern with names of almost 1 MiB.
  legion    6000 more users, past the 10 000 roomd keeps.
  channels  12 000 channels, past the 10 000 roomd keeps.

The filler of oversized frames is a run of 6-byte frames of the unknown type
26214, length 0: were roomd to read it as frames, it would count them.

--cutoffs: after the stages, the first connection ends in the middle of a
frame's payload; the second, once roomd has logged in again, in the middle
of a frame's header; later ones are served normally.

The server answers roomd's pings with its own and serves until killed or
until --time-limit seconds have passed.
"""

import argparse
import collections
import hashlib
import json
import math
import os
import random
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

# Message types on the wire.
VERSION, UDP_TUNNEL, AUTHENTICATE, PING, REJECT, SERVER_SYNC = 0, 1, 2, 3, 4, 5
CHANNEL_REMOVE, CHANNEL_STATE, USER_REMOVE, USER_STATE = 6, 7, 8, 9
PERMISSION_DENIED, CRYPT_SETUP, CODEC_VERSION, SERVER_CONFIG = 12, 15, 21, 24
# The types roomd parses as protobufs, by the name its MumbleMessageType case has.
PARSED = {VERSION: "version", REJECT: "reject", SERVER_SYNC: "serverSync", CHANNEL_REMOVE: "channelRemove",
          CHANNEL_STATE: "channelState", USER_REMOVE: "userRemove", USER_STATE: "userState",
          PERMISSION_DENIED: "permissionDenied", SERVER_CONFIG: "serverConfig"}

MAX_PAYLOAD = 1 << 20  # roomd's MumbleFrameDecoder.maximumPayload
MASK64 = (1 << 64) - 1
MAX_SEQUENCE = ((1 << 63) - 1) // 480  # VoicePacket.maxSequence
OPUS = 4
CODEC_NAMES = {0: "CELT Alpha", 1: "ping", 2: "Speex", 3: "CELT Beta"}
MARKER_BASE = 0x7700
FILLER_TYPE = 0x6666

OWN_SESSION, GHOST_SESSION = 1, 2
ROOT, TAVERN = 0, 1

# roomd's words for what it drops (MumbleClient's and MumbleRoom's `drop`,
# VoicePacketError's descriptions), and its limits.
UNKNOWN_TYPE = "a message of an unknown type"
TOO_LONG = "a message too long to keep"
MALFORMED = "a malformed %s message"
LATE_REFUSAL = "a refusal after the login"
UNPLACED = "voice from a talker the room could not place"
NO_SESSION = "a user state without a session"
USERS_BEYOND = "a user beyond the most kept"
CHANNELS_BEYOND = "a channel beyond the most kept"
NOT_IN_CHANNEL = "voice from a user not in the channel"
NOT_PLACED = "a talker the room could not place"
VOICE = "voice: %s"
MOST_KEPT = 10_000  # MumbleClient.mostKept users, and as many channels
TALKER_PLACES = 16  # SessionControls.joinCapacityPerMix


def emit(**fields):
    print(json.dumps(fields, sort_keys=True), flush=True)


# MARK: Protobuf, by hand

def pb_varint(value):
    value &= MASK64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pb_key(field, wire):
    return pb_varint(field << 3 | wire)


def pb_uint(field, value):
    return pb_key(field, 0) + pb_varint(value)


def pb_bytes(field, value):
    if isinstance(value, str):
        value = value.encode()
    return pb_key(field, 2) + pb_varint(len(value)) + value


def pb_fields(data):
    """(field, wire type, value) of a protobuf's top level; ValueError when malformed."""
    index, fields = 0, []

    def varint():
        nonlocal index
        shift = value = 0
        while True:
            if index >= len(data):
                raise ValueError("truncated varint")
            byte = data[index]
            index += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while index < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            fields.append((field, wire, varint()))
        elif wire == 2:
            length = varint()
            if index + length > len(data):
                raise ValueError("truncated field")
            fields.append((field, wire, bytes(data[index:index + length])))
            index += length
        elif wire == 1:
            fields.append((field, wire, bytes(data[index:index + 8])))
            index += 8
        elif wire == 5:
            fields.append((field, wire, bytes(data[index:index + 4])))
            index += 4
        else:
            raise ValueError("wire type %d" % wire)
    return fields


def version_message():
    return pb_uint(1, 1 << 16 | 4 << 8) + pb_bytes(2, "hostile") + pb_bytes(3, "Linux")


def channel_state(channel, name, parent=None):
    return pb_uint(1, channel) + (pb_uint(2, parent) if parent is not None else b"") + pb_bytes(3, name)


def user_state(session, name=None, channel=None, texture=None, comment=None, context=None):
    payload = pb_uint(1, session)
    if name is not None:
        payload += pb_bytes(3, name)
    if channel is not None:
        payload += pb_uint(5, channel)
    if texture is not None:
        payload += pb_bytes(11, texture)
    if context is not None:
        payload += pb_bytes(12, context)
    if comment is not None:
        payload += pb_bytes(14, comment)
    return payload


def server_sync(session, bandwidth):
    return pb_uint(1, session) + pb_uint(2, bandwidth) + pb_bytes(3, "a hostile server")


def codec_version():
    return pb_uint(1, 0x8000000B) + pb_uint(2, 0) + pb_uint(3, 1) + pb_uint(4, 1)


def frame(kind, payload):
    return struct.pack(">HI", kind, len(payload)) + payload


# MARK: Mumble's varint and voice packets

def mv(value):
    """Mumble's varint of `value`, as roomd's MumbleVarint.append writes it."""
    out = bytearray()
    magnitude = value & MASK64
    if -0x1_0000_0000 <= value < 0:
        magnitude = ~magnitude & MASK64
        if magnitude <= 3:
            return bytes([0xFC | magnitude])
        out.append(0xF8)
    if magnitude < 0x80:
        out.append(magnitude)
    elif magnitude < 0x4000:
        out += bytes([0x80 | magnitude >> 8, magnitude & 0xFF])
    elif magnitude < 0x20_0000:
        out += bytes([0xC0 | magnitude >> 16, magnitude >> 8 & 0xFF, magnitude & 0xFF])
    elif magnitude < 0x1000_0000:
        out += bytes([0xE0 | magnitude >> 24, magnitude >> 16 & 0xFF, magnitude >> 8 & 0xFF, magnitude & 0xFF])
    elif magnitude < 0x1_0000_0000:
        out += b"\xF0" + magnitude.to_bytes(4, "big")
    else:
        out += b"\xF4" + magnitude.to_bytes(8, "big")
    return bytes(out)


def mv_read(data, index):
    """(value, index after it) of the Mumble varint at `index`; None when the bytes end inside it."""
    complemented = False
    while index < len(data):
        first = data[index]
        index += 1
        if first < 0x80:
            high, following = first, 0
        elif first < 0xC0:
            high, following = first & 0x3F, 1
        elif first < 0xE0:
            high, following = first & 0x1F, 2
        elif first < 0xF0:
            high, following = first & 0x0F, 3
        elif first < 0xF4:
            high, following = 0, 4
        elif first < 0xF8:
            high, following = 0, 8
        elif first < 0xFC:
            complemented = not complemented
            continue
        else:
            value = ~(first & 3) & MASK64
            return signed64(~value & MASK64 if complemented else value), index
        if len(data) - index < following:
            return None
        value = high
        for _ in range(following):
            value = (value << 8 | data[index]) & MASK64
            index += 1
        return signed64(~value & MASK64 if complemented else value), index
    return None


def signed64(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def voice(session, sequence, opus=b"", last=False, position=None, codec=OPUS, target=0, header=None):
    packet = bytearray([codec << 5 | target])
    if session is not None:
        packet += mv(session)
    packet += mv(sequence)
    packet += mv(header if header is not None else len(opus) | (0x2000 if last else 0))
    packet += opus
    if position is not None:
        packet += struct.pack("<3f", *position)
    return bytes(packet)


def voice_verdict(data):
    """What roomd's VoicePacket.parse(fromServer: true) makes of `data`: ("drop", reason) or ("ok", session)."""
    if not data:
        return "drop", "empty packet"
    codec = data[0] >> 5
    if codec != OPUS:
        return "drop", "unsupported type %d (%s)" % (codec, CODEC_NAMES.get(codec, "unused"))
    read = mv_read(data, 1)
    if read is None:
        return "drop", "truncated in the session"
    session, index = read
    if not 0 <= session <= 0xFFFFFFFF:
        return "drop", "session out of range"
    read = mv_read(data, index)
    if read is None:
        return "drop", "truncated in the sequence"
    sequence, index = read
    if not 0 <= sequence <= MAX_SEQUENCE:
        return "drop", "sequence number out of range"
    read = mv_read(data, index)
    if read is None:
        return "drop", "truncated in the frame header"
    header, index = read
    if not 0 <= header <= 0x3FFF:
        return "drop", "invalid frame header"
    length, last = header & 0x1FFF, header & 0x2000
    if length == 0 and not last:
        return "drop", "empty frame in mid-spurt"
    remaining = len(data) - index
    if length > remaining:
        return "drop", "frame longer than the packet"
    rest = remaining - length
    if rest == 12:
        position = struct.unpack("<3f", data[index + length:])
        if not all(math.isfinite(value) for value in position):
            return "drop", "non-finite position"
    elif rest != 0:
        return "drop", "trailing bytes that are not a position"
    return "ok", session


# MARK: Certificates

def make_certificate(folder, name):
    cert, key = os.path.join(folder, name + ".pem"), os.path.join(folder, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name,
                    "-days", "1", "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def fingerprint(cert):
    with open(cert) as file:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(file.read())).hexdigest()


# MARK: A connection

class Lost(Exception):
    pass


class Connection:
    """One of roomd's connections: frames out (batched), frames in (pumped)."""

    def __init__(self, sock, number):
        self.sock = sock
        self.number = number
        self.inbound = bytearray()
        self.outbound = bytearray()
        self.joined = False
        self.got_version = self.got_login = False
        self.user = ""
        self.pings = 0

    def queue(self, kind, payload):
        self.outbound += frame(kind, payload)
        if len(self.outbound) >= 1 << 16:
            self.flush()

    def write(self, data):
        self.outbound += data
        self.flush()

    def flush(self):
        if self.outbound:
            try:
                self.sock.sendall(self.outbound)
            except (OSError, ssl.SSLError) as error:
                raise Lost("sending: %s" % error)
            self.outbound = bytearray()

    def pump(self, timeout=0.0, answer=True):
        """Reads what roomd sent within `timeout` and answers it; without `answer` (inside
        a frame being streamed, where an answer would land in its payload) it only keeps it."""
        if answer:
            self.flush()
        deadline = time.monotonic() + timeout
        while True:
            ready = self.sock.pending() > 0 or select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))[0]
            if not ready:
                return
            try:
                data = self.sock.recv(1 << 16)
            except ssl.SSLWantReadError:
                data = None
            except (OSError, ssl.SSLError) as error:
                raise Lost("reading: %s" % error)
            if data == b"":
                raise Lost("roomd closed the connection")
            if data:
                self.inbound += data
                if answer:
                    self.handle_inbound()
            if time.monotonic() >= deadline and self.sock.pending() == 0:
                return

    def handle_inbound(self):
        while len(self.inbound) >= 6:
            kind, length = struct.unpack(">HI", self.inbound[:6])
            if len(self.inbound) < 6 + length:
                return
            payload = bytes(self.inbound[6:6 + length])
            del self.inbound[:6 + length]
            self.handle(kind, payload)

    def handle(self, kind, payload):
        if kind == VERSION:
            self.got_version = True
        elif kind == AUTHENTICATE:
            self.got_login = True
            for field, wire, value in pb_fields(payload):
                if field == 1 and wire == 2:
                    self.user = value.decode(errors="replace")
        elif kind == PING:
            self.pings += 1
            self.queue(PING, payload)
            self.flush()
        elif kind == USER_STATE:
            fields = {field: value for field, _, value in pb_fields(payload)}
            if fields.get(1) == OWN_SESSION and 5 in fields:
                # The room asks to move: the server moves it, and tells it so.
                self.queue(USER_STATE, user_state(OWN_SESSION, channel=fields[5]))
                self.flush()
                if fields[5] == TAVERN and not self.joined:
                    self.joined = True
                    emit(event="joined", connection=self.number, user=self.user)

    def login(self, timeout=15):
        """Waits for roomd's Version and Authenticate, sends the server's side, waits until it joins Tavern."""
        deadline = time.monotonic() + timeout
        while not (self.got_version and self.got_login):
            if time.monotonic() > deadline:
                raise Lost("no Version and Authenticate from roomd")
            self.pump(0.1)
        self.queue(VERSION, version_message())
        self.queue(CODEC_VERSION, codec_version())
        self.queue(CHANNEL_STATE, channel_state(ROOT, "Root"))
        self.queue(CHANNEL_STATE, channel_state(TAVERN, "Tavern", parent=ROOT))
        self.queue(USER_STATE, user_state(GHOST_SESSION, name="ghost", channel=TAVERN))
        self.queue(USER_STATE, user_state(OWN_SESSION, name=self.user or "room", channel=ROOT))
        self.queue(SERVER_SYNC, server_sync(OWN_SESSION, 72000))
        self.flush()
        while not self.joined:
            if time.monotonic() > deadline:
                raise Lost("roomd did not ask to join Tavern")
            self.pump(0.1)

    def serve(self, until):
        while time.monotonic() < until:
            self.pump(0.5)

    def close(self):
        try:
            self.flush()
        except Lost:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


# MARK: The stages

class Model:
    """What roomd knows of the server on the first connection: its users and
    channels, who is in Tavern, and who of them has a place in the room."""

    def __init__(self, user):
        self.users = {OWN_SESSION: {"name": user, "channel": ROOT}, GHOST_SESSION: {"name": "ghost", "channel": TAVERN}}
        self.channels = {ROOT, TAVERN}
        self.members = {GHOST_SESSION}
        self.placed = {GHOST_SESSION}
        self.unknown_sent = 0


class Stage:
    """What one stage sent, and what roomd must count for it."""

    def __init__(self, connection, number, name, rng, model):
        self.connection = connection
        self.number = number
        self.name = name
        self.rng = rng
        self.model = model
        self.sent = collections.Counter()
        self.expected = collections.Counter()
        self.maybe = collections.Counter()
        self.voice_received = 0
        self.completed = True
        self.start = time.monotonic()
        self.frames_since_pump = 0

    def send(self, kind, payload, category, expect=None):
        self.connection.queue(kind, payload)
        self.sent[category] += 1
        self.sent["frames"] += 1
        self.sent["bytes"] += 6 + len(payload)
        if expect:
            self.expected[expect] += 1
        self.frames_since_pump += 1
        if self.frames_since_pump >= 256:
            self.frames_since_pump = 0
            self.connection.pump(0)

    def unknown(self, kind, payload=b"", category="unknownTypeFrames"):
        self.model.unknown_sent += 1
        self.send(kind, payload, category, UNKNOWN_TYPE)

    def malformed(self, kind, payload):
        # After the login roomd reads no refusal at all, well formed or not.
        expect = LATE_REFUSAL if kind == REJECT else MALFORMED % PARSED[kind]
        self.send(kind, payload, "badProtobufFrames", expect)

    def voice(self, packet, category="voicePackets"):
        verdict, detail = voice_verdict(packet)
        if verdict == "drop":
            expect = VOICE % detail
        elif detail in self.model.members:
            # Received; a user the room found no place for is then counted as such.
            expect = None if detail in self.model.placed else UNPLACED
            self.voice_received += 1
        else:
            expect = NOT_IN_CHANNEL
        self.send(UDP_TUNNEL, packet, category, expect)

    def tell_user(self, session, category, name=None, channel=None, **extra):
        """A UserState, and what roomd does with it: keeps the user (up to MOST_KEPT), and
        places one who enters Tavern as a talker (up to TALKER_PLACES) or refuses them."""
        model = self.model
        payload = user_state(session, name=name, channel=channel, **extra)
        if session not in model.users and len(model.users) >= MOST_KEPT:
            return self.send(USER_STATE, payload, category, USERS_BEYOND)
        self.send(USER_STATE, payload, category)
        user = model.users.setdefault(session, {"name": "", "channel": ROOT})
        if name is not None:
            user["name"] = name
        if channel is not None:
            user["channel"] = channel
        inside = session != OWN_SESSION and user["channel"] == TAVERN and len(user["name"]) > 0
        if inside and session not in model.members:
            model.members.add(session)
            if len(model.placed) < TALKER_PLACES:
                model.placed.add(session)
            else:
                self.expected[NOT_PLACED] += 1
        elif not inside and session in model.members:
            model.members.discard(session)
            model.placed.discard(session)

    def tell_channel(self, channel, name, category):
        model = self.model
        if channel not in model.channels and len(model.channels) >= MOST_KEPT:
            return self.send(CHANNEL_STATE, channel_state(channel, name), category, CHANNELS_BEYOND)
        self.send(CHANNEL_STATE, channel_state(channel, name), category)
        model.channels.add(channel)

    def oversized(self, kind, length, deadline=None):
        """A frame of `length` bytes, header and all its filler; False if the deadline came first."""
        connection = self.connection
        connection.write(struct.pack(">HI", kind, length))
        self.sent["oversizedFrames"] += 1
        self.sent["frames"] += 1
        self.expected[TOO_LONG] += 1
        left = length
        while left > 0:
            piece = FILLER if left >= len(FILLER) else FILLER[:left]
            connection.write(piece)
            left -= len(piece)
            self.sent["oversizedBytes"] += len(piece)
            self.sent["bytes"] += len(piece)
            connection.pump(0, answer=False)
            if deadline is not None and time.monotonic() > deadline and left > 0:
                return False
        self.sent["bytes"] += 6
        connection.pump(0)
        return True

    def marker(self):
        """The stage's last frame, of an unknown type: roomd has read the stage once it counts this many."""
        self.unknown(MARKER_BASE + self.number, category="markers")
        self.connection.flush()
        return {"reason": UNKNOWN_TYPE, "count": self.model.unknown_sent}

    def report(self, marker):
        emit(event="stage", stage=self.number, name=self.name, seconds=round(time.monotonic() - self.start, 3),
             sent=dict(self.sent), expected=dict(self.expected), maybe=dict(self.maybe),
             voiceReceived=self.voice_received, marker=marker, completed=self.completed,
             connection=self.connection.number)


def filler_chunk():
    pattern = struct.pack(">HI", FILLER_TYPE, 0)
    # A whole number of patterns, at least 1 MiB, so that chunks join up and any prefix is a payload.
    return pattern * ((1 << 20) // len(pattern) + 1)


FILLER = filler_chunk()


def random_bytes(rng, count):
    return rng.getrandbits(8 * count).to_bytes(count, "little") if count else b""


def stage_garbage(stage):
    rng = stage.rng
    # Unknown types, a few of each, and a sweep of distinct ones.
    for kind in [10, 11, 13, 14, 16, 17, 18, 19, 20, 22, 23, 25, 100, 1000, 0x7FFF, 0xFFFF]:
        for count in range(5):
            stage.unknown(kind, random_bytes(rng, rng.randrange(0, 64)))
    for kind in range(26, 526):
        stage.unknown(kind, b"")

    # Bad protobufs for every type roomd parses: each of these fails whatever the message.
    bad = [
        b"\x08\xff",                          # field 1, a varint cut off
        b"\x08\xff\xff\xff",                  # the same, longer
        b"\x0e\x00",                          # wire type 6
        b"\x0f\x00",                          # wire type 7
        b"\x00\x00",                          # field number 0
        b"\x08" + b"\xff" * 11 + b"\x01",     # a varint longer than 10 bytes
        pb_key(100, 2) + pb_varint(16) + b"abc",  # an unknown field's length past the end
        pb_key(100, 2) + pb_varint(0xFFFFFFFF),   # a length of 4 GiB with nothing after it
        b"\x0b",                              # field 1 starts a group that never ends
        pb_key(100, 3) + pb_uint(1, 1),       # an unknown group that never ends
    ]
    for kind in PARSED:
        for payload in bad:
            stage.malformed(kind, payload)
    # Field 1 with the wrong wire type is no error in protobuf: the field counts as unknown, and
    # the message is read without it. Sent only where such a message does no harm (a Reject or a
    # ServerSync without fields would be taken as one), with what roomd makes of it.
    wrong_wire = [b"\x0a\x01\x00", b"\x0d\x00\x00\x80\x3f"]  # as length-delimited, as fixed32
    for payload in wrong_wire:
        for kind in (VERSION, CHANNEL_STATE, SERVER_CONFIG, PERMISSION_DENIED):
            stage.send(kind, payload, "wrongWireTypeFrames")
        stage.send(USER_STATE, payload, "wrongWireTypeFrames", NO_SESSION)
        stage.malformed(CHANNEL_REMOVE, payload)  # its channel_id is required
        stage.malformed(USER_REMOVE, payload)  # its session is required
    # Missing required fields: ChannelRemove's channel_id, UserRemove's session.
    for kind in (CHANNEL_REMOVE, USER_REMOVE):
        for payload in (b"", pb_uint(2, 7), pb_bytes(3, "why")):
            stage.malformed(kind, payload)
    # A UserState without a session.
    for payload in (pb_bytes(3, "nobody"), pb_uint(5, TAVERN), b""):
        stage.send(USER_STATE, payload, "badProtobufFrames", NO_SESSION)
    # Harmless valid ones of no use: removing users and channels that are not there, a late permission refusal.
    stage.send(USER_REMOVE, pb_uint(1, 424242) + pb_bytes(3, "gone"), "validFrames")
    stage.send(CHANNEL_REMOVE, pb_uint(1, 77), "validFrames")
    stage.send(PERMISSION_DENIED, pb_uint(1, 4) + pb_bytes(4, "after the join: no effect"), "validFrames")
    # Seeded random protobufs for types where any parse is harmless.
    for kind in (VERSION, SERVER_CONFIG, CHANNEL_STATE, PING, CRYPT_SETUP, CODEC_VERSION):
        for _ in range(200):
            stage.send(kind, random_bytes(rng, rng.randrange(1, 48)), "randomProtobufFrames")
            if kind in PARSED:
                stage.maybe[MALFORMED % PARSED[kind]] += 1
    stage.connection.flush()

    # The longest frame kept, and the shortest skipped.
    stage.unknown(26, FILLER[:MAX_PAYLOAD], category="boundaryFrames")
    stage.voice(FILLER[:MAX_PAYLOAD], category="boundaryFrames")
    stage.connection.flush()
    stage.oversized(USER_STATE, MAX_PAYLOAD + 1)
    # 16 MiB, as voice and as a user's state, and lengths just past the limit, each its own.
    stage.oversized(UDP_TUNNEL, 16 << 20)
    stage.oversized(USER_STATE, 16 << 20)
    for extra in range(32):
        stage.oversized(0xFFFF if extra % 2 else UDP_TUNNEL, MAX_PAYLOAD + 2 + extra)

    # Hostile voice packets, each for one of roomd's reasons.
    ghost, stranger, opus = GHOST_SESSION, 99, b"\xf8\xff\xfe"
    hostile = [b"", bytes([OPUS << 5]), bytes([OPUS << 5, 0x02]), bytes([OPUS << 5, 0x02, 0x05]),
               bytes([OPUS << 5, 0x82]), bytes([OPUS << 5, 0xF4, 1, 2, 3]), bytes([OPUS << 5, 0xF8]),
               bytes([OPUS << 5, 0x02, 0xC1, 0x00]), bytes([OPUS << 5, 0x02, 0x05, 0xE0, 0x00]),
               bytes([OPUS << 5, 0x02, 0x05, 0xF0, 0x00, 0x00]),
               voice(ghost, 10, opus[:1], header=100),                  # 100 bytes stated, 1 there
               voice(ghost, 10, header=0x1FFF),                         # 8191 stated, none there
               voice(ghost, 10, b"", last=False),                       # empty mid-spurt
               voice(ghost, 10, header=0x4000),                         # a length bit beyond 0x3FFF
               voice(ghost, 10, header=-1),                             # a negative frame header
               voice(ghost, 10, header=1 << 40),
               voice(1 << 32, 10, opus),                                # a session past UInt32
               voice(-1, 10, opus), voice(-5, 10, opus),                # negative sessions
               voice(ghost, MAX_SEQUENCE + 1, opus), voice(ghost, -1, opus), voice(ghost, -(1 << 40), opus),
               voice(ghost, 10, opus, position=(float("nan"), 0, 0)),
               voice(ghost, 10, opus, position=(0, float("inf"), 0)),
               voice(ghost, 10, opus, position=(0, 0, float("-inf"))),
               voice(ghost, 10, opus) + bytes(11), voice(ghost, 10, opus) + bytes(13),
               voice(ghost, 10, opus) + bytes(1), voice(ghost, 10, opus) + bytes(4096),
               voice(stranger, 10, opus), voice(OWN_SESSION, 10, opus), voice(0, 10, opus),
               voice(0xFFFFFFFF, 10, opus), voice(stranger, 11, last=True),
               # A run of complement prefixes: a loop in roomd, not a recursion.
               bytes([OPUS << 5]) + b"\xF8" * 100_000,
               bytes([OPUS << 5]) + b"\xF8" * 100_000 + b"\x02\x05\x03" + opus]
    hostile += [voice(ghost, 10, opus, codec=codec) for codec in (0, 1, 2, 3, 5, 6, 7)]
    hostile += [bytes([codec << 5 | 31]) for codec in range(8)]
    for packet in hostile:
        for _ in range(3):
            stage.voice(packet)
    stage.connection.flush()

    # The ghost, in the channel, talks garbage: paced over a second, then in a burst,
    # then with sequence numbers from the ends of their range, then frames too long to play.
    sequence = 1000
    for index in range(50):
        stage.voice(voice(ghost, sequence, b"\xf8" + random_bytes(rng, 60)), "ghostGarbageVoice")
        sequence += 2
        stage.connection.pump(0.02)
    for index in range(2000):
        garbage = random_bytes(rng, rng.randrange(1, 200))
        stage.voice(voice(ghost, rng.randrange(0, 1 << 20), garbage, last=index % 97 == 0), "ghostGarbageVoice")
    for value in (0, MAX_SEQUENCE, 1, MAX_SEQUENCE - 1, MAX_SEQUENCE // 2, 0xFFFFFFFF, 0x1_0000_0000, 2):
        stage.voice(voice(ghost, value, opus, position=(1e30, -1e30, 0)), "ghostGarbageVoice")
    for length in (1021, 4000, 0x1FFF):
        stage.voice(voice(ghost, 5000, b"\xf8" + bytes(length - 1)), "ghostGarbageVoice")
    stage.voice(voice(ghost, 5002, last=True), "ghostGarbageVoice")
    stage.connection.flush()

    # Thousands of seeded random byte strings, half of them with Opus's codec type.
    for index in range(5000):
        packet = bytearray(random_bytes(rng, rng.randrange(0, 80)))
        if packet and index % 2 == 0:
            packet[0] = OPUS << 5 | packet[0] & 0x1F
        if len(packet) > 1 and index % 4 == 0:
            packet[1] = rng.choice([GHOST_SESSION, 99, 0xF8, 0xFC, 0xF4, 0xF0])
        stage.voice(bytes(packet), "randomVoicePackets")
    stage.connection.flush()


def stage_huge(stage, seconds, length):
    deadline = time.monotonic() + seconds
    stage.completed = stage.oversized(USER_STATE, length, deadline)


def stage_sessions(stage):
    for index in range(5000):
        session = 1000 + index
        stage.tell_user(session, "userStates", name="walker-%d" % session, channel=TAVERN if index % 2 else ROOT)
    stage.sent["usersInTavern"] = len(stage.model.members)
    stage.sent["talkersPlaced"] = len(stage.model.placed)
    # Voice from the last, in Tavern, whom roomd could not place.
    assert 5999 in stage.model.members and 5999 not in stage.model.placed
    for index in range(50):
        stage.voice(voice(5999, 100 + 2 * index, b"\xf8\xff\xfe"), "voiceFromUnplacedUser")


def huge_text(label, size):
    text = ("%s-" % label).encode()
    return text + b"x" * (size - len(text))


def stage_textures(stage):
    for index in range(200):
        session = 1000 + index
        stage.tell_user(session, "hugeTextures", texture=huge_text("texture%d" % session, MAX_PAYLOAD - (64 << 10) - 64),
                        comment=huge_text("comment", 64 << 10))


def stage_names(stage):
    for index in range(96):
        session = 20000 + index
        stage.tell_user(session, "hugeUserNames", name=huge_text("name%d" % session, MAX_PAYLOAD - 32), channel=ROOT)
    for index in range(32):
        stage.tell_channel(100 + index, huge_text("hall%d" % index, MAX_PAYLOAD - 32), "hugeChannelNames")
    for index in range(32):
        session = 21000 + index
        stage.tell_user(session, "hugeContexts", name="context-%d" % session, channel=ROOT,
                        context=huge_text("context%d" % session, MAX_PAYLOAD - 64))


def stage_crowd(stage):
    for index in range(24):
        session = 30000 + index
        stage.tell_user(session, "hugeNamesInTavern", name=huge_text("crowd%d" % session, MAX_PAYLOAD - 32), channel=TAVERN)


def stage_legion(stage):
    for index in range(6000):
        session = 40000 + index
        stage.tell_user(session, "userStates", name="legionary-%d" % session, channel=ROOT)
    stage.sent["usersKnown"] = len(stage.model.users)


def stage_channels(stage):
    for index in range(12000):
        stage.tell_channel(1000 + index, "hall-%d" % index, "channelStates")
    stage.sent["channelsKnown"] = len(stage.model.channels)


STAGES = {"garbage": stage_garbage, "sessions": stage_sessions, "textures": stage_textures, "names": stage_names,
          "crowd": stage_crowd, "legion": stage_legion, "channels": stage_channels}


# MARK: Serving

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--decoy", action="store_true", help="make a second certificate and give its fingerprint")
    parser.add_argument("--stages", default="", help="comma-separated: garbage, huge, sessions, textures, names, crowd")
    parser.add_argument("--go", help="stage K waits for the file GO.K")
    parser.add_argument("--cutoffs", action="store_true")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--oversize-seconds", type=float, default=20)
    parser.add_argument("--huge-length", type=int, default=1 << 31)
    parser.add_argument("--time-limit", type=float, default=300)
    arguments = parser.parse_args()
    end = time.monotonic() + arguments.time_limit

    # SIGTERM ends it as an exception would, so that its certificates' folder goes too.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(0))
    folder = tempfile.mkdtemp(prefix="hostile-certificates-")
    try:
        if arguments.cert and arguments.key:
            cert, key = arguments.cert, arguments.key
        else:
            cert, key = make_certificate(folder, "hostile")
        decoy = fingerprint(make_certificate(folder, "decoy")[0]) if arguments.decoy else None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", arguments.port))
        listener.listen(4)
        emit(event="listening", port=listener.getsockname()[1], fingerprint=fingerprint(cert), decoyFingerprint=decoy,
             pid=os.getpid())
        serve(listener, context, arguments, end)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def serve(listener, context, arguments, end):
    stages = [name for name in arguments.stages.split(",") if name]
    rng = random.Random(arguments.seed)
    number = 0
    staged = False
    while time.monotonic() < end:
        listener.settimeout(max(0.1, min(1.0, end - time.monotonic())))
        try:
            raw, _ = listener.accept()
        except socket.timeout:
            continue
        number += 1
        emit(event="connection", connection=number)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw.settimeout(60)
        try:
            sock = context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError) as error:
            emit(event="tlsFailed", connection=number, error=str(error))
            raw.close()
            continue
        connection = Connection(sock, number)
        try:
            connection.login()
            if not staged:
                staged = True
                run_stages(connection, stages, rng, arguments)
                if arguments.cutoffs:
                    # The first connection ends inside a frame's payload.
                    connection.write(struct.pack(">HI", CHANNEL_STATE, 100) + b"\x08" * 40)
                    emit(event="cutoff", connection=number, how="inside a frame's payload: 40 of 100 bytes")
                    connection.close()
                    continue
            elif arguments.cutoffs and number == 2:
                connection.write(struct.pack(">HI", USER_STATE, 100)[:3])
                emit(event="cutoff", connection=number, how="inside a frame's header: 3 of 6 bytes")
                connection.close()
                continue
            connection.serve(end)
        except Lost as error:
            emit(event="connectionLost", connection=number, error=str(error))
        finally:
            connection.close()


def run_stages(connection, stages, rng, arguments):
    model = Model(connection.user or "room")
    totals = {"sent": collections.Counter(), "expected": collections.Counter(), "maybe": collections.Counter()}
    voice_received = 0
    stage = None
    for index, name in enumerate(stages, start=1):
        if arguments.go:
            go = "%s.%d" % (arguments.go, index)
            while not os.path.exists(go):
                connection.pump(0.1)
        stage = Stage(connection, index, name, rng, model)
        if name == "huge":
            stage_huge(stage, arguments.oversize_seconds, arguments.huge_length)
        elif name in STAGES:
            STAGES[name](stage)
        else:
            raise SystemExit("unknown stage %s" % name)
        marker = stage.marker() if stage.completed else None
        stage.report(marker)
        for key in totals:
            totals[key].update(getattr(stage, key))
        voice_received += stage.voice_received
        if not stage.completed:
            break
    emit(event="summary", sent=dict(totals["sent"]), expected=dict(totals["expected"]), maybe=dict(totals["maybe"]),
         voiceReceived=voice_received, stages=stages)
    if stage is not None and not stage.completed:
        # The oversized frame was not finished: the connection cannot go on.
        emit(event="cutoff", connection=connection.number, how="inside an oversized frame's filler")
        raise Lost("closed inside an oversized frame")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
