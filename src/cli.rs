//! The command line: flags in, one exit code out.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::load::inventory::shard::Shard;

const EXIT_CODES: &str = "Exit codes:
  0  success; in check mode: compliant
  1  nothing ran: usage or configuration error
  2  check mode found drift (or a result it could not predict)
  4  at least one host failed or was unreachable
  6  both 2 and 4";

/// The release and the commit it was built from (build.rs), so a report of a
/// bug names the exact source.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NODEPROV_COMMIT"),
    ")"
);

#[derive(Parser, Debug)]
#[command(name = "nodeprov", version = VERSION, about = "Agentless, Ansible-shaped provisioning for GPU server fleets", after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Apply a playbook (idempotent: a second run changes nothing).
    #[command(after_help = EXIT_CODES)]
    Apply(RunArgs),
    /// Compliance dry-run: `apply --check --diff`; changes nothing, the exit code tells the result.
    #[command(after_help = EXIT_CODES)]
    Check(RunArgs),
    /// Parse and type-check a playbook, its inventory, templates and conditions without touching a host.
    Validate(ValidateArgs),
    /// Show the inventory as nodeprov resolves it.
    Inventory(InventoryArgs),
    /// Show what the probe sees on hosts.
    Facts(FactsArgs),
    /// GPU smoke test: prove each node really computes (exit 4 when a host fails it).
    #[command(after_help = EXIT_CODES)]
    Smoke(SmokeArgs),
    /// Work on reports written by earlier runs.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Work on Ansible Vault files.
    #[command(subcommand)]
    Vault(VaultCommand),
    /// Print the shell completion script for SHELL, e.g.
    /// `nodeprov completions bash > /usr/share/bash-completion/completions/nodeprov`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), e.g. `nodeprov man | man -l -`.
    Man,
    /// Show a module's reference: what it does, its keys and every parameter (as `ansible-doc`).
    Doc(DocArgs),
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["module", "list", "keywords"])))]
pub struct DocArgs {
    /// The module, by any name a task selects it with (`sysctl`, `ansible.posix.sysctl`).
    pub module: Option<String>,
    /// One line for each module nodeprov runs natively.
    #[arg(long, short = 'l')]
    pub list: bool,
    /// The playbook keywords: where each is taken or refused, and what
    /// nodeprov makes of it.
    #[arg(long)]
    pub keywords: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// Merge the JSON reports of the N shards of one run (`--shard I/N`) into
    /// the fleet report; exits with the fleet's exit code.
    #[command(after_help = EXIT_CODES)]
    Merge(MergeArgs),
}

#[derive(Subcommand, Debug)]
pub enum VaultCommand {
    /// Print the plaintext of vault-encrypted FILEs, unmasked.
    View(VaultViewArgs),
}

#[derive(Args, Debug)]
pub struct VaultViewArgs {
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub vault: VaultArgs,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shards' JSON reports (`--format json` output or `--report` report.json), each once.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    /// Also write DIR/report.json, DIR/junit.xml and DIR/report.html of the whole fleet.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Connection {
    Ssh,
    Local,
}

#[derive(Args, Debug)]
pub struct Target {
    /// Inventory source: a file (INI, YAML, script or plugin), a folder, or a
    /// comma-separated host list ("a,b,"); repeat for several [default: ansible.cfg's `inventory`].
    #[arg(short = 'i', long)]
    pub inventory: Vec<String>,
    /// Host pattern to restrict the run to (`gpu:!broken`, `@retry-file`).
    #[arg(short = 'l', long)]
    pub limit: Option<String>,
    /// How to reach hosts (overrides `ansible_connection`).
    #[arg(short = 'c', long, value_enum)]
    pub connection: Option<Connection>,
    #[command(flatten)]
    pub ssh: SshArgs,
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// Passwords for Ansible Vault content, as ansible-playbook takes them;
/// ansible.cfg's vault_identity_list and vault_password_file (or their
/// ANSIBLE_VAULT_* variables) add to them.
#[derive(Args, Debug, Default)]
pub struct VaultArgs {
    /// A vault password: LABEL@FILE (a file, or a script that prints it), LABEL@prompt, or FILE.
    #[arg(long = "vault-id", value_name = "LABEL@SOURCE")]
    pub vault_ids: Vec<String>,
    /// A file holding the vault password (an executable one is run and prints it).
    #[arg(
        long = "vault-password-file",
        visible_alias = "vault-pass-file",
        value_name = "FILE"
    )]
    pub vault_password_files: Vec<PathBuf>,
    /// Prompt for the vault password.
    #[arg(long)]
    pub ask_vault_pass: bool,
}

