use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = nodeprov::cli::Cli::parse();
    std::process::ExitCode::from(nodeprov::commands::run(cli))
}
