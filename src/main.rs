use clap::Parser;

/// musl's own malloc takes one lock for every thread, and the static build
/// runs a worker thread per host: it cost 2 to 3× the controller CPU per
/// host of the glibc build; jemalloc brings it back (benches/RESULTS.md).
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let cli = match nodeprov::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Usage errors are exit 1, not clap's 2: 2 means drift here.
            let code = if e.use_stderr() {
                nodeprov::report::EXIT_USAGE
            } else {
                0
            };
            return std::process::ExitCode::from(code);
        }
    };
    nodeprov::base::fd_limit::raise();
    return_large_buffers();
    std::process::ExitCode::from(nodeprov::commands::run(cli))
}

/// Scripts and file contents of several MiB per host come and go on many
/// worker threads. glibc would keep them in per-thread heaps once freed
/// (its mmap threshold grows with every large free); a fixed threshold maps
/// each one on its own and gives it back to the system when freed, so the
/// process holds what its hosts in flight need, not its high-water mark.
fn return_large_buffers() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes allocator tuning; called before any
    // worker thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}
