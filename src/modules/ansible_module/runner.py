# Host-side half of Ansible's AnsiballZ wrapper (invoke_module in
# ansible-core's module_common.py), for a payload zip kept on the host:
#
#   python -c "<this text>" [--via NAME] /path/to/<sha256>.zip ansible.modules.wait_for [LOADER]
#
# with {"ANSIBLE_MODULE_ARGS": {...}} on stdin. The module prints its JSON
# result and exits itself (0: exit_json, 1: fail_json or a traceback).
#
# LOADER is given for payloads of ansible-core 2.19 and later:
# {"profile": ..., "extensions": {...}} as that release's wrapper passes
# them to module_utils' own _ansiballz loader, which then runs the module.
# Before 2.19 the wrapper ran it with runpy itself, as done here.
#
# With --via, the module runs in a child forked by the host's runner for
# this run (Mitogen's model): a Python that has already imported
# module_utils, listening on the socket NAME in the current folder (the
# user's private cache). Ansible pays for a Python and its imports per
# task; the runner pays once per host, and each task costs a fork. The
# child gets this process's stdout, stderr, environment, folder and umask,
# so its output and exit status are the module's as if it ran here. When
# no runner answers, the module runs here, as without --via.
#
#   python -c "<this text>" --serve NAME IDLE
#
# starts that runner: it listens on NAME, returns once it does, and ends
# after IDLE seconds without a task.
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

    # A file in the working directory named like a stdlib module (copy.py)
    # must not shadow it, so the cwd entries go, as in the wrapper.
    sys.path = [p for p in sys.path if p not in ("", ".")]

    argv = sys.argv[1:]
    if argv[:1] == ["--serve"] and len(argv) == 3:
        _serve(argv[1], float(argv[2]))
        return
    via = None
    if argv[:1] == ["--via"] and len(argv) > 1:
        via, argv = argv[1], argv[2:]
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: python -c RUNNER [--via NAME] PAYLOAD.zip IMPORT.NAME [LOADER] < args.json\n")
        sys.exit(2)

    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    json_params = stdin.read()
    if via is not None:
        status = _ask_runner(via, argv, json_params)
        if status is not None:
            sys.exit(status)
    _run_module(argv, json_params)


def _run_module(argv, json_params):
    """Runs the module in this process; it ends the process itself."""
    import json
    modlib_path = os.path.abspath(argv[0])
    module_fqn = argv[1]
    loader = json.loads(argv[2]) if len(argv) == 3 else None

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


# --- the client: hands the task to the runner ------------------------------

def _ask_runner(name, argv, json_params):
    """The module's exit status as the runner ran it, or None when no
    runner answered (nothing ran)."""
    import json
    import socket
    import struct
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(name)
    except OSError:
        conn.close()
        return None
    umask = os.umask(0o22)
    os.umask(umask)
    request = json.dumps({
        "argv": [os.path.abspath(argv[0])] + argv[1:],
        "params": json_params.decode("utf-8", "surrogateescape"),
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": umask,
    }).encode("utf-8")
    frame = struct.pack(">Q", len(request)) + request
    sys.stdout.flush()
    sys.stderr.flush()
    acked, answer = False, b""
    try:
        fds = struct.pack("2i", 1, 2)
        sent = conn.sendmsg([frame[:4096]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        conn.sendall(frame[sent:])
        # "+" says the runner took the task; without it nothing ran.
        acked = conn.recv(1) == b"+"
        while acked:
            chunk = conn.recv(64)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    conn.close()
    if not acked:
        return None
    if not answer.strip().lstrip(b"-").isdigit():
        # The task reached the runner, so it must not run twice here.
        sys.stderr.write("the host's module runner stopped before the module ended\n")
        return 1
    return int(answer)


# --- the runner ------------------------------------------------------------

def _serve(name, idle):
    import fcntl
    import socket
    # One runner per name: a second one started beside it leaves.
    lock = os.open(name + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    try:
        os.unlink(name)
    except OSError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    listener.bind(name)
    os.umask(old)
    listener.listen(16)
    here = os.getcwd()
    if os.fork():
        # The caller goes on once the socket listens.
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    import select
    try:
        while select.select([listener], [], [], idle)[0]:
            conn, _ = listener.accept()
            try:
                _serve_one(conn)
            except Exception:
                pass
            conn.close()
    finally:
        for path in (name, name + ".lock"):
            try:
                os.unlink(os.path.join(here, path))
            except OSError:
                pass


_PRELOADED = []


def _serve_one(conn):
    import json
    import select
    import signal
    import socket
    import struct
    # Only the runner's own user may hand it a task (the folder is private
    # already; this holds even for a socket passed on).
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    if struct.unpack("3i", creds)[1] != os.geteuid():
        return
    data, fds = _receive(conn)
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return
    request = json.loads(data.decode("utf-8"))
    argv = request["argv"]
    _preload(argv)
    conn.sendall(b"+")
    done_r, done_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(done_r)
        _child(request, fds)
    os.close(done_w)
    for fd in fds:
        os.close(fd)
    # The pipe closes when the child ends; a client that leaves (its
    # script was stopped) takes the child and what it started with it.
    ready = select.select([done_r, conn], [], [])[0]
    if conn in ready and done_r not in ready:
        try:
            os.killpg(child, signal.SIGTERM)
        except OSError:
            pass
    os.close(done_r)
    _, status = os.waitpid(child, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    try:
        conn.sendall(str(code).encode())
    except OSError:
        pass


def _receive(conn):
    import array
    import socket
    import struct
    fds = array.array("i")
    msg, ancdata, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(2 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    while len(msg) < 8:
        chunk = conn.recv(65536)
        if not chunk:
            break
        msg += chunk
    (size,) = struct.unpack(">Q", msg[:8])
    data = msg[8:]
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            break
        data += chunk
    return data, list(fds)


def _preload(argv):
    """Imports module_utils once, from the first task's payload, so that
    each child finds them compiled and loaded; every payload of a runner
    comes from the same ansible-core."""
    if _PRELOADED:
        return
    _PRELOADED.append(True)
    sys.path.insert(0, argv[0])
    try:
        if len(argv) == 3:
            import ansible.module_utils._internal._ansiballz._loader  # noqa: F401
        else:
            import ansible.module_utils.basic  # noqa: F401
    except Exception:
        for mod in [m for m in sys.modules if m == "ansible" or m.startswith("ansible.")]:
            del sys.modules[mod]
    finally:
        sys.path.remove(argv[0])


def _child(request, fds):
    """Runs one task in a fresh fork as the client's process would, and
    leaves with the module's status; it never returns into the runner."""
    code = 1
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(request["umask"])
        os.chdir(request["cwd"])
        argv = request["argv"]
        sys.argv = ["-c"] + argv
        # The preloaded packages look in this task's payload first: it
        # holds every module_utils its module needs, the first payload
        # perhaps not.
        for name, mod in list(sys.modules.items()):
            if (name == "ansible" or name.startswith("ansible.")) and isinstance(getattr(mod, "__path__", None), list):
                mod.__path__.insert(0, os.path.join(argv[0], *name.split(".")))
        _run_module(argv, request["params"].encode("utf-8", "surrogateescape"))
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            sys.stderr.write("%s\n" % (e.code,))
    except BaseException:
        import traceback
        traceback.print_exc()
    try:
        import atexit
        # AnsibleModule's temporary folder is removed at exit.
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


_main()
