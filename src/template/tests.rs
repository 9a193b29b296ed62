use super::*;
use serde_json::json;

fn render(text: &str, vars: Json) -> String {
    Templates::new().render_str(text, &vars).unwrap()
}

fn render_err(text: &str, vars: Json) -> TemplateError {
    Templates::new().render_str(text, &vars).unwrap_err()
}

fn value(v: Json, vars: Json) -> Json {
    Templates::new().render_value(&v, &vars).unwrap()
}

fn cond(c: Json, vars: Json) -> bool {
    Templates::new().eval_condition(&c, &vars).unwrap()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

// ---- rendering basics ----------------------------------------------------

#[test]
fn no_auto_escaping_for_any_content() {
    let vars = json!({"x": "<a href=\"x\">&'"});
    assert_eq!(render("{{ x }}", vars), "<a href=\"x\">&'");
}

#[test]
fn keeps_trailing_newline_and_trims_blocks() {
    let text = "{% for i in xs %}\n{{ i }}\n{% endfor %}\n";
    assert_eq!(render(text, json!({"xs": [1, 2]})), "1\n2\n");
}

#[test]
fn strict_undefined_names_the_variable() {
    let err = render_err("path: {{ cuda_home }}/bin", json!({}));
    assert_eq!(err.message, "undefined variable 'cuda_home'");
    assert_eq!(err.undefined.as_deref(), Some("cuda_home"));
    assert_eq!(err.line, Some(1));
    let err = render_err("a\nb\n{{ x | upper }}", json!({}));
    assert_eq!(err.undefined.as_deref(), Some("x"));
    assert_eq!(err.line, Some(3));
}

#[test]
fn missing_attribute_is_not_an_undefined_top_level_variable() {
    let err = render_err("{{ result.foo }}", json!({"result": {"rc": 0}}));
    assert_eq!(err.undefined, None);
    assert!(err.message.contains("result.foo"), "{}", err.message);
}

#[test]
fn a_missing_attribute_names_the_expression_and_the_type_asked() {
    let vars = json!({"svc": ["a", "b"], "r": {"rc": 0}});
    let err = Templates::new()
        .render_value(&json!("{{ svc.Debian }}"), &vars)
        .unwrap_err();
    assert_eq!(
        err.message,
        "'svc.Debian' is undefined: object of type 'list' has no attribute 'Debian'"
    );
    assert!(err.is_undefined && err.undefined.is_none());
    let err = render_err("x={{ r['out'] | upper }}", vars.clone());
    assert_eq!(
        err.message,
        "'r['out']' is undefined: object of type 'dict' has no attribute 'out'"
    );
    let err = Templates::new()
        .eval_condition(&json!("svc[3] == 'a'"), &vars)
        .unwrap_err();
    assert!(
        err.message
            .ends_with("object of type 'list' has no element 3"),
        "{}",
        err.message
    );
}

#[test]
fn an_undefined_value_inside_a_finished_list_or_map_fails_naming_why() {
    let vars = json!({"things": [{"name": "one"}, {"notname": "three"}]});
    let lacks = "object of type 'dict' has no attribute 'name'";
    for (template, expr) in [
        (
            "{{ things | map(attribute='name') }}",
            "things | map(attribute='name')",
        ),
        ("{{ [things[1].name] }}", "things[1].name"),
        ("{{ {'a': {'b': things[1].name}} }}", "things[1].name"),
    ] {
        let err = Templates::new()
            .render_value(&json!(template), &vars)
            .unwrap_err();
        assert_eq!(err.message, format!("'{expr}' is undefined: {lacks}"));
    }
    let err = render_err(
        "x {{ things | map(attribute='name') | list }}",
        vars.clone(),
    );
    assert!(err.message.ends_with(lacks), "{}", err.message);
    // What drops or replaces the undefined entries is fine, as in Ansible.
    let kept = json!(["one"]);
    let picked = "{{ things | map(attribute='name') | select('defined') | list }}";
    assert_eq!(value(json!(picked), vars.clone()), kept);
    let defaulted = "{{ things | map(attribute='name', default='x') }}";
    assert_eq!(value(json!(defaulted), vars.clone()), json!(["one", "x"]));
    // Guessing probes before values are known stays lenient.
    let lenient = Templates::new().into_lenient();
    assert!(lenient
        .render_value(&json!("{{ [things[1].name] }}"), &vars)
        .is_ok());
}

#[test]
fn default_works_on_undefined_under_strict_mode() {
    assert_eq!(render("{{ x | default('fb') }}", json!({})), "fb");
    assert_eq!(render("{{ x | d(3) }}", json!({})), "3");
    assert_eq!(render("{{ x | default('fb') }}", json!({"x": ""})), "");
    assert_eq!(
        render("{{ x | default('fb', true) }}", json!({"x": ""})),
        "fb"
    );
    assert_eq!(
        render("{{ r.missing | default('z') }}", json!({"r": {}})),
        "z"
    );
}

#[test]
fn chained_undefined_attributes_reach_default_and_tests_as_in_ansible() {
    let none = json!({"n": null, "r": {"a": {"b": 1}}});
    let text = "{{ molecule_yml.driver.name | default('x') }}";
    assert_eq!(render(text, none.clone()), "x");
    assert_eq!(render("{{ r.a.b | default(2) }}", none.clone()), "1");
    assert_eq!(render("{{ r.z.b | d(2) }}", none.clone()), "2");
    assert_eq!(render("{{ n.x | default('y') }}", none.clone()), "y");
    assert_eq!(
        render("{{ r['a'].zz.q | default(r.a.b) }}", none.clone()),
        "1"
    );
    assert!(cond(json!("m.a.b is not defined"), none.clone()));
    assert!(!cond(json!("r.a.b is undefined"), none.clone()));
    let value = value(json!("{{ m.a | default([1]) }}"), none.clone());
    assert_eq!(value, json!([1]));
    // Printed or compared, an attribute of an undefined value still fails.
    let err = render_err("{{ molecule_yml.driver.name }}", json!({}));
    assert_eq!(err.message, "undefined variable 'molecule_yml'");
    let err = Templates::new()
        .eval_condition(&json!("molecule_yml.driver == 'x'"), &json!({}))
        .unwrap_err();
    assert_eq!(err.undefined.as_deref(), Some("molecule_yml"));
}

#[test]
fn syntax_errors_carry_a_line_number() {
    let err = render_err("ok\nstill ok\n{{ a + }}", json!({"a": 1}));
    assert_eq!(err.line, Some(3));
    assert!(err.message.starts_with("syntax error:"), "{}", err.message);
    let t = Templates::new();
    let err = t.check_template("line1\n{% if x %}\nno end").unwrap_err();
    assert!(err.message.contains("syntax error"), "{}", err.message);
    assert!(err.line.is_some());
    assert!(t.check_template("{% if x %}{{ x }}{% endif %}").is_ok());
    assert!(t.check_expression("x is defined and x | bool").is_ok());
    assert!(t.check_expression("x ==").is_err());
}

#[test]
fn hostile_values_stay_data() {
    let vars = json!({"x": "$(reboot)", "y": "a'b; rm -rf /"});
    assert_eq!(render("{{ x | quote }}", vars.clone()), "'$(reboot)'");
    assert_eq!(
        render("echo {{ y | quote }}", vars.clone()),
        r#"echo 'a'"'"'b; rm -rf /'"#
    );
    // A value that looks like a template is not rendered again.
    assert_eq!(render("{{ z }}", json!({"z": "{{ x }}"})), "{{ x }}");
}

// ---- render_value --------------------------------------------------------

#[test]
fn single_expression_keeps_native_type() {
    let vars = json!({"pkgs": ["a", "b"], "n": 3, "m": {"k": true}, "flag": false});
    let out = value(
        json!({"list": "{{ pkgs }}", "num": "{{ n + 1 }}", "map": "{{ m }}", "b": "{{ flag }}", "line": "{{ n }}\n"}),
        vars,
    );
    assert_eq!(
        out,
        json!({"list": ["a", "b"], "num": 4, "map": {"k": true}, "b": false, "line": 3})
    );
}

#[test]
fn mixed_text_renders_to_string_and_plain_strings_pass_through() {
    let vars = json!({"n": 3});
    let out = value(
        json!([
            "n={{ n }}",
            "{{ n }} and {{ n }}",
            "plain $HOME {x}",
            7,
            null
        ]),
        vars,
    );
    assert_eq!(out, json!(["n=3", "3 and 3", "plain $HOME {x}", 7, null]));
}

#[test]
fn map_keys_are_rendered() {
    let out = value(
        json!({"{{ k }}": "v", "{{ k }}_2": 1}),
        json!({"k": "name"}),
    );
    assert_eq!(out, json!({"name": "v", "name_2": 1}));
}

#[test]
fn omit_removes_map_entries() {
    let out = value(
        json!({"a": "{{ x | default(omit) }}", "b": "{{ y | default(omit) }}", "c": {"d": "{{ omit }}"}}),
        json!({"y": 2}),
    );
    assert_eq!(out, json!({"b": 2, "c": {}}));
}

#[test]
fn render_value_reports_undefined() {
    let err = Templates::new()
        .render_value(&json!({"k": ["{{ nope }}"]}), &json!({}))
        .unwrap_err();
    assert_eq!(err.undefined.as_deref(), Some("nope"));
}

// ---- conditions ----------------------------------------------------------

#[test]
fn the_false_condition_is_the_first_that_is_false_as_written() {
    let t = Templates::new();
    let vars = json!({"item": "skipped", "n": 2});
    let first = |c: Json| t.false_condition(&c, &vars);
    assert_eq!(
        first(json!(["n == 2", "item == \"changed\"", "n > 5"])),
        Some("item == \"changed\"".into())
    );
    assert_eq!(first(json!("n > 5")), Some("n > 5".into()));
    assert_eq!(first(json!(false)), Some("False".into()));
    assert_eq!(first(json!(["n == 2"])), None);
}

#[test]
fn conditions_expressions_and_bools() {
    let vars = json!({"x": "yes", "result": {"rc": 0, "stdout": "found x here"}, "n": 2});
    assert!(cond(json!("x is defined and x | bool"), vars.clone()));
    assert!(!cond(json!("y is defined and y | bool"), vars.clone()));
    assert!(!cond(json!("result.rc != 0"), vars.clone()));
    assert!(cond(json!("'x here' in result.stdout"), vars.clone()));
    assert!(cond(json!(true), vars.clone()));
    assert!(!cond(json!(false), vars.clone()));
    assert!(cond(json!(null), vars.clone()));
    assert!(cond(json!("{{ n > 1 }}"), vars.clone()));
    assert!(cond(json!("n"), vars.clone()));
}

#[test]
fn condition_lists_must_all_hold() {
    let vars = json!({"a": 1, "b": 0});
    assert!(cond(json!(["a == 1", true]), vars.clone()));
    assert!(!cond(json!(["a == 1", "b == 1"]), vars.clone()));
    assert!(cond(json!([]), vars));
}

#[test]
fn condition_strings_spelled_false_are_false() {
    let vars = json!({"f": "false", "no": "no", "t": "true", "e": ""});
    assert!(!cond(json!("f"), vars.clone()));
    assert!(!cond(json!("no"), vars.clone()));
    assert!(!cond(json!("e"), vars.clone()));
    assert!(cond(json!("t"), vars));
}

#[test]
fn condition_on_undefined_is_an_error() {
    let t = Templates::new();
    let err = t.eval_condition(&json!("cuda_ok"), &json!({})).unwrap_err();
    assert_eq!(err.undefined.as_deref(), Some("cuda_ok"));
    let err = t
        .eval_condition(&json!("result.rc == 0"), &json!({}))
        .unwrap_err();
    assert_eq!(err.undefined.as_deref(), Some("result"));
    assert!(t.eval_condition(&json!({"a": 1}), &json!({})).is_err());
}

#[test]
fn registered_result_tests() {
    let vars = json!({"r": {"rc": 1, "failed": true, "changed": false}, "s": {"skipped": true}});
    assert!(cond(json!("r is failed"), vars.clone()));
    assert!(!cond(json!("r is succeeded"), vars.clone()));
    assert!(!cond(json!("r is changed"), vars.clone()));
    assert!(cond(json!("s is skipped"), vars.clone()));
    assert!(cond(json!("s is success"), vars));
}

// ---- variable discovery --------------------------------------------------

#[test]
fn template_and_expression_vars() {
    let t = Templates::new();
    assert_eq!(
        t.template_vars(
            "{% for p in pkgs %}{{ p }}{{ prefix.x }}{% endfor %}{{ y | default(omit) }}"
        ),
        set(&["pkgs", "prefix", "y"])
    );
    assert_eq!(
        t.expression_vars("result.rc != 0 and lookup('env', 'HOME') and x is defined"),
        set(&["result", "x"])
    );
    assert!(t.template_vars("{{ broken").is_empty());
}

// ---- filters -------------------------------------------------------------

#[test]
fn booleans_print_like_python() {
    assert_eq!(
        render("{{ x }}/{{ not x }}", json!({"x": true})),
        "True/False"
    );
}

#[test]
fn bool_filter_follows_ansible() {
    for (input, want) in [
        (json!("yes"), true),
        (json!("On"), true),
        (json!("1"), true),
        (json!("TRUE"), true),
        (json!("no"), false),
        (json!("false"), false),
        (json!("banana"), false),
        (json!(1), true),
        (json!(2), false),
        (json!(true), true),
        (json!(null), false),
    ] {
        let out = value(json!("{{ v | bool }}"), json!({"v": input}));
        assert_eq!(out, json!(want), "{input}");
    }
}

#[test]
fn int_float_string() {
    assert_eq!(render("{{ '42\n' | int + 1 }}", json!({})), "43");
    assert_eq!(render("{{ 'abc' | int }}", json!({})), "0");
    assert_eq!(render("{{ 'abc' | int(7) }}", json!({})), "7");
    assert_eq!(render("{{ '2.5' | float * 2 }}", json!({})), "5.0");
    assert_eq!(render("{{ 'x' | float }}", json!({})), "0.0");
    assert_eq!(render("{{ (5 | string) ~ 'a' }}", json!({})), "5a");
}

#[test]
fn join_and_unique() {
    assert_eq!(
        render("{{ xs | join(',') }}", json!({"xs": ["a", 1]})),
        "a,1"
    );
    let out = value(
        json!("{{ xs | unique }}"),
        json!({"xs": ["a", "A", "a", 2, 2]}),
    );
    assert_eq!(out, json!(["a", 2]), "Jinja's unique ignores case");
    let out = value(
        json!("{{ xs | unique(case_sensitive=true) }}"),
        json!({"xs": ["a", "A", "a", 2, 2]}),
    );
    assert_eq!(out, json!(["a", "A", 2]));
}

#[test]
fn regex_replace_converts_python_backrefs() {
    let vars = json!({"v": "driver-535.104.05"});
    assert_eq!(
        render(
            r"{{ v | regex_replace('^driver-(\\d+)\\..*$', 'nvidia-\\1') }}",
            vars.clone()
        ),
        "nvidia-535"
    );
    assert_eq!(
        render(
            r"{{ v | regex_replace('(?P<maj>\\d+)\\.', '\\g<maj>:') }}",
            vars.clone()
        ),
        "driver-535:104:05"
    );
    assert_eq!(
        render("{{ v | regex_replace('-', '$') }}", vars.clone()),
        "driver$535.104.05"
    );
    assert_eq!(
        render(
            "{{ 'ABC' | regex_replace('b', 'x', ignorecase=true) }}",
            json!({})
        ),
        "AxC"
    );
}

/// A playbook value is a YAML string whose escapes YAML has read
/// (`"\\1"` gave `\1`): Jinja must not read them again.
#[test]
fn playbook_values_pass_backreferences_to_regex_replace() {
    let vars = json!({"v": "OpenSSH_9.2p1 Debian"});
    let replaced = |repl: &str| {
        let text = format!("{{{{ v | regex_replace('^OpenSSH_([0-9.]+).*$', '{repl}') }}}}");
        value(json!(text), vars.clone())
    };
    assert_eq!(replaced(r"\1"), json!("9.2"));
    assert_eq!(replaced(r"\g<1>"), json!("9.2"));
    assert_eq!(replaced(r"v$1 \1$"), json!("v$1 9.2$"));
    let named = r"v={{ v | regex_replace('^(?P<d>\w+)_.*', '\g<d>') }}";
    assert_eq!(value(json!(named), vars.clone()), json!("v=OpenSSH"));
    // A template file is no YAML string: Jinja's escapes apply there.
    assert_eq!(
        render(
            r"{{ v | regex_replace('^\w+_([0-9.]+).*$', '\\1') }}",
            vars.clone()
        ),
        "9.2"
    );
    let err = Templates::new()
        .render_value(&json!(r"{{ v | regex_replace('(x)', '\2') }}"), &vars)
        .unwrap_err();
    assert!(
        err.message.contains("invalid group reference 2"),
        "{}",
        err.message
    );
}

#[test]
fn regex_filters_and_tests_take_python_patterns() {
    let vars = json!({"v": "eth0 ib0 ib0 mtu=9000"});
    assert_eq!(
        render(r"{{ v | regex_search('(?<=mtu=)\\d+') }}", vars.clone()),
        "9000"
    );
    assert_eq!(
        value(
            json!(r"{{ v | regex_findall('\b(?!eth)(\w+) \1') }}"),
            vars.clone()
        ),
        json!(["ib0"])
    );
    assert_eq!(
        value(
            json!(r"{{ v | regex_replace('(?P<n>ib)(?P=n)?0', 'mlx') }}"),
            vars.clone()
        ),
        json!("eth0 mlx mlx mtu=9000")
    );
    assert!(!cond(json!(r"v is search('(?<!e)th0')"), vars.clone()));
    assert!(cond(json!(r"v is match('eth(?=0)')"), vars));
}

#[test]
fn regex_search_and_tests() {
    let vars = json!({"out": "CUDA Version: 12.4 ok"});
    assert_eq!(
        render(r"{{ out | regex_search('\\d+\\.\\d+') }}", vars.clone()),
        "12.4"
    );
    let groups = value(
        json!(r"{{ out | regex_search('Version: (\d+)\.(\d+)', '\1', '\2') }}"),
        vars.clone(),
    );
    assert_eq!(groups, json!(["12", "4"]));
    assert_eq!(
        value(json!("{{ out | regex_search('zzz') }}"), vars.clone()),
        json!(null)
    );
    assert!(cond(json!("out is search('Version')"), vars.clone()));
    assert!(!cond(json!("out is match('Version')"), vars.clone()));
    assert!(cond(json!("out is match('CUDA')"), vars));
}

#[test]
fn regex_findall_is_pythons_findall() {
    let vars = json!({"out": "a=1 b=22 c=333"});
    let all = |pattern: &str| {
        value(
            json!(format!("{{{{ out | regex_findall('{pattern}') }}}}")),
            vars.clone(),
        )
    };
    assert_eq!(all(r"\d+"), json!(["1", "22", "333"]));
    assert_eq!(all(r"(\w)="), json!(["a", "b", "c"]));
    assert_eq!(
        all(r"(\w)=(\d+)"),
        json!([["a", "1"], ["b", "22"], ["c", "333"]])
    );
    assert_eq!(all("zzz"), json!([]));
}

#[test]
fn json_filters() {
    let vars = json!({"m": {"b": 1, "a": [true, null]}});
    assert_eq!(
        render("{{ m | to_json }}", vars.clone()),
        r#"{"b": 1, "a": [true, null]}"#
    );
    assert_eq!(
        render("{{ m | to_nice_json }}", vars.clone()),
        "{\n    \"a\": [\n        true,\n        null\n    ],\n    \"b\": 1\n}"
    );
    let parsed = value(
        json!("{{ s | from_json }}"),
        json!({"s": "{\"k\": [1, 2]}"}),
    );
    assert_eq!(parsed, json!({"k": [1, 2]}));
    assert!(Templates::new()
        .render_str("{{ 'nope' | from_json }}", &json!({}))
        .is_err());
}

#[test]
fn yaml_filters() {
    let vars = json!({"m": {
        "name": "gpu",
        "tags": ["a", "yes", "1.5"],
        "nested": {"k": "v: w", "empty": [], "none": null},
        "items": [{"x": 1, "y": 2}, ["p", "q"]],
        "multi": "l1\nl2",
    }});
    // As PyYAML writes them (`yaml.dump(m, allow_unicode=True, ...)`).
    let want = "items:\n- {x: 1, y: 2}\n- [p, q]\nmulti: 'l1\n\n  l2'\nname: gpu\nnested:\n  empty: []\n  k: 'v: w'\n  none: null\ntags: [a, 'yes', '1.5']\n";
    assert_eq!(render("{{ m | to_yaml }}", vars.clone()), want);
    assert_eq!(
        render("{{ m.nested | to_nice_yaml }}", vars.clone()),
        "empty: []\nk: 'v: w'\nnone: null\n"
    );
    assert_eq!(
        render("{{ {'a': {'b': 1}} | to_nice_yaml }}", json!({})),
        "a:\n    b: 1\n"
    );
    // The emitted YAML parses back to the same data.
    let docs = yaml_rust2::YamlLoader::load_from_str(want).unwrap();
    assert_eq!(docs[0]["tags"][1].as_str(), Some("yes"));
    assert_eq!(docs[0]["multi"].as_str(), Some("l1\nl2"));
    assert_eq!(docs[0]["items"][1][1].as_str(), Some("q"));
}

#[test]
fn path_filters() {
    for (input, base, dir) in [
        ("/usr/local/cuda/bin", "bin", "/usr/local/cuda"),
        ("/etc/", "", "/etc"),
        ("file.txt", "file.txt", ""),
        ("/root", "root", "/"),
    ] {
        let vars = json!({"p": input});
        assert_eq!(render("{{ p | basename }}", vars.clone()), base, "{input}");
        assert_eq!(render("{{ p | dirname }}", vars), dir, "{input}");
    }
}

#[test]
fn dict_items_round_trip() {
    let items = value(
        json!("{{ m | dict2items }}"),
        json!({"m": {"a": 1, "b": 2}}),
    );
    assert_eq!(
        items,
        json!([{"key": "a", "value": 1}, {"key": "b", "value": 2}])
    );
    let named = value(
        json!("{{ m | dict2items(key_name='k', value_name='v') }}"),
        json!({"m": {"a": 1}}),
    );
    assert_eq!(named, json!([{"k": "a", "v": 1}]));
    let back = value(
        json!("{{ xs | items2dict(key_name='n', value_name='v') }}"),
        json!({"xs": [{"n": "x", "v": 1}, {"n": "y", "v": [2]}]}),
    );
    assert_eq!(back, json!({"x": 1, "y": [2]}));
    assert!(Templates::new()
        .render_str("{{ [{'a': 1}] | items2dict }}", &json!({}))
        .is_err());
}

#[test]
fn mandatory_filter() {
    assert_eq!(render("{{ x | mandatory }}", json!({"x": "ok"})), "ok");
    let err = render_err("{{ x | mandatory }}", json!({}));
    assert_eq!(err.undefined.as_deref(), Some("x"));
    let err = render_err("{{ x | mandatory('set x in group_vars') }}", json!({}));
    assert!(
        err.message.contains("set x in group_vars"),
        "{}",
        err.message
    );
}

#[test]
fn base64_filters() {
    assert_eq!(render("{{ 'hello' | b64encode }}", json!({})), "aGVsbG8=");
    assert_eq!(render("{{ 'aGVsbG8=' | b64decode }}", json!({})), "hello");
    assert!(Templates::new()
        .render_str("{{ '***' | b64decode }}", &json!({}))
        .is_err());
}

#[test]
fn list_and_dict_filters() {
    let vars = json!({"a": [1, 2, 2, 3], "b": [2, 4], "n": [1, [2, [3, [4]]]]});
    assert_eq!(
        value(json!("{{ n | flatten }}"), vars.clone()),
        json!([1, 2, 3, 4])
    );
    assert_eq!(
        value(json!("{{ n | flatten(1) }}"), vars.clone()),
        json!([1, 2, [3, [4]]])
    );
    assert_eq!(
        value(json!("{{ a | difference(b) }}"), vars.clone()),
        json!([1, 3])
    );
    assert_eq!(
        value(json!("{{ a | union(b) }}"), vars.clone()),
        json!([1, 2, 3, 4])
    );
    assert_eq!(
        value(json!("{{ a | intersect(b) }}"), vars.clone()),
        json!([2])
    );
    let dicts = json!({"x": {"a": 1, "s": {"p": 1}}, "y": {"b": 2, "s": {"q": 2}}});
    assert_eq!(
        value(json!("{{ x | combine(y) }}"), dicts.clone()),
        json!({"a": 1, "s": {"q": 2}, "b": 2})
    );
    assert_eq!(
        value(json!("{{ x | combine(y, recursive=true) }}"), dicts),
        json!({"a": 1, "s": {"p": 1, "q": 2}, "b": 2})
    );
}

#[test]
fn truthy_and_version_tests() {
    let vars = json!({"s": "no", "e": "", "v": "535.104.05"});
    assert!(cond(json!("s is truthy"), vars.clone()));
    assert!(cond(
        json!("s is not truthy(convert_bool=true)"),
        vars.clone()
    ));
    assert!(cond(json!("e is falsy"), vars.clone()));
    assert!(cond(json!("v is version('535.86', '>=')"), vars.clone()));
    assert!(cond(json!("v is version('550', 'lt')"), vars.clone()));
    assert!(cond(json!("'22.04' is version('22.04.0', '==')"), vars));
}

#[test]
fn lookup_env() {
    std::env::set_var("NODEPROV_TEMPLATE_TEST", "from-env");
    assert_eq!(
        render("{{ lookup('env', 'NODEPROV_TEMPLATE_TEST') }}", json!({})),
        "from-env"
    );
    assert_eq!(
        render("{{ lookup('env', 'NODEPROV_SURELY_UNSET_X') }}", json!({})),
        ""
    );
    assert!(Templates::new()
        .render_str("{{ lookup('file', '/etc/passwd') }}", &json!({}))
        .is_err());
}

#[test]
fn templates_can_be_shared_across_host_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Templates>();
}

