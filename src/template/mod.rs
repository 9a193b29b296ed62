//! Jinja templating with Ansible semantics: strict undefined variables, no
//! auto-escaping, native types for single-expression parameters, `omit`,
//! and the filters playbooks commonly use.

mod backslash;
mod chain;
mod filters;
mod hostvars;
mod ipaddr;
mod jinja;
mod json_emit;
mod lookups;
mod missing;
mod paths;
pub mod plugins;
mod random;
mod scope;
mod spaces;
mod yaml_emit;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use minijinja::machinery;
use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, UndefinedBehavior, Value};
use serde_json::{Map, Value as Json};

pub use hostvars::{HostVars, Kept};

use crate::load::ansible_core::PluginKind;

/// The Ansible version whose playbook language nodeprov follows, as
/// `ansible_version` tells playbooks that test for it.
pub const ANSIBLE_VERSION: (u64, u64, u64) = (2, 21, 5);

/// What `{{ ansible_managed }}` says unless ansible.cfg's
/// `[defaults] ansible_managed` says otherwise: Ansible's own default, so a
/// template renders the same file whichever tool writes it.
pub const ANSIBLE_MANAGED: &str = "Ansible managed";

/// What `{{ omit }}` renders to; map entries carrying it are dropped by
/// [`Templates::render_value`].  Unguessable so real data never collides.
pub const OMIT: &str = "__nodeprov_omit_placeholder_5c1f0e9a__";

/// The largest value a template may render to (16 MiB): far above any
/// configuration file, far below what would exhaust the controller.
pub const MAX_RENDERED: usize = 16 << 20;

/// The work one render may do: about one unit per instruction and per 64
/// bytes of data it creates, so at most some 2 million steps or 128 MiB.
/// A loop that would run for hours, or build gigabytes of intermediate
/// strings, stops with an error instead.
pub const RENDER_FUEL: u64 = 2_000_000;

/// A filter or test no environment of the run knows, with why plugin
/// files that might have provided it could not run.
fn unknown_callable(kind: PluginKind, name: &str) -> String {
    let kind = kind.name();
    match plugins::failure() {
        Some(why) => format!("unknown {kind} '{name}' ({why})"),
        None => format!("unknown {kind} '{name}'"),
    }
}

/// Each lookup a piece of Jinja names by a constant is one that runs,
/// natively or through ansible-core: a typo in a lookup's name fails
/// `validate`, not the task that one day takes that branch.
fn check_lookups(jinja: &str) -> Result<(), TemplateError> {
    static CALL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"\b(?:lookup|query|q|_with_lookup)\s*\(\s*['"]([A-Za-z_][\w.]*)['"]"#)
            .expect("valid")
    });
    for c in CALL.captures_iter(jinja) {
        if !lookups::known(&c[1]) {
            return Err(TemplateError {
                message: unknown_callable(PluginKind::Lookup, &c[1]),
                line: None,
                undefined: None,
                is_undefined: false,
            });
        }
    }
    Ok(())
}

/// A playbook's folder as `playbook_dir` gives it: absolute, and the
/// working folder for a playbook named without one.
fn absolute_dir(dir: &Path) -> String {
    let named = match dir.as_os_str().is_empty() {
        true => Path::new("."),
        false => dir,
    };
    let dir = std::path::absolute(named).unwrap_or_else(|_| named.into());
    dir.display().to_string()
}

/// One minijinja Environment, built once, strict undefined, no auto-escaping.
pub struct Templates {
    env: Environment<'static>,
    hostvars: Option<Arc<HostVars>>,
    /// What every host of the run or of a play's batch sees alike, held
    /// once rather than copied into each host's variables (which every
    /// render converts): `groups` and the play's host lists.
    shared: Arc<scope::Shared>,
    syntax: SyntaxConfig,
    /// `ansible_managed` as configured, before a template file's
    /// `{file}`, `{host}`, `{uid}` and strftime fields are filled in.
    managed: String,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// One readable line, e.g. "undefined variable 'cuda_home'".
    pub message: String,
    /// 1-based line inside the template text, when known.
    pub line: Option<usize>,
    /// The undefined top-level variable, when that is the cause (best effort).
    pub undefined: Option<String>,
    /// Something undefined was used: a variable, an attribute or a key.
    pub is_undefined: bool,
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}

