//! Ansible's `ArgumentSpecValidator` (module_utils/common/arg_spec.py and
//! parameters.py), step for step and message for message: aliases,
//! unsupported names, required, defaults, types, choices, then each
//! mapping option's own `options` with its `mutually_exclusive`,
//! `required_together`, `required_one_of`, `required_if` and
//! `required_by`.

use serde_json::{Map, Value};

use super::types::convert;
use crate::base::python::{contains, eq, str_of, type_name};

type Params = Map<String, Value>;

/// A spec Ansible itself could not read (its validator raises, and the
/// task fails with that).
#[derive(Debug, PartialEq)]
pub(super) struct Malformed(pub String);

/// The messages Ansible's validator gives for `params`, which it
/// converts, completes with defaults and checks in place.
pub(super) fn validate(spec: &Params, params: &mut Params) -> Result<Vec<String>, Malformed> {
    let mut v = Validation::default();
    let aliases = v.aliases(spec, params)?;
    v.check(mappings_readable(spec, params)?, &[]);
    v.unsupported(spec, params, &aliases, &[])?;
    set_defaults(spec, params, false);
    v.required(spec, params, &[])?;
    v.types(spec, params, &[])?;
    v.values(spec, params, &[])?;
    set_defaults(spec, params, true);
    v.sub_specs(spec, params, &mut Vec::new())?;
    let mut errors = v.errors;
    if let Some((_, supported, aliases)) = v.unsupported.last() {
        let mut names: Vec<&str> = v.unsupported.iter().map(|(n, _, _)| n.as_str()).collect();
        names.sort();
        let mut supported = supported.join(", ");
        if !aliases.is_empty() {
            supported = format!("{supported} ({})", aliases.join(", "));
        }
        errors.push(format!(
            "{}. Supported parameters include: {supported}.",
            names.join(", ")
        ));
    }
    Ok(errors)
}

#[derive(Default)]
struct Validation {
    errors: Vec<String>,
    /// Each name no spec knows, with the spec's names and aliases, sorted.
    unsupported: Vec<(String, Vec<String>, Vec<String>)>,
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// An option's attributes; Ansible calls `.get` on them.
fn attrs<'a>(name: &str, v: &'a Value) -> Result<&'a Params, Malformed> {
    v.as_object().ok_or_else(|| {
        Malformed(format!(
            "the argument spec of '{name}' is {}, not a mapping ('{}' object has no attribute 'get')",
            type_name(v),
            type_name(v)
        ))
    })
}

fn found_in(msg: String, context: &[String]) -> String {
    match context.is_empty() {
        true => msg,
        false => format!("{msg} found in {}", context.join(" -> ")),
    }
}

/// A list of names as Python iterates it: a string is its characters.
fn names(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(str_of).collect(),
        Value::Object(map) => map.keys().cloned().collect(),
        Value::String(s) => s.chars().map(String::from).collect(),
        other => vec![str_of(other)],
    }
}

/// `count_terms`: how many of the names (one name, or a list) are given.
fn count(terms: &Value, params: &Params) -> usize {
    let mut terms = match terms {
        Value::String(s) => vec![s.clone()],
        other => names(other),
    };
    terms.sort();
    terms.dedup();
    terms
        .iter()
        .filter(|t| params.contains_key(t.as_str()))
        .count()
}

fn set_defaults(spec: &Params, params: &mut Params, fill: bool) {
    for (name, option) in spec {
        let default = present(option.get("default"));
        if !params.contains_key(name) && (default.is_some() || fill) {
            params.insert(name.clone(), default.cloned().unwrap_or(Value::Null));
        }
    }
}

impl Validation {
    /// `_handle_aliases`: each alias given sets its option; answers
    /// alias → option, or records why the spec's aliases cannot be read.
    fn aliases(
        &mut self,
        spec: &Params,
        params: &mut Params,
    ) -> Result<Vec<(String, String)>, Malformed> {
        match handle_aliases(spec, params)? {
            Ok(found) => Ok(found),
            Err(e) => {
                self.errors.push(e);
                Ok(Vec::new())
            }
        }
    }

