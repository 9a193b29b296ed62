use super::*;
use crate::modules::kit::plan::Effect;
use crate::modules::kit::testing::{
    assert_sh_syntax, build_error, build_test, facts_of, file_facts, settled,
};
use serde_json::json;

const VENV: &str = "/opt/venv";
const LIST: &str =
    r#"[{"name": "torch", "version": "2.2.0+cu121"}, {"name": "NumPy", "version": "1.26.4"}]"#;

fn venv_key() -> String {
    PipList::key(&Env::Venv(VENV.into()))
}

fn plan_on(params: serde_json::Value, answer: &str) -> (Box<dyn Module>, Plan) {
    let m = build_test(&PIP, params).unwrap();
    let plan = m.plan(&facts_of(&[(&venv_key(), answer)])).unwrap();
    assert_sh_syntax(&*m, &plan);
    (m, plan)
}

#[test]
fn satisfied_specifiers_are_a_noop() {
    let params = json!({"name": ["torch==2.2.0", "numpy>=1.26"], "virtualenv": VENV});
    assert_eq!(plan_on(params, LIST).1, Plan::noop());
    let absent = json!({"name": "scipy", "state": "absent", "virtualenv": VENV});
    assert_eq!(plan_on(absent, LIST).1, Plan::noop());
}

#[test]
fn an_unsatisfied_pin_is_installed_and_predicted() {
    let params = json!({"name": ["torch==2.3.0", "numpy>=1.26"], "virtualenv": VENV,
        "extra_args": "--no-index --find-links /srv/wheels"});
    let (m, plan) = plan_on(params, LIST);
    assert_eq!(plan.changes.len(), 1);
    assert_eq!(
        plan.changes[0].to_string(),
        "torch in virtualenv /opt/venv: 2.2.0+cu121 → torch==2.3.0"
    );
    assert_eq!(
        plan.steps,
        ["( PIP_NO_INPUT=1 /opt/venv/bin/pip install --disable-pip-version-check --no-index --find-links /srv/wheels torch==2.3.0 ) || { echo 'pip install failed' >&2; exit 1; }"]
    );
    let after = settled(&facts_of(&[(&venv_key(), LIST)]), &plan);
    assert_eq!(m.plan(&after).unwrap(), Plan::noop());
}

#[test]
fn a_missing_virtualenv_is_made_first() {
    let params = json!({"name": "demo", "virtualenv": "venv", "chdir": "/srv/app",
        "virtualenv_command": "python3 -m venv", "umask": "0022"});
    let m = build_test(&PIP, params).unwrap();
    let key = PipList::key(&Env::Venv("/srv/app/venv".into()));
    let plan = m.plan(&facts_of(&[(&key, "novenv\n")])).unwrap();
    assert_sh_syntax(&*m, &plan);
    assert_eq!(
        plan.changes[0].to_string(),
        "/srv/app/venv: absent → virtualenv"
    );
    assert!(plan.steps[0]
        .starts_with("( cd /srv/app && umask 0022 && python3 -m venv /srv/app/venv ) ||"));
    assert!(plan.steps[1].contains("/srv/app/venv/bin/pip install"));
    assert_eq!(
        plan.effects,
        [PipList::invalidate(&Env::Venv("/srv/app/venv".into()))]
    );
    let absent = build_test(
        &PIP,
        json!({"name": "demo", "state": "absent", "virtualenv": "/v"}),
    )
    .unwrap();
    let key = PipList::key(&Env::Venv("/v".into()));
    assert_eq!(
        absent.plan(&facts_of(&[(&key, "novenv\n")])).unwrap(),
        Plan::noop()
    );
}

#[test]
fn removal_names_the_normalized_package() {
    let params = json!({"name": "numpy", "state": "absent", "virtualenv": VENV});
    let (_, plan) = plan_on(params, LIST);
    assert_eq!(
        plan.changes[0].to_string(),
        "numpy in virtualenv /opt/venv: 1.26.4 → absent"
    );
    assert!(plan.steps[0].contains("pip uninstall -y --disable-pip-version-check numpy"));
    let Effect::Predict(_, answer) = &plan.effects[0] else {
        panic!("removal is predicted")
    };
    assert!(!answer.stdout.contains("numpy"));
}

