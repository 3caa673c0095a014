#!/usr/bin/env python3
"""An independent Mumble peer for the tests, on pymumble 1.6.1.

A test starts it as a child process (with the venv that
Tools/mumble-peer-setup.sh makes) and drives it by JSON lines: one command
object a line on standard input, one reply a line on standard output for
each command, and event lines in between. Every line is flushed. Diagnostics
go to standard error.

Commands carry "cmd" and an optional "id" that the reply echoes:

  {"cmd": "connect", "host": "127.0.0.1", "port": 64738, "user": "ann",
   "password": "", "channel": "Tavern", "context": "game\\u0000room",
   "make_channels": ["Tavern"], "timeout": 10}
  {"cmd": "make_channels", "names": ["Tavern", "Cellar"], "temporary": false}
  {"cmd": "say", "wav": "tone.wav", "position": [3, 0, 0]}
  {"cmd": "say", "wav": "tone.wav", "segments": [{"seconds": 1, "position": [3, 0, 0]},
                                                 {"seconds": 1, "position": [-3, 0, 0]}]}
  {"cmd": "say", "wav": "click.wav", "at": 1700000000.25, "sends": true}
  {"cmd": "record_start"}
  {"cmd": "record_start", "arrivals": true}
  {"cmd": "record_stop", "folder": "/tmp/x"}
  {"cmd": "users", "all": false}
  {"cmd": "events", "enabled": true}
  {"cmd": "quit"}

Replies are {"reply": CMD, "id": ID, "ok": true, ...} or
{"reply": CMD, "id": ID, "ok": false, "error": "..."}; events are
{"event": NAME, ...}: user_joined, user_left, user_moved (each with session,
name, channel), say_started and say_finished (with "say", the id of the say
command), disconnected. A say_started or say_finished event carries "time",
the wall clock (time.time()) just after its packet went to the socket.

For latency measurements: a say with "at" sends its first packet no earlier
than that wall-clock time (the loop wakes at least every 5 ms), and one with
"sends" adds to its say_finished event "sends", the wall-clock time just
after each of its packets went to the socket, in order (frame i carries the
WAV's samples 960 i to 960 i + 959). A recording started with "arrivals"
also keeps, per sender, each packet's arrival in the order it came: its
record_stop entry then has "arrivals", the path of a JSON file
{"rate": 48000, "pcm": RAW, "packets": [[sequence, arrival, first, count,
last], ...]} where arrival is the wall clock when the packet was read from
the socket (before decoding), RAW (a file beside it) holds every packet's
decoded samples, 16-bit little-endian mono, one after another in arrival
order, the packet's `count` samples from sample `first`, and last is 1 on a
spurt's terminator. A sample at `first + k` could be played at arrival + k / 48000.

Two things pymumble does not do are done here. Positions: each 20 ms voice
packet this peer sends ends in x, y, z as little-endian float32, the legacy
packet's positional data (pymumble only appends one fixed position, in the
machine's byte order), and the positions at the end of received packets,
which pymumble drops, are read from the raw packet. And received voice is
decoded here per sender and placed by its sequence number into a recording.
The plugin context goes out in a UserState of our own session, as pymumble's
ModUserState command sends it; murmurd keeps it per user and relays a
packet's position only to users whose context equals the sender's (two
empty contexts are equal).
"""

import os

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

import array
import collections
import json
import re
import ssl
import struct
import sys
import tempfile
import threading
import time
import traceback
import wave
import warnings

warnings.simplefilter("ignore")

if not hasattr(ssl, "wrap_socket"):  # Python 3.12 removed what pymumble 1.6.1 calls.
    def _wrap_socket(sock, certfile=None, keyfile=None, ssl_version=None, **_):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if certfile:
            context.load_cert_chain(certfile, keyfile)
        return context.wrap_socket(sock)
    ssl.wrap_socket = _wrap_socket

