//! The files this crate owns. Writes replace a file atomically: write a temporary file
//! beside the target, fsync it, rename it over the target, fsync the directory; readers see
//! the old file or the new one, never half of either. Reads check a `schema_version` first.

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

/// Why a versioned JSON file could not be read.
pub(crate) enum ReadFailure {
    /// The file could not be read.
    Io(std::io::Error),
    /// It is not JSON of the expected shape.
    Parse(serde_json::Error),
    /// Its `schema_version` is this one, not the one expected.
    Version(u32),
}

/// Reads a JSON file whose `schema_version` must be `version`; the version is checked
/// before the rest, so that a file of another version says so rather than failing to parse.
pub(crate) fn read_json_versioned<T: serde::de::DeserializeOwned>(
    path: &Path,
    version: u32,
) -> Result<T, ReadFailure> {
    #[derive(serde::Deserialize)]
    struct Probe {
        schema_version: u32,
    }
    let bytes = fs::read(path).map_err(ReadFailure::Io)?;
    let probe: Probe = serde_json::from_slice(&bytes).map_err(ReadFailure::Parse)?;
    if probe.schema_version != version {
        return Err(ReadFailure::Version(probe.schema_version));
    }
    serde_json::from_slice(&bytes).map_err(ReadFailure::Parse)
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