#[test]
fn latest_and_forcereinstall_run_like_commands() {
    let params = json!({"name": "torch", "state": "latest", "virtualenv": VENV});
    let (m, plan) = plan_on(params, LIST);
    assert!(m.is_command() && plan.unknown.is_some());
    assert!(plan.steps[0].contains("install --upgrade"));
    let params = json!({"name": "torch", "state": "forcereinstall", "executable": "pip3",
        "break_system_packages": true});
    let m = build_test(&PIP, params).unwrap();
    let key = PipList::key(&Env::Executable("pip3".into()));
    let plan = m.plan(&facts_of(&[(&key, LIST)])).unwrap();
    assert!(plan.steps[0].contains(
        "pip3 install --force-reinstall --disable-pip-version-check --break-system-packages torch"
    ));
}

#[test]
fn the_executable_is_asked_and_a_missing_one_fails() {
    let m = build_test(&PIP, json!({"name": "x", "executable": "pip3.11"})).unwrap();
    let key = PipList::key(&Env::Executable("pip3.11".into()));
    assert_eq!(m.probes()[0].key, key);
    let err = m.plan(&facts_of(&[(&key, "missing\n")])).unwrap_err();
    assert!(matches!(err, ModuleError::Absent(m) if m.contains("pip3.11")));
}

#[test]
fn requirements_files_are_planned_line_by_line() {
    let path = "/srv/app/requirements.txt";
    let m = build_test(
        &PIP,
        json!({"requirements": "requirements.txt", "chdir": "/srv/app", "executable": "pip3"}),
    )
    .unwrap();
    let key = PipList::key(&Env::Executable("pip3".into()));
    let mut facts = file_facts(
        path,
        Some("# pinned\ntorch==2.2.0  # cuda 12.1\nnumpy>=2\n"),
        0o644,
    );
    facts.insert(key.clone(), crate::remote::probe::ProbeResult::ok(LIST));
    let plan = m.plan(&facts).unwrap();
    assert_eq!(plan.changes.len(), 1);
    assert!(plan.steps[0].contains("install --disable-pip-version-check 'numpy>=2'"));
    let mut bad = file_facts(path, Some("--index-url http://x\n"), 0o644);
    bad.insert(key, crate::remote::probe::ProbeResult::ok(LIST));
    let err = m.plan(&bad).unwrap_err().to_string();
    assert!(err.contains("requirements.txt:1") && err.contains("not supported by nodeprov"));
}

#[test]
fn hostile_values_are_quoted() {
    let params = json!({"name": "torch==2.3.0", "virtualenv": "/opt/$(reboot)'v",
        "chdir": "/tmp/a b;rm -rf /", "extra_args": "--find-links '/w $(id)'",
        "virtualenv_command": "python3 -m venv"});
    let m = build_test(&PIP, params).unwrap();
    let env = Env::Venv("/opt/$(reboot)'v".into());
    let plan = m
        .plan(&facts_of(&[(&PipList::key(&env), "novenv\n")]))
        .unwrap();
    assert_sh_syntax(&*m, &plan);
    let all = plan.steps.join("\n");
    assert!(all.contains("'/opt/$(reboot)'\\''v'"), "{all}");
    assert!(all.contains("'/w $(id)'"), "{all}");
    assert!(all.contains("cd '/tmp/a b;rm -rf /'"), "{all}");
}

#[test]
fn what_cannot_be_planned_is_refused() {
    let err = |p| build_error(&PIP, p);
    assert!(err(json!({"name": "git+https://x/y.git"})).contains("not supported by nodeprov"));
    assert!(err(json!({"name": "x", "editable": true})).contains("not supported by nodeprov"));
    assert!(err(json!({"name": "x", "virtualenv_python": "python3.11"}))
        .contains("not supported by nodeprov"));
    assert!(err(json!({"name": ["a", "b"], "version": "1"})).contains("exactly one name"));
    assert!(err(json!({"state": "present"})).contains("name or requirements"));
    assert!(err(json!({"name": "x", "virtualenv": "v"})).contains("absolute chdir"));
    assert!(err(json!({"name": "x", "umask": "022;id"})).contains("octal"));
    assert!(
        err(json!({"name": "x", "virtualenv": "/v", "executable": "pip"}))
            .contains("mutually exclusive")
    );
    let m = build_test(
        &PIP,
        json!({"name": "torch", "version": "2.3.0", "virtualenv": VENV}),
    )
    .unwrap();
    assert!(m.plan(&facts_of(&[(&venv_key(), LIST)])).unwrap().steps[0].contains("torch==2.3.0"));
}
