//! `validate_argument_spec`: check variables and arguments against an
//! argument spec, on the controller, as Ansible's action plugin does. A
//! role with `meta/argument_specs.yml` gets this task first, for the
//! entry point it is run from.
//!
//! # Example
//!
//! ```yaml
//! - name: Check what the driver install is given
//!   validate_argument_spec:
//!     argument_spec:
//!       driver_branch:
//!         type: int
//!         required: true
//!       driver_flavor:
//!         choices: [open, proprietary]
//!         default: open
//! ```

mod spec;
mod types;

use serde_json::{json, Map, Value};

use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;
use crate::template::Templates;

pub const VALIDATE_ARGUMENT_SPEC: ModuleSpec = ModuleSpec {
    name: "validate_argument_spec",
    source: file!(),
    aliases: &["ansible.builtin.validate_argument_spec"],
    params: &ValidateArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct ValidateArgs {
        /// the options by name, with Ansible's spec keys; a variable of an option's name is checked too
        argument_spec: Option<Value>,
        /// values that outrank the variables of the same names
        provided_arguments: Option<Value>,
        /// what is validated, returned as it is (a role sets its name)
        validate_args_context: Option<Value>,
    }
}

struct Validate {
    spec: Option<Value>,
    provided: Option<Value>,
    context: Value,
    /// The task's variables named by the spec, rendered.
    from_vars: Result<Map<String, Value>, String>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ValidateArgs::read(p)?;
    let from_vars = match &a.argument_spec {
        Some(Value::Object(spec)) => vars_named(spec, p.ctx.templates, p.ctx.all_vars()),
        _ => Ok(Map::new()),
    };
    Ok(Box::new(Validate {
        spec: a.argument_spec,
        provided: a.provided_arguments,
        context: a.validate_args_context.unwrap_or_else(|| json!({})),
        from_vars,
    }))
}

/// The variables that share an option's name, rendered as Ansible's
/// plugin renders them before checking.
fn vars_named(
    spec: &Map<String, Value>,
    templates: &Templates,
    vars: &Value,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for name in spec.keys() {
        if let Some(v) = vars.get(name) {
            let rendered = templates
                .render_value(v, vars)
                .map_err(|e| format!("cannot render variable '{name}': {e}"))?;
            out.insert(name.clone(), rendered);
        }
    }
    Ok(out)
}

impl Module for Validate {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        let spec = match &self.spec {
            Some(Value::Object(spec)) => spec,
            Some(other) => {
                return Err(ModuleError::Asserted(format!(
                    "Incorrect type for argument_spec, expected dict and got {}",
                    crate::base::python::class(other)
                )))
            }
            None => {
                return Err(ModuleError::Asserted(
                    "\"argument_spec\" arg is required in args".into(),
                ))
            }
        };
        let provided = match &self.provided {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(other) => {
                return Err(ModuleError::Asserted(format!(
                    "Incorrect type for provided_arguments, expected dict and got {}",
                    crate::base::python::class(other)
                )))
            }
        };
        let mut params = self.from_vars.clone().map_err(ModuleError::Asserted)?;
        params.extend(provided);
        let errors = spec::validate(spec, &mut params).map_err(|e| ModuleError::Asserted(e.0))?;
        if !errors.is_empty() {
            return Err(ModuleError::Asserted(format!(
                "Validation of arguments failed:\n{}",
                errors.join("\n")
            )));
        }
        let mut plan = Plan::noop();
        let passed = "The arg spec validation passed";
        plan.notes.push(passed.into());
        plan.returns.insert("msg".into(), json!(passed));
        plan.returns
            .insert("validate_args_context".into(), self.context.clone());
        Ok(plan)
    }
}
