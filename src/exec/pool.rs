//! The worker pool every fleet-wide job runs on: `forks` threads take the
//! items in order from one queue, and the results come back in the items'
//! order whatever order they finished in.

use std::sync::Mutex;

/// `work` on every item, at most `forks` at once.
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    forks: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let queue = Mutex::new(items.iter().enumerate());
    let results = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..forks.clamp(1, items.len().max(1)))
            .map(|_| {
                s.spawn(|| loop {
                    let Some((i, item)) = queue.lock().unwrap().next() else {
                        break;
                    };
                    let result = work(item);
                    results.lock().unwrap().push((i, result));
                })
            })
            .collect();
        // Joined one by one: the scope alone returns once the closures have
        // ended, while a thread may still be tearing down (OpenSSL frees
        // its per-thread state then), and the process's exit running
        // OpenSSL's cleanup at the same moment corrupted the heap.
        for worker in workers {
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_and_forks_bound_the_workers() {
        let busy = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        let items: Vec<u64> = (0..20).collect();
        let out = in_parallel(&items, 3, |n| {
            use std::sync::atomic::Ordering::SeqCst;
            let now = busy.fetch_add(1, SeqCst) + 1;
            most.fetch_max(now, SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20 - n));
            busy.fetch_sub(1, SeqCst);
            n * 2
        });
        assert_eq!(out, (0..20).map(|n| n * 2).collect::<Vec<_>>());
        assert!(most.into_inner() <= 3);
    }
}
