//! The subcommands, wired from CLI flags to the layers below; errors become
//! one readable message here and nowhere else.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::base::diag::Diagnostic;
use crate::base::diag::Span;
use crate::cli::{
    Cli, Command, CompletionsArgs, DocArgs, FactsArgs, Format, InventoryArgs, MergeArgs,
    ReportCommand, RunArgs, SmokeArgs, ValidateArgs, VaultArgs, VaultCommand, VaultViewArgs,
};
use crate::exec::RunOptions;
use crate::exec::{run_playbook, RunRequest};
use crate::load::ansible_cfg::{self, Settings};
use crate::load::inventory::shard::Shard;
use crate::load::inventory::{Inventory, PatternError, PluginRunner, SourceOptions};
use crate::load::vault::{self, secrets};
use crate::load::{playbook, validate, yaml};
use crate::modules::registry::{self, registry};
use crate::remote::connect;
use crate::report::progress::Progress;
use crate::report::{self, human, keyword_doc, module_doc, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Hosts worked on in parallel when neither `-f` nor ansible.cfg says.
const DEFAULT_FORKS: usize = 50;

pub fn run(cli: Cli) -> u8 {
    let result = match cli.command {
        Command::Apply(args) => settings().and_then(|s| apply(args, false, &s)),
        Command::Check(args) => settings().and_then(|s| apply(args, true, &s)),
        Command::Validate(args) => settings().and_then(|s| validate_cmd(&args, &s)),
        Command::Inventory(args) => settings().and_then(|s| inventory_cmd(&args, &s)),
        Command::Facts(args) => settings().and_then(|s| facts_cmd(&args, &s)),
        Command::Smoke(args) => settings().and_then(|s| smoke_cmd(&args, &s)),
        Command::Report(ReportCommand::Merge(args)) => merge_cmd(&args),
        Command::Vault(VaultCommand::View(args)) => {
            settings().and_then(|s| vault_view_cmd(&args, &s))
        }
        Command::Completions(args) => completions_cmd(&args),
        Command::Man => man_cmd(),
        Command::Doc(args) => doc_cmd(&args),
    };
    result.unwrap_or_else(|errors| {
        print_errors(errors.iter());
        EXIT_USAGE
    })
}

fn print_errors<'d>(errors: impl Iterator<Item = &'d Diagnostic>) {
    let mut err = std::io::stderr().lock();
    for e in errors {
        // Masked first, then made safe line by line: a file's bytes (a
        // vault id, a quoted line) must not reach the terminal raw.
        let text = vault::redact(&e.to_string()).into_owned();
        let lines: Vec<_> = text
            .split('\n')
            .map(|line| crate::base::printable::printable(line, true))
            .collect();
        let _ = writeln!(err, "error: {}", lines.join("\n"));
    }
}

/// Reads the vault passwords the flags and the settings (ansible.cfg and the
/// `ANSIBLE_VAULT_*` environment) name, before anything that may be
/// encrypted is loaded.
fn unlock_vault(args: &VaultArgs, settings: &Settings) -> Result<(), Vec<Diagnostic>> {
    let given = secrets::Given {
        identity_list: &settings.vault_identity_list,
        vault_ids: &args.vault_ids,
        password_files: &args.vault_password_files,
        settings_password_file: settings.vault_password_file.as_deref(),
        ask: args.ask_vault_pass,
    };
    let sources = secrets::sources(&given);
    let keyring = secrets::resolve(&sources)
        .map_err(|e| vec![Diagnostic::new(&Span::synthetic("vault"), e.to_string())])?;
    vault::unlock(keyring);
    Ok(())
}

