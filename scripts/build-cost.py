#!/usr/bin/env python3
"""Compiler time of a build, from its ninja log (docs/building.md's quick-start figure).

    scripts/build-cost.py BUILD_DIR [TARGET...]

Reads BUILD_DIR/.ninja_log (each step's start and end, milliseconds) and
prints the sum over every step, the sum over the steps TARGET... need
(`ninja -t inputs`; the targets themselves included), and the costliest
translation units of each. Meaningful after a build from scratch: the log
keeps the newest run of each step, so an incremental build mixes runs.
"""
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    build, targets = sys.argv[1], sys.argv[2:]
    log = os.path.join(build, ".ninja_log")
    steps = {}
    with open(log) as f:
        for line in f:
            if line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 5:
                continue
            start, end, _, output, _ = fields
            steps[output] = (int(end) - int(start)) / 1000.0
    total = sum(steps.values())
    print(f"{build}: {len(steps)} steps, {total:.0f} s of compiler and linker time")
    if targets:
        inputs = subprocess.run(["ninja", "-C", build, "-t", "inputs", *targets], capture_output=True, text=True,
                                check=True).stdout.split()
        wanted = set(inputs) | {os.path.relpath(t, build) if os.path.isabs(t) else t for t in targets}
        wanted |= {f"bin/{t}" for t in targets}
        chosen = {o: d for o, d in steps.items() if o in wanted}
        part = sum(chosen.values())
        print(f"{' '.join(targets)}: {len(chosen)} steps, {part:.0f} s ({100 * part / total:.0f} %)")
        top = sorted(chosen.items(), key=lambda kv: -kv[1])[:5]
        print("  costliest: " + ", ".join(f"{o.rsplit('/', 1)[-1]} {d:.0f} s" for o, d in top))
        rest = {o: d for o, d in steps.items() if o not in wanted}
        top = sorted(rest.items(), key=lambda kv: -kv[1])[:5]
        print("  costliest of the rest: " + ", ".join(f"{o.rsplit('/', 1)[-1]} {d:.0f} s" for o, d in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