    fn unsupported(
        &mut self,
        spec: &Params,
        params: &mut Params,
        aliases: &[(String, String)],
        context: &[String],
    ) -> Result<(), Malformed> {
        let legal = |k: &str| spec.contains_key(k) || aliases.iter().any(|(a, _)| a == k);
        let stray: Vec<String> = params.keys().filter(|k| !legal(k)).cloned().collect();
        if stray.is_empty() {
            return Ok(());
        }
        // Ansible reads the aliases again to list them.
        let all = match handle_aliases(spec, params)? {
            Ok(all) => all,
            Err(e) => {
                self.errors.push(e);
                return Ok(());
            }
        };
        let mut alias_names: Vec<String> = all.iter().map(|(a, _)| a.clone()).collect();
        alias_names.sort();
        alias_names.dedup();
        let mut supported: Vec<String> = aliases
            .iter()
            .map(|(a, _)| a.clone())
            .chain(spec.keys().cloned())
            .filter(|o| !alias_names.contains(o))
            .collect();
        supported.sort();
        for k in stray {
            let name = context
                .iter()
                .chain([&k])
                .cloned()
                .collect::<Vec<_>>()
                .join(".");
            self.unsupported.retain(|(n, _, _)| *n != name);
            self.unsupported
                .push((name, supported.clone(), alias_names.clone()));
        }
        Ok(())
    }

    fn required(
        &mut self,
        spec: &Params,
        params: &Params,
        context: &[String],
    ) -> Result<(), Malformed> {
        let mut missing = Vec::new();
        for (name, option) in spec {
            if truthy(attrs(name, option)?.get("required")) && !params.contains_key(name) {
                missing.push(name.as_str());
            }
        }
        if !missing.is_empty() {
            missing.sort();
            let msg = format!("missing required arguments: {}", missing.join(", "));
            self.errors.push(found_in(msg, context));
        }
        Ok(())
    }

    /// `_validate_argument_types`, and each list's `elements`.
    fn types(
        &mut self,
        spec: &Params,
        params: &mut Params,
        context: &[String],
    ) -> Result<(), Malformed> {
        let quoted = match context.is_empty() {
            true => String::new(),
            false => format!(" found in '{}'", context.join(" -> ")),
        };
        for (name, option) in spec {
            let option = attrs(name, option)?;
            let Some(value) = params.get(name).cloned() else {
                continue;
            };
            if value.is_null()
                && !truthy(option.get("required"))
                && present(option.get("default")).is_none()
            {
                continue;
            }
            let wanted = present(option.get("type")).map_or("str".into(), str_of);
            let converted = match convert(&wanted, &value) {
                Ok(c) => c,
                Err(e) => {
                    self.errors.push(format!(
                        "argument '{name}' is of type {}{}{} and we were unable to convert to {wanted}: {e}",
                        type_name(&value),
                        quoted,
                        if quoted.is_empty() { "" } else { "." },
                    ));
                    continue;
                }
            };
            params.insert(name.clone(), converted.clone());
            let Some(elements) = option.get("elements").filter(|e| truthy(Some(e))) else {
                continue;
            };
            if !converted.is_array() {
                self.errors.push(format!(
                    "Invalid type {wanted} for option '{}'{}{}, elements value check is supported only with 'list' type",
                    str_of(&converted),
                    quoted,
                    if quoted.is_empty() { "" } else { "." },
                ));
            }
            let items = match &converted {
                Value::Array(items) => items.clone(),
                Value::Object(map) => map.keys().map(|k| Value::String(k.clone())).collect(),
                Value::String(s) => s.chars().map(|c| Value::String(c.into())).collect(),
                other => {
                    self.errors.push(format!(
                        "argument '{name}' is of type {}{}{} and we were unable to convert to {wanted}: '{}' object is not iterable",
                        type_name(&value),
                        quoted,
                        if quoted.is_empty() { "" } else { "." },
                        type_name(other),
                    ));
                    continue;
                }
            };
            let element_type = str_of(elements);
            let mut kept = Vec::new();
            for item in items {
                match convert(&element_type, &item) {
                    Ok(c) => kept.push(c),
                    Err(e) => self.errors.push(format!(
                        "Elements value for option '{name}'{quoted} is of type {} and we were unable to convert to {element_type}: {e}",
                        type_name(&item)
                    )),
                }
            }
            params.insert(name.clone(), Value::Array(kept));
        }
        Ok(())
    }

