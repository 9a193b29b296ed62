# Scenario "sysctl" for pyinfra: two memory sysctls persisted in one drop-in
# and set live.
from pyinfra.operations import server

for key, value in (("vm.swappiness", 10), ("vm.overcommit_memory", 1)):
    server.sysctl(
        name=key,
        key=key,
        value=value,
        persist=True,
        persist_file="/etc/sysctl.d/90-gpu-node.conf",
    )