import opuslib
from pymumble_py3 import mumble as pymumble_mumble
from pymumble_py3 import mumble_pb2, soundoutput
from pymumble_py3.constants import (
    PYMUMBLE_AUDIO_TYPE_OPUS, PYMUMBLE_CLBK_DISCONNECTED, PYMUMBLE_CLBK_PERMISSIONDENIED,
    PYMUMBLE_CLBK_USERCREATED, PYMUMBLE_CLBK_USERREMOVED, PYMUMBLE_CLBK_USERUPDATED,
    PYMUMBLE_CONN_STATE_CONNECTED, PYMUMBLE_CONN_STATE_FAILED, PYMUMBLE_CONN_STATE_NOT_CONNECTED, PYMUMBLE_MSG_TYPES_REJECT,
    PYMUMBLE_MSG_TYPES_UDPTUNNEL)
from pymumble_py3.tools import VarInt

RATE = 48000
FRAME = 960  # 20 ms at 48 kHz: one Opus frame, one packet
FRAME_SECONDS = FRAME / RATE
SEQUENCE_SECONDS = 0.01  # Mumble counts voice sequence numbers in 10 ms frames
TERMINATOR = 0x2000  # in an Opus frame's length: the last frame of a talk spurt

_output = threading.Lock()


def emit(line):
    """Writes one JSON line to standard output, whole and flushed."""
    text = json.dumps(line, separators=(",", ":"))
    with _output:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def log(text):
    print(f"peer: {text}", file=sys.stderr, flush=True)


def varint(data, at):
    """Mumble's variable-length integer at `at`: its value and the offset past it."""
    value = VarInt()
    size = value.decode(data[at:at + 10])
    return value.value, at + size


class PositionalSoundOutput(soundoutput.SoundOutput):
    """pymumble's voice sender, with a position per 20 ms frame.

    Frames are queued whole (960 samples, 16-bit) with the position to send
    after them or None, and go out in real time from pymumble's own thread
    (the only one that may write to its TLS socket), one Opus frame a packet:
    header (Opus, target 0), sequence, frame length (with the terminator bit on
    a say's last frame), Opus data, then x, y, z as little-endian float32.
    """

    def __init__(self, *arguments, **options):
        super().__init__(*arguments, **options)
        self.frames = collections.deque()  # (pcm, position, say id, first, last)
        self.queue_lock = threading.Lock()
        self.next_time = None
        self.sequence = 0
        self.epoch = time.time()
        self.says = {}  # say id: {"at": earliest wall-clock time or None, "sends": [times] or None}

    def plan(self, say, at, sends):
        """Holds say `say`'s first frame until the wall clock reaches `at`
        (if given), and keeps the send time of each of its frames (if `sends`)."""
        with self.queue_lock:
            self.says[say] = {"at": at, "sends": [] if sends else None}

    def queue(self, frames):
        with self.queue_lock:
            self.frames.extend(frames)

    def pending_seconds(self):
        with self.queue_lock:
            return len(self.frames) * FRAME_SECONDS

    def clear_buffer(self):
        with self.queue_lock:
            self.frames.clear()
            self.says.clear()

    def send_audio(self):
        if not self.encoder:
            return
        while True:
            now = time.time()
            with self.queue_lock:
                if not self.frames or (self.next_time is not None and now < self.next_time):
                    return
                plan = self.says.get(self.frames[0][2])
                if self.frames[0][3] and plan and plan["at"] is not None and now < plan["at"]:
                    return
                pcm, position, say, first, last = self.frames.popleft()
            if self.next_time is None or now - self.next_time > 4 * FRAME_SECONDS:
                # A new talk spurt: its sequence goes on from the time since the
                # connection, as a real client's frame counter does.
                self.next_time = now
                self.sequence = int((now - self.epoch) / SEQUENCE_SECONDS)
            encoded = self.encoder.encode(pcm, FRAME)
            length = len(encoded) | (TERMINATOR if last else 0)
            packet = (struct.pack("!B", PYMUMBLE_AUDIO_TYPE_OPUS << 5) + VarInt(self.sequence).encode()
                      + VarInt(length).encode() + encoded)
            if position is not None:
                packet += struct.pack("<3f", *position)
            self.mumble_object.send_tunnel(packet)
            sent = time.time()
            self.sequence += int(round(FRAME_SECONDS / SEQUENCE_SECONDS))
            self.next_time += FRAME_SECONDS
            if plan is not None and plan["sends"] is not None:
                plan["sends"].append(sent)
            if first:
                emit({"event": "say_started", "say": say, "time": sent})
            if last:
                finished = {"event": "say_finished", "say": say, "time": sent}
                with self.queue_lock:
                    plan = self.says.pop(say, None)
                if plan is not None and plan["sends"] is not None:
                    finished["sends"] = plan["sends"]
                emit(finished)
                self.next_time = None


