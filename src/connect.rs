//! Chooses the transport for a host: `-c` wins, then `ansible_connection`.

use serde_json::{Map, Value};

use crate::cli::Connection;
use crate::transport::local::LocalTransport;
use crate::transport::{Transport, TransportError};

pub fn connection_for(cli: Option<Connection>, vars: &Map<String, Value>) -> Connection {
    cli.unwrap_or_else(
        || match vars.get("ansible_connection").and_then(Value::as_str) {
            Some("local") => Connection::Local,
            _ => Connection::Ssh,
        },
    )
}

pub fn open(
    cli: Option<Connection>,
    host: &str,
    vars: &Map<String, Value>,
) -> Result<Box<dyn Transport>, TransportError> {
    match connection_for(cli, vars) {
        Connection::Local => Ok(Box::new(LocalTransport)),
        Connection::Ssh => Err(TransportError::Unreachable(format!(
            "{host}: the ssh connection is not available in this build; use -c local on the host itself"
        ))),
    }
}