impl Templates {
    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // The default callback escapes by file extension (.html, .json, .yaml),
        // which would corrupt config files rendered by the template module.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        // A printed list or map holding an undefined value fails, as it
        // does in Ansible, instead of printing `undefined`.
        env.set_formatter(|out, state, value| {
            if state.undefined_behavior() == UndefinedBehavior::Strict
                && missing::holds_undefined(value)
            {
                return Err(Error::from(ErrorKind::UndefinedError));
            }
            minijinja::escape_formatter(out, state, value)
        });
        // Debug mode makes errors name the undefined expression.
        env.set_debug(true);
        env.set_syntax(ansible_syntax());
        env.add_function(chain::CHAIN, chain::walk);
        env.add_function(crate::load::vault::UNDECRYPTABLE, |why: String| {
            Err::<Value, _>(Error::new(
                ErrorKind::InvalidOperation,
                format!("undecryptable variable: {why}"),
            ))
        });
        env.add_function("now", now);
        env.set_fuel(Some(RENDER_FUEL));
        env.add_global("omit", OMIT);
        env.add_global("ansible_managed", ANSIBLE_MANAGED);
        env.set_unknown_method_callback(jinja::python_method);
        jinja::register(&mut env);
        filters::register(&mut env);
        plugins::register(&mut env);
        Templates {
            env,
            hostvars: None,
            shared: Arc::default(),
            syntax: ansible_syntax(),
            managed: ANSIBLE_MANAGED.into(),
        }
    }

    /// The magic variables that are the same for every host of a run:
    /// `playbook_dir`, `ansible_version` and `hostvars`, globals, so
    /// variables of the same name (`-e playbook_dir=…`) still win; and
    /// `groups`, which each template's scope answers (`vars['groups']`
    /// too) where the variables have none.
    pub fn with_run(
        mut self,
        playbook_dir: &Path,
        hostvars: Arc<HostVars>,
        groups: &serde_json::Value,
    ) -> Self {
        self.env
            .add_global("playbook_dir", absolute_dir(playbook_dir));
        let (major, minor, revision) = ANSIBLE_VERSION;
        let full = format!("{major}.{minor}.{revision}");
        let version = serde_json::json!({
            "full": full, "string": full, "major": major, "minor": minor, "revision": revision,
        });
        self.env
            .add_global("ansible_version", Value::from(Serde(&version)));
        self.env
            .add_global("hostvars", Value::from_dyn_object(hostvars.clone()));
        Arc::make_mut(&mut self.shared).insert("groups", Value::from(Serde(groups)));
        self.hostvars = Some(hostvars);
        self
    }

    /// These templates for one play, whose `playbook_dir` is the folder
    /// of the file that holds it (an imported playbook's for its plays).
    pub fn for_play(&self, dir: &Path) -> Templates {
        let mut shared = (*self.shared).clone();
        shared.insert("playbook_dir", Value::from(absolute_dir(dir)));
        self.sharing(shared)
    }

    /// These templates for one batch of a play: they also answer the
    /// play's host lists as Ansible names them: `ansible_play_hosts_all`
    /// (every host the play selected), `ansible_play_hosts` (those not
    /// failed so far), and the batch's, `ansible_play_batch` and its old
    /// name `play_hosts`.
    pub fn for_batch(&self, all: &[String], active: &[String], batch: &[String]) -> Templates {
        let mut shared = (*self.shared).clone();
        let batch = Value::from(batch.to_vec());
        shared.insert("ansible_play_hosts_all", Value::from(all.to_vec()));
        shared.insert("ansible_play_hosts", Value::from(active.to_vec()));
        shared.insert("ansible_play_batch", batch.clone());
        shared.insert("play_hosts", batch);
        self.sharing(shared)
    }

    fn sharing(&self, shared: scope::Shared) -> Templates {
        Templates {
            env: self.env.clone(),
            hostvars: self.hostvars.clone(),
            shared: Arc::new(shared),
            syntax: self.syntax.clone(),
            managed: self.managed.clone(),
        }
    }

    /// ansible.cfg's `ansible_managed`, in place of Ansible's default.
    pub fn with_managed(mut self, configured: Option<&str>) -> Self {
        if let Some(text) = configured {
            self.managed = text.into();
            self.env.add_global("ansible_managed", text.to_string());
        }
        self
    }

    /// `ansible_managed` as configured, for a template file to fill in.
    pub fn managed(&self) -> &str {
        &self.managed
    }

    /// What templates see: the variables, `vars`, `hostvars` and the
    /// shared values.
    fn context(&self, vars: &Json) -> Value {
        scope::scope(vars, self.hostvars.as_ref(), &self.shared)
    }

    /// What the run keeps of each host, which `hostvars` shows: none
    /// for templates made without a run.
    pub fn kept(&self) -> Option<&hostvars::Kept> {
        self.hostvars.as_deref().map(HostVars::kept)
    }

    /// The same environment, where undefined values render empty instead
    /// of failing: for guessing which probes a task will need before the
    /// values it depends on (registered results, facts) are known.
    pub fn into_lenient(mut self) -> Self {
        self.env
            .set_undefined_behavior(UndefinedBehavior::Chainable);
        self
    }

    fn is_strict(&self) -> bool {
        self.env.undefined_behavior() == UndefinedBehavior::Strict
    }

    /// Renders a template string (a task parameter or a file).
    pub fn render_str(&self, text: &str, vars: &Json) -> Result<String, TemplateError> {
        self.render_text(text, &self.context(vars))
    }

    /// Renders every string inside `v` (map keys too) with Ansible's rules:
    /// a lone `{{ expr }}` keeps the expression's native type, strings with
    /// no template markup pass through, map entries equal to `omit`
    /// disappear, and string constants inside `{{ }}` keep their
    /// backslashes (YAML has read the escapes already).
    pub fn render_value(&self, v: &Json, vars: &Json) -> Result<Json, TemplateError> {
        self.render_tree(v, &self.context(vars))
    }

    /// Evaluates `when:`-style conditions: an expression string, a bool, or
    /// a list that must all hold.  Null (an empty `when:`) holds.
    pub fn eval_condition(&self, cond: &Json, vars: &Json) -> Result<bool, TemplateError> {
        self.condition(cond, &self.context(vars))
    }

    /// The first of the conditions `cond` holds that is false with these
    /// variables, as written: what Ansible registers as `false_condition`
    /// for a task its `when:` skipped.
    pub fn false_condition(&self, cond: &Json, vars: &Json) -> Option<String> {
        let ctx = self.context(vars);
        let first_false = |c: &Json| match self.condition(c, &ctx) {
            Ok(false) => Some(match c {
                Json::String(s) => s.clone(),
                Json::Bool(_) => "False".to_string(),
                other => other.to_string(),
            }),
            _ => None,
        };
        match cond {
            Json::Array(all) => all.iter().find_map(first_false),
            one => first_false(one),
        }
    }

    /// Syntax check without rendering; unknown filters, tests and lookups
    /// count too.
    pub fn check_template(&self, text: &str) -> Result<(), TemplateError> {
        let text = &spaces::ascii_spaced(text, false);
        let tmpl = self
            .env
            .template_from_str(text)
            .map_err(|e| self.convert(e, text, Source::Template, &Value::UNDEFINED))?;
        let compiled = machinery::get_compiled_template(&tmpl);
        std::iter::once(&compiled.instructions)
            .chain(compiled.blocks.values())
            .try_for_each(|i| self.check_callables(i))?;
        static JINJA: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}").expect("valid")
        });
        JINJA.find_iter(text).try_for_each(|m| {
            check_lookups(m.as_str()).map_err(|mut e| {
                e.line = Some(text[..m.start()].matches('\n').count() + 1);
                e
            })
        })
    }

    pub fn check_expression(&self, expr: &str) -> Result<(), TemplateError> {
        let expr = &spaces::ascii_spaced(expr, true);
        self.env
            .compile_expression(expr)
            .map_err(|e| self.convert(e, expr, Source::Expression, &Value::UNDEFINED))?;
        // Expressions do not expose their instructions; the same expression
        // as a template compiles to the same filter and test calls.
        match self.env.template_from_str(&format!("{{{{ {expr} }}}}")) {
            Ok(t) => self.check_callables(&machinery::get_compiled_template(&t).instructions)?,
            Err(_) => return Ok(()),
        }
        check_lookups(expr)
    }

    /// minijinja looks filters and tests up only when they run, so a typo
    /// in a branch not taken would pass every run until the day it is taken.
    fn check_callables(&self, code: &machinery::Instructions) -> Result<(), TemplateError> {
        let probe = self.env.template_from_str("").expect("empty template");
        let mut state = probe.new_state();
        let mut idx = 0;
        while let Some(instr) = code.get(idx) {
            // What no native filter or test covers, ansible-core may have.
            let unknown = match instr {
                machinery::Instruction::ApplyFilter(name, ..) => (state
                    .apply_filter(name, &[])
                    .is_err_and(|e| e.kind() == ErrorKind::UnknownFilter)
                    && !plugins::resolve(PluginKind::Filter, name))
                .then(|| unknown_callable(PluginKind::Filter, name)),
                machinery::Instruction::PerformTest(name, ..) => (state
                    .perform_test(name, &[])
                    .is_err_and(|e| e.kind() == ErrorKind::UnknownTest)
                    && !plugins::resolve(PluginKind::Test, name))
                .then(|| unknown_callable(PluginKind::Test, name)),
                _ => None,
            };
            if let Some(message) = unknown {
                return Err(TemplateError {
                    message,
                    line: code.get_line(idx),
                    undefined: None,
                    is_undefined: false,
                });
            }
            idx += 1;
        }
        Ok(())
    }

    /// Top-level variables a template reads (globals such as `omit` and
    /// `lookup` excluded); empty when the template does not parse.
    pub fn template_vars(&self, text: &str) -> BTreeSet<String> {
        match self
            .env
            .template_from_str(&spaces::ascii_spaced(text, false))
        {
            Ok(t) => self.without_globals(t.undeclared_variables(false)),
            Err(_) => BTreeSet::new(),
        }
    }

    pub fn expression_vars(&self, expr: &str) -> BTreeSet<String> {
        match self
            .env
            .compile_expression(&spaces::ascii_spaced(expr, true))
        {
            Ok(e) => self.without_globals(e.undeclared_variables(false)),
            Err(_) => BTreeSet::new(),
        }
    }

    fn without_globals(&self, names: impl IntoIterator<Item = String>) -> BTreeSet<String> {
        names
            .into_iter()
            .filter(|n| !self.env.globals().any(|(g, _)| g == n))
            .collect()
    }

    /// Renders into a buffer that refuses to grow past [`MAX_RENDERED`], so
    /// a runaway template fails instead of taking the controller's memory.
    fn render_text(&self, text: &str, ctx: &Value) -> Result<String, TemplateError> {
        let text = &spaces::ascii_spaced(text, false);
        let convert = |e| self.convert(e, text, Source::Template, ctx);
        let chained = chain::rewrite(text, false, self.syntax.clone());
        let tmpl = self
            .env
            .template_from_str(chained.as_deref().unwrap_or(text))
            .map_err(convert)?;
        let mut out = Capped::default();
        let rendered = tmpl.render_captured_to(ctx.clone(), &mut out).map(drop);
        match rendered {
            Ok(()) => String::from_utf8(out.buf)
                .map_err(|_| TemplateError::plain("the rendered text is not UTF-8")),
            Err(_) if out.over => Err(too_large()),
            Err(e) => Err(convert(e)),
        }
    }

    fn eval_expr(&self, expr: &str, ctx: &Value) -> Result<Value, TemplateError> {
        let expr = &spaces::ascii_spaced(expr, true);
        let convert = |e| self.convert(e, expr, Source::Expression, ctx);
        let chained = chain::rewrite(expr, true, self.syntax.clone());
        let value = self
            .env
            .compile_expression(chained.as_deref().unwrap_or(expr))
            .and_then(|e| e.eval(ctx))
            .map_err(convert)?;
        // A bare undefined name evaluates without error even in strict mode,
        // and so does one inside a list or map (`map(attribute=…)` of items
        // lacking it): Ansible fails when it finalizes the value.
        if value.is_undefined() || (self.is_strict() && missing::holds_undefined(&value)) {
            return Err(convert(Error::from(ErrorKind::UndefinedError)));
        }
        Ok(value)
    }

    fn render_tree(&self, v: &Json, ctx: &Value) -> Result<Json, TemplateError> {
        Ok(match v {
            Json::String(s) => self.render_scalar(s, ctx)?,
            Json::Array(items) => Json::Array(
                items
                    .iter()
                    .map(|item| self.render_tree(item, ctx))
                    .collect::<Result<_, _>>()?,
            ),
            Json::Object(map) => Json::Object(self.render_map(map, ctx)?),
            other => other.clone(),
        })
    }

    fn render_map(
        &self,
        map: &Map<String, Json>,
        ctx: &Value,
    ) -> Result<Map<String, Json>, TemplateError> {
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            let value = self.render_tree(value, ctx)?;
            if value.as_str() == Some(OMIT) {
                continue;
            }
            let key = if is_templated(key) {
                self.render_text(key, ctx)?
            } else {
                key.clone()
            };
            out.insert(key, value);
        }
        Ok(out)
    }

    fn render_scalar(&self, s: &str, ctx: &Value) -> Result<Json, TemplateError> {
        if !is_templated(s) {
            return Ok(Json::String(s.to_string()));
        }
        let kept =
            |source, in_expr| backslash::keep_backslashes(source, in_expr, self.syntax.clone());
        // One expression and a line break (a `>` folded scalar): Ansible
        // reads the text back as a literal, so a list stays a list; a
        // string (or nothing) is rendered as text, line break and all.
        let newline = s.strip_suffix('\n').and_then(single_expression);
        let single = single_expression(s);
        let value = match single.or(newline) {
            Some(expr) => {
                let value = self.eval_expr(kept(expr, true).as_deref().unwrap_or(expr), ctx);
                match single {
                    Some(_) => Some(value?),
                    // Whatever is not a value of its own is the text's to render.
                    None => value
                        .ok()
                        .filter(|v| !v.is_undefined() && !v.is_none() && v.as_str().is_none()),
                }
            }
            None => None,
        };
        match value {
            Some(value) => {
                let json = serde_json::to_value(&value)
                    .map_err(|e| TemplateError::plain(e.to_string()))?;
                if json_size(&json) > MAX_RENDERED {
                    return Err(too_large());
                }
                Ok(json)
            }
            None => self
                .render_text(kept(s, false).as_deref().unwrap_or(s), ctx)
                .map(Json::String),
        }
    }

    fn condition(&self, cond: &Json, ctx: &Value) -> Result<bool, TemplateError> {
        match cond {
            Json::Null => Ok(true),
            Json::Bool(b) => Ok(*b),
            Json::Number(n) => Ok(n.as_f64() != Some(0.0)),
            Json::Array(all) => {
                for c in all {
                    if !self.condition(c, ctx)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Json::String(s) => self.condition_str(s, ctx),
            // Ansible's words.
            Json::Object(_) => Err(TemplateError::plain(
                "Conditional expressions must be strings.",
            )),
        }
    }

    /// Ansible accepts `when: "{{ x }}"` (deprecated) as well as bare
    /// expressions; a templated condition is rendered first and the result
    /// read as an expression, which is what older Ansible did.
    fn condition_str(&self, s: &str, ctx: &Value) -> Result<bool, TemplateError> {
        let value = match single_expression(s) {
            Some(expr) => self.eval_expr(expr, ctx)?,
            None if is_templated(s) => {
                let rendered = self.render_text(s, ctx)?;
                self.eval_expr(&rendered, ctx)?
            }
            None => self.eval_expr(s, ctx)?,
        };
        Ok(condition_truth(&value))
    }

    fn convert(&self, err: Error, source: &str, kind: Source, ctx: &Value) -> TemplateError {
        if err.kind() == ErrorKind::OutOfFuel {
            return TemplateError::plain(format!(
                "the template does too much work: over {RENDER_FUEL} steps or about {} MiB of data",
                (RENDER_FUEL * 64) >> 20
            ));
        }
        let named = undefined_expr(&err);
        let undefined = match &named {
            Some(expr) => Some(top_level(expr)).filter(|n| !is_bound(ctx, n)),
            None if err.kind() == ErrorKind::UndefinedError => {
                self.first_unbound(source, kind, ctx)
            }
            None => None,
        };
        // A defined value lacking the attribute or item asked of it: say
        // which, and of what type, as Ansible does.
        let lacking = match (&undefined, err.kind()) {
            (None, ErrorKind::UndefinedError) => {
                let in_expr = matches!(kind, Source::Expression);
                missing::first_missing(&self.env, source, in_expr, self.syntax.clone(), ctx)
            }
            _ => None,
        };
        let message = match (&undefined, &named, err.detail(), lacking) {
            (Some(name), None, Some(custom), _) => format!("undefined variable '{name}': {custom}"),
            (Some(name), _, _, _) => format!("undefined variable '{name}'"),
            (None, _, _, Some((expr, why))) => format!("'{expr}' is undefined: {why}"),
            (None, Some(expr), _, None) => format!("'{expr}' is undefined"),
            (None, None, Some(detail), None) => match zero_division(detail) {
                Some(python) => python.to_string(),
                None => format!("{}: {detail}", kind_text(&err)),
            },
            (None, None, None, None) => kind_text(&err),
        };
        TemplateError {
            message: message.replace('\n', " "),
            line: err.line(),
            is_undefined: undefined.is_some()
                || named.is_some()
                || err.kind() == ErrorKind::UndefinedError,
            undefined,
        }
    }

    /// Fallback when minijinja did not record which value was undefined:
    /// the first variable the source reads that the context lacks.
    fn first_unbound(&self, source: &str, kind: Source, ctx: &Value) -> Option<String> {
        let names = match kind {
            Source::Template => self.template_vars(source),
            Source::Expression => self.expression_vars(source),
        };
        names.into_iter().find(|n| !is_bound(ctx, n))
    }
}

/// Ansible's `now(utc=False, fmt=None)`: the controller's time, as text
/// (a datetime prints so) or written with `fmt` as `strftime` writes it.
fn now(kwargs: minijinja::value::Kwargs) -> Result<Value, Error> {
    let utc: Option<bool> = kwargs.get("utc")?;
    let fmt: Option<String> = kwargs.get("fmt")?;
    kwargs.assert_all_used()?;
    let t = std::time::SystemTime::now();
    let fmt = fmt.as_deref().unwrap_or("%Y-%m-%d %H:%M:%S.%f");
    crate::base::time::strftime(t, fmt, utc.unwrap_or(false))
        .map(Value::from)
        .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "embedded null character"))
}

