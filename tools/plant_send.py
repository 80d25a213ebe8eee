#!/usr/bin/env python3
"""Send a CSV recording (or stdin) as rtcosim plant datagrams (docs/plant.md).

    tools/plant_send.py data.csv --port 47015 [--address 127.0.0.1] [--rate 1] [--fast]

The first column is the time tag, the others the values, in header order; empty
cells repeat the value before (on-change signals). Rows are sent at their times
(scaled by 1/rate) unless --fast. The layout is the one a PLC or a test bench
would send: magic, version, count, sequence, time tag, float64 values,
little-endian.
"""
import argparse
import socket
import struct
import sys
import time

MAGIC, VERSION, MAX_VALUES = 0x50435452, 1, 64


def datagram(sequence, t, values):
    return struct.pack("<IHHQd%dd" % len(values), MAGIC, VERSION, len(values), sequence, t, *values)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="the recording; - for stdin")
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--rate", type=float, default=1.0, help="file seconds per wall-clock second")
    p.add_argument("--fast", action="store_true", help="send as fast as possible, not at the rows' times")
    a = p.parse_args()
    src = sys.stdin if a.csv == "-" else open(a.csv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    header, last, sequence, t0, wall0 = None, None, 0, None, time.monotonic()
    for n, line in enumerate(src, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split(",")]
        if header is None:
            header = cells
            if not 2 <= len(header) <= MAX_VALUES + 1:
                sys.exit("%s:%d: %d signals — expected 1 to %d" % (a.csv, n, len(header) - 1, MAX_VALUES))
            last = [0.0] * (len(header) - 1)
            continue
        if len(cells) != len(header):
            print("%s:%d: %d cells — expected %d; skipped" % (a.csv, n, len(cells), len(header)), file=sys.stderr)
            continue
        try:
            t = float(cells[0])
            last = [float(c) if c else last[i] for i, c in enumerate(cells[1:])]
        except ValueError as e:
            print("%s:%d: %s; skipped" % (a.csv, n, e), file=sys.stderr)
            continue
        if not a.fast:
            t0 = t if t0 is None else t0
            delay = wall0 + (t - t0) / a.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        sock.sendto(datagram(sequence, t, last), (a.address, a.port))
        sequence += 1
    print("sent %d datagrams to %s:%d" % (sequence, a.address, a.port), file=sys.stderr)


if __name__ == "__main__":
    main()
