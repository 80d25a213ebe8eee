#!/usr/bin/env python3
"""Writes a task graph of T tasks x S signals for rtcosim's scale figures.

Every task holds S blocks of one type (default first_order_lag); block k of
task i is fed by block k of task i-1 through a link (task 0 by a sine), so a
graph has T*S signals and (T-1)*S linked ones. Periods cycle through
--periods; tasks are pinned round-robin over --cpus (or left unpinned with
--cpus 0). The figures in docs/benchmarks.md name the command that wrote each graph.

  bench/scale_graph.py --tasks 16 --signals 640 --periods 1,2,5,10 --cpus 2 > g.yaml
  bench/scale_graph.py --tasks 100000 --signals 1 --cpus 0 > wide.yaml
"""

import argparse
import sys


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=positive, default=4, help="number of tasks T (default 4)")
    ap.add_argument("--signals", type=positive, default=16, help="signals per task S (default 16)")
    ap.add_argument("--periods", default="1,2,5,10", help="task periods in ms, cycled over the tasks (default 1,2,5,10)")
    ap.add_argument("--cpus", type=int, default=1, help="pin tasks round-robin over this many CPUs; 0 leaves them unpinned")
    ap.add_argument("--first-cpu", type=int, default=0, help="the lowest CPU number pinned to (default 0)")
    ap.add_argument("--block", default="first_order_lag", choices=["first_order_lag", "gain", "integrator"],
                    help="block type of every signal (default first_order_lag)")
    ap.add_argument("--coupling", default="predictor", help="coupling method of every link (default predictor)")
    ap.add_argument("--integrator", default="ab2", help="every task's integrator (default ab2)")
    ap.add_argument("--duration", default="1s", help="the graph's duration (default 1s)")
    args = ap.parse_args()
    try:
        periods = [float(p) for p in args.periods.split(",")]
    except ValueError:
        ap.error(f"--periods: expected comma-separated milliseconds, got {args.periods!r}")
    if any(p <= 0 for p in periods):
        ap.error("--periods: every period must be positive")

    if args.cpus > 0 and (args.tasks + args.cpus - 1) // args.cpus > 97:
        ap.error("--cpus: more than 97 pinned tasks per CPU cannot have distinct SCHED_FIFO priorities; "
                 "use more CPUs or --cpus 0")
    out = sys.stdout
    out.write(f"# bench/scale_graph.py --tasks {args.tasks} --signals {args.signals} --periods {args.periods} "
              f"--cpus {args.cpus} --block {args.block} --coupling {args.coupling}\n")
    out.write(f"name: scale_{args.tasks}x{args.signals}\nduration: {args.duration}\nrealtime: preferred\n")
    out.write(f"coupling: {{method: {args.coupling}}}\n\ntasks:\n")
    for i in range(args.tasks):
        period = periods[i % len(periods)]
        cpu = f", cpu: {args.first_cpu + i % args.cpus}" if args.cpus > 0 else ""
        # Pinned tasks need distinct priorities per CPU (rtcosim check refuses
        # ties); the file order stands for the rate order.
        prio = 98 - i // args.cpus if args.cpus > 0 else 50
        out.write(f"  - {{name: t{i}, period: {period:g}ms{cpu}, priority: {prio}, "
                  f"integrator: {args.integrator}, step: fixed}}\n")
    out.write("\nblocks:\n")
    params = {"first_order_lag": "{time_constant: 0.05}", "gain": "{gain: 1}", "integrator": "{}"}[args.block]
    for k in range(args.signals):
        out.write(f"  - {{name: s{k}, type: sine, task: t0, params: {{frequency: {1 + k % 7}}}}}\n")
    for i in range(args.tasks):
        for k in range(args.signals):
            out.write(f"  - {{name: b{i}_{k}, type: {args.block}, task: t{i}, params: {params}}}\n")
    out.write("\nwires:\n")
    for i in range(args.tasks):
        for k in range(args.signals):
            source = f"s{k}.y" if i == 0 else f"b{i - 1}_{k}.y"
            out.write(f"  - {{from: {source}, to: b{i}_{k}.u}}\n")


if __name__ == "__main__":
    main()