    /// `_validate_argument_values`: `choices`.
    fn values(
        &mut self,
        spec: &Params,
        params: &mut Params,
        context: &[String],
    ) -> Result<(), Malformed> {
        for (name, option) in spec {
            let Some(choices) = present(attrs(name, option)?.get("choices")) else {
                continue;
            };
            let Value::Array(choices) = choices else {
                let msg = format!(
                    "internal error: choices for argument {name} are not iterable: {}",
                    str_of(choices)
                );
                self.errors.push(found_in(msg, context));
                continue;
            };
            let Some(value) = params.get_mut(name) else {
                continue;
            };
            let listed = || choices.iter().map(str_of).collect::<Vec<_>>().join(", ");
            if let Value::Array(items) = value {
                let stray: Vec<String> = items
                    .iter()
                    .filter(|i| !contains(choices, i))
                    .map(str_of)
                    .collect();
                if !stray.is_empty() {
                    let msg = format!(
                        "value of {name} must be one or more of: {}. Got no match for: {}",
                        listed(),
                        stray.join(", ")
                    );
                    self.errors.push(found_in(msg, context));
                }
                continue;
            }
            if contains(choices, value) {
                continue;
            }
            // YAML may have made a boolean of what the choices spell.
            if let Value::String(s) = value {
                if s == "True" || s == "False" {
                    let truth = s == "True";
                    let mut matching: Vec<&Value> = Vec::new();
                    for c in choices {
                        let spells = match c {
                            Value::String(w) => {
                                let words = if truth {
                                    &["y", "yes", "on", "1", "true", "t"]
                                } else {
                                    &["n", "no", "off", "0", "false", "f"]
                                };
                                words.contains(&w.as_str())
                            }
                            other => eq(other, &Value::Bool(truth)),
                        };
                        if spells && !matching.iter().any(|m| eq(m, c)) {
                            matching.push(c);
                        }
                    }
                    if let [only] = matching.as_slice() {
                        *value = (*only).clone();
                    }
                }
            }
            if !contains(choices, value) {
                let msg = format!(
                    "value of {name} must be one of: {}, got: {}",
                    listed(),
                    str_of(value)
                );
                self.errors.push(found_in(msg, context));
            }
        }
        Ok(())
    }

    /// `_validate_sub_spec`: each mapping option (or list of mappings)
    /// with `options`, checked as a spec of its own.
    fn sub_specs(
        &mut self,
        spec: &Params,
        params: &mut Params,
        context: &mut Vec<String>,
    ) -> Result<(), Malformed> {
        for (name, option) in spec {
            let option = attrs(name, option)?;
            let wanted = option.get("type").and_then(Value::as_str);
            let elements = option.get("elements").and_then(Value::as_str);
            if !(wanted == Some("dict") || (wanted == Some("list") && elements == Some("dict"))) {
                continue;
            }
            let sub_spec = present(option.get("options"));
            if truthy(option.get("apply_defaults")) {
                if sub_spec.is_none() {
                    continue;
                }
                if present(params.get(name)).is_none() {
                    params.insert(name.clone(), Value::Object(Map::new()));
                }
            } else if sub_spec.is_none() || present(params.get(name)).is_none() {
                continue;
            }
            let sub_spec = sub_spec
                .expect("checked above")
                .as_object()
                .ok_or_else(|| Malformed(format!("the options of '{name}' are not a mapping")))?;
            context.push(name.clone());
            let value = params.get_mut(name).expect("checked above");
            let elements: Vec<&mut Value> = match value {
                Value::Array(items) => items.iter_mut().collect(),
                single => vec![single],
            };
            for sub in elements {
                let Value::Object(sub) = sub else {
                    self.errors.push(format!(
                        "value of '{name}' must be of type dict or list of dicts"
                    ));
                    continue;
                };
                self.sub_spec(option, sub_spec, sub, context)?;
            }
            context.pop();
        }
        Ok(())
    }

