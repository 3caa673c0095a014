#!/usr/bin/env python3
"""Soaks a release roomd over its socket and prints its CPU (100 Hz ticks per
5 s), resident memory and renderers made after each burst: 10,000 moves, 50
route changes in 10 s (twice), 1000 adds and removes of every kind of
source, 1000 algorithm changes on a point, and 10,000 moves of it after.

    swift build -c release --product roomd && Tools/roomd-soak.py Scenes/tavern.yaml

roomd runs without a sound server, on its own clock, in a scratch folder.
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time
scene = sys.argv[1]
scratch = tempfile.mkdtemp(prefix="roomd-soak-")
sock_path, out = os.path.join(scratch, "roomd.sock"), os.path.join(scratch, "room.wav")
env = dict(os.environ); env["PULSE_SERVER"] = "unix:" + os.path.join(scratch, "no-server")
p = subprocess.Popen([os.path.join(os.path.dirname(__file__), "../.build/release/roomd"), scene, "--socket", sock_path, "--output", out],
                     env=env, stdout=open(os.path.join(scratch, "roomd.log"), "w"), stderr=subprocess.STDOUT)
for _ in range(200):
    if os.path.exists(sock_path): break
    time.sleep(0.05)
time.sleep(1)
s = socket.socket(socket.AF_UNIX); s.connect(sock_path); f = s.makefile("rwb")
def call(verb, **args):
    f.write((json.dumps({"v": 1, "verb": verb, "args": args}) + "\n").encode()); f.flush()
    return json.loads(f.readline())
def sample(label):
    with open(f"/proc/{p.pid}/stat") as st: a = st.read().split()
    t0 = int(a[13]) + int(a[14]); time.sleep(5)
    with open(f"/proc/{p.pid}/stat") as st: b = st.read().split()
    t1 = int(b[13]) + int(b[14])
    rss = int(open(f"/proc/{p.pid}/statm").read().split()[1]) * 4096 / 1e6
    st = call("status")["result"]
    print(f"{label}: {t1 - t0} CPU ticks per 5 s, {rss:.1f} MB resident, renderersMade {st.get('renderersMade')}", flush=True)
sample("idle")
ids = [x["id"] for x in call("status")["result"]["sources"] if "position" in x]
t = time.time()
bad = 0
for i in range(10000):
    r = call("move", id=ids[i % len(ids)], position=[(i % 7) - 3, 0, -2], overMs=(i % 3) * 100)
    bad += not r["ok"]
print(f"10000 moves answered in {time.time() - t:.2f} s, {bad} refused", flush=True)
sample("after 10000 moves")
def route_burst():
    """50 route changes, 5 a second: a headset plugged in and out."""
    t = time.time(); refused = 0
    for i in range(50):
        refused += not call("route", route="speakers" if i % 2 == 0 else "headphones")["ok"]
        time.sleep(0.2)
    print(f"50 route changes in {time.time() - t:.1f} s, {refused} refused", flush=True)
route_burst()
sample("after 50 route changes")
sample("5 s later")
route_burst()
sample("after 50 more route changes")
audio = os.path.abspath(os.path.join(os.path.dirname(scene), "audio/fire.wav"))
t = time.time(); refused = 0
for i in range(1000):
    kind = [{}, {"algorithm": "soundField"}, {"inHead": "bypass"}, {"rate": 1.5}, {"mode": "bypass"}][i % 5]
    if "mode" not in kind: kind["position"] = [i % 5 - 2, 0, -1]
    r = call("add", source=json.dumps({"id": f"j{i}", "file": audio, "loop": True, **kind}), cwd="/")
    refused += not r["ok"]
    r = call("remove", id=f"j{i}")
    refused += not r["ok"]
    # A place is free two blocks after its source left: 16 a mix carry about 600 joins a second.
    time.sleep(0.002)
print(f"1000 adds and removes in {time.time() - t:.1f} s, {refused} refused", flush=True)
sample("after 1000 adds and removes")
t = time.time(); refused = 0
pt = [x for x in call("status")["result"]["sources"] if x.get("mode") == "point" and x.get("algorithm") in ("hrtf", "panning")][0]["id"]
for i in range(1000):
    r = call("set", id=pt, key="algorithm", value=["panning", "soundField", "passthrough", "auto"][i % 4])
    refused += not r["ok"]
print(f"1000 algorithm changes on {pt} in {time.time() - t:.1f} s, {refused} refused", flush=True)
sample("after 1000 algorithm changes")
t = time.time(); refused = 0; errors = set()
for i in range(10000):
    r = call("move", id=pt, position=[(i % 7) - 3, 0, -2])
    refused += not r["ok"]
    if not r["ok"]: errors.add(r["error"])
print(f"10000 moves of {pt} after it joined, {refused} refused {sorted(errors)}", flush=True)
sample("after 10000 more moves")
p.kill(); p.wait()
shutil.rmtree(scratch)
