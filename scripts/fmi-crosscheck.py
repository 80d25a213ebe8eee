#!/usr/bin/env python3
"""Runs FMUs laid out as the FMI Cross-Check repository lays them out through
`rtcosim run --virtual` and compares every reference signal with the result.

  scripts/fmi-crosscheck.py ROOT [--rtcosim BIN] [--out DIR] [--markdown FILE]
                                 [--only SUBSTR] [--jobs N] [--timeout S]
                                 [--max-frames N] [--frames-per-step K]
                                 [--me-integrator euler|ab2|rk2|rk4]

ROOT is a checkout of github.com/modelica/fmi-cross-check (or the output of
scripts/reference-fmus.sh), or its fmus/ directory. Every model directory
ROOT/fmus/<fmi>/<cs|me>/linux64/<tool>/<version>/<model>/ holding a .fmu and
a <model>_ref.csv is one check:

- A task graph (OUT/work/<...>/graph.yaml) runs the FMU as one `fmu` block
  (`interface: co_simulation` under cs/, `model_exchange` under me/) in one
  task whose period is the StepSize of <model>_ref.opt (else the reference
  CSV's smallest positive time step) divided by --frames-per-step, `step:
  fixed`, `integrator: rk4` (--me-integrator) for model exchange. With a <model>_in.csv, a `plant` block (`source: csv`,
  `interpolation: linear`) reads it as it is and drives the FMU's inputs of
  the same names; inputs of variability discrete (every Integer, Boolean and
  Enumeration, and discrete Reals) are named in `events:`, so they are held
  at the last row at or before the time, as FMI defines a discrete input
  between events, while continuous Reals are interpolated.
- It records every output of the FMU, and each reference column that names
  another variable too: an input as the plant block's signal, anything else
  (a local, a parameter) named in the block's `observe` and recorded as
  `fmu.<name>` (docs/fmi.md). A binary that refuses that is an rtcosim
  error; the run is then repeated without them, and the row says how the
  outputs fared.
- `BIN run graph.yaml --virtual --duration StopTime-StartTime --record
  result.csv`, at most --timeout seconds. rtcosim starts an FMU at t = 0
  (it has no start-time parameter), so with StartTime != 0 the result is
  compared on its own time axis and the row says so.

The comparison is the Cross-Check's tube rule. The result must cover the
experiment, as the Cross-Check's validator demands: a sample at StartTime
and one at StopTime, or where the reference ends if it ends before (a model
that ends the simulation itself, as Stair at 9 s of 10, has a reference
that ends there). Every result sample inside the reference's time range
must lie inside a tube around the reference:

    lo(t) = min of ref over [t - dt, t + dt] - tol,  hi(t) = max ... + tol
    tol   = 1 % of the reference signal's range (max - min);
            a constant reference: 1 % of |value|, and 1e-6 when it is 0
    dt    = one StepSize

Why: 1 % of the range is what the Cross-Check accepts between tools that
integrate with different methods and steps; measuring it against the range
rather than the value keeps a signal that passes through zero from needing
an exact match there. A constant reference has no range, so 1 % of its
value stands in, and for a constant 0 an absolute 1e-6 (a zero must come
out as zero, give or take the round-off of arithmetic that ends there). The time tolerance lets an
event land one step early or late (a fixed-step importer finds it at a
step's end, or steps across it) without failing the signal on its jump:
instead of the reference at t, the result is held against the reference's
extremes over the window. Between reference samples the reference is a
line, except for discrete variables (Integer, Boolean, Enumeration,
variability discrete), which are held. Reference cells may be vectors
(FMI 3.0 arrays as "1 2 3"), compared element by element with
`fmu.y[0]`, `fmu.y[1]`, ...; `true`/`false` are 1/0. Columns that cannot be
compared are listed in the detail and not judged: String/Binary variables
(not ports in rtcosim), non-numeric cells, inputs that no _in.csv column
drives, and names that are no variable of the FMU (a reference written for
another FMI version's FMU).

Result per model: `passed`, `failed` (the signal, where it left the tube and
by how much), `rtcosim error` (exit code or timeout and the last stderr
lines, verbatim), `skipped` (why: FMI 1.0, no linux64 binary, no reference,
more than --max-frames frames), or `error` (the harness could not prepare
the run: unreadable FMU or CSV). Python 3 standard library only. OUT/results.csv has every row; --markdown
writes the table. Exit status: 0 when everything passed or was skipped, 1
otherwise, 2 for bad arguments.
"""
import argparse
import bisect
import collections
import concurrent.futures
import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import xml.etree.ElementTree as ET
import zipfile

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(SCRIPT_DIR, "..", "build", "bin", "rtcosim")

