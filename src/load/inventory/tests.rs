use std::fs;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tempfile::TempDir;

use super::*;
use crate::base::diag::{Diagnostic, Source};

fn try_ini(text: &str) -> Result<Inventory, Diagnostic> {
    let mut inv = Inventory::empty();
    let source = Arc::new(Source {
        name: "inv.ini".into(),
        text: text.into(),
    });
    ini::parse(&mut inv, source)?;
    inv.finish();
    Ok(inv)
}

fn ini(text: &str) -> Inventory {
    try_ini(text).unwrap_or_else(|e| panic!("{e}"))
}

fn ini_err(text: &str) -> Diagnostic {
    try_ini(text).expect_err("should fail")
}

fn try_yml(text: &str) -> Result<Inventory, Diagnostic> {
    let mut inv = Inventory::empty();
    yaml::parse(&mut inv, &crate::load::yaml::load_str(text, "inv.yml")?)?;
    inv.finish();
    Ok(inv)
}

fn yml(text: &str) -> Inventory {
    try_yml(text).unwrap_or_else(|e| panic!("{e}"))
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn var(inv: &Inventory, host: &str, name: &str) -> Value {
    inv.host_vars(host)
        .get(name)
        .cloned()
        .unwrap_or(Value::Null)
}

fn sel(inv: &Inventory, pattern: &str) -> Vec<String> {
    inv.select(pattern)
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
}

const FLEET: &str = "\
bastion
[gpu]
gpu-[01:04]
[login]
login-01
[broken]
gpu-03
[fleet:children]
gpu
login
";

// ---- INI ----

#[test]
fn ini_sections_children_and_ungrouped() {
    let inv = ini(FLEET);
    assert_eq!(
        inv.hosts(),
        ["bastion", "gpu-01", "gpu-02", "gpu-03", "gpu-04", "login-01"]
    );
    let groups = inv.groups();
    assert_eq!(
        groups["fleet"],
        ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "login-01"]
    );
    assert_eq!(groups["broken"], ["gpu-03"]);
    assert_eq!(groups["ungrouped"], ["bastion"]);
    assert_eq!(groups["all"].len(), 6);
    let names: Vec<&String> = groups.keys().collect();
    assert_eq!(
        names,
        ["all", "broken", "fleet", "gpu", "login", "ungrouped"]
    );
}

#[test]
fn ini_host_vars_are_typed_like_literal_eval_but_quotes_keep_strings() {
    let inv = ini(
        "h a=1 b=True c=\"1\" d='x y' e=10.0.0.1 f=[0,1] g=None h=0644 # note\n\
         web:2222 ansible_host=10.0.0.5\n",
    );
    let vars = inv.host_vars("h");
    for (key, want) in [
        ("a", json!(1)),
        ("b", json!(true)),
        ("c", json!("1")),
        ("d", json!("x y")),
        ("e", json!("10.0.0.1")),
        ("f", json!([0, 1])),
        ("g", json!(null)),
        ("h", json!("0644")),
    ] {
        assert_eq!(vars[key], want, "{key}");
    }
    assert_eq!(var(&inv, "web", "ansible_port"), json!(2222));
    assert_eq!(var(&inv, "web", "ansible_host"), json!("10.0.0.5"));
}

#[test]
fn ini_group_vars_sections_and_comments() {
    let inv = ini(
        "; a comment\n[gpu]\ngpu-01\n[gpu:vars]\nansible_user = deploy  # who\n\
         port=22\nmsg=\"a # b\"\nflag=False\n[all:vars]\nntp=time.example.com\n",
    );
    let vars = inv.host_vars("gpu-01");
    assert_eq!(vars["ansible_user"], json!("deploy"));
    assert_eq!(vars["port"], json!(22));
    assert_eq!(vars["msg"], json!("a # b"));
    assert_eq!(vars["flag"], json!(false));
    assert_eq!(vars["ntp"], json!("time.example.com"));
}

#[test]
fn ini_children_may_come_before_their_section() {
    let inv = ini("[fleet:children]\ngpu\n[gpu:vars]\nx=1\n[gpu]\ngpu-01\n");
    assert_eq!(inv.groups()["fleet"], ["gpu-01"]);
    assert_eq!(var(&inv, "gpu-01", "x"), json!(1));
}

