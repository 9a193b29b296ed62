use clap::Parser;

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
    nodeprov::transport::fd_limit::raise();
    std::process::ExitCode::from(nodeprov::commands::run(cli))
}
