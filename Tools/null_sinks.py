"""A private PulseAudio for the live tools: the null sink `phones` is
roomd's output, and the monitor of `mic_feed` its microphone."""
import os, subprocess


def start(scratch, spawn, wait_for):
    """Starts the server in `scratch` through the tool's own `spawn` and
    `wait_for`, and returns the environment that reaches it."""
    env = dict(os.environ, XDG_RUNTIME_DIR=scratch, PULSE_RUNTIME_PATH=scratch + "/pulse", HOME=scratch,
               PULSE_SERVER=f"unix:{scratch}/pulse/native")
    with open(os.path.join(scratch, "live.pa"), "w") as script:
        script.write("load-module module-native-protocol-unix auth-anonymous=1\n"
                     "load-module module-null-sink sink_name=phones format=float32le rate=48000\n"
                     "load-module module-null-sink sink_name=mic_feed format=float32le rate=48000\n"
                     "set-default-sink phones\nset-default-source mic_feed.monitor\n")
    spawn(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "--use-pid-file=no",
           "--system=false", "--log-target=stderr", "-F", os.path.join(scratch, "live.pa")], env, "pulseaudio.log")
    wait_for(lambda: subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0, "pulseaudio starting")
    return env