#[test]
fn ini_host_named_again_merges_vars_and_leaves_ungrouped() {
    let inv = ini("h a=1\n[gpu]\nh b=2\n");
    assert_eq!(inv.groups()["ungrouped"], Vec::<String>::new());
    assert_eq!(var(&inv, "h", "a"), json!(1));
    assert_eq!(var(&inv, "h", "b"), json!(2));
}

#[test]
fn localhost_is_local_unless_set() {
    let inv = ini("localhost\nother ansible_connection=ssh\n[x]\nlocalhost ansible_user=me\n");
    assert_eq!(var(&inv, "localhost", "ansible_connection"), json!("local"));
    let inv = ini("localhost ansible_connection=ssh\n");
    assert_eq!(var(&inv, "localhost", "ansible_connection"), json!("ssh"));
    let inv = ini("[all:vars]\nansible_connection=docker\n[x]\nlocalhost\n");
    assert_eq!(
        var(&inv, "localhost", "ansible_connection"),
        json!("docker")
    );
}

#[test]
fn ini_unknown_section_type_points_at_the_suffix() {
    let err = ini_err("[gpu]\ngpu-01\n\n[gpu:varz]\nx=1\n");
    assert_eq!(err.span.location(), "inv.ini:4:6");
    assert_eq!(err.message, "section [gpu:varz] has unknown type 'varz'");
    assert_eq!(err.hint.as_deref(), Some("did you mean [gpu:vars]?"));
    assert!(err.to_string().contains(" 4 | [gpu:varz]"), "{err}");
}

#[test]
fn ini_malformed_section_header() {
    let err = ini_err("[gpu]\n  [gpu servers]\n");
    assert_eq!(err.span.location(), "inv.ini:2:3");
    assert!(err.message.contains("invalid section header"), "{err}");
}

#[test]
fn ini_undefined_child_is_reported_where_named() {
    let err = ini_err("[gpu]\ngpu-01\n[fleet:children]\ngpu\n  gpus\n");
    assert_eq!(err.span.location(), "inv.ini:5:3");
    assert_eq!(
        err.message,
        "[fleet:children] includes undefined group 'gpus'"
    );
    assert_eq!(err.hint.as_deref(), Some("did you mean 'gpu'?"));
}

#[test]
fn ini_vars_for_undefined_group() {
    let err = ini_err("[gpu]\ngpu-01\n[gpux:vars]\nx=1\n");
    assert_eq!(err.span.location(), "inv.ini:3:1");
    assert!(err.message.contains("[gpux:vars]"), "{err}");
}

#[test]
fn ini_malformed_key_value_points_at_the_word() {
    let err = ini_err("[gpu]\ngpu-01 ansible_user=deploy oops\n");
    assert_eq!(err.span.location(), "inv.ini:2:28");
    assert_eq!(err.message, "expected key=value host variable, got 'oops'");
    let err = ini_err("[gpu:vars]\nnovalue\n[gpu]\n");
    assert_eq!(err.span.location(), "inv.ini:2:1");
    let err = ini_err("[gpu:vars]\n =1\n[gpu]\n");
    assert_eq!(err.span.location(), "inv.ini:2:2");
}

#[test]
fn ini_quote_range_and_cycle_errors() {
    let err = ini_err("h a='open\n");
    assert_eq!(err.span.location(), "inv.ini:1:5");
    let err = ini_err("[gpu]\ngpu-[04:01]\n");
    assert_eq!(err.span.location(), "inv.ini:2:1");
    assert!(err.message.contains("begin <= end"), "{err}");
    let err = ini_err("[a:children]\nb\n[b:children]\na\n");
    assert_eq!(err.span.location(), "inv.ini:4:1");
    assert!(err.message.contains("cycle"), "{err}");
    let err = ini_err("[a:children]\nb c\n[b]\n");
    assert!(err.message.contains("invalid group name"), "{err}");
}

// ---- YAML ----