// ---- static checks -------------------------------------------------------

#[test]
fn unknown_filters_and_tests_fail_the_check_even_in_branches_not_taken() {
    let t = Templates::new();
    let err = t
        .check_template("a\n{% if false %}{{ x | to_jsno }}{% endif %}")
        .unwrap_err();
    assert!(
        err.message.starts_with("unknown filter 'to_jsno'"),
        "{}",
        err.message
    );
    assert_eq!(err.line, Some(2));
    let err = t.check_expression("x is definedd").unwrap_err();
    assert!(
        err.message.starts_with("unknown test 'definedd'"),
        "{}",
        err.message
    );
    assert!(t
        .check_expression("x | bogus(1) | int > 2")
        .unwrap_err()
        .message
        .starts_with("unknown filter 'bogus'"));
    t.check_template("{{ x | default('a') | regex_replace('a', 'b') | to_nice_yaml }}")
        .unwrap();
    t.check_expression("x is defined and x is version('1.2', '>=')")
        .unwrap();
}

#[test]
fn rendered_values_stop_at_the_size_limit() {
    let t = Templates::new();
    let vars = json!({"big": "x".repeat(1 << 20)});
    let err = t
        .render_str("{% for i in range(20) %}{{ big }}{% endfor %}", &vars)
        .unwrap_err();
    assert_eq!(
        err.message,
        "the rendered value is larger than the 16 MiB limit"
    );
    let err = t
        .render_value(&json!("{{ [big] * 20 }}"), &vars)
        .unwrap_err();
    assert_eq!(
        err.message,
        "the rendered value is larger than the 16 MiB limit"
    );
    let ok = t.render_str("{% for i in range(15) %}{{ big }}{% endfor %}", &vars);
    assert_eq!(ok.unwrap().len(), 15 << 20);
}