# Hostile inputs must not exhaust memory: a zip bomb's modelDescription.xml
# or a multi-gigabyte CSV is refused with a message instead.
MAX_XML_BYTES = 64 << 20
MAX_CSV_BYTES = 512 << 20
STDERR_LINES = 4

FMI3_FLOATS = {"Float32", "Float64"}
FMI3_NUMERIC = FMI3_FLOATS | {"Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64",
                              "Boolean", "Enumeration"}
FMI2_NUMERIC = {"Real", "Integer", "Boolean", "Enumeration"}

_children = set()
_children_lock = threading.Lock()


class Skip(Exception):
    pass


class HarnessError(Exception):
    pass


class Variable:
    def __init__(self, name, causality, variability, vtype):
        self.name = name
        self.causality = causality
        self.variability = variability
        self.type = vtype

    @property
    def numeric(self):
        return self.type in FMI2_NUMERIC or self.type in FMI3_NUMERIC

    @property
    def discrete(self):
        # Only Real/Float may be continuous; FMI gives every other type
        # discrete variability whatever the attribute says.
        return self.variability in ("discrete", "fixed", "tunable", "constant") or \
            self.type not in ("Real", "Float32", "Float64")


class Fmu:
    """What the harness needs from modelDescription.xml."""

    def __init__(self, path):
        self.path = path
        try:
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
                try:
                    info = z.getinfo("modelDescription.xml")
                except KeyError:
                    raise HarnessError("the archive has no modelDescription.xml at its root") from None
                if info.file_size > MAX_XML_BYTES:
                    raise HarnessError(f"modelDescription.xml is {info.file_size} bytes, beyond {MAX_XML_BYTES}")
                with z.open(info) as f:
                    data = f.read(MAX_XML_BYTES + 1)
                if len(data) > MAX_XML_BYTES:
                    raise HarnessError("modelDescription.xml inflates beyond its declared size")
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as e:
            raise HarnessError(f"cannot open the FMU as a zip archive: {e}") from None
        self.entries = names
        try:
            root = ET.fromstring(data)
        except ET.ParseError as e:
            raise HarnessError(f"modelDescription.xml is not well-formed XML: {e}") from None
        self.version = root.get("fmiVersion", "")
        self.interfaces = {}
        for tag, key in (("CoSimulation", "cs"), ("ModelExchange", "me")):
            el = root.find(tag)
            if el is not None:
                self.interfaces[key] = el.get("modelIdentifier", "")
        self.variables = {}
        mv = root.find("ModelVariables")
        if mv is None:
            return
        if self.version.startswith("2."):
            for sv in mv.findall("ScalarVariable"):
                vtype = next((c.tag for c in sv if c.tag in FMI2_NUMERIC | {"String"}), "?")
                self._add(Variable(sv.get("name", ""), sv.get("causality", "local"),
                                   sv.get("variability", "continuous"), vtype))
        else:
            for v in mv:
                if not isinstance(v.tag, str):
                    continue
                default_var = "continuous" if v.tag in FMI3_FLOATS else "discrete"
                self._add(Variable(v.get("name", ""), v.get("causality", "local"),
                                   v.get("variability", default_var), v.tag))

    def _add(self, var):
        if var.name:
            self.variables[var.name] = var

    def binary(self, iface):
        ident = self.interfaces.get(iface, "")
        if self.version.startswith("2."):
            return f"binaries/linux64/{ident}.so"
        return f"binaries/x86_64-linux/{ident}.so"

    def platforms(self):
        plats = sorted({e.split("/")[1] for e in self.entries if e.startswith("binaries/") and e.count("/") >= 2})
        return ", ".join(p for p in plats if p) or "none"


def csv_rows(path):
    """The non-blank, non-comment rows of a CSV file, as the plant block
    and the Cross-Check read them."""
    try:
        rows = list(csv.reader(io.StringIO(read_text_limited(path), newline="")))
    except csv.Error as e:
        raise HarnessError(f"{os.path.basename(path)} is not a readable CSV file: {e}") from None
    return [r for r in rows if r and any(c.strip() for c in r) and not r[0].lstrip().startswith("#")]


def read_text_limited(path):
    size = os.path.getsize(path)
    if size > MAX_CSV_BYTES:
        raise HarnessError(f"{os.path.basename(path)} is {size} bytes, beyond {MAX_CSV_BYTES}")
    with open(path, "rb") as f:
        data = f.read()
    return data.decode("utf-8-sig", errors="replace")


