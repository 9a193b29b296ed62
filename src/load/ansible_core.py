# Controller-side bridge to ansible-core: finds a module the way a playbook
# run would and packs it, with ansible-core's own AnsiballZ code, into a zip
# that a host keeps under its SHA-256 and runs with the arguments on stdin.
#
# Started once per run as `python -I -c <this text>`; speaks JSON lines:
# one request per line on stdin, exactly one answer per line on stdout.
#
#   ready:    {"ready": true, "ansible_version": "2.17.x"}
#             {"ready": false, "why": "..."}            (then exits)
#   request:  {"module": "wait_for", "library": [dirs], "collections": [names],
#              "collections_paths": [dirs], "module_only": false}
#   answer:   {"ok": true, "fqcn", "import", "path", "zip", "sha256", "ansible_version",
#              "options": [documented parameters and aliases] or null,
#              "loader": {"profile", "extensions"} from ansible-core 2.19 on, else null,
#                        or {"script": [interpreter words], "args": "json"|"words"}
#                        for a WANT_JSON script ([] for a binary module) or an
#                        old-style one (its arguments as key=value words),
#                        which "zip" then holds and "import" is ""}
#             {"ok": false, "why": "..."}
#   request:  {"plugins": {"filter": [dirs], "test": [dirs]},
#              "named": {"filter": [fqcns], "test": [fqcns]}}
#   answer:   {"ok": true, "filter": [names], "test": [names]}
#   request:  {"call": "filter"|"test", "name": n, "args": [...], "kwargs": {...}}
#   answer:   {"ok": true, "value": ...}
#   request:  {"lookups": [names]}
#   answer:   {"ok": true, "lookup": [the names ansible-core has]}
#   request:  {"lookup": n, "terms": [...], "kwargs": {...}, "variables": {...}, "basedir": dir}
#   answer:   {"ok": true, "value": [what the plugin returned]}

import atexit
import json
import os
import shutil
import sys
import tempfile


def _claim_stdout():
    # Ansible's Display (and any stray print in a plugin) writes to fd 1;
    # a single such line would desynchronise the protocol. Keep a private
    # duplicate for answers and send everything else to stderr.
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


PROTO = _claim_stdout()