#[test]
fn endless_loops_and_runaway_concatenation_stop_with_an_error() {
    let t = Templates::new();
    let vars = json!({"a": "x".repeat(1 << 20)});
    let hang = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let concat = format!("{{{{ {} }}}}", vec!["a"; 1000].join(" ~ "));
    for text in [hang, concat.as_str()] {
        let err = t.render_str(text, &vars).unwrap_err();
        assert!(
            err.message.starts_with("the template does too much work"),
            "{}",
            err.message
        );
    }
    let err = t.render_value(&json!(concat), &vars).unwrap_err();
    assert!(
        err.message.starts_with("the template does too much work"),
        "{}",
        err.message
    );
}

const TEMPLATE_SEEDS: &[&str] = &[
    include_str!("../../templates/cuda.sh.j2"),
    "{% for k, v in vars | dict2items %}{{ k }}={{ v | default('x') | quote }}\n{% endfor %}",
    "{% if a is defined and b | bool %}{{ a | regex_replace('^(.*)$', '\\\\1') }}{% else %}{{ c | to_nice_json }}{% endif %}",
    "{{ lookup('env', 'HOME') }} {{ x | combine({'a': [1, 2]}) | to_yaml }} {# note #}",
];

proptest::proptest! {
    #![proptest_config(crate::load::fuzz::config())]

    /// Compiling never panics, whatever the text.
    #[test]
    fn template_compile_returns_ok_or_err(text in crate::load::fuzz::mutated(TEMPLATE_SEEDS)) {
        let t = Templates::new();
        let compiled = t.check_template(&text);
        let _ = t.template_vars(&text);
        // Text without markup is always a valid template.
        let markup = text.contains('{');
        proptest::prop_assert!(compiled.is_ok() || markup, "{:?}", compiled);
    }
}

