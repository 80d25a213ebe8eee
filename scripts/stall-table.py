#!/usr/bin/env python3
"""The sweep of the examples in docs/stalls.md: runs `rtcosim stall-sweep
--double --format json` on each example and prints one Markdown row per
(example, task, k): the single and the double stall's whole-run ratio, the
last quarter's ratio and share of the range, catch-up frames, sub-steps,
time owed at most and lost, the data waits of every task (fixed steps that
waited for a lagging producer), and the verdicts.

  scripts/stall-table.py [BIN]   (default build/bin/rtcosim)
"""
import json
import subprocess
import sys

import yaml

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/bin/rtcosim"
# overrun_virtual's own 0.5 s is the reference's table 10.1 window: a stall at
# a quarter of it leaves no time to see the recovery.
EXAMPLES = [("flight_control", None), ("four_task", None), ("overrun_virtual", "5s"), ("plant_replay", None),
            ("motor_thesis_plant", None), ("rim_arm_contact", None), ("rim_arm_contact_flexible", None),
            ("rim_two_mass", None), ("rim_two_mass_two_way", None), ("sync_delay", None), ("two_task_sine", None)]


def num(x):
    if isinstance(x, str):
        return x
    return f"{x:.3g}"


def verdict(c):
    if c["failed"]:
        return "failed"
    if c["silent_blow_up"]:
        return "**SILENT**"
    return "recovered" if c["recovered"] else "ok"


print("| example | task | step | k | ratio 1× / 2× | last quarter 1× / 2× | of range 1× / 2× | catch-up frames | "
      "sub-steps | owed max | lost | data waits | verdict 1× / 2× |")
print("|---|---|---|---:|---|---|---|---|---|---|---|---|---|")
for name, duration in EXAMPLES:
    cmd = [BIN, "stall-sweep", f"examples/{name}.yaml", "--double", "--format", "json"]
    if duration:
        cmd += ["--duration", duration]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if not out.stdout.strip():
        print(f"| {name} | (did not run: {out.stderr.strip()[:120]}) |", file=sys.stderr)
        continue
    sweep = json.loads(out.stdout)
    with open(f"examples/{name}.yaml") as f:
        steps = {t["name"]: t.get("step", "fixed") for t in yaml.safe_load(f)["tasks"]}
    by_key = {}
    for c in sweep["cases"]:
        by_key.setdefault((c["task"], c["periods"]), {})[c["stalled_frames"]] = c
    for (task, k), pair in by_key.items():
        one, two = pair.get(1), pair.get(2)
        fig = lambda c: next(t for t in c["tasks"] if t["name"] == task)
        waits = lambda c: sum(t["data_waits"] for t in c["tasks"])
        f1, f2 = fig(one), fig(two)
        print(f"| {name} | {task} | {steps.get(task, '?')} | {num(k)} | {num(one['ratio'])} / {num(two['ratio'])} | "
              f"{num(one['after_ratio'])} / {num(two['after_ratio'])} | "
              f"{num(one['after_of_range'])} / {num(two['after_of_range'])} | "
              f"{f1['catch_up_frames']} / {f2['catch_up_frames']} | {f1['extra_substeps']} / {f2['extra_substeps']} | "
              f"{num(1e3 * f1['owed_max_s'])} / {num(1e3 * f2['owed_max_s'])} ms | "
              f"{num(1e3 * f1['lost_real_time_s'])} / {num(1e3 * f2['lost_real_time_s'])} ms | "
              f"{waits(one)} / {waits(two)} | "
              f"{verdict(one)} / {verdict(two)} |")