    fn sub_spec(
        &mut self,
        option: &Params,
        spec: &Params,
        params: &mut Params,
        context: &mut Vec<String>,
    ) -> Result<(), Malformed> {
        let aliases = self.aliases(spec, params)?;
        self.check(mappings_readable(spec, params)?, &[]);
        self.unsupported(spec, params, &aliases, context)?;
        self.check(
            mutually_exclusive(option.get("mutually_exclusive"), params),
            context,
        );
        set_defaults(spec, params, false);
        self.required(spec, params, context)?;
        self.types(spec, params, context)?;
        self.values(spec, params, context)?;
        self.check(
            required_together(option.get("required_together"), params),
            context,
        );
        self.check(
            required_one_of(option.get("required_one_of"), params),
            context,
        );
        self.check(required_if(option.get("required_if"), params)?, context);
        self.check(required_by(option.get("required_by"), params), context);
        set_defaults(spec, params, true);
        self.sub_specs(spec, params, context)
    }

    fn check(&mut self, failed: Option<String>, context: &[String]) {
        if let Some(msg) = failed {
            self.errors.push(found_in(msg, context));
        }
    }
}

/// Alias → option for every alias of the spec, each given alias copied to
/// its option; the inner error is a message Ansible records and goes on.
#[allow(clippy::type_complexity)]
fn handle_aliases(
    spec: &Params,
    params: &mut Params,
) -> Result<Result<Vec<(String, String)>, String>, Malformed> {
    let mut found = Vec::new();
    for (name, option) in spec {
        let option = attrs(name, option)?;
        if present(option.get("default")).is_some() && truthy(option.get("required")) {
            return Ok(Err(format!(
                "internal error: required and default are mutually exclusive for {name}"
            )));
        }
        let aliases = match present(option.get("aliases")) {
            None => continue,
            Some(a @ (Value::Array(_) | Value::Object(_))) => names(a),
            Some(_) => return Ok(Err("internal error: aliases must be a list or tuple".into())),
        };
        for alias in aliases {
            if let Some(v) = params.get(&alias).cloned() {
                params.insert(name.clone(), v);
            }
            found.push((alias, name.clone()));
        }
    }
    Ok(Ok(found))
}

/// Ansible walks every mapping option to find its `no_log` values before
/// any check, and stops at the first element it cannot read as a mapping.
fn mappings_readable(spec: &Params, params: &Params) -> Result<Option<String>, Malformed> {
    for (name, option) in spec {
        let option = attrs(name, option)?;
        let (Some(sub_spec), Some(given)) =
            (present(option.get("options")), present(params.get(name)))
        else {
            continue;
        };
        let wanted = option
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let elements = option.get("elements").and_then(Value::as_str);
        if !(wanted == "dict" || (wanted == "list" && elements == Some("dict"))) {
            continue;
        }
        let items = match given {
            Value::Array(items) => items.clone(),
            single => vec![single.clone()],
        };
        for item in items {
            let item = match item {
                Value::String(_) => match convert("dict", &item) {
                    Ok(d) => d,
                    Err(e) => return Ok(Some(e)),
                },
                other => other,
            };
            let Value::Object(sub) = &item else {
                return Ok(Some(format!(
                    "Value '{}' in the sub parameter field '{name}' must be a {wanted}, not '{}'",
                    str_of(&item),
                    type_name(&item)
                )));
            };
            let sub_spec = sub_spec
                .as_object()
                .ok_or_else(|| Malformed(format!("the options of '{name}' are not a mapping")))?;
            if let Some(e) = mappings_readable(sub_spec, sub)? {
                return Ok(Some(e));
            }
        }
    }
    Ok(None)
}

fn groups(terms: Option<&Value>) -> Vec<Value> {
    match present(terms) {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => names(other).into_iter().map(Value::String).collect(),
    }
}

fn mutually_exclusive(terms: Option<&Value>, params: &Params) -> Option<String> {
    let clashes: Vec<String> = groups(terms)
        .iter()
        .filter(|g| count(g, params) > 1)
        .map(|g| names(g).join("|"))
        .collect();
    (!clashes.is_empty())
        .then(|| format!("parameters are mutually exclusive: {}", clashes.join(", ")))
}

fn required_together(terms: Option<&Value>, params: &Params) -> Option<String> {
    groups(terms).iter().find_map(|g| {
        let counts: Vec<usize> = names(g)
            .iter()
            .map(|f| count(&Value::String(f.clone()), params))
            .collect();
        (counts.iter().any(|c| *c > 0) && counts.contains(&0))
            .then(|| format!("parameters are required together: {}", names(g).join(", ")))
    })
}