const FLEET_YAML: &str = "\
all:
  vars:
    ntp: time.example.com
  hosts:
    bastion:
      ansible_port: 2222
  children:
    gpu:
      hosts:
        gpu-[01:02]:
        gpu-03: {rack: 7}
      vars:
        ansible_user: deploy
    fleet:
      children:
        gpu:
        login:
          hosts: login-01
broken:
  hosts:
    gpu-03:
";

#[test]
fn yaml_groups_hosts_children_and_vars() {
    let inv = yml(FLEET_YAML);
    let all = inv.list_json()["all"]["children"].clone();
    assert_eq!(all, json!(["ungrouped", "gpu", "fleet", "broken"]));
    assert_eq!(
        inv.hosts(),
        ["bastion", "gpu-01", "gpu-02", "gpu-03", "login-01"]
    );
    let groups = inv.groups();
    assert_eq!(groups["fleet"], ["gpu-01", "gpu-02", "gpu-03", "login-01"]);
    assert_eq!(groups["broken"], ["gpu-03"]);
    assert_eq!(groups["ungrouped"], ["bastion"]);
    assert_eq!(var(&inv, "gpu-03", "rack"), json!(7));
    assert_eq!(var(&inv, "gpu-01", "ansible_user"), json!("deploy"));
    assert_eq!(var(&inv, "login-01", "ntp"), json!("time.example.com"));
    assert_eq!(var(&inv, "bastion", "ansible_port"), json!(2222));
}

#[test]
fn yaml_hosts_as_a_list_is_an_error_at_the_node() {
    let err = try_yml("all:\n  children:\n    gpu:\n      hosts:\n        - gpu-01\n").unwrap_err();
    assert_eq!(err.span.location(), "inv.yml:5:9");
    assert_eq!(
        err.message,
        "`hosts` of group 'gpu' must be a mapping, found a list"
    );
}

#[test]
fn yaml_structure_errors() {
    let err = try_yml("gpu:\n  host:\n    gpu-01:\n").unwrap_err();
    assert_eq!(err.span.location(), "inv.yml:2:3");
    assert_eq!(err.hint.as_deref(), Some("did you mean 'hosts'?"));
    let err = try_yml("gpu: [a]\n").unwrap_err();
    assert_eq!(err.span.location(), "inv.yml:1:6");
    let err = try_yml("- gpu-01\n").unwrap_err();
    assert!(err.message.contains("found a list"), "{err}");
    let err = try_yml("gpu:\n  hosts:\n    gpu-01: 3\n").unwrap_err();
    assert_eq!(err.span.location(), "inv.yml:3:13");
    let err = try_yml("gpu:\n  vars: [1]\n").unwrap_err();
    assert_eq!(err.span.location(), "inv.yml:2:9");
    let err = try_yml("plugin: aws_ec2\n").unwrap_err();
    assert!(err.message.contains("plugin"), "{err}");
}

// ---- variable precedence ----

#[test]
fn deeper_groups_win_then_priority_then_name_then_host() {
    let inv = ini("[parent:children]\nchild\n[child]\nh\n[aaa]\nh\n[zzz]\nh\n\
         [all:vars]\nv=all\nonly_all=1\n[parent:vars]\nv=parent\n[child:vars]\nv=child\n\
         [aaa:vars]\ns=aaa\n[zzz:vars]\ns=zzz\n");
    assert_eq!(var(&inv, "h", "v"), json!("child"));
    assert_eq!(var(&inv, "h", "s"), json!("zzz"));
    assert_eq!(var(&inv, "h", "only_all"), json!(1));
    let inv =
        ini("[aaa]\nh\n[zzz]\nh\n[aaa:vars]\ns=aaa\nansible_group_priority=5\n[zzz:vars]\ns=zzz\n");
    assert_eq!(var(&inv, "h", "s"), json!("aaa"));
    let inv = ini("[g]\nh v=host\n[g:vars]\nv=group\n");
    assert_eq!(var(&inv, "h", "v"), json!("host"));
}

