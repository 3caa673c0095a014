#!/usr/bin/env python3
"""Measures roomd's mouth-to-ear latency over Mumble on loopback, both ways:
a release roomd on a private PulseAudio with null sinks, joined to a private
murmurd's Tavern (its certificate pinned), and an independent pymumble peer
(Tests/MumblePeer/peer.py) in the same channel.

    swift build -c release --product roomd --product scenectl
    Tools/network-latency.py [--trials N] [--build DIR] [--json FILE] [--latency-ms MS] [--stall-ms MS] [--keep]

(The peer's venv is made by Tools/mumble-peer-setup.sh, which this runs.)

Uplink, mouth to peer. A file of N trials plays into the `mic_feed` sink,
whose monitor is roomd's microphone. Each trial is a quiet buzz (a 125 Hz
harmonic complex, -40 dBFS peak, that roomd's voice-activity detector calls
speech, so the uplink is already sending) with, 300 ms in, a 60 ms 1 kHz tone
at -6 dBFS peak that starts on its first sample: the marker. Trials fall at
every phase of roomd's 10 ms blocks and 20 ms packets. parec records
`mic_feed.monitor` alongside, each read stamped with the wall clock, which
gives the sink's clock (see TimedCapture): the onset entered the microphone
when mic_feed's clock reached its sample. The peer keeps each packet's
arrival time and its decoded samples: the onset could play at its packet's
arrival plus its place in the packet. Latency = that - the onset's entry.

Downlink, peer to ear. The peer says the buzz with the marker at the start of
its 21st packet and reports when each packet went into its socket;
`phones.monitor` is recorded the same way, and the onset is heard when the
phones sink's clock reaches its sample, i.e. when the sink takes it from
roomd's stream to play it. Latency = that - the send of the marker's packet.

Onsets are the first sample at a quarter of the marker's peak in the 500 ms
after the reference time, the 40 ms before checked to stay below it (Opus
smears an onset by a millisecond or two). All times are one machine's wall
clock (time.time()). Meanwhile roomd's status (underruns, output latency)
and the peer's talker in `talkers` (jitterDelayMs, as `scenectl talkers
--json` shows it) are polled every 20 ms. Trials near a stall (a capture
block more than 15 ms late, packets more than 45 ms apart, or a roomd
underrun) are left out of the summaries but kept in the details. A second
peer then says the same to the first, which times the path without roomd.

--latency-ms is passed to roomd (its output buffer, 30 ms by default);
--stall-ms stops roomd (SIGSTOP) that long before the trials, as a busy
machine might, to show what a stall leaves in the microphone's queue.

Prints a JSON object, then a human line per direction and one for the rest;
exits 1 when a trial found no onset.
"""
import argparse, array, json, math, os, pwd, queue, random, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time, wave

import null_sinks

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, ".."))
RATE = 48000
FRAME = 960  # one Mumble packet: 20 ms

parser = argparse.ArgumentParser(description="roomd's mouth-to-ear latency over Mumble on loopback")
parser.add_argument("--trials", type=int, default=10, help="markers each way (10)")
parser.add_argument("--build", default=os.path.join(root, ".build", "release"), help="where roomd and scenectl are")
parser.add_argument("--json", help="also write the JSON result to this file")
parser.add_argument("--latency-ms", type=int, help="roomd's --latency-ms (its default, 30, unless given)")
parser.add_argument("--stall-ms", type=int, help="stop roomd (SIGSTOP) this long before the trials, as a busy machine might")
parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, recordings)")
options = parser.parse_args()

scratch = tempfile.mkdtemp(prefix="network-latency-", dir="/tmp")
folders = [scratch]
children = []


def fail(message):
    sys.exit(f"network-latency: {message} (logs in {scratch})")


def spawn(args, env, log, **more):
    child = subprocess.Popen(args, env=env, stdout=open(os.path.join(scratch, log), "w"), stderr=subprocess.STDOUT, **more)
    children.append(child)
    return child