/// SSH connection flags. Inventory variables (`ansible_user`,
/// `ansible_ssh_private_key_file`, ...) win over these, as in Ansible.
#[derive(Args, Clone, Debug)]
pub struct SshArgs {
    /// Remote user to log in as.
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Private key file to authenticate with.
    #[arg(long, visible_alias = "key-file")]
    pub private_key: Option<PathBuf>,
    /// Prompt for the SSH password (or set NODEPROV_SSH_PASSWORD).
    #[arg(short = 'k', long)]
    pub ask_pass: bool,
    /// Prompt for the sudo password (or set NODEPROV_BECOME_PASSWORD, or NODEPROV_BECOME_PASSWORD_FILE to a file only you can read).
    #[arg(short = 'K', long)]
    pub ask_become_pass: bool,
    /// known_hosts file to use instead of ~/.ssh/known_hosts.
    #[arg(long)]
    pub known_hosts: Option<PathBuf>,
    /// Record the keys of hosts not yet known (like StrictHostKeyChecking=accept-new); changed keys are still refused.
    #[arg(long)]
    pub accept_new_host_keys: bool,
    /// ssh_config file to read instead of ~/.ssh/config and /etc/ssh/ssh_config.
    #[arg(long)]
    pub ssh_config: Option<PathBuf>,
    /// SSH connect timeout in seconds [default: ConnectTimeout from ssh_config, else 10].
    #[arg(short = 'T', long)]
    pub timeout: Option<u64>,
    /// Seconds one script may run before its host counts as unreachable.
    #[arg(long, default_value_t = 3600)]
    pub command_timeout: u64,
    /// ssh_config lines that outrank the ssh_config files (ansible.cfg's `ssh_args`).
    #[arg(skip)]
    pub extra_ssh_config: Vec<String>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    pub playbook: PathBuf,
    /// Folders to look for roles in, before ansible.cfg's `roles_path` (colon-separated).
    #[arg(long, value_delimiter = ':', value_name = "DIRS")]
    pub roles_path: Vec<PathBuf>,
    /// Folders holding ansible_collections/, after the playbook's collections/
    /// and before ANSIBLE_COLLECTIONS_PATH (colon-separated).
    #[arg(long, value_delimiter = ':', value_name = "DIRS")]
    pub collections_path: Vec<PathBuf>,
    #[command(flatten)]
    pub target: Target,
    /// Only run tasks with these tags (comma-separated).
    #[arg(short = 't', long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Skip tasks with these tags (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub skip_tags: Vec<String>,
    /// Extra variables: key=value, @file.yml, or inline YAML/JSON; highest precedence.
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
    /// Change nothing; report what would change.
    #[arg(short = 'C', long)]
    pub check: bool,
    /// Show file diffs and `key: actual → desired` for settings.
    #[arg(short = 'D', long)]
    pub diff: bool,
    /// Hosts worked on in parallel [default: ansible.cfg's `forks`, else 50].
    #[arg(short = 'f', long)]
    pub forks: Option<usize>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Also write DIR/report.json and DIR/junit.xml (created if missing).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Work on part I of N of the targeted hosts (1-based; names sorted, dealt in turn);
    /// merge the N reports with `nodeprov report merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Refuse the run, before any host, on an error Ansible reports only when a
    /// task runs (an unknown parameter or filter, a Windows module): `validate` lists them.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    pub playbook: PathBuf,
    /// Folders to look for roles in, before ansible.cfg's `roles_path` (colon-separated).
    #[arg(long, value_delimiter = ':', value_name = "DIRS")]
    pub roles_path: Vec<PathBuf>,
    /// Folders holding ansible_collections/, after the playbook's collections/
    /// and before ANSIBLE_COLLECTIONS_PATH or ansible.cfg's `collections_path` (colon-separated).
    #[arg(long, value_delimiter = ':', value_name = "DIRS")]
    pub collections_path: Vec<PathBuf>,
    /// Inventory sources, as for `apply`.
    #[arg(short = 'i', long)]
    pub inventory: Vec<String>,
    #[command(flatten)]
    pub vault: VaultArgs,
}

#[derive(Args, Debug)]
pub struct InventoryArgs {
    /// Inventory sources, as for `apply`.
    #[arg(short = 'i', long)]
    pub inventory: Vec<String>,
    /// All groups, hosts and host variables as JSON.
    #[arg(long, conflicts_with_all = ["host", "graph"])]
    pub list: bool,
    /// One host's merged variables as JSON.
    #[arg(long)]
    pub host: Option<String>,
    /// The group tree.
    #[arg(long)]
    pub graph: bool,
    #[command(flatten)]
    pub vault: VaultArgs,
}

#[derive(Args, Debug)]
pub struct FactsArgs {
    /// Host patterns.
    #[arg(required = true)]
    pub hosts: Vec<String>,
    /// Inventory sources, as for `apply`.
    #[arg(short = 'i', long)]
    pub inventory: Vec<String>,
    #[arg(short = 'c', long, value_enum)]
    pub connection: Option<Connection>,
    #[command(flatten)]
    pub ssh: SshArgs,
    #[command(flatten)]
    pub vault: VaultArgs,
}

#[derive(Args, Debug)]
pub struct SmokeArgs {
    #[command(flatten)]
    pub target: Target,
    /// 0: inventory and health (<2 s); 1: toolkit and compute; 2: DCGM diagnostics.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub tier: u8,
    /// Number of GPUs each host must have.
    #[arg(long)]
    pub expect_gpus: Option<usize>,
    /// Minimum driver version, e.g. 550.54.
    #[arg(long)]
    pub min_driver: Option<String>,
    #[arg(long, default_value = "/usr/local/cuda")]
    pub cuda_home: String,
    /// Run the PyTorch compute checks (tier 1).
    #[arg(long)]
    pub torch: bool,
    /// Python interpreter that has PyTorch.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Minimum bf16 matmul throughput in TFLOP/s.
    #[arg(long)]
    pub bf16_floor: Option<f64>,
    /// Hosts worked on in parallel [default: ansible.cfg's `forks`, else 50].
    #[arg(short = 'f', long)]
    pub forks: Option<usize>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}
