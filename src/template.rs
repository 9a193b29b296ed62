//! PLACEHOLDER: replaced by the full implementation on merge.
use std::collections::BTreeSet;

use minijinja::{Environment, UndefinedBehavior};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    pub message: String,
    pub line: Option<usize>,
    pub undefined: Option<String>,
}

impl From<minijinja::Error> for TemplateError {
    fn from(e: minijinja::Error) -> Self {
        TemplateError {
            message: e.to_string(),
            line: e.line(),
            undefined: None,
        }
    }
}

pub struct Templates {
    env: Environment<'static>,
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
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        Templates { env }
    }

    pub fn render_str(&self, text: &str, vars: &serde_json::Value) -> Result<String, TemplateError> {
        Ok(self.env.render_str(text, minijinja::Value::from(minijinja::value::Serde(vars)))?)
    }

    pub fn render_value(&self, v: &serde_json::Value, vars: &serde_json::Value) -> Result<serde_json::Value, TemplateError> {
        use serde_json::Value as J;
        Ok(match v {
            J::String(s) if s.contains("{{") || s.contains("{%") => J::String(self.render_str(s, vars)?),
            J::Array(a) => J::Array(a.iter().map(|x| self.render_value(x, vars)).collect::<Result<_, _>>()?),
            J::Object(m) => J::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), self.render_value(x, vars)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => other.clone(),
        })
    }

    pub fn eval_condition(&self, cond: &serde_json::Value, vars: &serde_json::Value) -> Result<bool, TemplateError> {
        match cond {
            serde_json::Value::Bool(b) => Ok(*b),
            serde_json::Value::Array(items) => {
                for c in items {
                    if !self.eval_condition(c, vars)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            other => {
                let text = crate::modules::params::scalar_text(other);
                let expr = self.env.compile_expression(&text)?;
                Ok(expr.eval(minijinja::Value::from(minijinja::value::Serde(vars)))?.is_true())
            }
        }
    }

    pub fn check_template(&self, text: &str) -> Result<(), TemplateError> {
        self.env.template_from_str(text)?;
        Ok(())
    }

    pub fn check_expression(&self, expr: &str) -> Result<(), TemplateError> {
        self.env.compile_expression(expr)?;
        Ok(())
    }

    pub fn template_vars(&self, text: &str) -> BTreeSet<String> {
        self.env
            .template_from_str(text)
            .map(|t| t.undeclared_variables(false).into_iter().collect())
            .unwrap_or_default()
    }

    pub fn expression_vars(&self, expr: &str) -> BTreeSet<String> {
        self.env
            .compile_expression(expr)
            .map(|e| e.undeclared_variables(false).into_iter().collect())
            .unwrap_or_default()
    }
}
