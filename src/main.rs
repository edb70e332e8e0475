//! The `ai-meta` command.
fn main() {}
