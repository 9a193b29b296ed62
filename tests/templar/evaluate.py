"""Renders each case's template with ansible-core's own Templar, in the
variables a task on localhost of an `-i localhost, -c local` play sees
(the play's magic and inventory variables, then the case's own task vars),
as a `debug: msg:` task renders it. One process for every case: a playbook
of one task per case costs a worker process per task.

Reads JSON [{"msg", "vars"}] on stdin; prints JSON [{"failed", "msg"}]."""
import json
import sys

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.template import Templar
from ansible.vars.manager import VariableManager

try:  # ansible-core 2.19 and later template only what is trusted
    from ansible.template import trust_as_template
except ImportError:
    def trust_as_template(text):
        return text

loader = DataLoader()
inventory = InventoryManager(loader=loader, sources="localhost,")
variables = VariableManager(loader=loader, inventory=inventory)
play = Play.load({"hosts": "localhost", "gather_facts": False},
                 variable_manager=variables, loader=loader)
base = variables.get_vars(play=play, host=inventory.get_host("localhost"))

out = []
for case in json.load(sys.stdin):
    try:
        templar = Templar(loader=loader, variables={**base, **case["vars"]})
        out.append({"failed": False, "msg": str(templar.template(trust_as_template(case["msg"])))})
    except Exception as e:  # what fails the task fails the case
        out.append({"failed": True, "msg": str(e)})
json.dump(out, sys.stdout)