// ---- what real Ansible content calls -----------------------------------

#[test]
fn python_methods_on_values_work_as_in_ansible() {
    let vars = json!({"d": {"a": 1, "b": 2}, "s": "x,y"});
    assert_eq!(
        render(
            "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
            vars.clone()
        ),
        "a=1;b=2;"
    );
    assert_eq!(
        render(
            "{{ d.keys() | list }} {{ d.values() | list }}",
            vars.clone()
        ),
        "['a', 'b'] [1, 2]"
    );
    assert_eq!(
        render("{{ d.get('a') }} {{ d.get('z', 'none') }}", vars.clone()),
        "1 none"
    );
    assert_eq!(
        render("{{ s.split(',') | last }} {{ s.upper() }}", vars),
        "y X,Y"
    );
}

#[test]
fn loop_shaping_filters_match_ansible() {
    let vars = json!({"a": [1, 2], "b": ["x", "y"], "users": [
        {"name": "u1", "keys": ["k1", "k2"]}, {"name": "u2", "keys": ["k3"]}
    ]});
    assert_eq!(
        value(json!("{{ a | product(b) | list }}"), vars.clone()),
        json!([[1, "x"], [1, "y"], [2, "x"], [2, "y"]])
    );
    assert_eq!(
        value(json!("{{ a | zip(b) | list }}"), vars.clone()),
        json!([[1, "x"], [2, "y"]])
    );
    let subs = value(json!("{{ users | subelements('keys') }}"), vars.clone());
    assert_eq!(subs.as_array().unwrap().len(), 3);
    assert_eq!(subs[2], json!([{"name": "u2", "keys": ["k3"]}, "k3"]));
    assert_eq!(
        value(
            json!("{{ {'a': users[1]} | subelements('keys') }}"),
            vars.clone()
        ),
        json!([[{"name": "u2", "keys": ["k3"]}, "k3"]]),
        "a mapping's values"
    );
    assert!(render_err("{{ users | subelements('nope') }}", vars)
        .to_string()
        .contains("no list under 'nope'"));
}