/// The plaintext of each file, as `ansible-vault view` shows it: asked
/// for by name, so not masked.
fn vault_view_cmd(args: &VaultViewArgs, settings: &Settings) -> Result<u8, Vec<Diagnostic>> {
    unlock_vault(&args.vault, settings)?;
    let mut out = std::io::stdout().lock();
    for file in &args.files {
        let name = file.display().to_string();
        let text = crate::base::input::read_text(file).map_err(|e| vec![e.into_diagnostic()])?;
        let at = Span::synthetic(&name);
        if !vault::is_vault(&text) {
            return Err(vec![Diagnostic::new(
                &at,
                format!("{name} is not encrypted with Ansible Vault"),
            )]);
        }
        let plain = vault::open(&text, &at).map_err(|d| vec![d])?;
        let _ = out.write_all(plain.as_bytes());
    }
    Ok(EXIT_OK)
}

/// ansible.cfg and the `ANSIBLE_*` environment, resolved once; its
/// warnings are shown here.
fn settings() -> Result<Settings, Vec<Diagnostic>> {
    let env = ansible_cfg::Env::from_process();
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let settings =
        ansible_cfg::resolve(&ansible_cfg::Search::new(&env, cwd), &env).map_err(|e| {
            vec![Diagnostic::new(
                &Span::synthetic("ansible.cfg"),
                e.to_string(),
            )]
        })?;
    let mut err = std::io::stderr().lock();
    for warning in &settings.warnings {
        let _ = writeln!(err, "warning: {warning}");
    }
    Ok(settings)
}

/// `-i` sources, else the setting's; none at all is the implicit localhost.
fn load_inventory(cli: &[String], settings: &Settings) -> Result<Inventory, Vec<Diagnostic>> {
    let sources = if cli.is_empty() {
        &settings.inventory
    } else {
        cli
    };
    if sources.is_empty() {
        return Ok(Inventory::localhost());
    }
    let opts = SourceOptions {
        expand_host_list_ranges: settings
            .enable_plugins
            .iter()
            .any(|p| p.trim_start_matches("ansible.builtin.") == "advanced_host_list"),
        plugins: PluginRunner {
            ansible_inventory: on_path("ansible-inventory"),
        },
    };
    Inventory::load_sources(sources, &opts).map_err(|d| vec![d])
}

/// The inventory a playbook runs against: with the `group_vars/` and
/// `host_vars/` beside the playbook too, as Ansible reads them.
fn playbook_inventory(
    pb: &playbook::Playbook,
    cli: &[String],
    settings: &Settings,
) -> Result<Inventory, Vec<Diagnostic>> {
    let mut inventory = load_inventory(cli, settings)?;
    let folder = pb.path.parent().unwrap_or(Path::new("."));
    inventory.add_playbook_vars(folder).map_err(|d| vec![d])?;
    Ok(inventory)
}

/// The first executable `program` in PATH.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Role folders: `--roles-path`, then the setting's.
fn roles_path(cli: &[PathBuf], settings: &Settings) -> Vec<PathBuf> {
    cli.iter().chain(&settings.roles_path).cloned().collect()
}

/// `--collections-path`, then the resolved `collections_path` setting
/// (ANSIBLE_COLLECTIONS_PATH, ansible.cfg, or Ansible's default).
fn collections_path(cli: &[PathBuf], settings: &Settings) -> Vec<PathBuf> {
    cli.iter()
        .chain(&settings.collections_path)
        .cloned()
        .collect()
}

fn play_defaults(settings: &Settings) -> playbook::PlayDefaults {
    playbook::PlayDefaults {
        escalate: settings.escalate,
        become_user: settings.become_user.clone(),
        become_flags: settings.become_flags.clone(),
        gather_facts: settings.gathering == ansible_cfg::Gathering::Implicit,
    }
}

/// The playbook as `apply`, `check` and `validate` take it: vaults
/// unlocked first, roles and collections searched where the flags and
/// settings say, templates compiled.
fn load_playbook(
    path: &Path,
    roles: &[PathBuf],
    collections: &[PathBuf],
    vault: &VaultArgs,
    settings: &Settings,
) -> Result<playbook::Playbook, Vec<Diagnostic>> {
    unlock_vault(vault, settings)?;
    let mut pb = playbook::load_with(
        path,
        &roles_path(roles, settings),
        &collections_path(collections, settings),
        &play_defaults(settings),
    )?;
    install_plugins(&pb);
    validate::templates(&mut pb)?;
    let mut err = std::io::stderr().lock();
    for w in &pb.warnings {
        let _ = writeln!(err, "warning: {}: {}", w.span.location(), w.message);
    }
    Ok(pb)
}

