#!/usr/bin/python3
"""The live motor pair (docs/sync.md, "Live"): examples/live/motor_plant.yaml
simulates the drive in real time and sends its torque and speed as UDP plant
datagrams; examples/live/motor_sync.yaml receives them and keeps its
simulated drive in step through the load constant, both `rtcosim run`
processes in real time. Driven from CTest (tests/CMakeLists.txt).

    live_sync_pair.py RTCOSIM EXAMPLES_DIR

Checks, from the receiver's --json summary and its printed summary: both
runs exit 0; datagrams were received and none malformed; every macro step
was synchronised and its u posted to the running drive task, none refused;
the speed's MSE without synchronisation is at least 10x the running graph's
with it; no overrun other than after a wake-up later than a period (the
VM's scheduler, printed, not asserted). The UDP port is a free one, written
into copies of the two files.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

RTCOSIM, EXAMPLES = sys.argv[1], sys.argv[2]


def fail(message, *outputs):
    print(f"FAIL: {message}")
    for o in outputs:
        print(o)
    sys.exit(1)


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    work = tempfile.mkdtemp(prefix="rtcosim_live_pair_")
    port = str(free_udp_port())
    for name in ("motor_plant.yaml", "motor_sync.yaml"):
        with open(os.path.join(EXAMPLES, "live", name)) as f:
            text = f.read().replace("47016", port)
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    summary = os.path.join(work, "receiver.json")
    receiver = subprocess.Popen([RTCOSIM, "run", os.path.join(work, "motor_sync.yaml"), "--json", summary,
                                 "--record", os.path.join(work, "receiver.csv")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.3)  # listening before the first datagram
    sender = subprocess.run([RTCOSIM, "run", os.path.join(work, "motor_plant.yaml")], capture_output=True, text=True,
                            timeout=60)
    out, _ = receiver.communicate(timeout=60)
    if sender.returncode != 0 or receiver.returncode != 0:
        fail(f"sender exited {sender.returncode}, receiver {receiver.returncode}", sender.stdout, sender.stderr, out)
    print(out)
    with open(summary) as f:
        s = json.load(f)
    sources = s["plant"]
    if len(sources) != 1 or sources[0]["good"] == 0 or sources[0]["malformed"] != 0:
        fail(f"plant sources {sources}: expected one with datagrams received and none malformed", out)
    m = re.search(r"parameter updates: (\d+) posted to the running tasks, (\d+) applied by their frames, (\d+) refused"
                  r" \(inbox full\); macro steps synchronised (\d+) of (\d+)", out)
    if not m:
        fail("the receiver printed no live synchronisation summary", out)
    posted, applied, refused, done, total = map(int, m.groups())
    if done != total or posted != done or refused != 0 or applied < posted - 2:
        fail(f"synchronised {done} of {total} steps, posted {posted}, applied {applied}, refused {refused}", out)
    m = re.search(r"speed\.y\s+plant\.speed_rad_s\s+\d+\s+([0-9.e+-]+)\s+([0-9.e+-]+)", out)
    without, with_sync = float(m.group(1)), float(m.group(2))
    print(f"speed MSE without {without}, with {with_sync}: {without / with_sync:.1f}x")
    if without < 10 * with_sync:
        fail(f"MSE without {without} is not 10x the running graph's with synchronisation {with_sync}", out)
    for t in s["tasks"]:
        if t["overruns"] == 0:
            continue
        period_ns = t["step_s"]["mean"] * 1e9
        if t["start_lateness_ns"]["max"] + t["exec_ns"]["max"] < period_ns:
            fail(f"task {t['name']}: {t['overruns']} overrun(s) with every wake-up in time", out)
        print(f"{t['name']}: {t['overruns']} overrun(s) after a wake-up {t['start_lateness_ns']['max'] / 1e6:.2f} ms "
              "late: the machine's scheduler")
    shutil.rmtree(work, ignore_errors=True)
    print("live pair: passed")


if __name__ == "__main__":
    main()
