use super::*;

#[test]
fn command_line_is_consistent() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}
