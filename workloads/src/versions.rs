//! Versions of the engine crates, read from the workspace's Cargo.lock, for provenance.

use std::collections::BTreeMap;

const ENGINE_CRATES: [&str; 10] = [
    "rocksdb",
    "librocksdb-sys",
    "rusqlite",
    "libsqlite3-sys",
    "heed",
    "lmdb-master-sys",
    "redb",
    "postgres",
    "etcd-client",
    "aimeta-engine",
];

/// crate name -> version for every engine crate in Cargo.lock (empty if it is not found).
pub fn engine_versions() -> BTreeMap<String, String> {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    let Ok(text) = std::fs::read_to_string(lock) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for block in text.split("[[package]]") {
        let field = |k: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(k).map(|v| {
                    v.trim_start_matches([' ', '='])
                        .trim_matches('"')
                        .to_string()
                })
            })
        };
        if let (Some(name), Some(version)) = (field("name"), field("version")) {
            if ENGINE_CRATES.contains(&name.as_str()) {
                out.insert(name, version);
            }
        }
    }
    out
}