#[test]
fn ansible_managed_renders_as_a_comment_block() {
    assert_eq!(
        render("{{ ansible_managed | comment }}", json!({})),
        format!("#\n# {ANSIBLE_MANAGED}\n#")
    );
    assert_eq!(
        render("{{ 'a\nb' | comment('c') }}", json!({})),
        "//\n// a\n// b\n//"
    );
}

// ---- lookups and run-wide magic variables ---------------------------------

/// A playbook folder and a role inside it, each with a `vars/` file.
fn search_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for path in [
        "vars/Debian.yml",
        "vars/common.yml",
        "role/vars/RedHat.yml",
        "role/files/x.conf",
    ] {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "a: 1\n").unwrap();
    }
    dir
}

fn run_templates(dir: &std::path::Path) -> Templates {
    let hostvars = Arc::new(HostVars::new(
        ["h1".to_string()],
        |h: &str| Map::from_iter([("name".to_string(), Json::from(h))]),
        Default::default(),
    ));
    Templates::new().with_run(dir, hostvars, &json!({"all": ["h1"]}))
}

#[test]
fn splitext_splits_as_python_does() {
    let t = Templates::new();
    let r = |path: &str| {
        t.render_str(&format!("{{{{ '{path}' | splitext }}}}"), &json!({}))
            .unwrap()
    };
    assert_eq!(r("a/b.tar.gz"), "['a/b.tar', '.gz']");
    assert_eq!(r("/etc/.bashrc"), "['/etc/.bashrc', '']");
    assert_eq!(r("a.d/conf"), "['a.d/conf', '']");
    assert_eq!(r("x..y"), "['x.', '.y']");
}

