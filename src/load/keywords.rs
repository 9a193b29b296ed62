//! Ansible's playbook keywords, one declaration each: at which level
//! nodeprov takes it, refuses it, or Ansible has no such keyword, and what
//! nodeprov makes of it. The loader checks every key against this table, a
//! refused key's error gives its note as the reason, and the compatibility
//! table of docs/ansible-projects.md (and `nodeprov doc --keywords`) is
//! rendered from it, so none of them can say otherwise.

/// Where a keyword is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Play,
    Block,
    Task,
    /// `import_tasks`, `include_tasks`, `import_role`, `include_role`.
    Include,
    /// An entry of a play's `roles:`; any key not taken there is a role
    /// parameter, as in Ansible.
    RoleEntry,
}

impl Level {
    pub const ALL: [Level; 5] = [
        Level::Play,
        Level::Block,
        Level::Task,
        Level::Include,
        Level::RoleEntry,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Level::Play => "play",
            Level::Block => "block",
            Level::Task => "task",
            Level::Include => "include",
            Level::RoleEntry => "role entry",
        }
    }
}

/// What nodeprov does with a keyword at one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Yes,
    /// Ansible has it there and nodeprov does not honour it: an error at
    /// `validate`, so a playbook never runs differently from what it says.
    Refused,
    /// Not a keyword there in Ansible either.
    No,
}

#[derive(Debug)]
pub struct Keyword {
    /// `with_<lookup>` stands for every `with_` key but `with_items`.
    pub name: &'static str,
    /// Indexed as [`Level::ALL`].
    pub at: [At; 5],
    pub notes: &'static str,
}

impl Keyword {
    pub fn at(&self, level: Level) -> At {
        self.at[level as usize]
    }

    fn is_pattern(&self) -> bool {
        self.name.contains('<')
    }

    /// Whether a key written in a playbook is this keyword.
    fn names(&self, key: &str) -> bool {
        match self.name.split_once('<') {
            Some((prefix, _)) => key.starts_with(prefix) && key != "with_items",
            None => self.name == key,
        }
    }
}

macro_rules! keywords {
    ($($name:literal: $play:ident $block:ident $task:ident $include:ident $role:ident
        $(=> $notes:literal)?;)*) => {
        pub const KEYWORDS: &[Keyword] = &[$(Keyword {
            name: $name,
            at: [At::$play, At::$block, At::$task, At::$include, At::$role],
            notes: concat!("" $(, $notes)?),
        }),*];
    };
}

