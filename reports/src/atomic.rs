//! Atomic file replacement: write a temporary file beside the target, fsync it, rename it
//! over the target, fsync the directory. Readers see the old file or the new one, never
//! half of either.

use std::fs;
use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes` atomically.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes `value` as pretty-printed JSON with a final newline, atomically.
pub(crate) fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_atomically(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let p = dir.path().join("out.json");
        write_atomically(&p, b"first version, longer")?;
        write_atomically(&p, b"second")?;
        assert_eq!(fs::read(&p)?, b"second");
        assert_eq!(
            fs::read_dir(dir.path())?.count(),
            1,
            "no temporary file left behind"
        );
        Ok(())
    }
}
