#!/usr/bin/env python3
"""Compares two builds of one Google Benchmark binary in short alternating runs.

A VM (this project's machines) changes speed between runs, sometimes by half:
two whole runs one after the other then compare its states, not the builds.
Here each pair runs both binaries briefly, in ABBA order (A B, then B A), pinned
to one CPU, and the comparison is made pair by pair: per benchmark (and per
ratio or difference of two benchmarks of one run), the median of each build and the median
and mean of the pairs' differences, with how many pairs the new build lost.

  bench/ab_pairs.py OLD NEW [--pairs 20] [--filter REGEX] [--counter NAME [--scale 1e9]]
                    [--ratio NUM:DEN] [--difference A:B] [--cpu 1]

  bench/ab_pairs.py /tmp/old/bin/replay_bench build/bin/replay_bench --filter flight \\
      --counter ns_per_frame --scale 1e9 --ratio BM_Logged/flight_control:BM_Plain/flight_control \\
      --difference BM_Logged/flight_control:BM_Plain/flight_control

Each run is `--benchmark_min_time=0.1 --benchmark_repetitions=3
--benchmark_enable_random_interleaving=true` and its medians; the figure is the
benchmark's real time per iteration, or the counter named. Not a test: it
prints figures, and asserts nothing.
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(binary, args):
    command = ["taskset", "-c", str(args.cpu), binary, "--benchmark_min_time=0.1", "--benchmark_repetitions=3",
               "--benchmark_enable_random_interleaving=true", "--benchmark_format=json"]
    if args.filter:
        command.append("--benchmark_filter=" + args.filter)
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    figures = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        if args.counter:
            if args.counter in b:
                figures[name] = float(b[args.counter]) * args.scale
        else:
            figures[name] = float(b["real_time"])
    for ratio in args.ratio:
        num, den = ratio.split(":")
        if num in figures and den in figures and figures[den] > 0:
            figures[f"{num} / {den}"] = figures[num] / figures[den]
    for difference in args.difference:
        a, b = difference.split(":")
        if a in figures and b in figures:
            figures[f"{a} - {b}"] = figures[a] - figures[b]
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the benchmark binary of the build before")
    parser.add_argument("new", help="the benchmark binary of the build after")
    parser.add_argument("--pairs", type=int, default=20, help="pairs of runs (default 20)")
    parser.add_argument("--filter", default="", help="--benchmark_filter for both")
    parser.add_argument("--counter", default="", help="a user counter to compare instead of the real time")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies the counter (1e9: an inverted rate's seconds as ns)")
    parser.add_argument("--ratio", action="append", default=[], metavar="NUM:DEN",
                        help="also compare the ratio of two benchmarks of one run (repeatable)")
    parser.add_argument("--difference", action="append", default=[], metavar="A:B",
                        help="also compare the difference A - B of two benchmarks of one run (repeatable)")
    parser.add_argument("--cpu", type=int, default=1, help="the CPU both run on (default 1)")
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")

    old, new = [], []
    for k in range(args.pairs):
        # ABBA: a drift of the machine's speed over a pair falls on both builds alike.
        if k % 2 == 0:
            old.append(run(args.old, args))
            new.append(run(args.new, args))
        else:
            new.append(run(args.new, args))
            old.append(run(args.old, args))
        print(f"pair {k + 1}/{args.pairs}", file=sys.stderr, end="\r")
    print(file=sys.stderr)

    names = [n for n in old[0] if all(n in o for o in old) and all(n in m for m in new)]
    if not names:
        sys.exit("ab_pairs: no benchmark (or counter) that both builds report in every run")
    width = max(len(n) for n in names)
    print(f"{'benchmark':<{width}}  {'old':>10}  {'new':>10}  {'new-old med':>11}  {'mean':>10}  {'sd':>9}  new worse")
    for n in names:
        a = [o[n] for o in old]
        b = [m[n] for m in new]
        d = [y - x for x, y in zip(a, b)]
        sd = statistics.stdev(d) if len(d) > 1 else 0.0
        worse = sum(1 for x in d if x > 0)
        print(f"{n:<{width}}  {statistics.median(a):10.4g}  {statistics.median(b):10.4g}  "
              f"{statistics.median(d):+11.4g}  {statistics.mean(d):+10.4g}  {sd:9.3g}  {worse}/{len(d)}")


if __name__ == "__main__":
    main()
