//! The open-file limit. Every connection is a socket, so a fleet run needs
//! room for `--forks` of them plus the files each login reads; when the
//! limit is still reached, the message says so instead of blaming whatever
//! file happened to fail to open.

use std::io;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, as far as the kernel
/// allows; the default soft limit (1024) is far below what servers permit.
pub fn raise() {
    // SAFETY: getrlimit/setrlimit only read and write the struct given.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            // An unlimited hard limit is refused for files; the soft one
            // then stays as it was, which is still usable.
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The soft limit on open files now in force.
pub fn soft() -> u64 {
    // SAFETY: getrlimit only writes the struct given.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        match libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) {
            0 => lim.rlim_cur as u64,
            _ => u64::MAX,
        }
    }
}

/// How many files this process has open; unknown counts as all of them.
pub fn in_use() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(u64::MAX, |dir| dir.count() as u64)
}

/// The message for an error that means the process (EMFILE) or the
/// system (ENFILE) ran out of file descriptors.
pub fn explain(e: &io::Error) -> Option<String> {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)).then(|| {
        format!(
            "too many open files (limit {}): lower --forks or raise ulimit -n",
            soft()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_descriptor_exhaustion_is_explained() {
        let emfile = explain(&io::Error::from_raw_os_error(libc::EMFILE)).unwrap();
        assert!(
            emfile.starts_with(&format!("too many open files (limit {})", soft())),
            "{emfile}"
        );
        assert!(
            emfile.ends_with("lower --forks or raise ulimit -n"),
            "{emfile}"
        );
        assert!(explain(&io::Error::from_raw_os_error(libc::ENFILE)).is_some());
        assert_eq!(explain(&io::Error::from_raw_os_error(libc::ENOENT)), None);
    }

    #[test]
    fn open_files_are_counted() {
        // Tests on other threads open and close descriptors meanwhile: many
        // files opened here stand out against that.
        let before = in_use();
        let files: Vec<_> = (0..100)
            .map(|_| std::fs::File::open("/proc/self/status").unwrap())
            .collect();
        assert!(in_use() > before + 50, "open files must count");
        drop(files);
    }
}
