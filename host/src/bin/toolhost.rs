//! The `toolhost` command line; see `toolhost --help`.

fn main() -> std::process::ExitCode {
    toolhost::commands::main()
}