/// What Ansible finds only when a task runs or a variable is read: with
/// `--strict`, the run is refused before any host; without, it is named
/// in one line, and only what reaches it fails.
fn judge_run_time_errors(pb: &playbook::Playbook, strict: bool) -> Result<(), Vec<Diagnostic>> {
    let found = pb.run_time_errors();
    if found.is_empty() {
        return Ok(());
    }
    if strict {
        return Err(found.into_iter().cloned().collect());
    }
    let _ = writeln!(
        std::io::stderr(),
        "note: {} error(s) that Ansible reports only when a task runs or a variable is read: \
         what reaches one fails there (`nodeprov validate` lists them; --strict refuses the run)",
        found.len()
    );
    Ok(())
}

/// The filter and test plugins beside the playbook and in its roles, as
/// Ansible finds them, and the collection plugins their texts name, before
/// any template of the run is compiled.
fn install_plugins(pb: &playbook::Playbook) {
    let mut folders = vec![pb.path.parent().unwrap_or(Path::new(".")).to_path_buf()];
    let mut named = crate::load::ansible_core::PluginNames::default();
    let mut read = std::collections::BTreeSet::new();
    let tasks = pb
        .plays
        .iter()
        .flat_map(|p| p.tasks.iter().chain(&p.handlers).chain(&p.validate));
    for task in tasks {
        let source = &task.module_span.source;
        if read.insert(source.name.clone()) {
            crate::template::plugins::named_in(&source.text, &mut named);
        }
        if let Some(role) = &task.role {
            if !folders.contains(&role.path) {
                folders.push(role.path.clone());
                named_in_files(&role.path, &mut named);
            }
        }
    }
    let under = |name: &str| folders.iter().map(|f| f.join(name)).collect();
    let dirs = crate::load::ansible_core::PluginDirs {
        filters: under("filter_plugins"),
        tests: under("test_plugins"),
        lookups: under("lookup_plugins"),
    };
    crate::template::plugins::install(dirs, named);
}

/// The collection plugins a role's YAML and template files name (its
/// defaults, vars and templates, which no task's text holds).
fn named_in_files(dir: &Path, named: &mut crate::load::ansible_core::PluginNames) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let text_file = path
            .extension()
            .is_some_and(|x| x == "yml" || x == "yaml" || x == "j2");
        if kind.is_dir() {
            named_in_files(&path, named);
        } else if kind.is_file() && text_file {
            if let Ok(text) = std::fs::read_to_string(&path) {
                crate::template::plugins::named_in(&text, named);
            }
        }
    }
}

fn forks(cli: Option<usize>, settings: &Settings) -> usize {
    cli.or(settings.forks).unwrap_or(DEFAULT_FORKS)
}

/// `-e` values: `@file.yml`, inline YAML/JSON mappings, or `k=v` pairs.
fn extra_vars(specs: &[String]) -> Result<Map<String, Value>, Vec<Diagnostic>> {
    let mut vars = Map::new();
    for spec in specs {
        let node = if let Some(file) = spec.strip_prefix('@') {
            yaml::load_file(Path::new(file)).map_err(|d| vec![d])?
        } else if spec.trim_start().starts_with('{') {
            yaml::load_str(spec, "--extra-vars").map_err(|d| vec![d])?
        } else {
            let words = crate::base::shell::split_strict(spec).map_err(|open| {
                let span = crate::base::diag::Span::synthetic("--extra-vars");
                vec![Diagnostic::new(
                    &span,
                    format!("{open} in '{}'", crate::base::diag::clip(spec)),
                )]
            })?;
            for word in words {
                let Some((k, v)) = word.split_once('=') else {
                    let span = crate::base::diag::Span::synthetic("--extra-vars");
                    return Err(vec![Diagnostic::new(
                        &span,
                        format!("expected key=value, @file or a mapping, got '{word}'"),
                    )]);
                };
                vars.insert(k.to_string(), Value::String(v.to_string()));
            }
            continue;
        };
        match node.to_json() {
            Value::Object(m) => vars.extend(m),
            _ => return Err(vec![node.error("extra vars must be a mapping")]),
        }
    }
    Ok(vars)
}