# pymumble makes its sound output anew on every connection, from this name.
pymumble_mumble.soundoutput.SoundOutput = PositionalSoundOutput


class Track:
    """What one sender was heard saying: decoded PCM placed by sequence number."""

    def __init__(self, session, name, arrivals=False):
        self.session = session
        self.name = name
        self.decoder = opuslib.Decoder(RATE, 1)
        self.samples = array.array("h")
        # With `arrivals`: each packet's [sequence, arrival, first, count, last], and its PCM in arrival order.
        self.arrivals = [] if arrivals else None
        self.stream = array.array("h")
        self.packets = 0
        self.decoded_frames = 0
        self.spurts = 0
        self.anchor = None  # (sequence, time) of the talk spurt's first packet
        self.last_sequence = None
        self.positions = 0
        self.unpositioned = 0
        self.first_position = None
        self.last_position = None
        self.runs = []  # [position, count] of consecutive equal positions

    def add(self, sequence, opus, position, arrival, start, last=False):
        self.packets += 1
        if position is not None:
            self.positions += 1
            position = [round(v, 6) for v in position]
            self.first_position = self.first_position or position
            self.last_position = position
            if self.runs and self.runs[-1][0] == position:
                self.runs[-1][1] += 1
            elif len(self.runs) < 1000:
                self.runs.append([position, 1])
        else:
            self.unpositioned += 1
        if not opus:
            return
        pcm = array.array("h", self.decoder.decode(opus, 5760))
        self.decoded_frames += len(pcm)
        if self.arrivals is not None:
            self.arrivals.append([sequence, arrival, len(self.stream), len(pcm), 1 if last else 0])
            self.stream.extend(pcm)
        # Within a talk spurt the sequence number says where a packet belongs;
        # a new spurt (or one whose numbers drift from the clock) starts at arrival.
        at = None
        if self.anchor is not None and self.last_sequence is not None and sequence > self.last_sequence:
            at = self.anchor[1] + (sequence - self.anchor[0]) * SEQUENCE_SECONDS
            if abs(arrival - at) > 0.5:
                at = None
        if at is None:
            self.anchor = (sequence, arrival)
            self.spurts += 1
            at = arrival
        self.last_sequence = sequence
        index = max(0, int(round((at - start) * RATE)))
        end = index + len(pcm)
        if len(self.samples) < end:
            self.samples.extend(array.array("h", bytes(2 * (end - len(self.samples)))))
        self.samples[index:end] = pcm

    def result(self, folder, frames):
        if len(self.samples) < frames:
            self.samples.extend(array.array("h", bytes(2 * (frames - len(self.samples)))))
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.name or "unknown")
        path = os.path.join(folder, f"{safe}-{self.session}.wav")
        with wave.open(path, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE)
            out.writeframes(self.samples.tobytes())
        result = {"session": self.session, "name": self.name, "path": path, "packets": self.packets,
                  "seconds": round(self.decoded_frames / RATE, 4), "spurts": self.spurts,
                  "positions": {"count": self.positions, "without": self.unpositioned,
                                "first": self.first_position, "last": self.last_position,
                                "runs": [{"position": p, "count": c} for p, c in self.runs]}}
        if self.arrivals is not None:
            raw = os.path.join(folder, f"{safe}-{self.session}.arrivals.raw")
            stream = array.array("h", self.stream)
            if sys.byteorder != "little":
                stream.byteswap()
            with open(raw, "wb") as out:
                out.write(stream.tobytes())
            result["arrivals"] = os.path.join(folder, f"{safe}-{self.session}.arrivals.json")
            with open(result["arrivals"], "w") as out:
                json.dump({"rate": RATE, "pcm": raw, "packets": self.arrivals}, out, separators=(",", ":"))
        return result


