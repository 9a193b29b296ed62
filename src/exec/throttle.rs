//! `throttle`: how many hosts may apply one task's changes at once. Hosts
//! run on threads of their own, so a place is a count under a lock, given
//! back when the host's steps have run.

use std::sync::{Condvar, Mutex};

pub(crate) struct Throttle {
    limit: u64,
    running: Mutex<u64>,
    freed: Condvar,
}

impl Throttle {
    /// A bound of `limit` hosts at once; none for 0, as in Ansible.
    pub fn new(limit: u64) -> Option<Throttle> {
        (limit > 0).then(|| Throttle {
            limit,
            running: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    /// Waits for a place, held until the returned guard drops.
    pub fn enter(&self) -> Place<'_> {
        let mut running = self.running.lock().expect("not poisoned");
        while *running >= self.limit {
            running = self.freed.wait(running).expect("not poisoned");
        }
        *running += 1;
        Place(self)
    }
}

pub(crate) struct Place<'t>(&'t Throttle);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        *self.0.running.lock().expect("not poisoned") -= 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn no_more_than_the_limit_hold_a_place_at_once() {
        let throttle = Throttle::new(2).unwrap();
        let (inside, most) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let _place = throttle.enter();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    inside.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
        assert!(Throttle::new(0).is_none(), "0 is no bound");
    }
}