// Columns: play block task include role-entry.
keywords! {
    "action": No No Yes No No
        => "`action: copy src=a dest=b` or `action: {module: copy, …}`, read as the task `copy: \
           …`";
    "always": No Yes No No No
        => "runs after the block's tasks and its `rescue:`, whatever happened";
    "any_errors_fatal": Yes Refused Refused No No
        => "a failed host halts the rollout after its batch; per task it would need a barrier \
           between hosts";
    "apply": No No No Yes No
        => "keywords for the included tasks themselves, as a block's: among the arguments of \
           `include_tasks` or `include_role`, as Ansible writes it, or beside them";
    "args": No No Yes No No;
    "async": No No Yes No No
        => "with `poll` above 0 (Ansible's default, 10), the task runs to its end and fails \
           after `async` seconds, as with `timeout:` (the smaller of the two); with `poll: 0` \
           (fire-and-forget) the task is started as a job in a session of its own, killed after \
           `async` seconds, and registers Ansible's `ansible_job_id`, `results_file`, `started` \
           and `finished`, which `async_status` reads: a command's output, Ansible's module's \
           result, or a native module's planned result once its steps succeeded (not verified, \
           as the job may not have ended). Modules whose Ansible action plugin does not support \
           async (`copy`, `template`, `debug`...) are refused, as Ansible refuses them. `async: 0` runs the task as any other. Templated values are judged per \
           host and item; a templated `poll` that renders to 0 fails the task";
    "become": Yes Yes Yes Yes Yes
        => "through sudo; a task's templated `become` is judged per host (as the login user \
           where it is false)";
    "become_exe": Refused Refused Refused No No
        => "sudo is called as `sudo`";
    "become_flags": Yes Refused Refused No No
        => "a play's: sudo's options for its hosts, in place of nodeprov's `-H` (`-S` is always \
           added and `-n` left out: nodeprov answers sudo's prompt itself); also from \
           `ansible_become_flags` and ansible.cfg. Not on a block or task: sudo is started once \
           per host and play";
    "become_method": Yes Refused Yes No No
        => "`sudo` only (also as `ansible.builtin.sudo`); other methods are refused";
    "become_user": Yes Yes Yes Yes Yes;
    "block": No Yes No No No
        => "expanded at load";
    "changed_when": No No Yes No No
        => "an expression, a boolean or a list";
    "check_mode": Yes Yes Yes No Yes
        => "a task or block runs in check mode (or for real) whatever the run's mode; a \
           templated value (`\"{{ x | d(ansible_check_mode) }}\"`) is judged per host and item, \
           and one that cannot be judged keeps the task in check mode, which changes nothing";
    "collections": Yes Refused Refused No No
        => "play (and a role's `meta/main.yml`): the collections short role and module names \
           resolve through, in order; see [Collections](#collections)";
    "connection": Yes Refused Yes No No
        => "play: `local` or `ssh` (`smart`, `paramiko`, `paramiko_ssh`), below the inventory's \
           `ansible_connection`; task: `local` only, which runs it on the controller with its \
           host's variables (as `delegate_to: localhost` on the controller's own connection)";
    "debugger": Refused Refused Refused No No
        => "no interactive debugger";
    "delay": No No Yes No No
        => "seconds between attempts, 5 by default";
    "delegate_facts": No Refused Yes No No
        => "the variables a delegated task sets (`set_fact`, gathered facts) are the delegate's: \
           `hostvars` shows them at once, and the delegate has them in the plays after; a \
           block's is refused";
    "delegate_to": No Yes Yes Yes No
        => "any host, templated per host: the task is probed, applied and verified on the \
           delegate (an inventory host through its own connection variables; `localhost` not in \
           the inventory is the controller; another name is an address) with its host's \
           variables, and registers for its host; the delegate's connection stays open for the \
           play's next delegation. A target that names the loop variable, and `reboot`, \
           `wait_for_connection` and `meta`, are refused. On a block or an include, for each of \
           its tasks";
    "diff": Yes Yes Yes No No
        => "keeps (true) or drops (false) the task's diffs in every report, whatever `--diff` \
           and `check` decide for the run; the nearest wins";
    "environment": Yes Yes Yes Yes Yes
        => "a mapping or a template of one, merged play → block → task";
    "fact_path": Refused No No No No
        => "local facts (`ansible_local`) are not gathered";
    "failed_when": No No Yes No No
        => "as `changed_when`; judges a module's own failure too (found while planning, or of \
           its step), `result.msg` saying why";
    "force_handlers": Refused No No No No
        => "a failed host runs no handlers";
    "gather_facts": Yes No No No No
        => "`false` sends no fact probe; facts come from the same batched probe as the tasks";
    "gather_subset": Refused No No No No
        => "facts are one fixed set";
    "gather_timeout": Refused No No No No
        => "`--command-timeout` bounds the fact probe";
    "handlers": Yes No No No No;
    "hosts": Yes No No No No
        => "a pattern; a template renders with the play's vars and `-e` vars (not a host's)";
    "ignore_errors": Yes Yes Yes Yes Yes
        => "true, false, or a template judged per host";
    "ignore_unreachable": Refused Refused Refused No No
        => "an unreachable host is reported and left";
    "listen": No No Yes Yes No
        => "a handler's topics (Ansible's handler keyword); on an `import_tasks` of handlers, \
           topics of each handler it imports";
    "local_action": No No Yes No No
        => "as `action`, run on the controller (`connection: local`)";
    "loop": No No Yes Yes No;
    "loop_control": No No Yes Yes No
        => "`loop_var`, `label`, `index_var`, and `extended` (`ansible_loop`, with `allitems` \
           unless `extended_allitems: false`); each result keeps them as Ansible's do. `pause` \
           and `break_when` run the items one by one, an apply round trip each; a value \
           Ansible refuses fails the task when its loop starts";
    "max_fail_percentage": Yes No No No No;
    "module_defaults": Yes Yes Yes No No
        => "also on roles and includes; the nearest wins, the task's own parameters over all; a \
           `package` task takes its host's package manager's (`apt`, `dnf`); `group/…` action \
           groups are refused";
    "name": Yes Yes Yes Yes Yes;
    "no_log": Yes Yes Yes Yes Yes
        => "hides the task's values from every report; a templated value (`\"{{ \
           ansible_verbosity < 2 }}\"`) hides them too, as a report cannot wait for a host's \
           values to decide";
    "notify": No Yes Yes Yes No
        => "handlers by name or `listen` topic; a block's or include's, for each of its tasks \
           that names none";
    "order": Yes No No No No
        => "`inventory`, `reverse_inventory`, `sorted`, `reverse_sorted` or `shuffle`: the \
           order hosts are taken in, `serial` batches included (hosts of a batch still run at once)";
    "poll": No No Yes No No
        => "with `async`: 0 leaves a command running (see `async`); any other value waits for \
           the task's end";
    "port": Refused Refused Refused No No
        => "set `ansible_port` in the inventory";
    "post_tasks": Yes No No No No;
    "pre_tasks": Yes No No No No;
    "register": No No Yes No No;
    "remote_user": Yes Refused Refused No No
        => "play: the SSH login unless the inventory sets `ansible_user`";
    "rescue": No Yes No No No
        => "runs when a task of the block fails; a successful rescue clears the failure";
    "retries": No No Yes No No
        => "with `until` only";
    "role": No No No No Yes
        => "the role's name (`name:` too)";
    "roles": Yes No No No No;
    "run_once": Refused Yes Yes Yes No
        => "on a task, or on a block or include for each of its tasks; a loop runs all its items \
           on one host";
    "serial": Yes No No No No
        => "a count, a percentage or a list of them";
    "strategy": Yes No No No No
        => "`free` only: hosts never wait for each other";
    "tags": Yes Yes Yes Yes Yes;
    "tasks": Yes No No No No;
    "throttle": Yes Yes Yes No No
        => "at most that many hosts apply the task's changes at once (0: no bound); its steps \
           go out in a batch of their own, and probes and check mode are not held back";
    "timeout": Refused Refused Yes No No
        => "on a task only; `--command-timeout` bounds every script";
    "until": No No Yes No No
        => "in a loop, each item retried on its own";
    "validate": Yes No No No No
        => "nodeprov's own: tasks run after the handlers to check the host";
    "vars": Yes Yes Yes Yes Yes;
    "vars_files": Yes No No No No
        => "a name or a list of alternatives; a name made of facts is read per host after facts \
           are gathered; an entry none of whose files exists is skipped, as Ansible skips it (a \
           warning names one without templates)";
    "vars_prompt": Refused No No No No
        => "runs are never interactive";
    "when": No Yes Yes Yes Yes
        => "as `changed_when`; a block's is added to its tasks'";
    "with_<lookup>": No No Yes Yes No
        => "`items`, `list`, `dict`, `nested`/`cartesian`, `together`, `subelements`, \
           `flattened`, `first_found`, `fileglob` natively; any other lookup through ansible-core, on the loop's terms";
    "with_items": No No Yes Yes No
        => "see `with_<lookup>`";
}

/// The keywords taken at `level`, by name (patterns left out).
pub fn taken(level: Level) -> Vec<&'static str> {
    KEYWORDS
        .iter()
        .filter(|k| k.at(level) == At::Yes && !k.is_pattern())
        .map(|k| k.name)
        .collect()
}

pub fn takes(level: Level, name: &str) -> bool {
    KEYWORDS
        .iter()
        .any(|k| k.names(name) && k.at(level) == At::Yes)
}

/// The keyword, when Ansible has it at `level` and nodeprov refuses it.
pub fn refused(level: Level, name: &str) -> Option<&'static Keyword> {
    KEYWORDS
        .iter()
        .find(|k| k.name == name && k.at(level) == At::Refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_declared_once_in_order() {
        let names: Vec<_> = KEYWORDS.iter().map(|k| k.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn a_refused_keyword_says_why() {
        let silent: Vec<_> = KEYWORDS
            .iter()
            .filter(|k| k.at.contains(&At::Refused) && k.notes.is_empty())
            .map(|k| k.name)
            .collect();
        assert!(silent.is_empty(), "refused without a reason: {silent:?}");
    }
}