def send(obj):
    PROTO.write(json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n")
    PROTO.flush()


def one_line(text):
    return " ".join(str(text).split())


# AnsiballZ keeps a per-process cache of built payloads keyed only by the
# module's import name, so two roles' `library/my_mod` would share one
# entry. Give ansible-core a private local temp that is emptied before
# every build (and removed at exit) instead of the user's ~/.ansible/tmp.
_LOCAL_TMP = tempfile.mkdtemp(prefix="nodeprov-ansible-")
atexit.register(shutil.rmtree, _LOCAL_TMP, True)
os.environ["ANSIBLE_LOCAL_TEMP"] = _LOCAL_TMP
os.environ.setdefault("ANSIBLE_NOCOLOR", "1")

try:
    import ansible.release
    from ansible import constants as C
    from ansible.errors import AnsibleError
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins import loader as plugin_loader
    from ansible.template import Templar
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
except Exception as e:  # ImportError, or a broken ansible.cfg raising at import
    send({"ready": False, "why": one_line("cannot import ansible-core: %s: %s" % (type(e).__name__, e))})
    sys.exit(0)

import ast
import importlib.util
import inspect
import base64
import hashlib
import io
import zipfile

VERSION = ansible.release.__version__
ACTION_DIR = os.path.dirname(os.path.realpath(plugin_loader.__file__)) + os.sep + "action"

# Action plugins that only hand the task to the module on the host, as the
# generic `normal` one does; any other means work on the controller.
# Action plugins that only hand the task to the module: dnf's picks dnf5
# instead where the host has it, and runs the dnf module itself where dnf 4
# is (EL 8 and 9).
PASS_THROUGH_ACTIONS = {os.path.join(ACTION_DIR, n) for n in ("normal.py", "command.py", "dnf.py")}

# Names whose "modules" are documentation stubs: the executor acts on them
# (includes, imports, meta) and never sends them to a host.
EXECUTOR_DIRECTIVES = frozenset(
    n for attr in ("_ACTION_META", "_ACTION_ALL_PROPER_INCLUDE_IMPORT_TASKS",
                   "_ACTION_ALL_PROPER_INCLUDE_IMPORT_ROLES", "_ACTION_IMPORT_PLAYBOOK")
    for n in getattr(C, attr, ()))

# Fixed zip entry time: modify_module stamps entries with the current time,
# which would make every build a different content-addressed payload.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class Refusal(Exception):
    pass


class State:
    collections_paths = None  # what the collection finder was built with
    dirs = None               # the library folders the plugin loaders hold
    jinja = None              # the Jinja environment plugins that ask for one get
    cache = {}


def use_collections_paths(paths):
    # The collection finder is process-global and only takes its paths when
    # built; rebuild it (and forget what was loaded through it) when a
    # request brings a different list, so an answer depends on the request
    # alone and not on those before it.
    if State.collections_paths == paths:
        return
    if State.collections_paths is None:
        plugin_loader.init_plugin_loader(list(paths))
    else:
        _AnsibleCollectionFinder._remove()
        for name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.")]:
            del sys.modules[name]
        _AnsibleCollectionFinder(list(paths) + C.COLLECTIONS_PATHS, C.COLLECTIONS_SCAN_SYS_PATH)._install()
        clear_loader_caches()
    State.collections_paths = paths


def clear_loader_caches():
    for _name, obj in plugin_loader.get_all_plugin_loaders():
        obj._clear_caches()


def use_library_dirs(dirs):
    # Ansible adds every role's and the playbook's plugin folders to its
    # loaders for the whole run; here they are set per request so that two
    # roles' modules of one name never shadow each other. A `library`
    # folder's siblings are what Ansible adds with it: `module_utils` (a
    # custom module's imports) and `action_plugins` (which would take the
    # task off the host).
    if State.dirs == dirs:
        return
    wanted = {"module_loader": [], "module_utils_loader": [], "action_loader": []}
    for d in dirs:
        wanted["module_loader"].append(d)
        if os.path.basename(d.rstrip(os.sep)) == "library":
            parent = os.path.dirname(d.rstrip(os.sep))
            wanted["module_utils_loader"].append(os.path.join(parent, "module_utils"))
            wanted["action_loader"].append(os.path.join(parent, "action_plugins"))
    for loader_name, paths in wanted.items():
        loader = getattr(plugin_loader, loader_name)
        loader._extra_dirs = []
        loader._clear_caches()
        for p in paths:
            if os.path.isdir(p):
                loader.add_directory(p)
    State.dirs = dirs


def with_default_collection(collections):
    # As a task's `collections:` keyword does: a non-empty list always falls
    # back to the builtin/legacy names.
    collections = list(collections)
    if collections and "ansible.builtin" not in collections and "ansible.legacy" not in collections:
        collections.append("ansible.legacy")
    return collections or None


def find_module(name, collections):
    # Same order as ActionBase._configure_module for an ssh/local host:
    # a `.py` module first, then any executable of that name.
    ctx = None
    for mod_type in (".py", ""):
        ctx = plugin_loader.module_loader.find_plugin_with_context(name, mod_type, collection_list=collections)
        if ctx.resolved and ctx.plugin_resolved_path:
            return ctx
    return ctx


def is_windows_module(path):
    """A PowerShell module: the `.ps1` itself, or the `.py` beside one that
    only documents it (a Python module imports module_utils)."""
    stem, ext = os.path.splitext(path)
    if ext == ".ps1":
        return True
    if ext != ".py" or not os.path.exists(stem + ".ps1"):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        return "module_utils" not in f.read()


def action_handler(name, collections, module_ctx):
    # Mirrors TaskExecutor._get_action_handler_with_module_context.
    module_collection, _sep, module_name = name.rpartition(".")
    module_prefix = module_name.split("_")[0]
    network_action = "%s.%s" % (module_collection, module_prefix) if module_collection else module_prefix
    action_loader = plugin_loader.action_loader
    if module_ctx is not None and module_ctx.resolved and module_ctx.action_plugin:
        return module_ctx.action_plugin, collections
    if action_loader.has_plugin(name, collection_list=collections):
        return name, collections
    if module_prefix in C.NETWORK_GROUP_MODULES and action_loader.has_plugin(network_action, collection_list=collections):
        return network_action, collections
    return "ansible.legacy.normal", None


def redirected_module(name, collections):
    # The module named by the end of the action plugin's redirects, when
    # that plugin only hands the task to its module.
    ctx = plugin_loader.action_loader.find_plugin_with_context(name, collection_list=collections)
    if not ctx.resolved or len(ctx.redirect_list) < 2:
        return None
    if os.path.realpath(ctx.plugin_resolved_path) not in PASS_THROUGH_ACTIONS:
        return None
    return ctx.redirect_list[-1]


def refuse_controller_action(name, collections, module_ctx):
    handler, handler_collections = action_handler(name, collections, module_ctx)
    ctx = plugin_loader.action_loader.find_plugin_with_context(handler, collection_list=handler_collections)
    path = ctx.plugin_resolved_path if ctx.resolved else None
    if path and os.path.realpath(path) in PASS_THROUGH_ACTIONS:
        return
    raise Refusal("Ansible runs '%s' through its controller-side action plugin, which nodeprov does not run" % name)


def modify_module(leaf, path):
    """ansible-core's own AnsiballZ build of the module at `path`, as
    (wrapper text, style, shebang). Two API generations: up to 2.18 it is
    positional and returns a tuple; from 2.19 it is keyword-only and
    returns a _BuiltModule."""
    # remote_is_local takes the interpreter from ansible_playbook_python, so
    # no interpreter discovery is asked for: the shebang is discarded, the
    # host's runner picks its own Python.
    options = dict(task_vars={"ansible_playbook_python": "/usr/bin/python3"},
                   module_compression="ZIP_DEFLATED", remote_is_local=True)
    templar = Templar(loader=DataLoader())
    first = next(iter(inspect.signature(module_common.modify_module).parameters.values()))
    if first.kind is inspect.Parameter.KEYWORD_ONLY:
        built = module_common.modify_module(module_name=leaf, module_path=path, module_args={},
                                            templar=templar, **options)
        data, style, shebang = built.b_module_data, built.module_style, built.shebang
    else:
        data, style, shebang = module_common.modify_module(leaf, path, {}, templar, **options)
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    return text, style, shebang


def read_wrapper(text):
    """The payload zip, the module's import name and, from 2.19, what the
    payload's own loader takes besides the arguments, from the wrapper's
    source; None where the wrapper is of neither generation.

    Up to 2.18 the zip is the constant ZIPDATA inside _ansiballz_main() and
    the module is run by runpy.run_module(mod_name=...). From 2.19 the
    wrapper calls _ansiballz_main(zip_data=..., module_fqn=..., profile=...,
    extensions=..., ...), and module_utils' _ansiballz loader runs it with
    that profile and those extensions."""
    tree = ast.parse(text)
    zipdata = fqn = loader = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_ansiballz_main" and node.keywords:
            kw = {k.arg: k.value for k in node.keywords}
            if not {"zip_data", "module_fqn", "profile", "extensions"} <= set(kw):
                return None
            zipdata = ast.literal_eval(kw["zip_data"])
            fqn = ast.literal_eval(kw["module_fqn"])
            loader = {"profile": ast.literal_eval(kw["profile"]),
                      "extensions": ast.literal_eval(kw["extensions"])}
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "ZIPDATA" for t in node.targets):
            zipdata = ast.literal_eval(node.value)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "run_module"
              and getattr(node.func.value, "id", None) == "runpy" and fqn is None):
            names = [k.value for k in node.keywords if k.arg == "mod_name"]
            fqn = ast.literal_eval(names[0]) if names else None
    if not isinstance(zipdata, str) or not isinstance(fqn, str):
        return None
    return base64.b64decode(zipdata), fqn, loader