fn apply(args: RunArgs, check_cmd: bool, settings: &Settings) -> Result<u8, Vec<Diagnostic>> {
    let check = check_cmd || args.check;
    let diff = check_cmd || args.diff;
    let pb = load_playbook(
        &args.playbook,
        &args.roles_path,
        &args.collections_path,
        &args.target.vault,
        settings,
    )?;
    judge_run_time_errors(&pb, args.strict)?;
    let inventory = playbook_inventory(&pb, &args.target.inventory, settings)?;
    let conn = connect_options(args.target.connection, &args.target.ssh, settings)?;
    let connect = move |host: &str, vars: &Map<String, Value>| connect::open(&conn, host, vars);
    let extra = extra_vars(&args.extra_vars)?;
    let shard_hosts = args
        .shard
        .map(|s| shard_hosts(&s, &pb, &inventory, &extra, args.target.limit.as_deref()));
    let req = RunRequest {
        playbook: &pb,
        inventory: &inventory,
        shard: shard_hosts.as_ref(),
        limit: args.target.limit.as_deref(),
        opts: RunOptions {
            check,
            diff,
            tags: args.tags.clone(),
            skip_tags: args.skip_tags.clone(),
            ansible_managed: settings.ansible_managed.clone(),
        },
        extra_vars: extra,
        forks: forks(args.forks, settings),
        connect: &connect,
    };
    let report_dir = match &args.report {
        Some(dir) => Some(report::ReportDir::create(dir).map_err(|e| {
            vec![Diagnostic::new(
                &crate::base::diag::Span::synthetic("--report"),
                e.to_string(),
            )]
        })?),
        None => None,
    };
    let human_out = args.format == Format::Human;
    let progress = Progress::new(human_out && std::io::stderr().is_terminal());
    let stdout = Mutex::new(std::io::stdout());
    let outcome = run_playbook(&req, &|e| {
        if human_out {
            // Rendered whole before masking, so no value is split across writes.
            let mut block = Vec::new();
            progress.event(&e, &mut block);
            let block = String::from_utf8_lossy(&block);
            let _ = write!(stdout.lock().unwrap(), "{}", vault::redact(&block));
        }
    })?;
    progress.clear_line();
    let mut code = report::exit_code(&outcome, check);
    let retry = (!check && settings.retry_files_enabled)
        .then(|| write_retry_file(&args.playbook, settings, &outcome))
        .flatten();
    let mode = if check { "check" } else { "apply" };
    let playbook = args.playbook.display().to_string();
    let mut doc =
        report::json::Document::new(&outcome, mode, &playbook, code).redacted(vault::redact_json);
    if let Some(shard) = args.shard {
        let plays: Vec<&str> = pb.plays.iter().map(|p| p.name.as_str()).collect();
        let shard = serde_json::json!({"index": shard.index, "count": shard.count, "plays": plays});
        doc = doc.with("shard", shard);
    }
    let mut out = stdout.lock().unwrap();
    if human_out {
        let _ = write!(out, "{}", vault::redact(&human::recap(&outcome)));
        if let Some(line) = retry {
            let _ = writeln!(out, "{line}");
        }
    } else {
        let _ = doc.write(&mut *out);
    }
    if let Some(dir) = &report_dir {
        if let Err(e) = write_reports(dir, &doc.value()) {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            code |= EXIT_FAILED;
        }
    }
    Ok(code)
}

/// The hosts of one shard. A bad pattern gives none here: the run reports
/// it at its play (or at `--limit`) before touching any host.
fn shard_hosts(
    shard: &Shard,
    pb: &playbook::Playbook,
    inventory: &Inventory,
    extra: &Map<String, Value>,
    limit: Option<&str>,
) -> HashSet<String> {
    let templates = crate::template::Templates::new();
    let patterns: Vec<String> = pb
        .plays
        .iter()
        .filter_map(|p| crate::exec::vars::host_pattern(p, &templates, &p.vars, extra).ok())
        .collect();
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    shard.hosts(inventory, &patterns, limit).unwrap_or_default()
}

