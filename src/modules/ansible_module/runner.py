# Host-side half of Ansible's AnsiballZ wrapper (invoke_module in
# ansible-core's module_common.py), for a payload zip kept on the host:
#
#   python -c "<this text>" [--via NAME] [--sha SHA256] /path/to/<sha256>.zip ansible.modules.wait_for [LOADER]
#
# with {"ANSIBLE_MODULE_ARGS": {...}} on stdin. With --sha, what runs is a
# private copy of the zip, checked against that digest. The module prints its JSON
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
    if argv[:1] == ["--batch"] and len(argv) == 3:
        _batch(argv[1], argv[2])
        return
    via = sha = None
    if argv[:1] == ["--via"] and len(argv) > 1:
        via, argv = argv[1], argv[2:]
    if argv[:1] == ["--sha"] and len(argv) > 1:
        sha, argv = argv[1], argv[2:]
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: python -c RUNNER [--via NAME] [--sha SHA256] PAYLOAD.zip IMPORT.NAME [LOADER] < args.json\n")
        sys.exit(2)
    if sha is not None:
        copy = _private_copy(argv[0], sha)
        if copy is None:
            sys.stderr.write(_changed(argv[0]))
            sys.exit(98)
        import atexit
        atexit.register(os.unlink, copy)
        argv[0] = copy

    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    json_params = stdin.read()
    if via is not None:
        conn = _hand_over(via, argv, json_params, (1, 2))
        if conn is not None:
            sys.exit(_status(_read_all(conn)))
        # A module may import what site-packages hold (dnf, apt, selinux).
        import site
        site.main()
    _run_module(argv, json_params)


def _changed(cached):
    return "the payload at %s changed since it was checked\n" % cached


def _private_copy(cached, sha):
    """A copy of the cached payload only the caller knows, checked against
    its digest, or None when the digest differs: the run may come long
    after the probe that put the payload in place, and whoever could swap
    the cached file in between gets nothing run."""
    try:
        from _sha2 import sha256
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256
    try:
        fd = os.open(cached, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if sha256(data).hexdigest() != sha:
        return None
    copy = os.path.join(os.path.dirname(cached), ".run." + os.urandom(8).hex())
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return copy


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


# --- the client: hands tasks to the runner ---------------------------------
# Only builtin modules are imported here: the client starts without site
# (-S), and each import would cost every task its time.

def _hand_over(name, argv, json_params, fds):
    """The connection to the runner once it took the task, to write its
    output to `fds` (stdout, stderr); None when no runner took it (nothing
    ran)."""
    import _socket
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(name)
    except OSError:
        conn.close()
        return None
    umask = os.umask(0o22)
    os.umask(umask)
    fields = [os.fsencode(os.path.abspath(argv[0]))] + [a.encode("utf-8") for a in argv[1:]]
    fields += [b"", json_params, os.getcwdb(), b"%d" % umask, _limits()]
    fields += [k + b"=" + v for k, v in os.environb.items()]
    frame = b"".join(len(f).to_bytes(8, "big") + f for f in fields)
    frame = len(frame).to_bytes(8, "big") + frame
    try:
        passed = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
        sent = conn.sendmsg([frame[:4096]], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)])
        conn.sendall(frame[sent:])
        # "+" says the runner took the task; without it nothing ran.
        if conn.recv(1) == b"+":
            return conn
    except OSError:
        pass
    conn.close()
    return None


# The limits a task's process inherits (a task's `ulimit`, PAM's limits of
# its user), which its fork of the runner takes on.
_LIMITS = ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE", "RLIMIT_FSIZE",
           "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_CPU", "RLIMIT_MEMLOCK")


def _limits():
    import resource
    return b" ".join(b"%d:%d" % resource.getrlimit(getattr(resource, name)) for name in _LIMITS)


def _set_limits(text):
    import resource
    for name, pair in zip(_LIMITS, text.split()):
        soft, hard = (int(v) for v in pair.split(b":"))
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError):
            pass


def _read_all(conn):
    answer = b""
    try:
        while True:
            chunk = conn.recv(64)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    conn.close()
    return answer


def _status(answer):
    if not answer.strip().lstrip(b"-").isdigit():
        # The task reached the runner, so it must not run twice here.
        sys.stderr.write("the host's module runner stopped before the module ended\n")
        return 1
    return int(answer)


