#!/usr/bin/python3
"""Validates every example task graph against docs/task-graph.schema.json.

Uses Debian's python3-yaml and python3-jsonschema (scripts/install-deps.sh).
Exit 1 with each violation at its path when an example does not conform.
"""
import json
import pathlib
import sys

import jsonschema
import yaml

root = pathlib.Path(__file__).resolve().parent.parent
schema = json.loads((root / "docs" / "task-graph.schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
files = sorted((root / "examples").glob("*.yaml")) + sorted(sys.argv[1:] and map(pathlib.Path, sys.argv[1:]) or [])
failures = 0
for path in files:
    document = yaml.safe_load(path.read_text())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    for error in errors:
        where = "/".join(str(p) for p in error.path) or "(top)"
        print(f"{path.relative_to(root) if path.is_relative_to(root) else path}: {where}: {error.message}")
    failures += bool(errors)
print(f"schema: {len(files) - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