fn merge_cmd(args: &MergeArgs) -> Result<u8, Vec<Diagnostic>> {
    let fail = |e: &dyn std::fmt::Display| {
        vec![Diagnostic::new(
            &Span::synthetic("report merge"),
            e.to_string(),
        )]
    };
    let docs = args
        .reports
        .iter()
        .map(|p| report::merge::read(p).map(|doc| (p.clone(), doc)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&e))?;
    let doc = report::merge::merge(&docs).map_err(|e| fail(&e))?;
    if let Some(dir) = &args.report {
        let dir = report::ReportDir::create(dir).map_err(|e| fail(&e))?;
        write_reports(&dir, &doc).map_err(|e| fail(&e))?;
    }
    let code = doc["exit_code"]
        .as_u64()
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(EXIT_FAILED);
    match args.format {
        Format::Json => print!("{}", report::json::text(&doc)),
        Format::Human => println!(
            "{} shards, {} host results, exit code {code}",
            docs.len(),
            doc["hosts"].as_array().map_or(0, Vec::len)
        ),
    }
    Ok(code)
}

fn completions_cmd(args: &CompletionsArgs) -> Result<u8, Vec<Diagnostic>> {
    let mut script = Vec::new();
    let mut cli = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(args.shell, &mut cli, "nodeprov", &mut script);
    print_generated("completions", &script)
}

fn doc_cmd(args: &DocArgs) -> Result<u8, Vec<Diagnostic>> {
    let text = match &args.module {
        None if args.keywords => keyword_doc::table(crate::load::keywords::KEYWORDS),
        None => module_doc::list(registry()),
        Some(name) => match registry::find(name) {
            Some(spec) => module_doc::page(spec),
            None => {
                let mut message = format!("no native module named '{name}'");
                if let Some(near) = crate::base::diag::suggest(name, registry::all_names()) {
                    message.push_str(&format!("; did you mean '{near}'?"));
                }
                message.push_str(" (`nodeprov doc --list` lists them)");
                return Err(vec![Diagnostic::new(&Span::synthetic("doc"), message)]);
            }
        },
    };
    print_generated("doc", text.as_bytes())
}

fn man_cmd() -> Result<u8, Vec<Diagnostic>> {
    let mut page = Vec::new();
    let cli = <Cli as clap::CommandFactory>::command();
    clap_mangen::Man::new(cli)
        .render(&mut page)
        .map_err(|e| vec![Diagnostic::new(&Span::synthetic("man"), e.to_string())])?;
    print_generated("man", &page)
}

/// Writes a generated file to stdout; a reader that stops early (`| head`)
/// is not an error.
fn print_generated(what: &str, text: &[u8]) -> Result<u8, Vec<Diagnostic>> {
    match std::io::stdout().lock().write_all(text) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(vec![Diagnostic::new(
            &Span::synthetic(what),
            format!("cannot write to stdout: {e}"),
        )]),
        _ => Ok(EXIT_OK),
    }
}

/// Every `--report` file; the first that cannot be written stops the rest.
fn write_reports(dir: &report::ReportDir, doc: &Value) -> Result<(), report::ReportError> {
    for (name, content) in report::report_files(doc) {
        dir.write(name, &content)?;
    }
    Ok(())
}

