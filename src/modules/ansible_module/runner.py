# Host-side half of Ansible's AnsiballZ wrapper (invoke_module in
# ansible-core's module_common.py), for a payload zip kept on the host:
#
#   python -c "<this text>" /path/to/<sha256>.zip ansible.modules.wait_for [LOADER]
#
# with {"ANSIBLE_MODULE_ARGS": {...}} on stdin. The module prints its JSON
# result and exits itself (0: exit_json, 1: fail_json or a traceback).
#
# LOADER is given for payloads of ansible-core 2.19 and later:
# {"profile": ..., "extensions": {...}} as that release's wrapper passes
# them to module_utils' own _ansiballz loader, which then runs the module.
# Before 2.19 the wrapper ran it with runpy itself, as done here.
import os
import sys


def _main():
    # Python needs a readable working directory (AnsiballZ does the same
    # for become users who cannot see the caller's cwd).
    try:
        os.getcwd()
    except OSError:
        try:
            os.chdir(os.path.expanduser("~"))
        except OSError:
            os.chdir("/")

    if len(sys.argv) not in (3, 4):
        sys.stderr.write("usage: python -c RUNNER PAYLOAD.zip IMPORT.NAME [LOADER] < args.json\n")
        sys.exit(2)
    modlib_path = os.path.abspath(sys.argv[1])
    module_fqn = sys.argv[2]

    # A file in the working directory named like a stdlib module (copy.py)
    # must not shadow it, so the cwd entries go, as in the wrapper.
    sys.path = [p for p in sys.path if p not in ("", ".")]
    import json
    loader = json.loads(sys.argv[3]) if len(sys.argv) == 4 else None

    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    json_params = stdin.read()

    # The payload's ansible package comes first, so its module_utils win
    # over any ansible installed on the host. Unlike the wrapper, nothing is
    # appended to the zip (its sitecustomize.py): the file is shared and
    # content-addressed, and that entry only served old easy-install hosts.
    sys.path.insert(0, modlib_path)

    # The controller sends every internal `_ansible_*` argument any release
    # knows; each release refuses those it does not (2.19 dropped
    # string_conversion_action), so only the payload's own are kept.
    from ansible.module_utils.common.parameters import PASS_VARS
    args = json.loads(json_params)
    module_args = args.get("ANSIBLE_MODULE_ARGS", {})
    for key in [k for k in module_args if k.startswith("_ansible_")]:
        if key[len("_ansible_"):] not in PASS_VARS:
            del module_args[key]
    json_params = json.dumps(args).encode("utf-8")

    if loader is not None:
        from ansible.module_utils._internal._ansiballz import _loader
        _loader.run_module(json_params=json_params, profile=loader["profile"],
                           module_fqn=module_fqn, modlib_path=modlib_path,
                           extensions=loader["extensions"])
        sys.exit(1)

    from ansible.module_utils import basic
    basic._ANSIBLE_ARGS = json_params

    import runpy
    # _module_fqn and _modlib_path are read back from __main__ by
    # module_utils.common.respawn when a module (dnf, apt...) re-executes
    # itself under the system Python.
    runpy.run_module(mod_name=module_fqn,
                     init_globals=dict(_module_fqn=module_fqn, _modlib_path=modlib_path),
                     run_name="__main__", alter_sys=True)

    print('{"msg": "New-style module did not handle its own exit", "failed": true}')
    sys.exit(1)


_main()