#[test]
fn vars_files_override_inventory_vars_as_in_ansible() {
    let dir = TempDir::new().unwrap();
    write(
        dir.path(),
        "hosts.ini",
        "[parent:children]\ngpu\n[gpu]\ngpu-01 h=inline\ngpu-02\n\
         [gpu:vars]\ng=inline\nfrom_child=inline\n[all:vars]\na=inline\n",
    );
    write(dir.path(), "group_vars/all.yml", "a: file\n");
    write(dir.path(), "group_vars/parent", "from_child: parent-file\n");
    write(
        dir.path(),
        "group_vars/gpu/10-first.yml",
        "g: first\nx: 1\n",
    );
    write(dir.path(), "group_vars/gpu/20-second.yaml", "g: second\n");
    write(dir.path(), "group_vars/gpu/notes.txt", "not: loaded\n");
    write(
        dir.path(),
        "group_vars/gpu.yml",
        "g: shadowed-by-the-folder\n",
    );
    write(
        dir.path(),
        "host_vars/gpu-01.yml",
        "h: file\ng: host-file\n",
    );
    write(dir.path(), "host_vars/gpu-02.yaml", "");
    let inv = Inventory::load(&dir.path().join("hosts.ini")).unwrap();
    assert_eq!(var(&inv, "gpu-02", "a"), json!("file"));
    assert_eq!(var(&inv, "gpu-02", "g"), json!("second"));
    assert_eq!(var(&inv, "gpu-02", "x"), json!(1));
    assert_eq!(var(&inv, "gpu-02", "not"), json!(null));
    // Any group_vars file beats any group's inventory vars, even a child's.
    assert_eq!(var(&inv, "gpu-02", "from_child"), json!("parent-file"));
    assert_eq!(var(&inv, "gpu-01", "h"), json!("file"));
    assert_eq!(var(&inv, "gpu-01", "g"), json!("host-file"));
}

#[test]
fn bad_vars_file_is_a_diagnostic_in_that_file() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "inv.yml", "gpu:\n  hosts:\n    gpu-01:\n");
    write(dir.path(), "host_vars/gpu-01.yml", "- a\n");
    let err = Inventory::load(&dir.path().join("inv.yml")).unwrap_err();
    assert!(err.span.location().ends_with("gpu-01.yml:1:1"), "{err}");
}

#[test]
fn magic_vars() {
    let inv =
        ini("[gpu]\ngpu-01.example.com\n[broken]\ngpu-01.example.com\nlone\n[x:children]\ngpu\n");
    let vars = inv.host_vars("gpu-01.example.com");
    assert_eq!(vars["inventory_hostname"], json!("gpu-01.example.com"));
    assert_eq!(vars["inventory_hostname_short"], json!("gpu-01"));
    assert_eq!(vars["group_names"], json!(["broken", "gpu", "x"]));
    assert_eq!(vars["groups"]["all"], json!(["gpu-01.example.com", "lone"]));
    assert_eq!(vars["groups"]["ungrouped"], json!([]));
    let implicit = ini("[all:vars]\nv=1\n").host_vars("localhost");
    assert_eq!(implicit["v"], json!(1));
    assert_eq!(implicit["ansible_connection"], json!("local"));
    assert_eq!(implicit["group_names"], json!([]));
}

// ---- patterns ----

#[test]
fn patterns_names_groups_and_set_operations() {
    let inv = ini(FLEET);
    assert_eq!(sel(&inv, "all").len(), 6);
    assert_eq!(sel(&inv, "*"), inv.hosts());
    assert_eq!(sel(&inv, "login-01"), ["login-01"]);
    assert_eq!(sel(&inv, "login"), ["login-01"]);
    assert_eq!(sel(&inv, "login:gpu-02"), ["gpu-02", "login-01"]);
    assert_eq!(
        sel(&inv, "login-01,gpu-02,gpu"),
        ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "login-01"]
    );
    assert_eq!(sel(&inv, "fleet:&broken"), ["gpu-03"]);
    assert_eq!(sel(&inv, "gpu:!broken"), ["gpu-01", "gpu-02", "gpu-04"]);
    assert_eq!(sel(&inv, "!fleet"), ["bastion"]);
    assert_eq!(
        sel(&inv, "!broken:gpu:&fleet"),
        ["gpu-01", "gpu-02", "gpu-04"]
    );
    assert_eq!(sel(&inv, "ungrouped"), ["bastion"]);
    assert!(sel(&ini("[broken]\n"), "broken").is_empty());
    assert!(sel(&ini(""), "all").is_empty());
}