fn required_one_of(terms: Option<&Value>, params: &Params) -> Option<String> {
    groups(terms).iter().find_map(|g| {
        (count(g, params) == 0)
            .then(|| format!("one of the following is required: {}", names(g).join(", ")))
    })
}

fn required_if(terms: Option<&Value>, params: &Params) -> Result<Option<String>, Malformed> {
    for rule in groups(terms) {
        let parts = match &rule {
            Value::Array(parts) if parts.len() == 3 || parts.len() == 4 => parts,
            _ => {
                return Err(Malformed(format!(
                    "a required_if rule is [key, value, requirements] or [key, value, requirements, is_one_of], not {}",
                    str_of(&rule)
                )))
            }
        };
        let key = str_of(&parts[0]);
        let requirements = names(&parts[2]);
        let any = truthy(parts.get(3));
        let mut missing = Vec::new();
        if params.get(&key).is_some_and(|v| eq(v, &parts[1])) {
            missing = requirements
                .iter()
                .filter(|r| count(&Value::String((*r).clone()), params) == 0)
                .cloned()
                .collect();
        }
        let most = if any { requirements.len() } else { 0 };
        if !missing.is_empty() && missing.len() >= most {
            return Ok(Some(format!(
                "{key} is {} but {} of the following are missing: {}",
                str_of(&parts[1]),
                if any { "any" } else { "all" },
                missing.join(", ")
            )));
        }
    }
    Ok(None)
}

fn required_by(terms: Option<&Value>, params: &Params) -> Option<String> {
    let Some(Value::Object(rules)) = present(terms) else {
        return None;
    };
    rules.iter().find_map(|(key, needs)| {
        present(params.get(key))?;
        let needs = match needs {
            Value::String(s) => vec![s.clone()],
            other => names(other),
        };
        let missing: Vec<String> = needs
            .into_iter()
            .filter(|n| present(params.get(n)).is_none())
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "missing parameter(s) required by '{key}': {}",
                missing.join(", ")
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(spec: Value, params: Value) -> (Vec<String>, Value) {
        let mut params = params.as_object().unwrap().clone();
        let errors = validate(spec.as_object().unwrap(), &mut params).unwrap();
        (errors, Value::Object(params))
    }

    #[test]
    fn options_are_converted_defaulted_and_checked_in_ansibles_order() {
        let spec = json!({
            "port": {"type": "int", "required": true},
            "mode": {"choices": ["fast", "safe"], "default": "safe"},
            "names": {"type": "list", "elements": "str", "aliases": ["hosts"]},
        });
        let (errors, params) = check(spec.clone(), json!({"port": "22", "hosts": "a,b"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(params["port"], 22);
        assert_eq!(params["mode"], "safe");
        assert_eq!(params["names"], json!(["a", "b"]));
        let (errors, _) = check(spec, json!({"mode": "slow", "extra": 1}));
        assert_eq!(
            errors,
            [
                "missing required arguments: port",
                "value of mode must be one of: fast, safe, got: slow",
                "extra. Supported parameters include: mode, names, port (hosts).",
            ]
        );
    }

    #[test]
    fn suboptions_name_where_they_failed() {
        let spec = json!({
            "disks": {
                "type": "list", "elements": "dict",
                "options": {"dev": {"required": true}, "size": {"type": "int"}, "fs": {"choices": ["xfs"]}},
                "required_by": {"fs": "size"},
            }
        });
        let (errors, _) = check(
            spec,
            json!({"disks": [{"size": "x"}, {"dev": "sda", "fs": "xfs", "oops": 1}, "no"]}),
        );
        assert_eq!(
            errors,
            [
                "dictionary requested, could not parse JSON or key=value",
                "Elements value for option 'disks' is of type str and we were unable to convert to dict: dictionary requested, could not parse JSON or key=value",
                "missing required arguments: dev found in disks",
                "argument 'size' is of type str found in 'disks'. and we were unable to convert to int: \"'x'\" cannot be converted to an int",
                "missing parameter(s) required by 'fs': size found in disks",
                "disks.oops. Supported parameters include: dev, fs, size.",
            ]
        );
    }
}