def _batch(name, folder):
    """Runs each task of stdin (four lines each: payload digest, import
    name, loader or empty, arguments) and writes one line per task: its
    exit status, stdout and stderr, the last two in base64."""
    import binascii
    lines = sys.stdin.buffer.read().split(b"\n")
    out = sys.stdout.buffer
    for i in range(0, len(lines) - 3, 4):
        sha, fqn, loader, params = (line.decode("utf-8") for line in lines[i:i + 4])
        cached = os.path.join(folder, sha + ".zip")
        copy = _private_copy(cached, sha)
        if copy is None:
            rc, got_out, got_err = 98, b"", _changed(cached).encode()
        else:
            argv = [copy, fqn] + ([loader] if loader else [])
            try:
                rc, got_out, got_err = _one(name, argv, params.encode("utf-8"))
            finally:
                os.unlink(copy)
        out.write(b"%d %s %s\n" % (rc, binascii.b2a_base64(got_out).strip(),
                                   binascii.b2a_base64(got_err).strip()))
    out.flush()


def _one(name, argv, json_params):
    """One task of a batch, in the runner or, when none takes it, in a fork
    of this process: (status, stdout, stderr)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    conn = _hand_over(name, argv, json_params, (out_w, err_w))
    child = None
    if conn is None:
        child = os.fork()
        if child == 0:
            os.close(out_r)
            os.close(err_r)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)

            def run():
                import site
                site.main()
                _run_module(argv, json_params)
            _run_and_leave(run)
    os.close(out_w)
    os.close(err_w)
    got = _drain([out_r, err_r] + ([conn.fileno()] if conn is not None else []))
    if conn is not None:
        rc = _status(got[conn.fileno()])
        conn.close()
    else:
        rc = _wait(child)
    os.close(out_r)
    os.close(err_r)
    return rc, got[out_r], got[err_r]


def _drain(fds):
    """Everything each fd gives until its end, read side by side so that a
    task filling one pipe never waits on the other."""
    import select
    got = dict((fd, b"") for fd in fds)
    open_fds = list(fds)
    while open_fds:
        for fd in select.select(open_fds, [], [])[0]:
            chunk = os.read(fd, 65536)
            if chunk:
                got[fd] += chunk
            else:
                open_fds.remove(fd)
    return got


def _wait(child):
    """The child's exit status as a shell reports it."""
    _, status = os.waitpid(child, 0)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _run_and_leave(run):
    """Runs a task in a fork and ends the fork as the interpreter would end
    a process of its own: with the status SystemExit gives, after its exit
    handlers (AnsibleModule removes its temporary folder in one) and its
    buffers. It never returns to the caller's code."""
    code = 1
    try:
        run()
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
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


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
        for path in (name, name + ".lock", name + ".python"):
            try:
                os.unlink(os.path.join(here, path))
            except OSError:
                pass


_PRELOADED = []


def _serve_one(conn):
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
    fields, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at:at + 8], "big")
        fields.append(data[at + 8:at + 8 + size])
        at += 8 + size
    end = fields.index(b"")
    request = {
        "argv": [os.fsdecode(fields[0])] + [f.decode("utf-8") for f in fields[1:end]],
        "params": fields[end + 1],
        "cwd": fields[end + 2],
        "umask": int(fields[end + 3]),
        "limits": fields[end + 4],
        "env": dict(f.split(b"=", 1) for f in fields[end + 5:]),
    }
    _preload(request["argv"])
    conn.sendall(b"+")
    done_r, done_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(done_r)
        _run_and_leave(lambda: _child(request, fds))
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
    code = _wait(child)
    try:
        conn.sendall(str(code).encode())
    except OSError:
        pass


def _receive(conn):
    import array
    import socket
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
    size = int.from_bytes(msg[:8], "big")
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
    """Runs one task in a fresh fork of the runner as the client's process
    would run it."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in fds:
        os.close(fd)
    os.environb.clear()
    os.environb.update(request["env"])
    os.umask(request["umask"])
    _set_limits(request["limits"])
    os.chdir(request["cwd"])
    argv = request["argv"]
    sys.argv = ["-c"] + argv
    # The preloaded packages look in this task's payload first: it holds
    # every module_utils its module needs, the first payload perhaps not.
    for name, mod in list(sys.modules.items()):
        if (name == "ansible" or name.startswith("ansible.")) and isinstance(getattr(mod, "__path__", None), list):
            mod.__path__.insert(0, os.path.join(argv[0], *name.split(".")))
    _run_module(argv, request["params"])

_main()