class Recorder:
    """Voice heard since `record_start`, per sender session."""

    def __init__(self, arrivals=False):
        self.start = time.time()
        self.arrivals = arrivals
        self.tracks = {}
        self.lock = threading.Lock()
        self.other_packets = 0

    def packet(self, data, arrival, name_of):
        kind = data[0] >> 5
        if kind != PYMUMBLE_AUDIO_TYPE_OPUS:
            self.other_packets += 1
            return
        session, at = varint(data, 1)
        sequence, at = varint(data, at)
        length, at = varint(data, at)
        last = bool(length & TERMINATOR)
        length &= 0x1fff
        opus = bytes(data[at:at + length])
        at += length
        rest = data[at:]
        position = struct.unpack("<3f", rest[:12]) if len(rest) >= 12 else None
        with self.lock:
            track = self.tracks.get(session)
            if track is None:
                track = self.tracks[session] = Track(session, name_of(session), self.arrivals)
            track.add(sequence, opus, position, arrival, self.start, last)

    def stop(self, folder):
        frames = int(round((time.time() - self.start) * RATE))
        os.makedirs(folder, exist_ok=True)
        with self.lock:
            return [track.result(folder, frames) for track in self.tracks.values()]


class Client(pymumble_mumble.Mumble):
    """pymumble's client, with received voice handed to a recorder, and its
    rejection reason and permission denials kept."""

    def __init__(self, *arguments, **options):
        super().__init__(*arguments, **options)
        self.connected = PYMUMBLE_CONN_STATE_NOT_CONNECTED  # until its thread's first connection says otherwise
        self.recorder = None
        self.rejection = None
        self.denials = []
        self.set_receive_sound(False)  # decoded here instead, with positions
        self.set_loop_rate(0.005)
        self.send_lock = threading.Lock()

    def send_tunnel(self, packet):
        self.send_raw(struct.pack("!HL", PYMUMBLE_MSG_TYPES_UDPTUNNEL, len(packet)) + packet)

    def send_message(self, type, message):
        self.send_raw(struct.pack("!HL", type, message.ByteSize()) + message.SerializeToString())

    def send_raw(self, data):
        deadline = time.time() + 5
        with self.send_lock:
            while data:
                try:
                    sent = self.control_socket.send(data)
                except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                    if time.time() > deadline:
                        raise OSError("the server took nothing for 5 s")
                    time.sleep(0.001)
                    continue
                data = data[sent:]

    def read_control_messages(self):
        # pymumble's own takes an empty read (the server gone) for nothing to
        # read and goes on until its 60 s ping timeout, and reads one 4 KiB
        # piece per wake-up, leaving what TLS has already decrypted unread.
        while True:
            try:
                data = self.control_socket.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                break
            except OSError:
                data = b""
            if not data:
                self.connected = PYMUMBLE_CONN_STATE_NOT_CONNECTED
                return
            self.receive_buffer += data
            if not self.control_socket.pending():
                break
        while len(self.receive_buffer) >= 6:
            type, size = struct.unpack("!HL", self.receive_buffer[:6])
            if len(self.receive_buffer) < size + 6:
                break
            message = self.receive_buffer[6:size + 6]
            self.receive_buffer = self.receive_buffer[size + 6:]
            self.dispatch_control_message(type, message)

    def sound_received(self, message):
        recorder = self.recorder
        if recorder is not None:
            try:
                recorder.packet(message, time.time(), self.name_of)
            except Exception:
                log("bad voice packet: " + traceback.format_exc())

    def name_of(self, session):
        user = self.users.get(session)
        return user.get("name") if user else None

    def dispatch_control_message(self, type, message):
        if type == PYMUMBLE_MSG_TYPES_REJECT:
            reject = mumble_pb2.Reject()
            reject.ParseFromString(message)
            self.rejection = f"{mumble_pb2.Reject.RejectType.Name(reject.type)}: {reject.reason}"
        super().dispatch_control_message(type, message)