#[test]
fn varnames_lists_the_variables_a_pattern_matches() {
    let t = Templates::new();
    let vars = json!({"os_auditd_enabled": true, "os_umask": "027", "sysctl_x": 1});
    let render = |text: &str| t.render_str(text, &vars).unwrap();
    assert_eq!(
        render("{{ query('varnames', '^os_', 'umask$') | sort }}"),
        "['os_auditd_enabled', 'os_umask']"
    );
    assert_eq!(render("{{ lookup('varnames', '^os_umask$') }}"), "os_umask");
    assert_eq!(render("{{ not lookup('varnames', '^os_nope$') }}"), "True");
    assert_eq!(
        render("{{ query('varnames', '^(range|lookup)$') }}"),
        "[]",
        "functions are no variables"
    );
}

#[test]
fn the_vars_lookup_reads_variables_by_name_as_ansible_does() {
    let t = Templates::new();
    let vars = json!({"iface": "eth0", "ansible_eth0": {"mtu": 9000}, "nothing": null});
    let render = |text: &str| t.render_str(text, &vars);
    assert_eq!(
        render("{{ lookup('vars', 'ansible_' ~ iface).mtu }}").unwrap(),
        "9000"
    );
    assert_eq!(
        render("{{ query('vars', 'iface', 'nothing') }}").unwrap(),
        "['eth0', None]"
    );
    assert_eq!(
        render("{{ lookup('vars', 'nope', default='d') }}").unwrap(),
        "d"
    );
    let missing = render("{{ lookup('vars', 'nope') }}").unwrap_err();
    assert!(missing.is_undefined, "{missing}");
    assert!(
        missing
            .to_string()
            .contains("No variable named 'nope' was found."),
        "{missing}"
    );
    assert!(render("{{ lookup('vars', 3) }}")
        .unwrap_err()
        .to_string()
        .contains("Variable name must be 'str' not 'int'."));
}

#[test]
fn first_found_searches_the_role_then_the_playbook_in_ansible_forms() {
    let dir = search_tree();
    let t = run_templates(dir.path());
    let root = dir.path().display().to_string();
    let vars = json!({"role_path": format!("{root}/role"), "os": "RedHat"});
    let render = |text: &str| t.render_str(text, &vars);
    assert_eq!(
        render(
            "{{ lookup('first_found', ['Ubuntu.yml', os ~ '.yml', 'Debian.yml'], subdir='vars') }}"
        )
        .unwrap(),
        format!("{root}/role/vars/RedHat.yml"),
        "a plain list: the first that exists, the role first"
    );
    assert_eq!(
        render("{{ query('first_found', {'files': ['Ubuntu.yml', 'Debian.yml'], 'paths': ['vars']}) }}").unwrap(),
        format!("['{root}/vars/Debian.yml']"),
        "files under paths, from the playbook's folder"
    );
    assert_eq!(
        render("{{ q('first_found', 'a.yml,common.yml', paths='vars') | length }}").unwrap(),
        "1",
        "comma-separated names and paths given as keywords"
    );
    assert_eq!(
        render("{{ query('first_found', [{'files': ['none.yml'], 'skip': true}]) }}").unwrap(),
        "[]",
        "skip: nothing found is an empty list"
    );
    let err = render("{{ lookup('first_found', ['none.yml', 'other.yml']) }}").unwrap_err();
    assert!(
        err.message
            .contains("first_found: none of none.yml, other.yml was found"),
        "{}",
        err.message
    );
    assert_eq!(
        render("{{ lookup('first_found', 'x.conf') }}").unwrap(),
        format!("{root}/role/files/x.conf"),
        "files/ is the default folder"
    );
}

#[test]
fn fileglob_lists_the_files_matching_in_the_folder_found_first() {
    let dir = search_tree();
    for extra in [
        "role/files/y.conf",
        "role/files/.hidden.conf",
        "role/templates/bin/a.sh",
        "role/templates/bin/b.sh",
    ] {
        std::fs::create_dir_all(dir.path().join(extra).parent().unwrap()).unwrap();
        std::fs::write(dir.path().join(extra), "").unwrap();
    }
    std::fs::create_dir(dir.path().join("role/files/sub.conf")).unwrap();
    let t = run_templates(dir.path());
    let root = dir.path().display().to_string();
    let vars = json!({"role_path": format!("{root}/role")});
    let render = |text: &str| t.render_str(text, &vars).unwrap();
    assert_eq!(
        render("{{ query('fileglob', '*.conf') }}"),
        format!("['{root}/role/files/x.conf', '{root}/role/files/y.conf']"),
        "files/ first; no hidden files, no folders, sorted"
    );
    assert_eq!(
        render("{{ query('fileglob', ['templates/bin/*', 'vars/*.yml']) | length }}"),
        "3",
        "the role itself first: its vars/ hides the playbook's"
    );
    assert_eq!(
        render("{{ lookup('fileglob', 'nowhere/*') }}"),
        "[]",
        "no file is an empty list, as Ansible's lookup gives it"
    );
    assert_eq!(
        render(&format!("{{{{ lookup('fileglob', '{root}/vars/c*') }}}}")),
        format!("{root}/vars/common.yml")
    );
}