#[test]
fn patterns_globs_ranges_and_regexes() {
    let inv = ini("[gpu]\ngpu-[01:10]\n[web]\nweb[a:c].example.com\n");
    assert_eq!(sel(&inv, "gpu-0[1:3]"), ["gpu-01", "gpu-02", "gpu-03"]);
    assert_eq!(sel(&inv, "gpu-[01:10:4]"), ["gpu-01", "gpu-05", "gpu-09"]);
    assert_eq!(sel(&inv, "gpu-[09:12]"), ["gpu-09", "gpu-10"]);
    assert_eq!(
        sel(&inv, "web[b:c].example.com"),
        ["webb.example.com", "webc.example.com"]
    );
    assert_eq!(sel(&inv, "*.example.com").len(), 3);
    assert_eq!(sel(&inv, "gpu-1*"), ["gpu-10"]);
    assert_eq!(
        sel(&inv, "gpu-0?:&gpu-0[4-6]"),
        ["gpu-04", "gpu-05", "gpu-06"]
    );
    assert_eq!(sel(&inv, "gpu-0[!1-8]"), ["gpu-09"]);
    assert_eq!(sel(&inv, "~gpu-0[12]"), ["gpu-01", "gpu-02"]);
    assert_eq!(
        sel(&inv, "~web(a|c)"),
        ["weba.example.com", "webc.example.com"]
    );
    assert!(sel(&inv, "nothing-*").is_empty());
}

#[test]
fn patterns_subscripts() {
    let inv = ini("[gpu]\ngpu-[01:04]\n");
    assert_eq!(sel(&inv, "gpu[0]"), ["gpu-01"]);
    assert_eq!(sel(&inv, "gpu[-1]"), ["gpu-04"]);
    assert_eq!(sel(&inv, "gpu[1:2]"), ["gpu-02", "gpu-03"]);
    assert_eq!(sel(&inv, "gpu[2:]"), ["gpu-03", "gpu-04"]);
    let err = inv.select("gpu[7]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "subscript [7] is out of range: 'gpu[7]' matches 4 hosts"
    );
    let inv = ini("[gpu]\ngpu-01\n[login]\n");
    assert!(sel(&inv, "login[0]").is_empty());
    assert!(sel(&inv, "login[1:]").is_empty());
}

#[test]
fn patterns_retry_file() {
    let inv = ini(FLEET);
    let dir = TempDir::new().unwrap();
    write(dir.path(), "site.retry", "login-01\n\ngpu-02\n");
    let file = dir.path().join("site.retry");
    let pattern = format!("@{}", file.display());
    assert_eq!(sel(&inv, &pattern), ["gpu-02", "login-01"]);
    let err = inv.select("@/nonexistent/site.retry").unwrap_err();
    assert!(matches!(err, PatternError::File { .. }), "{err}");
}

#[test]
fn pattern_errors_read_well() {
    let inv = ini(FLEET);
    let err = inv.select("gpus").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no host or group matches 'gpus'; did you mean 'gpu'?"
    );
    let err = inv.select("gpu:!zzzzzz").unwrap_err();
    assert_eq!(err.to_string(), "no host or group matches 'zzzzzz'");
    let err = inv.select("gpu-[05:09]").unwrap_err();
    assert!(matches!(err, PatternError::NoMatch { .. }), "{err}");
    let err = inv.select("~gpu-(").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid regular expression in host pattern '~gpu-('"),
        "{err}"
    );
    let err = inv.select("gpu-[3:1]").unwrap_err();
    assert!(matches!(err, PatternError::BadRange { .. }), "{err}");
    assert!(matches!(inv.select(" , "), Err(PatternError::Empty)));
}