class Peer:
    """The command loop: one Client at a time, and the JSON-lines protocol."""

    def __init__(self):
        self.client = None
        self.events = True
        self.say_count = 0

    # -- helpers ---------------------------------------------------------

    def require(self):
        if self.client is None or self.client.connected != PYMUMBLE_CONN_STATE_CONNECTED:
            raise RuntimeError("not connected")
        return self.client

    def channel_name(self, channel_id):
        channel = self.client.channels.get(channel_id) if self.client else None
        return channel["name"] if channel else None

    def user_line(self, user):
        return {"session": user["session"], "name": user.get("name"),
                "channel": self.channel_name(user.get("channel_id", 0)),
                "channel_id": user.get("channel_id", 0)}

    def wait(self, condition, timeout, what):
        deadline = time.time() + timeout
        while not condition():
            if self.client is not None and self.client.denials:
                raise RuntimeError(f"permission denied while {what}: {self.client.denials[-1]}")
            if time.time() > deadline:
                raise TimeoutError(f"timed out after {timeout} s {what}")
            time.sleep(0.01)

    def find_channel(self, name):
        for channel in list(self.client.channels.values()):
            if channel.get("name") == name:
                return channel
        return None

    def on_user_created(self, user):
        if self.events and self.ready:
            emit({"event": "user_joined", **self.user_line(user)})

    def on_user_updated(self, user, actions):
        if self.events and self.ready and "channel_id" in actions:
            emit({"event": "user_moved", **self.user_line(user)})

    def on_user_removed(self, user, message):
        if self.events and self.ready:
            emit({"event": "user_left", **self.user_line(user)})

    def on_disconnected(self):
        emit({"event": "disconnected", "rejection": self.client.rejection if self.client else None})

    def on_denied(self, message):
        reason = mumble_pb2.PermissionDenied.DenyType.Name(message.type) if message.HasField("type") else "?"
        self.client.denials.append(f"{reason} {message.reason}".strip())

    @property
    def ready(self):
        return self.client is not None and self.client.connected == PYMUMBLE_CONN_STATE_CONNECTED

    # -- commands --------------------------------------------------------

    def connect(self, command):
        if self.ready:
            raise RuntimeError("already connected")
        self.disconnect()
        try:
            return self.connect_client(command)
        except Exception:
            self.disconnect()
            raise

    def disconnect(self):
        client, self.client = self.client, None
        if client is not None:
            client.callbacks.reset_callback(PYMUMBLE_CLBK_DISCONNECTED)
            try:
                client.stop()
            except Exception:
                pass

    def connect_client(self, command):
        timeout = float(command.get("timeout", 10))
        client = Client(command.get("host", "127.0.0.1"), command["user"], port=int(command["port"]),
                        password=command.get("password", ""), reconnect=False)
        client.daemon = True
        self.client = client
        callbacks = client.callbacks
        callbacks.set_callback(PYMUMBLE_CLBK_USERCREATED, self.on_user_created)
        callbacks.set_callback(PYMUMBLE_CLBK_USERUPDATED, self.on_user_updated)
        callbacks.set_callback(PYMUMBLE_CLBK_USERREMOVED, self.on_user_removed)
        callbacks.set_callback(PYMUMBLE_CLBK_DISCONNECTED, self.on_disconnected)
        callbacks.set_callback(PYMUMBLE_CLBK_PERMISSIONDENIED, self.on_denied)
        client.start()
        deadline = time.time() + timeout
        while client.connected != PYMUMBLE_CONN_STATE_CONNECTED:
            if client.rejection or not client.is_alive() or client.connected == PYMUMBLE_CONN_STATE_FAILED:
                raise RuntimeError(f"connection failed: {client.rejection or 'no server or TLS failure'}")
            if time.time() > deadline:
                raise TimeoutError(f"not connected after {timeout} s")
            time.sleep(0.01)
        made = {}
        if command.get("make_channels"):
            made = self.make_channels({"names": command["make_channels"], "timeout": timeout})["channels"]
        channel = command.get("channel")
        if channel:
            target = self.find_channel(channel)
            if target is None:
                raise RuntimeError(f"no channel {channel!r}")
            if client.users.myself["channel_id"] != target["channel_id"]:
                target.move_in()
                self.wait(lambda: client.users.myself["channel_id"] == target["channel_id"], timeout,
                          f"joining {channel!r}")
        context = command.get("context")
        if context is not None:
            client.users.myself.update_context(context.encode("utf-8"))
        me = client.users.myself
        return {"session": me["session"], "channel": self.channel_name(me["channel_id"]),
                "channel_id": me["channel_id"], "made_channels": made}

    def make_channels(self, command):
        client = self.require()
        parent_name = command.get("parent", "")
        parent = self.find_channel(parent_name) if parent_name else client.channels[0]
        if parent is None:
            raise RuntimeError(f"no parent channel {parent_name!r}")
        names = list(command["names"])
        client.denials.clear()
        for name in names:
            if self.find_channel(name) is None:
                client.channels.new_channel(parent["channel_id"], name, temporary=bool(command.get("temporary", False)))
        self.wait(lambda: all(self.find_channel(n) is not None for n in names), float(command.get("timeout", 10)),
                  "making channels")
        return {"channels": {name: self.find_channel(name)["channel_id"] for name in names}}

    def say(self, command, say_id):
        client = self.require()
        with wave.open(command["wav"], "rb") as source:
            if (source.getframerate(), source.getnchannels(), source.getsampwidth()) != (RATE, 1, 2):
                raise ValueError("the WAV must be 48 kHz mono 16-bit, not "
                                 f"{source.getframerate()} Hz, {source.getnchannels()} channels, "
                                 f"{8 * source.getsampwidth()}-bit")
            pcm = source.readframes(source.getnframes())
        segments = command.get("segments")
        if segments is None:
            segments = [{"seconds": None, "position": command.get("position")}]
        count = (len(pcm) // 2 + FRAME - 1) // FRAME
        if count == 0:
            raise ValueError("the WAV is empty")
        pcm += bytes(count * FRAME * 2 - len(pcm))
        boundaries = []  # (first frame of the next segment, position)
        frame = 0
        for segment in segments:
            seconds = segment.get("seconds")
            frame = count if seconds is None else frame + int(round(seconds / FRAME_SECONDS))
            position = segment.get("position")
            boundaries.append((frame, None if position is None else [float(v) for v in position]))
        frames = []
        segment = 0
        for index in range(count):
            while segment < len(boundaries) - 1 and index >= boundaries[segment][0]:
                segment += 1
            frames.append((pcm[2 * FRAME * index:2 * FRAME * (index + 1)], boundaries[segment][1],
                           say_id, index == 0, index == count - 1))
        output = client.sound_output
        queued = output.pending_seconds()
        at = command.get("at")
        output.plan(say_id, None if at is None else float(at), bool(command.get("sends", False)))
        output.queue(frames)
        return {"say": say_id, "frames": count, "seconds": count * FRAME_SECONDS, "starts_in": queued}

    def record_start(self, command):
        client = self.require()
        client.recorder = Recorder(arrivals=bool(command.get("arrivals", False)))
        return {"start": client.recorder.start}

    def record_stop(self, command):
        client = self.require()
        recorder = client.recorder
        if recorder is None:
            raise RuntimeError("not recording")
        client.recorder = None
        folder = command.get("folder") or tempfile.mkdtemp(prefix="mumble-peer-")
        return {"folder": folder, "start": recorder.start, "senders": recorder.stop(folder)}

    def users(self, command):
        client = self.require()
        mine = client.users.myself["channel_id"]
        everyone = bool(command.get("all", False))
        lines = [self.user_line(u) for u in list(client.users.values()) if everyone or u.get("channel_id", 0) == mine]
        return {"session": client.users.myself_session, "users": sorted(lines, key=lambda u: u["session"])}

    def set_events(self, command):
        self.events = bool(command.get("enabled", True))
        return {"enabled": self.events}

    def run(self):
        handlers = {"connect": self.connect, "make_channels": self.make_channels, "record_start": self.record_start,
                    "record_stop": self.record_stop, "users": self.users, "events": self.set_events}
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            command_id, name = None, None
            try:
                command = json.loads(line)
                command_id, name = command.get("id"), command.get("cmd")
                if name == "quit":
                    emit({"reply": "quit", "id": command_id, "ok": True})
                    break
                if name == "say":
                    self.say_count += 1
                    result = self.say(command, command_id if command_id is not None else self.say_count)
                elif name in handlers:
                    result = handlers[name](command)
                else:
                    raise ValueError(f"unknown command {name!r}")
                emit({"reply": name, "id": command_id, "ok": True, **result})
            except Exception as error:
                log(traceback.format_exc())
                emit({"reply": name, "id": command_id, "ok": False, "error": f"{type(error).__name__}: {error}"})
        self.disconnect()
        os._exit(0)


if __name__ == "__main__":
    Peer().run()