/// The connection flags with what ansible.cfg adds where a flag is not given.
fn connect_options(
    connection: Option<crate::cli::Connection>,
    ssh: &crate::cli::SshArgs,
    settings: &Settings,
) -> Result<connect::ConnectOptions, Vec<Diagnostic>> {
    let mut ssh = ssh.clone();
    ssh.user = ssh.user.or_else(|| settings.remote_user.clone());
    ssh.private_key = ssh
        .private_key
        .or_else(|| settings.private_key_file.clone());
    ssh.timeout = ssh.timeout.or(settings.timeout);
    ssh.ask_become_pass |= settings.become_ask_pass;
    ssh.extra_ssh_config = settings.ssh_config_lines.clone();
    if !settings.host_key_checking && !ssh.accept_new_host_keys {
        ssh.accept_new_host_keys = true;
        let _ = writeln!(
            std::io::stderr(),
            "note: host_key_checking is False: the keys of hosts not yet in known_hosts are \
             recorded there (as --accept-new-host-keys does); a changed host key is still refused"
        );
    }
    connect::ConnectOptions::from_cli(connection, &ssh).map_err(|e| {
        vec![Diagnostic::new(
            &crate::base::diag::Span::synthetic("ssh"),
            e.to_string(),
        )]
    })
}

fn validate_cmd(args: &ValidateArgs, settings: &Settings) -> Result<u8, Vec<Diagnostic>> {
    let pb = load_playbook(
        &args.playbook,
        &args.roles_path,
        &args.collections_path,
        &args.vault,
        settings,
    )?;
    let inventory = playbook_inventory(&pb, &args.inventory, settings)?;
    // A templated pattern is known only with the run's extra variables.
    let literal = pb
        .plays
        .iter()
        .enumerate()
        .filter(|(_, p)| !crate::template::is_templated(&p.hosts));
    for (p, play) in literal {
        match inventory.select(&play.hosts) {
            Err(PatternError::NoMatch { .. }) if pb.groups_made_before(p) => {}
            Err(e) => return Err(vec![Diagnostic::new(&play.span, format!("hosts: {e}"))]),
            Ok(_) => {}
        }
    }
    let tasks: usize = pb
        .plays
        .iter()
        .map(|p| p.tasks.len() + p.handlers.len() + p.validate.len())
        .sum();
    let found = pb.run_time_errors();
    let verdict = match found.len() {
        0 => "ok".to_string(),
        n => format!("loads, with {n} error(s) that Ansible reports when a task runs"),
    };
    println!(
        "{}: {verdict} ({} plays, {tasks} tasks)",
        args.playbook.display(),
        pb.plays.len()
    );
    print_errors(found.iter().copied());
    // Never silent: each task that Ansible's own module will run, and why.
    let all = pb
        .plays
        .iter()
        .flat_map(|p| p.tasks.iter().chain(&p.handlers).chain(&p.validate));
    for task in all {
        if let Some(f) = &task.ansible {
            println!(
                "  {}: runs Ansible's module {} (ansible-core {}; native: no, {})",
                task.module_span.location(),
                f.payload.fqcn,
                f.payload.ansible_version,
                f.why
            );
        }
    }
    let bridged = crate::template::plugins::bridged();
    for kind in crate::load::ansible_core::PluginKind::ALL {
        let kind_name = kind.name();
        for name in bridged.of(kind) {
            println!(
                "  {kind_name} {name}: runs through ansible-core {} (native: no)",
                crate::load::ansible_core::version().unwrap_or_default()
            );
        }
    }
    Ok(match found.is_empty() {
        true => EXIT_OK,
        false => EXIT_USAGE,
    })
}

fn inventory_cmd(args: &InventoryArgs, settings: &Settings) -> Result<u8, Vec<Diagnostic>> {
    unlock_vault(&args.vault, settings)?;
    let inv = load_inventory(&args.inventory, settings)?;
    if args.graph {
        print!("{}", inv.graph());
    } else if let Some(host) = &args.host {
        if !inv.hosts().contains(host) {
            let span = crate::base::diag::Span::synthetic("inventory");
            return Err(vec![Diagnostic::new(
                &span,
                format!("host '{host}' is not in the inventory"),
            )]);
        }
        print_json(Value::Object(inv.host_vars(host)));
    } else {
        print_json(inv.list_json());
    }
    Ok(EXIT_OK)
}

/// Pretty JSON on stdout, with decrypted values masked.
fn print_json(mut doc: Value) {
    vault::redact_json_data(&mut doc);
    println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
}

