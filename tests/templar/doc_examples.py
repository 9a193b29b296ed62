"""Every `{{ ... }}` expression in the EXAMPLES of each ansible.builtin
filter and test that the installed ansible-core documents, with the plain
values its example defines (so `listjojo: "{{ 'a b' | split }}"` runs as
written). Printed as JSON: [{"kind", "name", "expr", "vars"}]."""
import json
import re
import subprocess
import sys

import yaml

ansible_doc = sys.argv[1]
SKIP_KEYS = {"vars", "when", "debug", "msg", "name", "loop", "that", "assert"}


def literal(value):
    return not re.search(r"{{|{%", json.dumps(value))


def defined_values(node, found):
    if isinstance(node, dict):
        for key, value in node.items():
            if (isinstance(key, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key)
                    and key not in SKIP_KEYS and literal(value)):
                found[key] = value
            defined_values(value, found)
    elif isinstance(node, list):
        for value in node:
            defined_values(value, found)
    return found


cases = []
for kind in ("filter", "test"):
    run = lambda *args: json.loads(subprocess.run([ansible_doc, "-t", kind, "-j", *args],
                                                  capture_output=True, check=True).stdout)
    names = sorted(n for n in run("-l") if n.startswith("ansible.builtin."))
    docs = run(*names)
    for full in names:
        examples = (docs.get(full) or {}).get("examples") or ""
        try:
            given = defined_values(yaml.safe_load(examples), {})
        except yaml.YAMLError:
            given = {}
        for expr in re.findall(r"{{(.*?)}}", examples):
            cases.append({"kind": kind, "name": full.rsplit(".", 1)[1], "expr": expr.strip(), "vars": given})
        if not examples:
            cases.append({"kind": kind, "name": full.rsplit(".", 1)[1], "expr": None, "vars": {}})
json.dump(cases, sys.stdout)
