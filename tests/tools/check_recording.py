#!/usr/bin/python3
"""Reads a recording back with an independent reader (h5py for HDF5 and MAT
v7.3, scipy.io.loadmat for MAT v5) and compares it with what the run wrote
as CSV, bit for bit.

usage: check_recording.py FORMAT FILE SIGNALS.csv FRAMES.csv GRAPH.yaml [--irregular TASK] [--summary]
                          [--unit TASK SIGNAL UNIT]
       check_recording.py killed FILE --ramp TASK SIGNAL --at-least N
       check_recording.py dropped FORMAT FILE TASK...

FORMAT is hdf5, mat73 or mat5. SIGNALS.csv is the same graph's recording as
CSV (a virtual run: the same values), FRAMES.csv the --frames file of the
run that wrote FILE. --irregular TASK: that task's steps must differ (a
measured step absorbed an overrun). --summary: the file holds the run
summary and its counts match.

`killed`: FILE is what a run killed with SIGKILL left; TASK's SIGNAL is a
ramp of slope 1 (its value is its time, exactly) and at least N samples
must be in it.

`dropped`: prints, per TASK, a line "TASK AFTER COUNTS" with the columns
that record where samples were dropped (dropped_after_s as %.17g and
dropped_count, each comma-separated, "-" when empty); for a MAT file every
variable its `rtcosim.columns` table lists must be in the file, empty or
not. Exit status 0 when everything matches; 1 with the first
mismatch on stderr.
"""
import csv
import hashlib
import json
import sys

import numpy as np


def fail(message):
    print("check_recording: " + message, file=sys.stderr)
    sys.exit(1)


class Hdf5:
    def __init__(self, path, swmr=False):
        import h5py
        # A file whose writer was killed is still marked as open for SWMR
        # writing: a SWMR reader opens it (so does any reader after h5clear -s).
        self.f = h5py.File(path, "r", swmr=swmr)

    def column(self, group, name):
        return self.f[group][name][()]

    def has(self, group, name):
        return group in self.f and name in self.f[group]

    def attrs(self, group, name):
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in self.f[group][name].attrs.items()}

    def graph(self):
        a = self.f.attrs
        return a["graph_text"], a["graph_sha256"]

    def summary(self):
        return self.f["summary"].asstr()[()]


class Mat:
    """The MAT layout: one N x 1 variable per column, the `rtcosim` struct
    with the table of columns (variable, group, column, attributes)."""

    def __init__(self, path, v73):
        if v73:
            import h5py
            self.f = h5py.File(path, "r")
            r = self.f["rtcosim"]
            refs = r["columns"][()]  # 4 x n references (MATLAB is column-major)
            cells = [[self.text(self.f[refs[j][i]]) for j in range(4)] for i in range(refs.shape[1])]
            self.struct = {k: self.text(r[k]) for k in ("graph_text", "graph_sha256", "summary_json")}
        else:
            import scipy.io
            self.f = scipy.io.loadmat(path)
            r = self.f["rtcosim"][0, 0]
            table = r["columns"]
            cells = [[str(table[i, j][0]) if table[i, j].size else "" for j in range(4)]
                     for i in range(table.shape[0])]
            self.struct = {k: (str(r[k][0]) if r[k].size else "") for k in ("graph_text", "graph_sha256",
                                                                              "summary_json")}
        self.v73 = v73
        self.table = {(c[1], c[2]): c for c in cells}

    @staticmethod
    def text(dataset):
        codes = np.asarray(dataset[()]).flatten()
        if dataset.attrs.get("MATLAB_empty", 0):
            return ""
        return "".join(chr(c) for c in codes)

    def has(self, group, name):
        return (group, name) in self.table

    def column(self, group, name):
        var = self.table[(group, name)][0]
        data = self.f[var][()] if self.v73 else self.f[var]
        return np.asarray(data).flatten()

    def attrs(self, group, name):
        out = {}
        for item in self.table[(group, name)][3].split("; "):
            if "=" in item:
                k, v = item.split("=", 1)
                out[k] = v
        return out

    def graph(self):
        return self.struct["graph_text"], self.struct["graph_sha256"]

    def summary(self):
        return self.struct["summary_json"]


def open_file(fmt, path):
    if fmt == "hdf5":
        return Hdf5(path)
    if fmt in ("mat73", "mat5"):
        return Mat(path, fmt == "mat73")
    fail("unknown format " + fmt)


def check_signals(rec, signals_csv):
    # time_s is written %.9g in the CSV, values %.17g (exact).
    series = {}
    with open(signals_csv, newline="") as f:
        for row in csv.DictReader(f):
            if row["signal"].startswith("#"):
                continue
            s = series.setdefault((row["task"], row["signal"]), ([], []))
            s[0].append(row["time_s"])
            s[1].append(float.fromhex(float(row["value"]).hex()))
    if not series:
        fail(signals_csv + " holds no samples")
    for (task, signal), (times, values) in series.items():
        group = "signals/" + task
        if not rec.has(group, signal):
            fail("no column %s/%s" % (group, signal))
        got = rec.column(group, signal)
        got_t = rec.column(group, "time")
        if len(got) != len(values) or len(got_t) != len(times):
            fail("%s/%s: %d values and %d times, the CSV has %d" % (group, signal, len(got), len(got_t), len(values)))
        want = np.array(values, dtype=np.float64)
        if not np.array_equal(got.view(np.uint64), want.view(np.uint64)):
            k = int(np.argmax(got.view(np.uint64) != want.view(np.uint64)))
            fail("%s/%s[%d] = %r, the CSV has %r" % (group, signal, k, got[k], want[k]))
        for k, (t, text) in enumerate(zip(got_t, times)):
            if "%.9g" % t != text:
                fail("%s/time[%d] = %r, the CSV has %s" % (group, k, t, text))
        a = rec.attrs(group, signal)
        if a.get("task") != task or a.get("block") + "." + a.get("port") != signal.split("[")[0]:
            fail("%s/%s: attributes %r" % (group, signal, a))
        for key in ("unit", "integrator", "step", "coupling", "period_s"):
            if key not in a:
                fail("%s/%s: no attribute %s" % (group, signal, key))
    return series