def parse_cell(text):
    """A float, a list of floats (an FMI 3.0 array), None (empty) or "text"."""
    s = text.strip()
    if not s:
        return None
    low = s.lower()
    if low == "true":
        return 1.0
    if low == "false":
        return 0.0
    parts = s.split()
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        return "text"
    return vals[0] if len(vals) == 1 else vals


class Reference:
    """The reference CSV: per column a list of (time, [values]), one value
    per array element; cells left empty are left out."""

    def __init__(self, path):
        rows = csv_rows(path)
        if not rows:
            raise HarnessError(f"{os.path.basename(path)} is empty")
        self.header = [h.strip() for h in rows[0]]
        if len(self.header) < 2:
            raise HarnessError(f"{os.path.basename(path)}: the header names no signal besides time")
        self.times = []
        self.columns = {h: [] for h in self.header[1:]}
        self.text_columns = set()
        self.widths = {}
        for lineno, row in enumerate(rows[1:], start=2):
            if len(row) != len(self.header):
                raise HarnessError(f"{os.path.basename(path)}: row {lineno} has {len(row)} cells, "
                                   f"the header {len(self.header)}")
            try:
                t = float(row[0])
            except ValueError:
                raise HarnessError(f"{os.path.basename(path)}: row {lineno}: time '{row[0]}' is not a number") from None
            if not math.isfinite(t):
                raise HarnessError(f"{os.path.basename(path)}: row {lineno}: time {row[0]} is not finite")
            if self.times and t < self.times[-1]:
                raise HarnessError(f"{os.path.basename(path)}: row {lineno}: time {t:g} goes back "
                                   f"(before {self.times[-1]:g})")
            self.times.append(t)
            for name, cell in zip(self.header[1:], row[1:]):
                v = parse_cell(cell)
                if v is None:
                    continue
                if v == "text":
                    self.text_columns.add(name)
                    continue
                vec = v if isinstance(v, list) else [v]
                w = self.widths.setdefault(name, len(vec))
                if w != len(vec):
                    self.text_columns.add(name)  # ragged arrays cannot be compared element by element
                    continue
                self.columns[name].append((t, vec))
        if not self.times:
            raise HarnessError(f"{os.path.basename(path)} has a header but no rows")

    def smallest_step(self):
        steps = sorted(b - a for a, b in zip(self.times, self.times[1:]) if b > a)
        if not steps:
            return None
        # An event instant written twice with a nudged time (t, t + 1e-13)
        # is no sampling step; and differences of decimal times carry noise
        # in their last digits (0.30000000000000004 - 0.2), which would put
        # every frame a hair before the reference's rows.
        median = steps[len(steps) // 2]
        step = next(d for d in steps if d >= 1e-6 * median)
        return float(f"{step:.9g}")


def read_opt(path):
    opts = {}
    if not path:
        return opts
    for line in read_text_limited(path).splitlines():
        m = re.match(r"\s*([A-Za-z]\w*)\s*[,=:]\s*(.*?)\s*$", line)
        if m:
            opts[m.group(1).lower()] = m.group(2)
    return opts


def opt_float(opts, key):
    try:
        v = float(opts[key])
    except (KeyError, ValueError):
        return None
    return v if math.isfinite(v) else None


def find_file(d, model, suffix):
    exact = os.path.join(d, model + suffix)
    if os.path.isfile(exact):
        return exact
    # Some vendors' directories differ in case from their files (CVloop/CVLoop_ref.csv).
    found = sorted(f for f in os.listdir(d) if f.lower().endswith(suffix.lower())
                   and os.path.isfile(os.path.join(d, f)))
    same = [f for f in found if f.lower() == (model + suffix).lower()]
    if same:
        return os.path.join(d, same[0])
    return os.path.join(d, found[0]) if len(found) == 1 else None


def listdir(d):
    # An unreadable directory of a vendor's tree hides its models, not the others'.
    try:
        return sorted(os.listdir(d))
    except OSError as e:
        print(f"warning: cannot list {d}: {e.strerror}", file=sys.stderr)
        return []


def discover(root):
    base = root
    if os.path.isdir(os.path.join(root, "fmus")):
        base = os.path.join(root, "fmus")
    models = []
    for fmi in listdir(base):
        for iface in ("cs", "me"):
            plat = os.path.join(base, fmi, iface, "linux64")
            if not os.path.isdir(plat):
                continue
            for tool in listdir(plat):
                tdir = os.path.join(plat, tool)
                if not os.path.isdir(tdir):
                    continue
                for version in listdir(tdir):
                    vdir = os.path.join(tdir, version)
                    if not os.path.isdir(vdir):
                        continue
                    for model in listdir(vdir):
                        mdir = os.path.join(vdir, model)
                        if os.path.isdir(mdir):
                            models.append({"fmi": fmi, "iface": iface, "tool": tool, "version": version,
                                           "model": model, "dir": mdir,
                                           "key": "/".join((fmi, iface, "linux64", tool, version, model))})
    return base, models


def yq(x):
    """A YAML scalar: JSON's double-quoted strings and numbers are valid YAML."""
    return json.dumps(x)


def duration(seconds):
    return repr(float(seconds)) + "s"


def write_graph(path, fmu_path, iface, period, dur, input_csv, wires, events, observe, signals, result,
                integrator="rk4"):
    lines = [
        f"name: {yq('crosscheck')}",
        f"duration: {yq(duration(dur))}",
        "realtime: \"off\"",
        "tasks:",
        "  - {name: \"sim\", period: %s, step: \"fixed\"%s}" % (
            yq(duration(period)), ", integrator: \"%s\"" % integrator if iface == "me" else ""),
        "blocks:",
        "  - {name: \"fmu\", type: \"fmu\", task: \"sim\", params: {file: %s, interface: %s%s}}" % (
            yq(fmu_path), yq("co_simulation" if iface == "cs" else "model_exchange"),
            ", observe: %s" % yq(", ".join(observe)) if observe else ""),
    ]
    if input_csv:
        params = "source: \"csv\", file: %s, interpolation: \"linear\"" % yq(input_csv)
        if events:
            params += ", events: %s" % yq(", ".join(events))
        lines.append("  - {name: \"input\", type: \"plant\", task: \"sim\", params: {%s}}" % params)
    if wires:
        lines.append("wires:")
        for frm, to in wires:
            lines.append("  - {from: %s, to: %s}" % (yq(frm), yq(to)))
    lines.append("record:")
    lines.append(f"  file: {yq(result)}")
    lines.append("  signals:")
    for s in signals:
        lines.append(f"    - {yq(s)}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def run_rtcosim(cmd, cwd, timeout, tag):
    out_path = os.path.join(cwd, f"stdout{tag}.txt")
    err_path = os.path.join(cwd, f"stderr{tag}.txt")
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        # Its own session, so that a timeout ends rtcosim and anything it
        # started, and nothing else.
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        with _children_lock:
            _children.add(p)
        try:
            rc = p.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(p)
            p.wait()
            rc, timed_out = None, True
        finally:
            with _children_lock:
                _children.discard(p)
    with open(err_path, "rb") as f:
        f.seek(max(0, os.path.getsize(err_path) - 65536))
        tail = f.read().decode("utf-8", errors="replace")
    lines = [ln for ln in tail.splitlines() if ln.strip()][-STDERR_LINES:]
    return rc, timed_out, lines, time.monotonic() - t0


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def describe_failure(rc, timed_out, lines, timeout):
    if timed_out:
        head = f"timed out after {timeout:g} s (killed)"
    elif rc is not None and rc < 0:
        head = f"killed by signal {signal.Signals(-rc).name if -rc in signal.valid_signals() else -rc}"
    else:
        head = f"exit {rc}"
    return head + (": " + "\n".join(lines) if lines else ": (no stderr)")


def read_result(path):
    series = collections.defaultdict(list)
    dropped = 0
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != ["time_s", "task", "signal", "value"]:
            raise HarnessError(f"the recording's header is {header!r}, not time_s,task,signal,value")
        for row in reader:
            if len(row) != 4:
                continue
            if row[2].startswith("#"):
                if row[2] == "#dropped":
                    try:
                        dropped += int(float(row[3]))
                    except ValueError:
                        pass
                continue
            try:
                series[row[2]].append((float(row[0]), float(row[3])))
            except ValueError:
                series[row[2]].append((float("nan"), float("nan")))
    for s in series.values():
        s.sort(key=lambda p: p[0])
    return series, dropped


class Window:
    """min/max of the reference over sliding windows [a, b] with a and b not
    decreasing: monotone deques keep each query O(1) amortised, so a hostile
    reference of 10^6 rows against 10^6 result samples stays linear."""

    def __init__(self, times, values, hold):
        self.t, self.y, self.hold = times, values, hold
        self.lo = self.hi = 0
        self.dmin, self.dmax = collections.deque(), collections.deque()

    def at(self, x):
        t, y = self.t, self.y
        i = bisect.bisect_right(t, x) - 1
        if i < 0:
            return y[0]
        if self.hold or i >= len(t) - 1 or t[i] == x:
            return y[i]
        t0, t1 = t[i], t[i + 1]
        return y[i] + (y[i + 1] - y[i]) * (x - t0) / (t1 - t0)

    def extremes(self, a, b):
        t, y = self.t, self.y
        while self.hi < len(t) and t[self.hi] <= b:
            v = y[self.hi]
            while self.dmin and y[self.dmin[-1]] >= v:
                self.dmin.pop()
            while self.dmax and y[self.dmax[-1]] <= v:
                self.dmax.pop()
            self.dmin.append(self.hi)
            self.dmax.append(self.hi)
            self.hi += 1
        while self.lo < len(t) and t[self.lo] < a:
            self.lo += 1
        while self.dmin and self.dmin[0] < self.lo:
            self.dmin.popleft()
        while self.dmax and self.dmax[0] < self.lo:
            self.dmax.popleft()
        ends = (self.at(a), self.at(b))
        lo, hi = min(ends), max(ends)
        if self.dmin:
            lo = min(lo, y[self.dmin[0]])
            hi = max(hi, y[self.dmax[0]])
        return lo, hi


def tube_check(name, ref_t, ref_y, res, hold, dt):
    """None when every result sample inside the reference's time range lies
    in the tube, else a sentence saying where it left and by how much."""
    finite = [v for v in ref_y if math.isfinite(v)]
    if not finite:
        return None, 0
    lo_all, hi_all = min(finite), max(finite)
    if hi_all > lo_all:
        tol = 0.01 * (hi_all - lo_all)
    else:
        tol = 0.01 * abs(lo_all) if lo_all != 0 else 1e-6
    pairs = [(t, v) for t, v in zip(ref_t, ref_y) if math.isfinite(v)]
    ts = [p[0] for p in pairs]
    ys = [p[1] for p in pairs]
    t_first, t_last = ts[0], ts[-1]
    eps = 1e-6 * dt + 1e-9 * max(1.0, abs(t_last))
    win = Window(ts, ys, hold)
    n = n_out = 0
    first = worst = None
    for t, v in res:
        if not (t_first - eps <= t <= t_last + eps):
            continue
        n += 1
        a, b = max(t_first, t - dt - eps), min(t_last, t + dt + eps)
        lo, hi = win.extremes(a, b)
        if math.isnan(v):
            excess = math.inf
        else:
            excess = max(lo - tol - v, v - hi - tol)
        if excess > 0:
            n_out += 1
            if first is None:
                first = (t, v, lo, hi)
            if worst is None or excess > worst[1]:
                worst = (t, excess)
    if n == 0:
        return f"{name}: no result sample inside the reference's time range [{t_first:g}, {t_last:g}] s", 0
    if not n_out:
        return None, n
    t, v, lo, hi = first
    msg = (f"{name}: {n_out} of {n} samples outside the tube (±{tol:.3g}); left it at t = {t:.9g} s with "
           f"{v:.9g}, reference {lo:.9g} … {hi:.9g} over ±{dt:g} s")
    if worst[0] != t:
        msg += f"; worst at t = {worst[0]:.9g} s, {worst[1]:.3g} beyond the tube"
    else:
        msg += f", {worst[1]:.3g} beyond the tube"
    return msg, n


def check_model(m, args):
    d, model, iface = m["dir"], m["model"], m["iface"]
    fmu_path = find_file(d, model, ".fmu")
    if not fmu_path:
        raise Skip("no .fmu (or several) in the directory")
    if not m["fmi"].startswith(("2", "3")):
        raise Skip(f"FMI {m['fmi']}: rtcosim runs FMI 2.0 and 3.0 only")
    ref_path = find_file(d, model, "_ref.csv")
    if not ref_path:
        raise Skip("no reference CSV (<model>_ref.csv)")
    in_path = find_file(d, model, "_in.csv")
    opt_path = find_file(d, model, "_ref.opt")

    fmu = Fmu(fmu_path)
    if not fmu.version.startswith(("2.", "3.")):
        raise Skip(f"fmiVersion '{fmu.version}': rtcosim runs FMI 2.0 and 3.0 only")
    if iface not in fmu.interfaces:
        raise Skip(f"the FMU declares no <{'CoSimulation' if iface == 'cs' else 'ModelExchange'}>, "
                   f"yet it is under {iface}/")
    if fmu.binary(iface) not in fmu.entries:
        raise Skip(f"no linux64 binary ({fmu.binary(iface)}); the FMU carries binaries for: {fmu.platforms()}")

    ref = Reference(ref_path)
    opts = read_opt(opt_path)
    start = opt_float(opts, "starttime")
    stop = opt_float(opts, "stoptime")
    step = opt_float(opts, "stepsize")
    notes = []
    if start is None:
        start = ref.times[0]
    if stop is None:
        stop = ref.times[-1]
        notes.append(f"no StopTime: the reference's last time {stop:g} s")
    if step is None or step <= 0:
        step = ref.smallest_step()
        if step is None:
            raise HarnessError("no StepSize in _ref.opt and the reference has no positive time step")
        notes.append(f"no StepSize: the reference's smallest step {step:g} s")
    dur = stop - start
    if not dur > 0:
        raise HarnessError(f"StopTime {stop:g} is not after StartTime {start:g}")
    frames = dur / step * args.frames_per_step
    if frames > args.max_frames:
        raise Skip(f"{dur:g} s in steps of {step:g} s is {frames:.3g} frames, beyond --max-frames {args.max_frames:g}")
    if start != 0:
        notes.append(f"StartTime {start:g}: rtcosim starts the FMU at t = 0, compared on its own time axis")

    outputs = [v for v in fmu.variables.values() if v.causality == "output" and v.numeric]
    inputs = {v.name: v for v in fmu.variables.values() if v.causality == "input" and v.numeric}

    wires, events, wired = [], [], set()
    input_csv = None
    if in_path:
        input_csv = os.path.abspath(in_path)
        rows = csv_rows(in_path)
        header = [h.strip() for h in rows[0][1:]] if rows else []
        unmatched = []
        for col in header:
            if col in inputs:
                wires.append((f"input.{col}", f"fmu.{col}"))
                wired.add(col)
                if inputs[col].discrete:
                    events.append(col)
            else:
                unmatched.append(col)
        if unmatched:
            notes.append("input columns naming no input of the FMU, not wired: " + ", ".join(unmatched))

    signals = [f"fmu.{v.name}" for v in outputs]
    extra = []          # reference columns that are no port: observed, which rtcosim may refuse
    not_compared = collections.defaultdict(list)
    compare = []        # (column, recorded signal base, hold)
    for col in ref.header[1:]:
        var = fmu.variables.get(col)
        if var is None:
            not_compared["no variable of the FMU"].append(col)
            continue
        if not var.numeric:
            not_compared[f"{var.type}, not a port in rtcosim"].append(col)
            continue
        if col in ref.text_columns:
            not_compared["cells that are not numbers"].append(col)
            continue
        if not ref.columns[col]:
            not_compared["no values"].append(col)
            continue
        if var.causality == "output":
            base = f"fmu.{col}"
        elif col in wired:
            base = f"input.{col}"
            signals.append(base)
        elif var.causality == "input":
            not_compared["an input without a column in _in.csv: it keeps its start value, not a recorded port"
                         ].append(col)
            continue
        elif "," in col:
            not_compared["a comma in the name: cannot be listed in 'observe'"].append(col)
            continue
        else:
            base = f"fmu.{col}"
            extra.append(col)
            signals.append(base)
        compare.append((col, base, var.discrete))
    signals = list(dict.fromkeys(signals))  # a column named twice is recorded once
    for why, cols in not_compared.items():
        notes.append(f"not compared ({why}): " + ", ".join(cols))
    if not compare:
        raise Skip("no reference column is a numeric variable of the FMU" +
                   (" — " + "; ".join(notes) if notes else ""))

    # The hash keeps two vendors' names that sanitise alike apart.
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", m["key"].replace("/", "-"))[:150]
    work = os.path.join(args.out, "work", f"{safe}-{hashlib.sha1(m['key'].encode()).hexdigest()[:8]}")
    os.makedirs(work, exist_ok=True)
    bin_path = os.path.abspath(args.rtcosim)

    def attempt(sigs, observe, tag):
        graph = os.path.join(work, f"graph{tag}.yaml")
        result = os.path.join(work, f"result{tag}.csv")
        if os.path.exists(result):
            os.remove(result)
        write_graph(graph, os.path.abspath(fmu_path), iface, step / args.frames_per_step, dur, input_csv, wires,
                    events, observe, sigs, result, args.me_integrator)
        cmd = [bin_path, "run", graph, "--virtual", "--duration", duration(dur), "--record", result]
        rc, timed_out, lines, _ = run_rtcosim(cmd, work, args.timeout, tag)
        return result, rc, timed_out, lines

    result, rc, timed_out, lines = attempt(signals, extra, "")
    if rc != 0 and extra:
        first_failure = describe_failure(rc, timed_out, lines, args.timeout)
        observed = {f"fmu.{c}" for c in extra}
        rest = [s for s in signals if s not in observed]
        result2, rc2, _, _ = attempt(rest, [], "-outputs")
        if rc2 != 0:
            return "rtcosim error", first_failure, rc, notes
        verdict, detail = compare_result(result2, ref, [c for c in compare if c[1] not in observed],
                                         start, stop, step)
        return ("rtcosim error",
                f"{first_failure}\n(observing {', '.join(extra)}, which the reference names; "
                f"recording only the rest: {verdict}{': ' + detail if detail else ''})", rc, notes)
    if rc != 0:
        return "rtcosim error", describe_failure(rc, timed_out, lines, args.timeout), rc, notes
    if not os.path.isfile(result):
        return "rtcosim error", f"exit 0 but no recording at {result}", rc, notes
    verdict, detail = compare_result(result, ref, compare, start, stop, step)
    return verdict, detail, rc, notes


def compare_result(result, ref, compare, start, stop, step):
    series, dropped = read_result(result)
    problems = []
    if dropped:
        problems.append(f"the recording lost {dropped} sample(s) (#dropped)")
    all_t = sorted(t for s in series.values() for t, _ in s if math.isfinite(t))
    eps = 1e-6 * step + 1e-9 * max(1.0, abs(stop))
    if not all_t:
        return "failed", "the recording holds no sample"
    # The reference decides how far the result must reach: an FMU that ends
    # the simulation itself (Stair at 9 s of 10) has a reference that ends
    # there too.
    need_from, need_to = max(start, ref.times[0]), min(stop, ref.times[-1])
    if all_t[0] > need_from + eps:
        problems.append(f"no sample at {need_from:g} s (the first is at {all_t[0]:.9g} s)")
    if all_t[-1] < need_to - eps:
        problems.append(f"the result ends at {all_t[-1]:.9g} s, before {need_to:g} s")
    compared = 0
    for col, base, hold in compare:
        width = ref.widths.get(col, 1)
        for i in range(width):
            sig = base if width == 1 and base in series else f"{base}[{i}]"
            label = col if width == 1 else f"{col}[{i}]"
            if sig not in series:
                problems.append(f"{label}: not in the recording (no signal '{sig}')")
                continue
            ts = [t for t, _ in ref.columns[col]]
            ys = [vec[i] for _, vec in ref.columns[col]]
            msg, n = tube_check(label, ts, ys, series[sig], hold, step)
            compared += 1
            if msg:
                problems.append(msg)
    if problems:
        return "failed", "; ".join(problems)
    return "passed", f"{compared} signal(s) inside the tube"


def run_one(m, args):
    t0 = time.monotonic()
    row = dict(m)
    rc = None
    notes = []
    try:
        verdict, detail, rc, notes = check_model(m, args)
    except Skip as e:
        verdict, detail = "skipped", str(e)
    except HarnessError as e:
        verdict, detail = "error", str(e)
    except Exception as e:  # a hostile FMU or CSV must cost one row, not the run
        verdict = "error"
        detail = f"harness: {type(e).__name__}: {e} ({traceback.extract_tb(e.__traceback__)[-1].lineno})"
    row.update(result=verdict, detail=detail, notes="; ".join(notes), exit_code="" if rc is None else rc,
               seconds=f"{time.monotonic() - t0:.2f}")
    return row


def md_cell(s):
    return str(s).replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def main():
    p = argparse.ArgumentParser(
        prog="fmi-crosscheck.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Runs every linux64 FMU of an FMI Cross-Check tree through `rtcosim run --virtual`\n"
                    "and compares each reference signal with the result by the Cross-Check's tube rule:\n"
                    "1 % of the reference's range in value, one StepSize in time.\n"
                    "Result per model: passed, failed, rtcosim error, skipped, error.",
        epilog="ROOT: a checkout of github.com/modelica/fmi-cross-check or the OUT of\n"
               "scripts/reference-fmus.sh (or its fmus/ directory); models are\n"
               "ROOT/fmus/<fmi>/<cs|me>/linux64/<tool>/<version>/<model>/.\n"
               "Each model's graph, recording and rtcosim output stay in OUT/work/ for inspection.\n"
               "Exit status: 0 all passed or skipped, 1 otherwise, 2 bad arguments.\n"
               "The tube rule and its reasons: the header of this script.")
    p.add_argument("root", metavar="ROOT", help="the cross-check tree (or its fmus/ directory)")
    p.add_argument("--rtcosim", metavar="BIN", default=None,
                   help="the rtcosim binary (default: build/bin/rtcosim of this tree, else rtcosim on PATH)")
    p.add_argument("--out", metavar="DIR", default="fmi-crosscheck-out",
                   help="where results.csv and the work directories go (default: ./fmi-crosscheck-out)")
    p.add_argument("--markdown", metavar="FILE", help="also write the results as a Markdown table")
    p.add_argument("--only", metavar="SUBSTR", action="append", default=[],
                   help="only models whose path fmi/cs|me/linux64/tool/version/model contains SUBSTR "
                        "(repeatable: any of them)")
    p.add_argument("--jobs", metavar="N", type=int, default=1,
                   help="models checked at once (default 1: each rtcosim run has the CPUs to itself)")
    p.add_argument("--timeout", metavar="S", type=float, default=120.0,
                   help="seconds a model's rtcosim run may take before it is killed (default 120)")
    p.add_argument("--frames-per-step", metavar="K", type=int, default=1,
                   help="frames per StepSize: the task's period is StepSize/K (default 1); the Cross-Check lets the "
                        "importer choose its own steps, and a model-exchange FMU's state events land on frame ends")
    p.add_argument("--me-integrator", metavar="NAME", default="rk4", choices=["euler", "ab2", "rk2", "rk4"],
                   help="the integrator of model-exchange runs (default rk4; euler reproduces a reference "
                        "computed with fmusim's forward Euler)")
    p.add_argument("--max-frames", metavar="N", type=float, default=1e6,
                   help="skip a model whose (StopTime-StartTime)/StepSize exceeds N (default 1e6)")
    args = p.parse_args()

    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if not args.timeout > 0:
        p.error("--timeout must be positive")
    if not os.path.isdir(args.root):
        p.error(f"ROOT '{args.root}' is not a directory")
    if args.rtcosim is None:
        args.rtcosim = DEFAULT_BIN if os.path.isfile(DEFAULT_BIN) else "rtcosim"
    if os.sep not in args.rtcosim:
        found = shutil.which(args.rtcosim)
        if not found:
            p.error(f"no rtcosim binary: '{args.rtcosim}' is not on PATH (give --rtcosim BIN)")
        args.rtcosim = found
    if not (os.path.isfile(args.rtcosim) and os.access(args.rtcosim, os.X_OK)):
        p.error(f"--rtcosim '{args.rtcosim}' is not an executable file")
    os.makedirs(args.out, exist_ok=True)

    base, models = discover(args.root)
    if args.only:
        models = [m for m in models if any(s in m["key"] for s in args.only)]
    if not models:
        print(f"no model directories under {base}/<fmi>/<cs|me>/linux64/<tool>/<version>/"
              + (f" matching {args.only}" if args.only else ""), file=sys.stderr)
        return 1

    rows = [None] * len(models)
    done = 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {pool.submit(run_one, m, args): i for i, m in enumerate(models)}
        for f in concurrent.futures.as_completed(futures):
            i = futures[f]
            rows[i] = f.result()
            done += 1
            r = rows[i]
            # rtcosim's own error is its last stderr line; warnings come before it.
            lines = r["detail"].splitlines() or [""]
            first = lines[0] if r["result"] != "rtcosim error" or len(lines) == 1 else \
                lines[0].split(":")[0] + ": … " + lines[-1]
            print(f"[{done}/{len(models)}] {r['key']}: {r['result']}" + (f" — {first}" if first else ""),
                  flush=True)
    except KeyboardInterrupt:
        # Not `with pool`: its exit would wait for the running rtcosim first.
        pool.shutdown(wait=False, cancel_futures=True)
        with _children_lock:
            for c in list(_children):
                kill_group(c)
        print("interrupted", file=sys.stderr)
        return 130
    pool.shutdown()

    fields = ["fmi", "iface", "tool", "version", "model", "result", "detail", "notes", "exit_code", "seconds", "key"]
    csv_path = os.path.join(args.out, "results.csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write("| tool | version | model | FMI | CS/ME | result | cause/detail |\n")
            f.write("|---|---|---|---|---|---|---|\n")
            for r in rows:
                detail = r["detail"] + (f" ({r['notes']})" if r["notes"] else "")
                f.write("| " + " | ".join(md_cell(x) for x in (
                    r["tool"], r["version"], r["model"], r["fmi"], r["iface"].upper(), r["result"], detail)) + " |\n")
    counts = collections.Counter(r["result"] for r in rows)
    print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f"; {csv_path}"
          + (f", {args.markdown}" if args.markdown else ""))
    return 0 if set(counts) <= {"passed", "skipped"} else 1


if __name__ == "__main__":
    sys.exit(main())
