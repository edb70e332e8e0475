//! Fails early, with the command to run, when RocksDB's bindgen would fail for want of
//! libclang (Debian: libclang-dev), instead of leaving the reader with bindgen's panic.

use std::path::Path;

fn libclang_present() -> bool {
    if let Some(p) = std::env::var_os("LIBCLANG_PATH") {
        return Path::new(&p).exists();
    }
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ];
    let in_dir = |d: &Path| {
        std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("libclang"))
            })
            .unwrap_or(false)
    };
    if dirs.iter().any(|d| in_dir(Path::new(d))) {
        return true;
    }
    std::fs::read_dir("/usr/lib")
        .map(|rd| {
            rd.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("llvm-")
                    && in_dir(&e.path().join("lib"))
            })
        })
        .unwrap_or(false)
}

fn main() {
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");
    if std::env::var_os("CARGO_FEATURE_ROCKSDB").is_some() && !libclang_present() {
        eprintln!(
            "aimeta-adapters: RocksDB's bindings need libclang, which is not installed.\n\
             Install it (Debian/Ubuntu: `apt-get install -y libclang-dev`), set LIBCLANG_PATH, \
             or build without RocksDB: `--no-default-features --features aimeta,sqlite,lmdb,redb,postgres`."
        );
        std::process::exit(1);
    }
}
