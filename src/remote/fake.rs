//! A scripted transport for unit tests of planning and execution: it records
//! every script and answers with a function of the script body.

use std::sync::{Arc, Mutex};

use super::{Output, Purpose, Script, Transport, TransportError};

type Responder = Box<dyn FnMut(&Script) -> Result<Output, TransportError> + Send>;

pub struct FakeTransport {
    log: Arc<Mutex<Vec<Script>>>,
    respond: Responder,
}

impl FakeTransport {
    pub fn new(
        respond: impl FnMut(&Script) -> Result<Output, TransportError> + Send + 'static,
    ) -> Self {
        FakeTransport {
            log: Arc::new(Mutex::new(Vec::new())),
            respond: Box::new(respond),
        }
    }

    /// A shared handle on the recorded scripts, readable after the transport moved.
    pub fn log(&self) -> Arc<Mutex<Vec<Script>>> {
        self.log.clone()
    }
}

/// Counts recorded scripts of one purpose.
pub fn count(log: &Arc<Mutex<Vec<Script>>>, purpose: Purpose) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|s| s.purpose == purpose)
        .count()
}

impl Transport for FakeTransport {
    fn run(&mut self, script: &Script) -> Result<Output, TransportError> {
        self.log.lock().unwrap().push(script.clone());
        (self.respond)(script)
    }

    fn joins_probes(&self) -> bool {
        false
    }
}