fn facts_cmd(args: &FactsArgs, settings: &Settings) -> Result<u8, Vec<Diagnostic>> {
    unlock_vault(&args.vault, settings)?;
    let inv = load_inventory(&args.inventory, settings)?;
    let mut hosts = Vec::new();
    for pattern in &args.hosts {
        let span = crate::base::diag::Span::synthetic("facts");
        hosts.extend(
            inv.select(pattern)
                .map_err(|e| vec![Diagnostic::new(&span, e.to_string())])?,
        );
    }
    let conn = connect_options(args.connection, &args.ssh, settings)?;
    let mut out = Map::new();
    let mut code = EXIT_OK;
    for host in hosts {
        let vars = inv.host_vars(&host);
        let facts = connect::open(&conn, &host, &vars)
            .and_then(|mut t| crate::remote::host_facts::gather(t.as_mut()));
        match facts {
            Ok(f) => out.insert(host, Value::Object(f)),
            Err(e) => {
                code = EXIT_FAILED;
                out.insert(host, serde_json::json!({"unreachable": e.to_string()}))
            }
        };
    }
    print_json(Value::Object(out));
    Ok(code)
}

fn smoke_cmd(args: &SmokeArgs, settings: &Settings) -> Result<u8, Vec<Diagnostic>> {
    unlock_vault(&args.target.vault, settings)?;
    let inv = load_inventory(&args.target.inventory, settings)?;
    let span = crate::base::diag::Span::synthetic("smoke");
    let mut hosts = inv
        .select(args.target.limit.as_deref().unwrap_or("all"))
        .map_err(|e| vec![Diagnostic::new(&span, e.to_string())])?;
    if hosts.is_empty() && args.target.inventory.is_empty() && settings.inventory.is_empty() {
        hosts.push("localhost".into());
    }
    let opts = crate::smoke::SmokeOptions {
        tier: args.tier,
        expect_gpus: args.expect_gpus,
        min_driver: args.min_driver.clone(),
        cuda_home: args.cuda_home.clone(),
        torch: args.torch,
        python: args.python.clone(),
        bf16_tflops_floor: args.bf16_floor,
        ..crate::smoke::SmokeOptions::default()
    };
    let conn = connect_options(args.target.connection, &args.target.ssh, settings)?;
    let forks = forks(args.forks, settings);
    let results = crate::exec::pool::in_parallel(&hosts, forks, |host| {
        let vars = inv.host_vars(host);
        match connect::open(&conn, host, &vars) {
            Ok(mut t) => crate::smoke::run_smoke(host, t.as_mut(), &opts),
            Err(e) => crate::smoke::unreachable(host, &e.to_string()),
        }
    });
    match args.format {
        Format::Human => print!("{}", crate::report::smoke::render_human(&results)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&crate::report::smoke::report_json(&results))
                .expect("json")
        ),
    }
    Ok(if results.iter().any(|r| r.failed()) {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// Like Ansible, failed and never-reached hosts go to `<playbook>.retry`
/// beside the playbook (or in `retry_files_save_path`), for
/// `--limit @<file>`; returns the line to show.
fn write_retry_file(
    playbook: &Path,
    settings: &Settings,
    outcome: &crate::exec::RunOutcome,
) -> Option<String> {
    let mut hosts: Vec<&str> = outcome
        .reports
        .iter()
        .filter(|r| r.failed())
        .map(|r| r.host.as_str())
        .collect();
    hosts.extend(outcome.never_touched.iter().map(String::as_str));
    if hosts.is_empty() {
        return None;
    }
    hosts.dedup();
    let path = match &settings.retry_files_save_path {
        Some(dir) => dir.join(playbook.with_extension("retry").file_name()?),
        None => playbook.with_extension("retry"),
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name()?.to_string_lossy();
    let body: String = hosts.iter().map(|h| format!("{h}\n")).collect();
    let written = report::ReportDir::open(dir).and_then(|dir| dir.write(&name, &body));
    Some(match written {
        Ok(()) => format!("to retry: --limit @{}", path.display()),
        Err(e) => format!("note: no retry file: {e}"),
    })
}