#[test]
fn implicit_localhost_matches_by_name_only() {
    let inv = ini(FLEET);
    assert_eq!(sel(&inv, "localhost"), ["localhost"]);
    assert_eq!(sel(&inv, "localhost:login"), ["login-01", "localhost"]);
    assert!(!sel(&inv, "all").contains(&"localhost".to_string()));
}

// ---- constructors, output, loading ----

#[test]
fn host_list_and_localhost_inventories() {
    let inv = Inventory::from_host_list("gpu-01, gpu-02:2222,,");
    assert_eq!(inv.hosts(), ["gpu-01", "gpu-02"]);
    assert_eq!(inv.groups()["ungrouped"], ["gpu-01", "gpu-02"]);
    assert_eq!(var(&inv, "gpu-02", "ansible_port"), json!(2222));
    let inv = Inventory::localhost();
    assert_eq!(inv.hosts(), ["localhost"]);
    assert_eq!(sel(&inv, "all"), ["localhost"]);
    assert_eq!(var(&inv, "localhost", "ansible_connection"), json!("local"));
}

#[test]
fn list_json_matches_ansible_inventory_list() {
    let inv =
        ini("lone a=1\n[gpu]\ngpu-01\n[empty]\n[fleet:children]\ngpu\n[gpu:vars]\nu=deploy\n");
    assert_eq!(
        inv.list_json(),
        json!({
            "_meta": {"hostvars": {"gpu-01": {"u": "deploy"}, "lone": {"a": 1}}},
            "all": {"children": ["ungrouped", "empty", "fleet"]},
            "fleet": {"children": ["gpu"]},
            "gpu": {"hosts": ["gpu-01"]},
            "ungrouped": {"hosts": ["lone"]}
        })
    );
    let keys: Vec<String> = inv
        .list_json()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["_meta", "all", "fleet", "gpu", "ungrouped"]);
}

#[test]
fn graph_matches_ansible_inventory_graph() {
    let inv = ini("lone\n[gpu]\ngpu-02\ngpu-01\n[empty]\n[fleet:children]\ngpu\n");
    assert_eq!(
        inv.graph(),
        "@all:\n  |--@empty:\n  |--@fleet:\n  |  |--@gpu:\n  |  |  |--gpu-01\n  |  |  |--gpu-02\n  |--@ungrouped:\n  |  |--lone\n"
    );
}

#[test]
fn example_inventory_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/inventory.example.ini");
    let inv = Inventory::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sel(&inv, "gpu:!broken"), ["gpu-01", "gpu-02", "gpu-04"]);
    assert_eq!(var(&inv, "gpu-01", "ansible_user"), json!("deploy"));
    assert_eq!(var(&inv, "login-01", "ansible_user"), json!("admin"));
    assert_eq!(var(&inv, "gpu-01", "ntp_server"), json!("time.example.com"));
    assert_eq!(
        var(&inv, "bastion.example.com", "ansible_port"),
        json!(2222)
    );
    assert_eq!(inv.groups()["ungrouped"], ["bastion.example.com"]);
}

#[test]
fn formats_are_detected_and_folders_read_in_order() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "inv/10-hosts", "[gpu]\ngpu-01\n");
    write(dir.path(), "inv/20-more", "gpu:\n  hosts:\n    gpu-02:\n");
    write(dir.path(), "inv/30-skipped.retry", "zzz\n");
    write(dir.path(), "inv/group_vars/gpu.yml", "g: 1\n");
    let inv = Inventory::load(&dir.path().join("inv")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(inv.hosts(), ["gpu-01", "gpu-02"]);
    assert_eq!(var(&inv, "gpu-02", "g"), json!(1));
    let err = Inventory::load(&dir.path().join("missing.ini")).unwrap_err();
    assert!(err.message.starts_with("cannot read "), "{err}");
    assert!(
        err.message
            .ends_with("No such file or directory (os error 2)"),
        "{err}"
    );
}

