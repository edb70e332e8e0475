//! `cargo bench --bench ai_meta`.
fn main() {}