#[test]
fn run_globals_give_the_playbook_dir_version_and_hostvars() {
    let dir = search_tree();
    let t = run_templates(dir.path());
    let out = t
        .render_str(
            "{{ playbook_dir == root }} {{ ansible_version.full }} {{ ansible_version.major }} {{ hostvars['h1'].name }} {{ hostvars.h2 is defined }}",
            &json!({"root": dir.path().display().to_string()}),
        )
        .unwrap();
    assert_eq!(out, "True 2.21.5 2 h1 False");
    let kept = t.kept().unwrap();
    kept.facts(
        "h1",
        &Map::from_iter([("ansible_os_family".to_string(), json!("Debian"))]),
    );
    assert_eq!(
        render_with(&t, "{{ hostvars.h1.ansible_os_family }}"),
        "Debian"
    );
    // What its tasks set wins over its facts; a host outside the
    // inventory has hostvars once something was set on it.
    let one = |name: &str, value: &str| Map::from_iter([(name.to_string(), json!(value))]);
    kept.add("h1", &one("ansible_os_family", "Mine"));
    assert_eq!(
        render_with(&t, "{{ hostvars.h1.ansible_os_family }}"),
        "Mine"
    );
    kept.add("localhost", &one("pw", "s"));
    assert_eq!(render_with(&t, "{{ hostvars.localhost.pw }}"), "s");
    assert_eq!(
        render_with(&t, "{{ playbook_dir }}"),
        dir.path().display().to_string()
    );
    assert_eq!(
        t.render_str("{{ playbook_dir }}", &json!({"playbook_dir": "/mine"}))
            .unwrap(),
        "/mine",
        "a variable of the same name wins"
    );
    assert!(t.template_vars("{{ hostvars[x].y ~ playbook_dir }}") == set(&["x"]));
}

fn render_with(t: &Templates, text: &str) -> String {
    t.render_str(text, &json!({})).unwrap()
}

#[test]
fn ternary_picks_by_truth_and_null() {
    let vars = json!({"on": true, "off": 0, "nothing": null});
    assert_eq!(
        render("{{ on | ternary('yes', 'no') }}", vars.clone()),
        "yes"
    );
    assert_eq!(
        render("{{ off | ternary('yes', 'no') }}", vars.clone()),
        "no"
    );
    assert_eq!(
        render("{{ nothing | ternary('yes', 'no') }}", vars.clone()),
        "no"
    );
    assert_eq!(
        render(
            "{{ nothing | ternary('yes', 'no', 'unset') }}",
            vars.clone()
        ),
        "unset"
    );
    assert!(render_err("{{ missing | ternary(1, 2) }}", vars)
        .message
        .contains("missing"));
}

// ---- password_hash -------------------------------------------------------

#[test]
fn password_hash_matches_crypt() {
    // Expected values from glibc's crypt(3), through Python's `crypt` and
    // `openssl passwd -6/-5/-1 -salt saltsalt secret`.
    let cases = [
        ("'sha512', 'saltsalt'", "$6$rounds=656000$saltsalt$Vg7us3Hcq8rplCTNjwvGRwObM2xyfDZZ.XP2YLQ.ii85wAq/psu28uEfoMveNszsQWMgkWRxbZm2mBBlNn3.J0"),
        ("'sha256', 'saltsalt'", "$5$rounds=535000$saltsalt$VSmVlMm.XSbjLKI0G48ksoE0xc0243La2Jr.EPuau75"),
        ("'md5', salt='saltsalt'", "$1$saltsalt$9xy1btjgzLYfb7hivXtC//"),
        ("'sha512', 'saltsalt', rounds=10000", "$6$rounds=10000$saltsalt$WowrPBpEDVlCoruBosYlrZycTCx3//TyDHYqEhX9DUHHt0XTztUqzQDDUuvUGRA8aUe9p55hcAxeGcu58sm3u."),
    ];
    for (args, expected) in cases {
        let out = render(
            &format!("{{{{ 'secret' | password_hash({args}) }}}}"),
            json!({}),
        );
        assert_eq!(out, expected, "{args}");
    }
}

#[test]
fn password_hash_without_salt_draws_one() {
    let first = render("{{ 'secret' | password_hash('sha512') }}", json!({}));
    let second = render("{{ 'secret' | password_hash }}", json!({}));
    assert!(
        first.starts_with("$6$") && second.starts_with("$6$"),
        "{first} {second}"
    );
    assert_eq!(first.split('$').nth(2), Some("rounds=656000"));
    assert_eq!(first.split('$').nth(3).map(str::len), Some(16));
    assert_ne!(first, second);
}

#[test]
fn password_hash_refuses_unknown_schemes_and_salts() {
    assert!(render_err("{{ 'x' | password_hash('sha1') }}", json!({}))
        .to_string()
        .contains("sha1"));
    assert!(
        render_err("{{ 'x' | password_hash('sha512', 'a$b') }}", json!({}))
            .to_string()
            .contains("salt")
    );
}

#[test]
fn path_tests_look_at_the_controllers_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    std::os::unix::fs::symlink(&file, dir.path().join("l")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("dangling")).unwrap();
    let d = dir.path().display().to_string();
    let vars = json!({"d": d});
    let holds = |c: &str| cond(json!(c), vars.clone());
    assert!(holds(
        "(d ~ '/f') is file and d is directory and d is not file"
    ));
    assert!(holds(
        "(d ~ '/l') is link and (d ~ '/l') is file and (d ~ '/f') is not link"
    ));
    assert!(holds(
        "(d ~ '/f') is exists and (d ~ '/gone') is not exists"
    ));
    assert!(holds(
        "(d ~ '/dangling') is not exists and (d ~ '/dangling') is link_exists"
    ));
    assert!(holds("d is abs and 'a/b' is not abs"));
    assert!(holds(
        "'/' is mount and d is not mount and (d ~ '/f') is not mount"
    ));
    assert!(holds(
        "(d ~ '/l') is same_file(d ~ '/f') and d is not same_file(d ~ '/f')"
    ));
    let err = Templates::new()
        .eval_condition(&json!("d is same_file(d ~ '/gone')"), &vars)
        .unwrap_err();
    assert!(err.message.contains("same_file"), "{}", err.message);
    assert!(Templates::new().check_expression("x is is_dir").is_ok());
}

#[test]
fn vars_and_this_hosts_hostvars_are_its_own_variables() {
    let inventory = |h: &str| {
        let mut m = Map::new();
        m.insert("x".into(), json!(h));
        m
    };
    let hostvars = Arc::new(HostVars::new(
        ["h1".into(), "h2".into()],
        inventory,
        Default::default(),
    ));
    let groups = json!({"all": ["h1", "h2"], "gpu": ["h2"]});
    let t = Templates::new().with_run(Path::new("."), hostvars, &groups);
    let vars = json!({"inventory_hostname": "h1", "x": "h1", "name_a": "A", "item": "name_a", "reg": {"rc": 3}});
    let v = |text: &str| t.render_value(&json!(text), &vars).unwrap();
    assert_eq!(v("{{ vars['name_' ~ 'a'] }}"), json!("A"));
    assert_eq!(v("{{ vars[item] }}"), json!("A"));
    assert_eq!(v("{{ hostvars[inventory_hostname].reg.rc }}"), json!(3));
    assert_eq!(v("{{ hostvars['h2'].x }}"), json!("h2"));
    assert_eq!(v("{{ hostvars | list }}"), json!(["h1", "h2"]));
    assert!(t
        .eval_condition(&json!("vars.nope is undefined"), &vars)
        .unwrap());
    assert!(t.eval_condition(&json!("'name_a' in vars"), &vars).unwrap());
    // `groups` is the run's, held once for every host.
    assert_eq!(v("{{ groups.gpu }}"), json!(["h2"]));
    assert_eq!(v("{{ vars['groups'].all | length }}"), json!(2));
}

