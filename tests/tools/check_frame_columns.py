#!/usr/bin/python3
"""The frame table's time columns of a recording (sim_s, step_s), read back
with the independent readers of check_recording.py, against the --frames
CSV of the same run: sim_s as the CSV prints it (%.9f), step_s to 1e-12 s.

usage: check_frame_columns.py FORMAT FILE FRAMES.csv

Exit status 0 when every row matches; 1 with the first mismatch on stderr.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_recording  # noqa: E402


def main(argv):
    fmt, path, frames_csv = argv[1:4]
    rec = check_recording.open_file(fmt, path)
    rows = {}
    with open(frames_csv, newline="") as f:
        for row in csv.DictReader(f):
            rows.setdefault(row["task"], []).append(row)
    if not rows:
        check_recording.fail(frames_csv + " holds no frames")
    for task, task_rows in rows.items():
        group = "frames/" + task
        sim = rec.column(group, "sim_s")
        step = rec.column(group, "step_s")
        if len(sim) != len(task_rows) or len(step) != len(task_rows):
            check_recording.fail("%s: %d/%d rows, the CSV has %d" % (group, len(sim), len(step), len(task_rows)))
        for k, r in enumerate(task_rows):
            if "%.9f" % sim[k] != r["sim_s"] or abs(step[k] - float(r["step_s"])) > 1e-12:
                check_recording.fail("%s row %d: sim_s %r, step_s %r, the CSV has %r" % (group, k, sim[k], step[k], r))
    print("%s: %d frame tables equal to the CSV" % (path, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