#[test]
fn a_link_back_up_a_vars_folder_is_a_cycle_error() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "hosts.ini", "[gpu]\ngpu-01\n");
    write(dir.path(), "group_vars/gpu/a.yml", "a: 1\n");
    std::os::unix::fs::symlink("..", dir.path().join("group_vars/gpu/up")).unwrap();
    let err = Inventory::load(&dir.path().join("hosts.ini")).unwrap_err();
    assert!(err.message.starts_with("folder cycle: "), "{err}");
    assert!(err.message.contains("group_vars/gpu/up"), "{err}");
}

#[test]
fn a_vars_file_that_is_a_link_loop_is_an_error_not_skipped() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "hosts.ini", "[gpu]\ngpu-01\n");
    fs::create_dir_all(dir.path().join("host_vars")).unwrap();
    let link = dir.path().join("host_vars/gpu-01.yml");
    std::os::unix::fs::symlink(&link, &link).unwrap();
    let err = Inventory::load(&dir.path().join("hosts.ini")).unwrap_err();
    assert!(err.message.contains("host_vars/gpu-01.yml"), "{err}");
    assert!(err.message.contains("symbolic links"), "{err}");
}

#[test]
fn a_yaml_inventory_without_extension_gets_yaml_errors() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "hosts", "all:\n  hosts:\n    a:\n    a:\n");
    let err = Inventory::load(&dir.path().join("hosts")).unwrap_err();
    assert!(err.message.contains("duplicate key 'a'"), "{err}");
    assert!(err.span.location().ends_with("hosts:4:5"), "{err}");
    for ini in [
        "[gpu]\nh1\n",
        "h1 ansible_port=22\n",
        "# c\nh1:2222\n",
        "h[1:2]\n",
    ] {
        assert!(!load::looks_like_yaml(ini), "{ini}");
    }
    for yaml in [
        "all:\n",
        "---\n",
        "{\"all\": {}}",
        "# c\nall: {hosts: {a: }}\n",
    ] {
        assert!(load::looks_like_yaml(yaml), "{yaml}");
    }
}

#[test]
fn unclosed_section_headers_are_errors_at_their_line() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "hosts.ini", "[gpu]\nh1\n  [cpu\nh2\n");
    let err = Inventory::load(&dir.path().join("hosts.ini")).unwrap_err();
    assert_eq!(err.message, "unclosed section header '[cpu'");
    assert!(err.span.location().ends_with("hosts.ini:3:3"), "{err}");
}

#[test]
fn bad_ports_are_load_errors_at_their_position() {
    let dir = TempDir::new().unwrap();
    let cases = [
        ("a.ini", "h1 ansible_port=abc\n", "a.ini:1:4", "got 'abc'"),
        (
            "b.ini",
            "[all:vars]\nansible_port=0\n",
            "b.ini:2:1",
            "got 0",
        ),
        (
            "c.yml",
            "all:\n  hosts:\n    h1: {ansible_port: 70000}\n",
            "c.yml:3:24",
            "got 70000",
        ),
        (
            "d.yml",
            "all:\n  vars:\n    ansible_ssh_port: [22]\n",
            "d.yml:3:23",
            "got [22]",
        ),
    ];
    for (name, text, at, got) in cases {
        write(dir.path(), name, text);
        let err = Inventory::load(&dir.path().join(name)).unwrap_err();
        assert!(
            err.message
                .contains("must be a port number from 1 to 65535"),
            "{err}"
        );
        assert!(err.message.ends_with(got), "{err}");
        assert!(err.span.location().ends_with(at), "{err}");
    }
    write(
        dir.path(),
        "ok.ini",
        "h1 ansible_port=2222\nh2 ansible_port='{{ p }}'\n",
    );
    assert!(Inventory::load(&dir.path().join("ok.ini")).is_ok());
}

const INI_SEEDS: &[&str] = &[
    include_str!("../../../playbooks/inventory.example.ini"),
    "h[1:3]:2222 a=1 b=\"two words\" c='x'\n[g:children]\nsub\n[sub]\nn[a:c]\n[g:vars]\nk = v # c\n",
    "[all:vars]\nansible_port=22\n[x]\n[fe80::1]:22\nh ansible_host=10.0.0.1\n",
];