def build_zip(name, ctx):
    path = ctx.plugin_resolved_path
    # A library module has no import name of its own; Ansible packs it as
    # ansible.modules.<name given in the task>. The leaf name keeps one
    # payload whether the task said `my_mod` or `ansible.legacy.my_mod`.
    leaf = name.rpartition(".")[2]
    shutil.rmtree(os.path.join(C.DEFAULT_LOCAL_TMP, "ansiballz_cache"), ignore_errors=True)
    text, style, shebang = modify_module(leaf, path)
    if style == "new" and shebang == "#!powershell":
        style = "powershell"
    if style == "new" and "_ANSIBALLZ_WRAPPER = True" not in text:
        style = "new (JSON-args, not AnsibleModule)"
    if style in ("non_native_want_json", "binary", "old"):
        # The file itself, run as Ansible runs it: by the interpreter a
        # script's first line names (an old-style one without it as it is),
        # a binary as it is, with the path of a file of its arguments: JSON,
        # or an old-style module's key=value words.
        interpreter = (shebang or "").strip()[2:].split()
        args = "words" if style == "old" else "json"
        if not interpreter and style == "non_native_want_json":
            raise Refusal("'%s' (%s) is a WANT_JSON module without a #! line" % (name, path))
        if style == "binary":
            # Ansible sends a binary module's own file, as it is.
            with open(path, "rb") as f:
                return f.read(), "", {"script": [], "args": args}
        return text.encode("utf-8", "surrogateescape"), "", {"script": interpreter, "args": args}
    if style != "new":
        raise Refusal("'%s' (%s) is a module of style '%s'; nodeprov runs AnsibleModule-based Python modules, "
                      "WANT_JSON, old-style and binary modules" % (name, path, style))
    read = read_wrapper(text)
    if read is None:
        raise Refusal("ansible-core %s built an AnsiballZ wrapper for '%s' that nodeprov cannot read" % (VERSION, name))
    zip_bytes, fqn, loader = read
    return normalise_zip(zip_bytes), fqn, loader


