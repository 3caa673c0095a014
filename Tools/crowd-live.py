#!/usr/bin/env python3
"""Plays a crowd room live and counts the output's underruns: a release
roomd on a private PulseAudio with null sinks, the voice bus on (the
default input, echo cancellation on), every source moved 30 times a second
by one `moves` request, as a game's tick would, while a busy loop holds the
other core.

    swift build -c release --product roomd --product roombench
    Tools/crowd-live.py [SOURCES] [SECONDS]          # 4096 and 60 by default

The scene is roombench's crowd room (its circling paths, one shared file).
Prints the moves answered, the slowest answer, the daemon's CPU and the
underruns roomd reports in `status`; exits 1 if there were any.
"""
import json, math, os, shutil, socket, subprocess, sys, tempfile, time

import null_sinks

here = os.path.dirname(os.path.abspath(__file__))
release = os.path.join(here, "..", ".build", "release")
count = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
scratch = tempfile.mkdtemp(prefix="crowd-live-", dir="/tmp")
children = []


def spawn(args, env, log):
    child = subprocess.Popen(args, env=env, stdout=open(os.path.join(scratch, log), "w"), stderr=subprocess.STDOUT)
    children.append(child)
    return child


def wait_for(condition, what, timeout=30):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            sys.exit(f"crowd-live: {what} did not happen within {timeout} s (logs in {scratch})")
        time.sleep(0.05)


try:
    env = null_sinks.start(scratch, spawn, wait_for)

    # roombench writes the benchmark's crowd room; the voice section turns the bus on.
    made = subprocess.run([os.path.join(release, "roombench"), "crowd-scene", "--sources", str(count), "--folder", scratch],
                          capture_output=True, text=True, check=True)
    scene = made.stdout.strip()
    with open(scene, "a") as file:
        file.write("voice: { mic: default, aec: on }\n")
    sock_path = os.path.join(scratch, "roomd.sock")
    started = time.time()
    roomd = spawn([os.path.join(release, "roomd"), scene, "--socket", sock_path], env, "roomd.log")
    wait_for(lambda: os.path.exists(sock_path), "roomd opening its socket")
    print(f"roomd: {count} sources opened and listening in {time.time() - started:.2f} s", flush=True)
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(sock_path)
    stream = connection.makefile("rwb")

    def call(verb, **args):
        stream.write((json.dumps({"v": 1, "verb": verb, "args": args}) + "\n").encode())
        stream.flush()
        reply = json.loads(stream.readline())
        if not reply.get("ok"):
            sys.exit(f"crowd-live: {verb} refused: {reply}")
        return reply.get("result", {})

    wait_for(lambda: call("status").get("server") == "pulseaudio", "roomd playing on the server")
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    children.append(burner)
    before = call("status")["underruns"]
    ticks = lambda: sum(int(x) for x in open(f"/proc/{roomd.pid}/stat").read().split()[13:15])
    # Two seconds of ticks, made before the clock starts and sent round and
    # round, so the client's own work does not crowd roomd off the free core.
    lines = []
    for tick in range(60):
        positions = {}
        for index in range(count):
            angle = 2 * math.pi * index / count + tick / 30 * 0.5
            radius = 2 + index % 8
            positions[f"s{index}"] = [round(radius * math.sin(angle), 3), 0, round(-radius * math.cos(angle), 3)]
        lines.append((json.dumps({"v": 1, "verb": "moves", "args": {"sources": positions, "overMs": 33}}) + "\n").encode())
    cpu0, t0, moved, slowest = ticks(), time.time(), 0, 0.0
    tick = 0
    while time.time() - t0 < seconds:
        asked = time.time()
        stream.write(lines[tick % len(lines)])
        stream.flush()
        reply = json.loads(stream.readline())
        if not reply.get("ok"):
            sys.exit(f"crowd-live: moves refused: {reply}")
        moved += reply["result"]["moved"]
        slowest = max(slowest, time.time() - asked)
        tick += 1
        time.sleep(max(0, t0 + tick / 30 - time.time()))
    elapsed = time.time() - t0
    cpu = (ticks() - cpu0) / 100 / elapsed
    after = call("status")
    underruns = after["underruns"] - before
    print(f"{tick} moves requests in {elapsed:.1f} s ({tick / elapsed:.1f} a second), {moved} sources moved; "
          f"slowest answer {slowest * 1000:.1f} ms; roomd used {cpu * 100:.0f}% of a core with the other core busy")
    print(f"underruns: {underruns} (output latency {after.get('latencyMs')} ms)")
    sys.exit(1 if underruns else 0)
finally:
    for child in reversed(children):
        child.terminate()
    for child in children:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
    shutil.rmtree(scratch, ignore_errors=True)