/// Python's `ZeroDivisionError` text for minijinja's refusal to divide by
/// zero, which Ansible's messages (and conditions testing them) carry.
fn zero_division(detail: &str) -> Option<&'static str> {
    let operation = detail.strip_prefix("unable to calculate ")?;
    let (rest, divisor) = operation.rsplit_once(' ')?;
    if divisor.parse::<f64>().ok()? != 0.0 {
        return None;
    }
    let float = divisor.contains('.') || rest.split(' ').next()?.contains('.');
    match (rest.rsplit_once(' ')?.1, float) {
        ("/", false) => Some("division by zero"),
        ("/", true) => Some("float division by zero"),
        ("//", false) => Some("integer division or modulo by zero"),
        ("//", true) => Some("float floor division by zero"),
        ("%", false) => Some("integer modulo by zero"),
        ("%", true) => Some("float modulo by zero"),
        _ => None,
    }
}

#[derive(Clone, Copy)]
enum Source {
    Template,
    Expression,
}

impl TemplateError {
    fn plain(message: impl Into<String>) -> Self {
        TemplateError {
            is_undefined: false,
            message: message.into(),
            line: None,
            undefined: None,
        }
    }
}

/// An output buffer that fails the write that would take it past
/// [`MAX_RENDERED`].
#[derive(Default)]
struct Capped {
    buf: Vec<u8>,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > MAX_RENDERED {
            self.over = true;
            return Err(std::io::Error::other("rendered text too large"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn too_large() -> TemplateError {
    TemplateError::plain(format!(
        "the rendered value is larger than the {} MiB limit",
        MAX_RENDERED >> 20
    ))
}

/// Roughly the bytes a value takes as JSON text.
fn json_size(v: &Json) -> usize {
    match v {
        Json::String(s) => s.len() + 2,
        Json::Array(items) => items.iter().map(|i| json_size(i) + 1).sum::<usize>() + 2,
        Json::Object(m) => {
            m.iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
                + 2
        }
        _ => 8,
    }
}

/// Ansible's template module settings: block tags eat their newline and a
/// file's final newline survives.
fn ansible_syntax() -> SyntaxConfig {
    SyntaxConfig::builder()
        .trim_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .expect("default delimiters are valid")
}

/// Whether a string holds template markup at all.
pub fn is_templated(s: &str) -> bool {
    s.contains("{{") || s.contains("{%")
}

/// The inner expression when `s` is exactly one `{{ expr }}`, so the result
/// can keep its native type; text around it makes the result a string
/// (but see `render_scalar` for one trailing line break).
fn single_expression(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    let nested = ["{{", "}}", "{%", "%}", "{#"]
        .iter()
        .any(|m| inner.contains(m));
    (!nested && !inner.trim().is_empty()).then_some(inner.trim())
}

/// Jinja truthiness, except that strings spelled like false ("false",
/// "no", "off", "0") are false: a `-e flag=false` string must not enable a
/// task, as it would not in Ansible.
fn condition_truth(v: &Value) -> bool {
    match v.as_str() {
        Some(s) => !matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "" | "false" | "no" | "off" | "0" | "n" | "f" | "none" | "null"
        ),
        None => v.is_true(),
    }
}

/// minijinja's debug mode reports "`expr` is undefined" in the detail.
fn undefined_expr(err: &Error) -> Option<String> {
    let detail = err.detail()?;
    let end = detail.find("` is undefined")?;
    let start = detail[..end].rfind('`')? + 1;
    Some(detail[start..end].to_string())
}

fn top_level(expr: &str) -> String {
    expr.split(['.', '[']).next().unwrap_or(expr).to_string()
}

fn is_bound(ctx: &Value, name: &str) -> bool {
    ctx.get_attr(name).is_ok_and(|v| !v.is_undefined())
}

/// The error kind as minijinja words it ("syntax error", "undefined value").
fn kind_text(err: &Error) -> String {
    let full = Error::from(err.kind()).to_string();
    full.split(" (in ").next().unwrap_or(&full).to_string()
}

#[cfg(test)]
mod tests;