/// The expected numbers are Python's: `random.Random(seed).randrange(…)`
/// and `.choice(…)`, which Ansible's filter calls.
#[test]
fn random_with_a_seed_draws_what_python_draws() {
    let r = |text: &str| value(json!(text), json!({"h": "gpu-node-017"}));
    assert_eq!(r("{{ 60 | random(seed='host1') }}"), json!(31));
    assert_eq!(r("{{ 60 | random(seed=h) }}"), json!(54));
    assert_eq!(r("{{ 60 | random(seed=42) }}"), json!(40));
    assert_eq!(r("{{ 1000 | random(seed=-7) }}"), json!(331));
    assert_eq!(
        r("{{ ['a', 'b', 'c'] | random(seed='web01') }}"),
        json!("b")
    );
    assert_eq!(r("{{ 100 | random(1, 10, seed='x') }}"), json!(51));
    assert_eq!(r("{{ 0 | random(start=10, step=-3, seed='x') }}"), json!(4));
    assert_eq!(
        r("{{ 1099511627776 | random(seed='big') }}"),
        json!(247717398425u64)
    );
    assert_eq!(r("{{ 10 | random(seed='') }}"), json!(7));
    assert_eq!(r("{{ 10 | random(seed=true) }}"), json!(2));
    assert_eq!(r("{{ 'abcdef' | random(seed='héllo') }}"), json!("a"));
    for _ in 0..20 {
        let n = r("{{ 5 | random(2) }}").as_i64().unwrap();
        assert!((2..5).contains(&n), "{n}");
        let x = r("{{ ['p', 'q'] | random }}");
        assert!(x == json!("p") || x == json!("q"), "{x}");
    }
    let err = |text: &str| render_err(text, json!({})).message;
    assert!(err("{{ 0 | random }}").contains("empty range"));
    assert!(err("{{ [1] | random(2) }}").contains("only be used with integer"));
    assert!(err("{{ {} | random }}").contains("sequences and integers"));
}

#[test]
fn type_debug_names_python_types() {
    let vars = json!({"l": [1], "d": {}, "s": "x", "i": 1, "f": 1.5, "b": true, "n": null});
    let text = "{{ l | type_debug }} {{ d | type_debug }} {{ s | type_debug }} {{ i | type_debug }} {{ f | type_debug }} {{ b | type_debug }} {{ n | type_debug }}";
    assert_eq!(render(text, vars), "list dict str int float bool NoneType");
}
#[test]
fn jinja_builtins_behind_the_input_check_keep_their_keywords() {
    let dir = tempfile::tempdir().unwrap();
    let t = run_templates(dir.path());
    let vars = json!({"users": [{"name": "b", "age": 2}, {"name": "a", "age": 3}]});
    let render = |filter: &str| {
        t.render_str(&format!("{{{{ users | {filter} }}}}"), &vars)
            .unwrap()
    };
    assert_eq!(
        render("sort(attribute='name') | map(attribute='age') | list"),
        "[3, 2]"
    );
    assert_eq!(
        render("sort(reverse=true, attribute='age') | map(attribute='name') | join"),
        "ab"
    );
    assert_eq!(render("min(attribute='age') | attr('name')"), "b");
    assert_eq!(render("max(attribute='age') | attr('name')"), "a");
    assert_eq!(render("sum(attribute='age')"), "5");
    assert_eq!(render("join(',', attribute='name')"), "b,a");
}

#[test]
fn dividing_by_zero_fails_in_pythons_words() {
    let t = Templates::new();
    let said = |expr: &str| {
        t.eval_condition(&json!(expr), &json!({}))
            .unwrap_err()
            .message
    };
    assert_eq!(said("1 / 0"), "division by zero");
    assert_eq!(said("1.5 / 0"), "float division by zero");
    assert_eq!(said("7 // 0"), "integer division or modulo by zero");
    assert_eq!(said("7 % 0"), "integer modulo by zero");
    assert_eq!(
        t.eval_condition(&json!({"nope": "sorry"}), &json!({}))
            .unwrap_err()
            .message,
        "Conditional expressions must be strings."
    );
}

#[test]
fn now_is_the_controllers_time() {
    let secs: f64 = render("{{ now(utc=true, fmt='%s.%f') }}", json!({}))
        .parse()
        .unwrap();
    let expected = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((secs - expected).abs() < 86_400.0, "{secs} vs {expected}");
    let text = render("{{ now() }}", json!({}));
    assert_eq!(text.len(), "2026-12-06 23:59:59.123456".len(), "{text}");
}

#[test]
fn a_list_finds_an_item_as_pythons_does() {
    let vars = json!({"l": ["a", "b", "c", "b"]});
    assert_eq!(render("{{ l.index('b') }}", vars.clone()), "1");
    assert_eq!(render("{{ l.index('b', 2) }}", vars.clone()), "3");
    assert_eq!(render("{{ l.index('b', -3, -1) }}", vars.clone()), "1");
    assert!(render_err("{{ l.index('z') }}", vars.clone())
        .message
        .contains("'z' is not in list"));
    assert_eq!(render("{{ l.count('b') }}", vars), "2");
}

#[test]
fn the_dict_lookup_lists_pairs_and_refuses_what_is_no_mapping() {
    let vars = json!({"d": {"b": 1, "a": 2}, "l": ["x"]});
    assert_eq!(
        value(json!("{{ _with_lookup('dict', d) }}"), vars.clone()),
        json!([{"key": "b", "value": 1}, {"key": "a", "value": 2}])
    );
    assert_eq!(
        render_err("{{ _with_lookup('dict', l) }}", vars).message,
        "invalid operation: the 'dict' lookup plugin expects a dictionary, got 'x' of type <class 'str'>)"
    );
}

#[test]
fn with_list_loops_over_a_list_or_over_one_value() {
    let vars = json!({"d": {"k": "v"}, "l": [1, 2]});
    assert_eq!(
        value(json!("{{ _with_lookup('list', d) }}"), vars.clone()),
        json!([{"k": "v"}])
    );
    assert_eq!(
        value(json!("{{ _with_lookup('list', l) }}"), vars),
        json!([1, 2])
    );
}