def wait_for(condition, what, timeout=30):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            fail(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


def free_port():
    """A port free for TCP and UDP on loopback, below Linux's ephemeral range."""
    for _ in range(200):
        port = random.randrange(20000, 32000)
        try:
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                with socket.socket(socket.AF_INET, kind) as probe:
                    probe.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
    fail("no free loopback port")


def sink_latency(name, env):
    """A sink's configured latency in ms, as `pactl list sinks` shows it."""
    text = subprocess.run(["pactl", "list", "sinks"], env=env, capture_output=True, text=True).stdout
    for part in text.split("\nSink #")[0:] if text else []:
        if f"Name: {name}\n" in part:
            for line in part.splitlines():
                if line.strip().startswith("Latency:") and "configured" in line:
                    return round(int(line.split("configured")[1].split()[0]) / 1000, 2)
    return None


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# -- signals --------------------------------------------------------------

def buzz(seconds, peak=0.01):
    """A 125 Hz harmonic complex up to 3 kHz (a steady vowel, to the
    detector), `peak` at most, faded in and out over 5 ms."""
    count = int(seconds * RATE)
    samples = [0.0] * count
    for harmonic in range(1, 25):
        step = 2 * math.pi * 125 * harmonic / RATE
        amplitude = 1 / harmonic
        for index in range(count):
            samples[index] += amplitude * math.sin(step * index + harmonic * 0.7)
    top = max(abs(v) for v in samples)
    fade = int(0.005 * RATE)
    for index in range(count):
        ramp = min(1.0, index / fade, (count - 1 - index) / fade)
        samples[index] *= peak / top * ramp
    return samples


def marker(seconds=0.06, peak=0.5):
    """A 1 kHz tone from its first sample (a sharp onset at a zero crossing), faded out over 2 ms."""
    count = int(seconds * RATE)
    fade = int(0.002 * RATE)
    return [peak * math.sin(2 * math.pi * 1000 * index / RATE) * min(1.0, (count - 1 - index) / fade) for index in range(count)]


def trial_signal(lead):
    """The buzz with the marker `lead` seconds in, on top of it, and 100 ms of buzz after."""
    tone = marker()
    samples = buzz(lead + len(tone) / RATE + 0.1)
    start = int(lead * RATE)
    for index, value in enumerate(tone):
        samples[start + index] += value
    return samples, start


def write_wav16(path, samples):
    with wave.open(path, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(array.array("h", (int(round(max(-1, min(1, v)) * 32767)) for v in samples)).tobytes())


# -- timed recording of a monitor ------------------------------------------

class TimedCapture:
    """parec of a monitor into a pipe, each read stamped with the wall clock.

    A null sink wakes when its clock reaches the next sample it has not
    rendered, renders (takes from its streams) a block ahead, up to its
    latency, and hands the block to its monitor's record streams at once:
    roomd's capture and this parec. Reads that come within 2 ms of each other
    are one such block, and the wake's time is the sink's clock at the block's
    first sample. So the sink's clock is the line time = c + n / 48000 under
    every block's (delivery time, first sample), which the best deliveries
    touch: `played(n)` takes c as the least over the blocks within 0.5 s of
    sample n. `delivered(n)` is when the block holding n reached this process.
    """

    def __init__(self, device, channels, env, latency_msec):
        self.device = device
        self.channels = channels
        self.frame_bytes = 4 * channels
        self.data = bytearray()
        self.reads = []  # (wall clock, first frame, end frame)
        self.child = subprocess.Popen(["parec", "-d", device, "--format=float32le", f"--rate={RATE}", f"--channels={channels}",
                                       f"--latency-msec={latency_msec}", "--raw"], env=env, stdout=subprocess.PIPE,
                                      stderr=open(os.path.join(scratch, f"parec-{device}.log"), "w"))
        children.append(self.child)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        fd = self.child.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 16)
            now = time.time()
            if not chunk:
                return
            first = len(self.data) // self.frame_bytes
            self.data += chunk
            self.reads.append((now, first, len(self.data) // self.frame_bytes))

    def stop(self):
        self.child.terminate()
        self.child.wait(timeout=5)
        self.thread.join(timeout=5)
        self.samples = array.array("f", bytes(self.data[:len(self.data) // self.frame_bytes * self.frame_bytes]))
        if sys.byteorder != "little":
            self.samples.byteswap()
        # Blocks: reads that came together.
        self.blocks = []  # (time, first frame, end frame)
        for when, first, end in self.reads:
            if end == first:
                continue
            if self.blocks and when - self.blocks[-1][0] < 0.002 and self.blocks[-1][2] == first:
                self.blocks[-1] = (self.blocks[-1][0], self.blocks[-1][1], end)
            else:
                self.blocks.append((when, first, end))
        self.block_ends = [end for _, _, end in self.blocks]
        self.block_firsts = [first for _, first, _ in self.blocks]
        self.block_offsets = [when - first / RATE for when, first, _ in self.blocks]
        if options.keep:
            name = os.path.join(scratch, "capture-" + self.device.replace(".", "-"))
            with open(name + ".reads.json", "w") as file:
                json.dump(self.reads, file)
            with open(name + ".raw", "wb") as file:
                file.write(self.data)

    def frames(self):
        return len(self.samples) // self.channels

    def level(self, n):
        """The largest magnitude over the channels at frame n."""
        return max(abs(self.samples[n * self.channels + c]) for c in range(self.channels))

    def block_of(self, n):
        import bisect
        index = bisect.bisect_right(self.block_ends, n)
        return self.blocks[index] if index < len(self.blocks) else None

    def delivered(self, n):
        block = self.block_of(n)
        return block[0] if block else None

    def played(self, n):
        """When the sink's clock is at sample n."""
        import bisect
        low = bisect.bisect_left(self.block_firsts, n - RATE // 2)
        high = bisect.bisect_right(self.block_firsts, n + RATE // 2)
        return min(self.block_offsets[low:high]) + n / RATE

    def lateness(self, start, end):
        """The most any block holding frames start..end reached this process after the sink's clock, in ms:
        beyond a few ms, the server or this machine stalled there."""
        import bisect
        low = max(0, bisect.bisect_right(self.block_ends, start))
        high = bisect.bisect_left(self.block_firsts, end)
        return max(((when - self.played(first)) * 1000 for when, first, _ in self.blocks[low:high]), default=0.0)

    def frame_at(self, when):
        """The first frame of the first block delivered at or after `when`."""
        for moment, first, _ in self.blocks:
            if moment >= when:
                return first
        return self.frames()

    def cadence(self):
        """The blocks' length, and how much later than the sink's clock they reached this process, in ms."""
        if len(self.blocks) < 10:
            return None
        lengths = sorted((end - first) / RATE * 1000 for _, first, end in self.blocks)
        lateness = sorted((when - self.played(first)) * 1000 for when, first, _ in self.blocks)
        return {"blockMs": {"median": round(lengths[len(lengths) // 2], 2), "min": round(lengths[0], 2), "max": round(lengths[-1], 2)},
                "deliveryAfterClockMs": {"median": round(lateness[len(lateness) // 2], 2),
                                         "p90": round(lateness[int(len(lateness) * 0.9)], 2)}}


def onset(level_at, start, end):
    """The first frame in [start, end) at a quarter of the peak there, and
    whether the 40 ms before it stay below that; None if nothing is there."""
    if end <= start:
        return None
    peak = max(level_at(n) for n in range(start, end))
    if peak < 0.02:
        return None
    threshold = peak / 4
    for n in range(start, end):
        if level_at(n) >= threshold:
            quiet = all(level_at(m) < threshold for m in range(max(start, n - int(0.04 * RATE)), n))
            return n, peak, quiet
    return None


# -- the peer ---------------------------------------------------------------

class Peer:
    """Tests/MumblePeer/peer.py as a child, driven by JSON lines."""

    def __init__(self, python, label):
        self.label = label
        env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
        self.child = subprocess.Popen([python, os.path.join(root, "Tests", "MumblePeer", "peer.py")], env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=open(os.path.join(scratch, f"peer-{label}.log"), "w"))
        children.append(self.child)
        self.replies = {}
        self.events = queue.Queue()
        self.next_id = 1
        self.lock = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.child.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "event" in message:
                self.events.put(message)
            else:
                with self.lock:
                    self.replies[message.get("id")] = message
                    self.lock.notify_all()

    def send(self, cmd, timeout=30, **args):
        ident = self.next_id
        self.next_id += 1
        self.child.stdin.write((json.dumps({"cmd": cmd, "id": ident, **args}) + "\n").encode())
        self.child.stdin.flush()
        deadline = time.time() + timeout
        with self.lock:
            while ident not in self.replies:
                if time.time() > deadline or self.child.poll() is not None:
                    fail(f"peer {self.label}: no reply to {cmd}")
                self.lock.wait(0.1)
            reply = self.replies.pop(ident)
        if not reply.get("ok"):
            fail(f"peer {self.label}: {cmd} failed: {reply.get('error')}")
        return reply

    def event(self, name, timeout=30, where=lambda e: True):
        deadline = time.time() + timeout
        while True:
            try:
                event = self.events.get(timeout=max(0.01, deadline - time.time()))
            except queue.Empty:
                fail(f"peer {self.label}: no {name} event within {timeout} s")
            if event.get("event") == name and where(event):
                return event

    def quit(self):
        try:
            self.child.stdin.write(b'{"cmd":"quit"}\n')
            self.child.stdin.flush()
            self.child.wait(timeout=5)
        except Exception:
            self.child.kill()


def summary(values):
    values = sorted(values)
    if not values:
        return None
    return {"median": round(statistics.median(values), 2), "min": round(values[0], 2), "max": round(values[-1], 2),
            "p25": round(values[len(values) // 4], 2), "p75": round(values[(3 * len(values)) // 4], 2), "n": len(values)}


try:
    roomd_path, scenectl_path = (os.path.join(options.build, name) for name in ("roomd", "scenectl"))
    for path in (roomd_path, scenectl_path):
        if not os.access(path, os.X_OK):
            fail(f"no {path}: build it (swift build -c release --product roomd --product scenectl) or give --build")
    setup = subprocess.run([os.path.join(here, "mumble-peer-setup.sh")], capture_output=True, text=True)
    if setup.returncode != 0:
        fail("Tools/mumble-peer-setup.sh failed: " + setup.stderr[-2000:])
    python = os.path.join(root, setup.stdout.strip().splitlines()[-1])

    # -- PulseAudio: `phones` is roomd's output, `mic_feed`'s monitor its microphone.
    env = null_sinks.start(scratch, spawn, wait_for)

    # -- murmurd on loopback, in a folder of its own (given to mumble-server when run as root).
    murmur = tempfile.mkdtemp(prefix="network-latency-murmur-", dir="/tmp")
    folders.append(murmur)
    port = free_port()
    superuser_password = "su-" + os.urandom(6).hex()
    account = pwd.getpwnam("mumble-server") if os.getuid() == 0 else None
    ini = os.path.join(murmur, "murmur.ini")
    with open(ini, "w") as file:
        file.write("\n".join([f"database={murmur}/murmur.sqlite", "logfile=", "pidfile=", "host=127.0.0.1", f"port={port}",
                              "ice=", "bonjour=false", 'welcometext="network-latency"', "serverpassword=", "bandwidth=72000",
                              "users=20", "opusthreshold=0"] + (["uname=mumble-server"] if account else [])) + "\n")
    if account:
        for path in (murmur, ini):
            os.chown(path, account.pw_uid, account.pw_gid)
    os.chmod(murmur, 0o700)
    supw = subprocess.run(["murmurd", "-fg", "-ini", ini, "-supw", superuser_password], capture_output=True, text=True, timeout=60)
    if supw.returncode != 0:
        fail("murmurd -supw: " + supw.stdout + supw.stderr)
    spawn(["murmurd", "-fg", "-ini", ini], dict(os.environ), "murmurd.log")
    wait_for(lambda: accepts(port), "murmurd listening")
    shown = subprocess.run(f"openssl s_client -connect 127.0.0.1:{port} </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256",
                           shell=True, capture_output=True, text=True).stdout
    fingerprint = shown.strip().split("=")[-1].replace(":", "").lower()
    if len(fingerprint) != 64:
        fail(f"no certificate fingerprint from murmurd: {shown!r}")

    superuser = Peer(python, "superuser")
    superuser.send("connect", host="127.0.0.1", port=port, user="SuperUser", password=superuser_password, make_channels=["Tavern"])
    superuser.quit()

    # -- roomd in Tavern, the certificate pinned.
    scene = os.path.join(scratch, "room.yaml")
    with open(scene, "w") as file:
        file.write(f"""version: 1
name: Network latency
listener: {{ position: [0, 0, 0] }}
distance: {{ model: inverse, reference: 1, maximum: 50, rolloff: 1 }}
sources: []
voice:
  mic: default
  aec: off
  network:
    mumble: {{ server: "127.0.0.1:{port}", channel: Tavern, user: room, fingerprint: "{fingerprint}" }}
""")
    sock_path = os.path.join(scratch, "roomd.sock")
    roomd = spawn([roomd_path, scene, "--socket", sock_path] + (["--latency-ms", str(options.latency_ms)] if options.latency_ms else []),
                  env, "roomd.log")
    wait_for(lambda: os.path.exists(sock_path) or roomd.poll() is not None, "roomd opening its socket")
    if roomd.poll() is not None:
        fail("roomd ended")
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(sock_path)
    stream = connection.makefile("rwb")
    control_lock = threading.Lock()

    def call(verb, **args):
        with control_lock:
            stream.write((json.dumps({"v": 1, "verb": verb, "args": args}) + "\n").encode())
            stream.flush()
            while True:
                reply = json.loads(stream.readline())
                if "ok" in reply:
                    break
        if not reply.get("ok"):
            fail(f"roomd refused {verb}: {reply}")
        return reply.get("result", {})

    wait_for(lambda: call("status").get("server") == "pulseaudio", "roomd playing on the server")
    wait_for(lambda: (call("status").get("network") or {}).get("state") == "connected", "roomd joining Tavern")

    ear = Peer(python, "ear")
    ear.send("connect", host="127.0.0.1", port=port, user="ear", channel="Tavern")
    wait_for(lambda: any(t.get("id") == "ear" for t in call("talkers").get("talkers", [])), "roomd hearing the peer join")
    # A null sink starts rendering about 2 s after it is first played to.
    time.sleep(2.5)

    # roomd's status (underruns, output latency) and the peer's talker (its jitter delay), polled throughout.
    polls = []  # (time, underruns, latencyMs, jitterDelayMs or None, talking)
    polling = threading.Event()

    def poll():
        last_status = None
        while not polling.is_set():
            now = time.time()
            if last_status is None or now - last_status[0] >= 0.1:
                status = call("status")
                last_status = (now, status.get("underruns"), status.get("latencyMs"))
            ear_talker = next((t for t in call("talkers").get("talkers", []) if t.get("id") == "ear"), {})
            polls.append((time.time(), last_status[1], last_status[2], ear_talker.get("jitterDelayMs"), ear_talker.get("talking")))
            time.sleep(0.02)

    def underran(start, end):
        """Whether roomd counted an underrun between the polls around start..end."""
        counts = [u for t, u, *_ in polls if start - 0.15 <= t <= end + 0.15 and u is not None]
        return bool(counts) and max(counts) > min(counts)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    if options.stall_ms:
        # A machine too busy to run roomd for a while: its capture piles up meanwhile.
        os.kill(roomd.pid, signal.SIGSTOP)
        time.sleep(options.stall_ms / 1000)
        os.kill(roomd.pid, signal.SIGCONT)
        time.sleep(1.0)

    # -- Uplink: markers into the microphone, heard by the peer.
    spacing = 1.5
    feed_signal, _ = trial_signal(0.3)
    feed = [0.0] * int(0.5 * RATE)
    for index in range(options.trials):
        # Each marker a little later in roomd's 10 ms blocks and 20 ms packets than the one before, by a
        # golden-ratio step, so the trials sample every phase, as onsets in speech would.
        shift = int((index * 0.618034) % 1 * 0.02 * RATE)
        feed.extend([0.0] * shift)
        feed.extend(feed_signal)
        feed.extend([0.0] * (int(spacing * RATE) - len(feed_signal) - shift))
    feed.extend([0.0] * int(0.5 * RATE))
    feed_path = os.path.join(scratch, "uplink-feed.wav")
    write_wav16(feed_path, feed)
    sink_latencies = {"micFeed": sink_latency("mic_feed", env)}
    mic = TimedCapture("mic_feed.monitor", 1, env, 10)
    ear.send("record_start", arrivals=True)
    time.sleep(0.3)
    player = spawn(["paplay", "-d", "mic_feed", feed_path], env, "paplay.log")
    uplink_started = time.time()
    player.wait(timeout=len(feed) / RATE + 30)
    time.sleep(1.0)
    heard = ear.send("record_stop", folder=os.path.join(scratch, "ear"))
    mic.stop()
    room_track = next((s for s in heard["senders"] if s.get("name") == "room"), None)
    if room_track is None:
        fail("the peer heard nothing from roomd")
    with open(room_track["arrivals"]) as file:
        arrivals = json.load(file)
    pcm = array.array("h")
    with open(arrivals["pcm"], "rb") as file:
        pcm.frombytes(file.read())
    if sys.byteorder != "little":
        pcm.byteswap()
    packets = arrivals["packets"]  # [sequence, arrival, first sample, count, last], in arrival order
    # Each decoded sample's playable time: its packet's arrival plus its place in the packet.
    sample_time = [0.0] * len(pcm)
    for _, arrival, first, count, _ in packets:
        for k in range(count):
            sample_time[first + k] = arrival + k / RATE

    # The markers at the microphone: where the monitor's recording gets loud.
    mic_onsets = []
    n, frames = 0, mic.frames()
    while n < frames:
        if mic.level(n) > 0.2:
            mic_onsets.append(onset(mic.level, max(0, n - int(0.01 * RATE)), min(frames, n + int(0.05 * RATE)))[0])
            n += int(0.5 * RATE)
        else:
            n += 1
    uplink = []
    for index, m in enumerate(mic_onsets):
        heard_at = mic.played(m)
        window = [i for i in range(len(pcm)) if heard_at - 0.05 <= sample_time[i] <= heard_at + 0.5]
        found = onset(lambda i: abs(pcm[i]) / 32768, window[0], window[-1] + 1) if window else None
        if found is None:
            uplink.append({"trial": index, "error": "no onset at the peer"})
            continue
        i, peak, quiet = found
        at = next(k for k, p in enumerate(packets) if p[2] <= i < p[2] + p[3])
        # Packets more than 45 ms apart near the marker: roomd, murmurd or the peer stalled.
        gaps = [(packets[k][1] - packets[k - 1][1]) * 1000 for k in range(max(1, at - 10), min(len(packets), at + 5))]
        stalled = mic.lateness(m - RATE // 2, m + RATE // 10) > 15 or max(gaps, default=0) > 45 or underran(heard_at - 0.5, heard_at + 0.2)
        uplink.append({"trial": index, "latencyMs": round((sample_time[i] - heard_at) * 1000, 2),
                       "fromDeliveryMs": round((sample_time[i] - mic.delivered(m)) * 1000, 2),
                       "placeInPacket": i - packets[at][2], "peak": round(peak, 3), "quietBefore": quiet, "stall": stalled,
                       "roomdUnderrunsSoFar": max((u for t, u, *_ in polls if t <= heard_at and u is not None), default=None)})

    # -- Downlink: the peer says markers, heard at roomd's output.
    said_signal, said_at = trial_signal(0.4)
    assert said_at % FRAME == 0
    said_path = os.path.join(scratch, "downlink-say.wav")
    write_wav16(said_path, said_signal)
    phones = TimedCapture("phones.monitor", 2, env, 30)
    time.sleep(0.5)
    sink_latencies["phones"] = sink_latency("phones", env)
    sends = []
    downlink_started = time.time()
    for index in range(options.trials):
        # At a random phase against roomd's blocks, as a talker's packets would come.
        reply = ear.send("say", wav=said_path, at=time.time() + 0.2 + random.uniform(0, 0.02), sends=True)
        finished = ear.event("say_finished", where=lambda e, say=reply["say"]: e.get("say") == say)
        sends.append(finished["sends"])
        time.sleep(spacing - len(said_signal) / RATE)
    time.sleep(1.0)
    phones.stop()
    downlink = []
    for index, sent_times in enumerate(sends):
        sent = sent_times[said_at // FRAME]
        start = phones.frame_at(sent - 0.01)
        found = onset(phones.level, start, min(phones.frames(), start + int(0.5 * RATE)))
        if found is None:
            downlink.append({"trial": index, "error": "no onset at the output"})
            continue
        n, peak, quiet = found
        # The talker's jitter delay while the marker was on its way: the polls in the 100 ms after its send.
        around = [d for t, _, _, d, talking in polls if sent <= t <= sent + 0.1 and talking and d is not None]
        gaps = [(b - a) * 1000 for a, b in zip(sent_times, sent_times[1:])]
        stalled = (phones.lateness(n - RATE // 2, n + RATE // 10) > 15 or max(gaps[:said_at // FRAME + 1]) > 45
                   or underran(sent - 0.5, phones.played(n)))
        downlink.append({"trial": index, "latencyMs": round((phones.played(n) - sent) * 1000, 2),
                         "takenFromStreamMs": round((phones.delivered(n) - sent) * 1000, 2),
                         "jitterDelayMs": round(statistics.median(around), 2) if around else None,
                         "peak": round(peak, 3), "quietBefore": quiet, "stall": stalled})

    # -- The path without roomd: a second peer says the same to the ear, through murmurd.
    mouth = Peer(python, "mouth")
    mouth.send("connect", host="127.0.0.1", port=port, user="mouth", channel="Tavern")
    time.sleep(0.5)
    ear.send("record_start", arrivals=True)
    mouth_sends = []
    for index in range(3):
        reply = mouth.send("say", wav=said_path, sends=True)
        mouth_sends.append(mouth.event("say_finished", where=lambda e, say=reply["say"]: e.get("say") == say)["sends"])
        time.sleep(0.3)
    time.sleep(0.5)
    heard = ear.send("record_stop", folder=os.path.join(scratch, "ear-network"))
    mouth.quit()
    polling.set()
    poller.join(timeout=5)
    mouth_track = next((s for s in heard["senders"] if s.get("name") == "mouth"), None)
    network = []
    if mouth_track is not None:
        with open(mouth_track["arrivals"]) as file:
            mouth_packets = json.load(file)["packets"]
        flat = [t for say in mouth_sends for t in say]
        if len(mouth_packets) == len(flat):
            # Past each say's first two packets: what a packet in the middle of a spurt takes.
            steady = [k for say in range(len(mouth_sends)) for k in range(sum(map(len, mouth_sends[:say])) + 2,
                                                                            sum(map(len, mouth_sends[:say + 1])))]
            network = [(mouth_packets[k][1] - flat[k]) * 1000 for k in steady]

    load = os.getloadavg()
    calm = lambda trials: [t for t in trials if "latencyMs" in t and not t["stall"]]
    up, down = calm(uplink), calm(downlink)
    up_ms = [t["latencyMs"] for t in up]
    down_ms = [t["latencyMs"] for t in down]
    marker_jitter = [t["jitterDelayMs"] for t in down if t["jitterDelayMs"] is not None]
    beyond_jitter = [t["latencyMs"] - t["jitterDelayMs"] for t in down if t["jitterDelayMs"] is not None]
    talking_jitter = [d for t, _, _, d, talking in polls if talking and d is not None]
    jitter = summary(marker_jitter)
    result = {
        "trials": options.trials,
        "loadAverage": [round(v, 2) for v in load],
        "uplink": {
            "what": "marker onset played into the microphone by mic_feed's clock -> playable at the peer "
                    "(its packet's arrival + its place in the packet)",
            "latencyMs": summary(up_ms),
            "fromDeliveryMs": summary([t["fromDeliveryMs"] for t in up]),
            "allTrialsMs": summary([t["latencyMs"] for t in uplink if "latencyMs" in t]),
            "stalledTrials": sum(1 for t in uplink if t.get("stall")),
            "micCapture": mic.cadence(), "trialsDetail": uplink},
        "phaseStartsS": {"uplink": round(uplink_started - polls[0][0], 2), "downlink": round(downlink_started - polls[0][0], 2)},
        "downlink": {
            "what": "the peer's packet that starts with the marker into its socket -> the onset played by the "
                    "phones null sink's clock (as it takes it from roomd's stream)",
            "latencyMs": summary(down_ms),
            "takenFromStreamMs": summary([t["takenFromStreamMs"] for t in down]),
            "minusJitterDelayMs": summary(beyond_jitter),
            "allTrialsMs": summary([t["latencyMs"] for t in downlink if "latencyMs" in t]),
            "stalledTrials": sum(1 for t in downlink if t.get("stall")),
            "outputCapture": phones.cadence(), "trialsDetail": downlink},
        "jitterBuffer": {"what": "scenectl talkers --json: the peer's talker's jitterDelayMs, polled every 20 ms",
                         "atMarkersMs": jitter, "whileTalkingMs": summary(talking_jitter)},
        "network": {"what": "another pymumble peer -> murmurd -> the peer: packet into its socket -> packet read, "
                            "within spurts (no roomd)", "latencyMs": summary(network)},
        "roomdOutputLatencyMs": summary([l for _, _, l, *_ in polls if l is not None]),
        # Each underrun is time roomd's render did not run while the microphone went on: it stays in the
        # microphone's queue (up to 100 ms), so the uplink is that much later from then on.
        "roomdUnderrunsBeforeTrials": polls[0][1],
        "roomdUnderruns": [{"atS": round(t - polls[0][0], 2), "total": u} for (t, u, *_), (_, before, *_) in zip(polls[1:], polls)
                           if u is not None and before is not None and u > before],
        "nullSinkLatencyMs": sink_latencies,
    }
    # The target: mouth-to-ear on loopback within 60 ms plus the jitter buffer's delay
    # (the peer has none: it could play each packet as it arrives).
    if up_ms:
        result["uplink"]["targetMs"] = 60
        result["uplink"]["withinTarget"] = statistics.median(up_ms) <= 60
    if down_ms and jitter:
        result["downlink"]["targetMs"] = round(60 + jitter["median"], 2)
        result["downlink"]["withinTarget"] = statistics.median(down_ms) <= 60 + jitter["median"]
    text = json.dumps(result, indent=2)
    print(text)
    if options.json:
        with open(options.json, "w") as file:
            file.write(text + "\n")

    def line(values):
        s = summary(values)
        return f"median {s['median']} ms (min {s['min']}, max {s['max']}, n {s['n']})" if s else "no measurement"

    stalls = result["uplink"]["stalledTrials"] + result["downlink"]["stalledTrials"]
    print(f"uplink, roomd's microphone -> peer: {line(up_ms)}; target 60 ms")
    print(f"downlink, peer -> roomd's output: {line(down_ms)}"
          + (f"; target 60 + {jitter['median']} ms; jitter buffer delay at the markers {line(marker_jitter)}" if jitter else ""))
    print(f"loopback network, peer -> murmurd -> peer: {line(network)}; roomd's output latency "
          f"{line([l for _, _, l, *_ in polls if l is not None])}; load average {load[0]:.1f}"
          + (f"; {stalls} trials left out for a stall" if stalls else ""))
    if polls[0][1]:
        print(f"roomd underran {polls[0][1]} times before the trials: each left its length in the microphone's queue "
              "(up to 100 ms), which the uplink carries from then on")
    ear.quit()
    sys.exit(0 if len(up_ms) + len(down_ms) > 0 and all("latencyMs" in t for t in uplink + downlink) else 1)
finally:
    for child in reversed(children):
        if child.poll() is None:
            child.terminate()
    for child in children:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
    if options.keep:
        print(f"network-latency: kept {' and '.join(folders)}", file=sys.stderr)
    else:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
