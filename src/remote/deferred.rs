//! A connection opened on first use, for a host its play waits for
//! (`wait_for_connection` as the first task): until the host answers, each
//! script fails as unreachable, and logging in again tries anew.

use std::time::Duration;

use super::{Output, Script, Transport, TransportError};

type Open<'a> = Box<dyn FnMut() -> Result<Box<dyn Transport>, TransportError> + Send + 'a>;

pub struct Deferred<'a> {
    open: Open<'a>,
    inner: Option<Box<dyn Transport>>,
}

impl<'a> Deferred<'a> {
    pub fn new(
        open: impl FnMut() -> Result<Box<dyn Transport>, TransportError> + Send + 'a,
    ) -> Self {
        Deferred {
            open: Box::new(open),
            inner: None,
        }
    }

    /// The connection, once one was made.
    pub fn into_inner(self) -> Option<Box<dyn Transport>> {
        self.inner
    }

    fn connected(&mut self) -> Result<&mut Box<dyn Transport>, TransportError> {
        if self.inner.is_none() {
            self.inner = Some((self.open)()?);
        }
        Ok(self.inner.as_mut().expect("just opened"))
    }
}

impl Transport for Deferred<'_> {
    fn run(&mut self, script: &Script) -> Result<Output, TransportError> {
        self.connected()?.run(script)
    }

    fn can_reconnect(&self) -> bool {
        self.inner.as_ref().is_none_or(|t| t.can_reconnect())
    }

    fn reconnect(&mut self, timeout: Option<Duration>) -> Result<(), TransportError> {
        match &mut self.inner {
            Some(t) => t.reconnect(timeout),
            None => self.connected().map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::fake::FakeTransport;
    use crate::remote::Purpose;

    #[test]
    fn opens_on_first_use_and_again_after_each_failure() {
        let mut tries = 0;
        let mut t = Deferred::new(move || {
            tries += 1;
            match tries {
                1 | 2 => Err(TransportError::Unreachable(format!("try {tries}: refused"))),
                _ => Ok(
                    Box::new(FakeTransport::new(|_: &Script| Ok(Output::default())))
                        as Box<dyn Transport>,
                ),
            }
        });
        let script = Script {
            purpose: Purpose::Probe,
            body: "true".into(),
            become_user: None,
            become_flags: None,
        };
        let err = t.run(&script).unwrap_err().to_string();
        assert_eq!(err, "host unreachable: try 1: refused");
        assert!(t.reconnect(None).is_err());
        t.reconnect(None).unwrap();
        assert_eq!(t.run(&script).unwrap().status, 0);
        assert!(t.into_inner().is_some());
    }
}