def option_names(ctx):
    """The parameters the module documents, aliases included; None when
    its documentation cannot be read (then nothing is assumed of them)."""
    try:
        from ansible.utils.plugin_docs import get_docstring
        fqcn = ctx.resolved_fqcn or ""
        collection = fqcn.rpartition(".")[0] if fqcn.count(".") >= 2 else None
        doc = get_docstring(ctx.plugin_resolved_path, plugin_loader.fragment_loader,
                            collection_name=collection, is_module=True)[0]
        options = (doc or {}).get("options")
        if not isinstance(options, dict):
            return None
    except Exception:
        return None
    names = set(options)
    for spec in options.values():
        names.update(a for a in (spec or {}).get("aliases") or [] if isinstance(a, str))
    return sorted(names)


def normalise_zip(raw):
    # Same entries and bytes, in name order, with one fixed time and mode:
    # the payload's digest then depends only on the code it carries.
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in sorted(src.namelist()):
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            dst.writestr(info, src.read(name))
    return out.getvalue()


def string_list(req, key):
    value = req.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise Refusal("'%s' must be a list of non-empty strings" % key)
    return value


class Plugins:
    # name -> callable, the first found winning, as in Ansible's search order.
    filter = {}
    test = {}


def load_plugins(kind, dirs):
    """Loads the FilterModule/TestModule classes of each .py file in dirs,
    as Ansible's plugin loader does for a play's filter_plugins/ and
    test_plugins/, and answers the names they provide."""
    table = getattr(Plugins, kind)
    cls_name, method = {"filter": ("FilterModule", "filters"), "test": ("TestModule", "tests")}[kind]
    names = []
    for folder in dirs:
        if not os.path.isdir(folder):
            continue
        for entry in sorted(os.listdir(folder)):
            path = os.path.join(folder, entry)
            if not entry.endswith(".py") or entry.startswith("_") or not os.path.isfile(path):
                continue
            # The module name Ansible's loader gives a legacy filter or test
            # file, which a plugin may read (__name__).
            stem = os.path.splitext(entry)[0]
            unique = "ansible.plugins.%s.%s_%d" % (kind, stem, abs(hash(path)))
            spec = importlib.util.spec_from_file_location(unique, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[unique] = module
            try:
                spec.loader.exec_module(module)
                provider = getattr(module, cls_name, None)
                provided = getattr(provider(), method)() if provider else {}
            except Exception as e:
                raise Refusal("%s plugin %s does not load: %s: %s" % (kind, path, type(e).__name__, e))
            for name, fn in provided.items():
                if name not in table:
                    table[name] = fn
                    names.append(name)
    return names


def add_lookup_dirs(dirs):
    """The playbook's and its roles' lookup_plugins/, which Ansible's
    lookup loader searches for the whole run."""
    for folder in dirs:
        if os.path.isdir(folder):
            plugin_loader.lookup_loader.add_directory(folder)


def has_lookups(names):
    """The lookup plugins among `names` that ansible-core has."""
    use_collections_paths(())
    found = []
    for name in names:
        try:
            if plugin_loader.lookup_loader.has_plugin(name):
                found.append(name)
        except Exception:
            pass
    return found


def run_lookup(req):
    """Runs a lookup plugin on the controller as Ansible's templar does for
    one task: with the task's variables (its search path among them), its
    terms and keyword arguments; answers the plugin's list."""
    name = req.get("lookup")
    if not isinstance(name, str):
        raise Refusal("'lookup' is a plugin name")
    variables = req.get("variables") or {}
    terms = req.get("terms") or []
    kwargs = req.get("kwargs") or {}
    use_collections_paths(())
    loader = DataLoader()
    basedir = req.get("basedir")
    if isinstance(basedir, str):
        loader.set_basedir(basedir)
    templar = Templar(loader=loader, variables=variables)
    plugin = plugin_loader.lookup_loader.get(name, loader=loader, templar=templar)
    if plugin is None:
        raise Refusal("ansible-core has no lookup plugin '%s'" % name)
    try:
        ran = plugin.run(terms, variables=variables, **kwargs)
    except AnsibleError as e:
        raise Refusal("lookup '%s': %s" % (name, one_line(e)))
    return {"ok": True, "value": json.loads(json.dumps(list(ran or []), default=plain))}


def load_named(kind, names):
    """Loads plugins by the names templates use them by: a collection's full
    name (community.general.counter), ansible.builtin's by either name
    (from_yaml, ansible.builtin.from_yaml), and Jinja's own that Ansible
    lists with them (center); answers those found, loaded now or before."""
    if not names:
        return []
    use_collections_paths(())
    loader = {"filter": plugin_loader.filter_loader, "test": plugin_loader.test_loader}[kind]
    table = getattr(Plugins, kind)
    found = []
    for name in names:
        if name not in table:
            fn = plugin_function(loader, kind, name)
            if fn is None:
                continue
            table[name] = fn
        found.append(name)
    return found


def plugin_function(loader, kind, name):
    try:
        plugin = loader.get(name)
    except Exception:
        plugin = None
    if plugin is not None:
        return plugin.j2_function
    if "." in name:
        return None
    import jinja2.defaults
    return (jinja2.defaults.DEFAULT_FILTERS if kind == "filter" else jinja2.defaults.DEFAULT_TESTS).get(name)


def plain(value):
    # Collections JSON lacks cross as lists. A date or time crosses as the
    # text Jinja prints for it; any use beyond printing then fails in
    # nodeprov, loudly. Anything else cannot cross, and says so.
    import datetime
    if isinstance(value, (set, frozenset, tuple)) or hasattr(value, "__next__"):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return str(value)
    raise TypeError("a %s cannot cross to nodeprov as JSON" % type(value).__name__)


def call_plugin(req):
    kind = req.get("call")
    if kind not in ("filter", "test"):
        raise Refusal("'call' is 'filter' or 'test'")
    name = req.get("name")
    fn = getattr(Plugins, kind).get(name)
    if fn is None:
        raise Refusal("no %s plugin named '%s' was loaded" % (kind, name))
    args = req.get("args") or []
    kwargs = req.get("kwargs") or {}
    value = fn(*(jinja_leading_args(kind, name, fn) + list(args)), **kwargs)
    return {"ok": True, "value": json.loads(json.dumps(value, default=plain))}


def jinja_leading_args(kind, name, fn):
    """What Jinja passes a filter or test before its value: the environment
    or evaluation context it asks for with @pass_environment or
    @pass_eval_context. One that wants the template's whole context cannot
    run outside the template, and says so."""
    try:
        from jinja2.utils import _PassArg
        wants = _PassArg.from_obj(fn)
    except Exception:
        return []
    if wants is None:
        return []
    import jinja2
    env = State.jinja or jinja2.Environment()
    State.jinja = env
    if wants is _PassArg.environment:
        return [env]
    if wants is _PassArg.eval_context:
        from jinja2.nodes import EvalContext
        return [EvalContext(env)]
    raise Refusal("the %s '%s' reads the whole template context, which cannot cross to ansible-core" % (kind, name))


def handle(req):
    if not isinstance(req, dict):
        raise Refusal("a request is a JSON object")
    if "plugins" in req:
        dirs = req["plugins"] if isinstance(req["plugins"], dict) else {}
        named = req.get("named") if isinstance(req.get("named"), dict) else {}
        add_lookup_dirs(string_list(dirs, "lookup"))
        return {
            "ok": True,
            "filter": load_plugins("filter", string_list(dirs, "filter"))
            + load_named("filter", string_list(named, "filter")),
            "test": load_plugins("test", string_list(dirs, "test"))
            + load_named("test", string_list(named, "test")),
        }
    if "call" in req:
        return call_plugin(req)
    if "lookup" in req:
        return run_lookup(req)
    if "lookups" in req:
        return {"ok": True, "lookup": has_lookups(string_list(req, "lookups"))}
    name = req.get("module")
    if not isinstance(name, str) or not name.strip():
        raise Refusal("'module' must be a non-empty string")
    name = name.strip()
    library = tuple(os.path.realpath(os.path.expanduser(p)) for p in string_list(req, "library"))
    collections = tuple(string_list(req, "collections"))
    paths = tuple(os.path.abspath(os.path.expanduser(p)) for p in string_list(req, "collections_paths"))

    # The task's own arguments make Ansible's action plugin hand it to the
    # module untouched (copy and unarchive with remote_src: true).
    module_only = req.get("module_only") is True
    key = (name, library, collections, paths, module_only)
    if key in State.cache:
        return State.cache[key]

    use_collections_paths(paths)
    use_library_dirs(library)
    search = with_default_collection(collections)

    if name in EXECUTOR_DIRECTIVES:
        raise Refusal("'%s' is handled by Ansible's task executor itself; it is not a module run on the host" % name)
    try:
        ctx = find_module(name, search)
        found = ctx is not None and ctx.resolved and ctx.plugin_resolved_path
        if not found:
            # A module gone whose action still redirects (`yum` to `dnf`
            # from 2.17): Ansible runs the action's module.
            target = redirected_module(name, search)
            ctx = find_module(target, search) if target else ctx
            found = ctx is not None and ctx.resolved and ctx.plugin_resolved_path
        if not module_only:
            refuse_controller_action(name, search, ctx if found else None)
    except AnsibleError as e:  # removed (tombstoned) plugins and broken redirects raise
        raise Refusal("'%s' cannot be used: %s" % (name, e))
    if not found:
        raise Refusal("no module named '%s' in ansible-core %s, the collections paths (%s) or the library folders (%s)"
                      % (name, VERSION, ", ".join(paths) or "none given", ", ".join(library) or "none given"))

    windows = is_windows_module(ctx.plugin_resolved_path)
    if windows:
        # Ansible finds it as nodeprov does and fails it on a POSIX host
        # when the task runs: nothing is packed for it.
        zip_bytes, import_name, loader = b"", "", None
    else:
        zip_bytes, import_name, loader = build_zip(name, ctx)
    expected = import_name.replace(".", "/") + ".py"
    if import_name and expected not in zipfile.ZipFile(io.BytesIO(zip_bytes)).namelist():
        raise Refusal("the payload built for '%s' lacks %s" % (name, expected))
    answer = {
        "ok": True,
        "options": option_names(ctx),
        "fqcn": ctx.resolved_fqcn,
        "import": import_name,
        "path": os.path.realpath(ctx.plugin_resolved_path),
        "zip": base64.b64encode(zip_bytes).decode("ascii"),
        "sha256": hashlib.sha256(zip_bytes).hexdigest(),
        "ansible_version": VERSION,
        "loader": loader,
        "windows": windows,
    }
    State.cache[key] = answer
    return answer


def main():
    send({"ready": True, "ansible_version": VERSION})
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            break
        try:
            answer = handle(json.loads(line.decode("utf-8")))
        except Refusal as e:
            answer = {"ok": False, "why": one_line(e)}
        except Exception as e:
            answer = {"ok": False, "why": one_line("%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__)}
        send(answer)


main()