def check_frames(rec, frames_csv):
    rows = {}
    with open(frames_csv, newline="") as f:
        for row in csv.DictReader(f):
            rows.setdefault(row["task"], []).append(row)
    for task, task_rows in rows.items():
        group = "frames/" + task
        frame = rec.column(group, "frame")
        wall = rec.column(group, "wall_s")
        exec_ns = rec.column(group, "exec_ns")
        latency = rec.column(group, "latency_ns")
        if len(frame) != len(task_rows):
            fail("%s: %d frames, the CSV has %d" % (group, len(frame), len(task_rows)))
        for k, r in enumerate(task_rows):
            lat = int(r["latency_ns"]) if r["latency_ns"] else -1
            if (int(frame[k]) != int(r["frame"]) or "%.9f" % wall[k] != r["wall_s"]
                    or int(exec_ns[k]) != int(r["exec_ns"]) or int(latency[k]) != lat):
                fail("%s row %d: %r %r %r %r, the CSV has %r" % (group, k, frame[k], wall[k], exec_ns[k], latency[k], r))


def main(argv):
    if argv[1] == "killed":
        fmt, path = "hdf5", argv[2]
        task, signal = argv[argv.index("--ramp") + 1], argv[argv.index("--ramp") + 2]
        at_least = int(argv[argv.index("--at-least") + 1])
        rec = Hdf5(path, swmr=True)
        t = rec.column("signals/" + task, "time")
        v = rec.column("signals/" + task, signal)
        n = min(len(t), len(v))
        if n < at_least:
            fail("%d samples in the killed file, expected at least %d" % (n, at_least))
        if not np.array_equal(t[:n], v[:n]):
            k = int(np.argmax(t[:n] != v[:n]))
            fail("sample %d: time %r, value %r (a ramp of slope 1)" % (k, t[k], v[k]))
        if not np.all(np.diff(t[:n]) > 0):
            fail("times do not increase")
        print("killed file: %d samples, t = %.6f .. %.6f s, step %.3g .. %.3g s" %
              (n, t[0], t[n - 1], np.diff(t[:n]).min(), np.diff(t[:n]).max()))
        return 0
    if argv[1] == "dropped":
        fmt, path, tasks = argv[2], argv[3], argv[4:]
        rec = open_file(fmt, path)
        if fmt != "hdf5":
            names = rec.f.keys() if not rec.v73 else list(rec.f.keys())
            for var, group, column, _ in rec.table.values():
                if var not in names:
                    fail("the table lists %s/%s as variable %s, which the file does not hold" % (group, column, var))
        for task in tasks:
            group = "signals/" + task
            cols = []
            for name in ("dropped_after_s", "dropped_count"):
                if not rec.has(group, name):
                    fail("no column %s/%s" % (group, name))
                values = rec.column(group, name) if fmt != "mat73" or not rec.f[rec.table[(group, name)][0]].attrs.get(
                    "MATLAB_empty", 0) else np.zeros(0)
                text = ",".join(("%.17g" % v) if name == "dropped_after_s" else str(int(v)) for v in values)
                cols.append(text or "-")
            print(task, cols[0], cols[1])
        return 0
    fmt, path, signals_csv, frames_csv, graph = argv[1:6]
    rec = open_file(fmt, path)
    series = check_signals(rec, signals_csv)
    check_frames(rec, frames_csv)
    text, digest = rec.graph()
    with open(graph, "rb") as f:
        content = f.read()
    if text != content.decode() or digest != hashlib.sha256(content).hexdigest():
        fail("the graph text or its SHA-256 (%s) is not the file's" % digest)
    if "--irregular" in argv:
        task = argv[argv.index("--irregular") + 1]
        steps = np.diff(rec.column("signals/" + task, "time"))
        if not steps.max() - steps.min() > 1e-6:
            fail("%s's times are regular (step %r .. %r)" % (task, steps.min(), steps.max()))
    if "--unit" in argv:
        k = argv.index("--unit")
        task, signal, unit = argv[k + 1:k + 4]
        if rec.attrs("signals/" + task, signal).get("unit") != unit:
            fail("%s/%s: unit %r, expected %r" % (task, signal, rec.attrs("signals/" + task, signal).get("unit"), unit))
    if "--summary" in argv:
        summary = json.loads(rec.summary())
        counts = {t["name"]: t["samples"] for t in summary["recording"]["tasks"]}
        per_task = {task: len(times) for (task, _), (times, _) in series.items()}
        for task, n in per_task.items():
            if counts.get(task) != n:
                fail("the summary counts %r samples of %s, the file has %d" % (counts.get(task), task, n))
        if summary["recording"]["samples_written"] != sum(per_task.values()):
            fail("the summary's samples_written is %r, the file has %d" % (summary["recording"]["samples_written"],
                                                                          sum(per_task.values())))
    print("%s: %d signal(s) equal to the CSV, bit for bit" % (path, len(series)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