const YAML_INVENTORY_SEEDS: &[&str] = &[
    "all:\n  hosts:\n    gpu-[01:04]:\n      ansible_port: 22\n  vars:\n    a: 1\n  children:\n    rack:\n      hosts: {r1: , r2: }\n      children:\n        inner: {hosts: r3}\n",
    "gpu:\n  hosts:\n    'n[1:10:2]:2200':\n    login-01: {ansible_user: admin}\n",
];

/// A successful load stays within the range limit per host entry; a failed
/// one points into the source.
fn check_loaded(text: &str, result: Result<(), Diagnostic>, inv: &Inventory) {
    match result {
        Ok(()) => {
            let entries = text.lines().count().max(1) as u64;
            assert!(inv.hosts.len() as u64 <= entries * range::MAX_HOSTS_PER_PATTERN);
        }
        Err(e) => {
            assert!(e.span.line >= 1, "{e}");
            assert!(e.span.line <= text.lines().count() + 1, "{e}");
        }
    }
}

proptest::proptest! {
    #![proptest_config(crate::load::fuzz::config())]

    #[test]
    fn ini_inventory_returns_ok_or_a_positioned_error(text in crate::load::fuzz::mutated(INI_SEEDS)) {
        let mut inv = Inventory::empty();
        let source = Arc::new(Source { name: "h.ini".into(), text: text.clone() });
        let result = ini::parse(&mut inv, source);
        check_loaded(&text, result, &inv);
        inv.finish();
    }

    #[test]
    fn yaml_inventory_returns_ok_or_a_positioned_error(
        text in crate::load::fuzz::mutated(YAML_INVENTORY_SEEDS)
    ) {
        let mut inv = Inventory::empty();
        let result = crate::load::yaml::load_str(&text, "h.yml").and_then(|doc| yaml::parse(&mut inv, &doc));
        check_loaded(&text, result, &inv);
        inv.finish();
    }
}

#[test]
fn an_inventory_holds_at_most_the_host_limit() {
    let dir = TempDir::new().unwrap();
    write(
        dir.path(),
        "ok.ini",
        "a[1:100000]\nb[1:100000]\na[1:100000]\n",
    );
    let inv = Inventory::load(&dir.path().join("ok.ini")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(inv.hosts().len(), MAX_INVENTORY_HOSTS);
    write(dir.path(), "big.ini", "a[1:100000]\nb[1:100000]\n[g]\nc1\n");
    let err = Inventory::load(&dir.path().join("big.ini")).unwrap_err();
    assert_eq!(
        err.message,
        "the inventory would hold more than 200000 hosts"
    );
    assert!(err.span.location().ends_with("big.ini:4:1"), "{err}");
    write(
        dir.path(),
        "big.yml",
        "all:\n  hosts:\n    a[1:100000]:\n    b[0:100000]:\n",
    );
    let err = Inventory::load(&dir.path().join("big.yml")).unwrap_err();
    assert!(err.span.location().ends_with("big.yml:4:5"), "{err}");
}

/// Forty layers of two groups, each the child of both groups above it:
/// 2^40 paths from the top, which a walk of every path never finishes.
#[test]
fn stacked_diamonds_of_groups_load_in_linear_time() {
    let mut text = String::new();
    for i in 0..40 {
        for g in ["x", "y"] {
            text.push_str(&format!("[{g}{i}:children]\nx{}\ny{}\n", i + 1, i + 1));
        }
    }
    text.push_str("[x40]\nh1\n[y40]\n");
    let dir = TempDir::new().unwrap();
    write(dir.path(), "d.ini", &text);
    let inv = Inventory::load(&dir.path().join("d.ini")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(inv.groups()["x0"], ["h1"]);
    assert_eq!(inv.groups[inv.group_index["x40"]].depth, 41);
    let names = var(&inv, "h1", "group_names");
    assert_eq!(names.as_array().map(Vec::len), Some(81), "{names}");
    // Each of the 84 groups is drawn once and named once more by its
    // second parent (80), with the one host: not 2^40 lines.
    let graph = inv.graph();
    assert_eq!(graph.lines().count(), 165, "{graph}");
    assert!(graph.contains("|--@y2: (shown above)"), "{graph}");
}
