//! `internal_request_file`: the server asking the node for a local file a
//! caller named with a `file://` URL. Refused unless `[vcp] serve_dirs`
//! names directories; then only regular files inside one of them are
//! served: no `..`, no symlink that leads out (paths are resolved by
//! `cap-primitives`, which never leaves the directory it starts from), no
//! FIFO or device, at most `max_file_kib`.

use super::config::VcpConfig;
use base64::Engine;
use cap_primitives::fs::{OpenOptions, OpenOptionsExt};
use rustix::fs::OFlags;
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The tool name the server uses for file requests.
pub(super) const INTERNAL_REQUEST_FILE: &str = "internal_request_file";

/// A file request that passed the checks: the file, and the served
/// directory it is inside.
pub(super) struct FileRequest {
    path: PathBuf,
    dir: PathBuf,
    inside: PathBuf,
}

/// Why a file request is refused before anything is read: whether the
/// request itself was malformed (`invalid`) or asks for what is not served.
pub(super) struct Refused {
    pub(super) invalid: bool,
    pub(super) why: String,
}

/// The request in `args`, if this node serves the file its `fileUrl`
/// names: nothing is read yet.
pub(super) fn check(config: &VcpConfig, args: &Map<String, Value>) -> Result<FileRequest, Refused> {
    let refused = |why: String| Refused { invalid: false, why };
    let invalid = |why: String| Refused { invalid: true, why };
    if config.serve_dirs.is_empty() {
        return Err(refused("this node serves no files: [vcp] serve_dirs is empty".into()));
    }
    let Some(url) = args.get("fileUrl").and_then(Value::as_str) else {
        return Err(invalid(format!("{INTERNAL_REQUEST_FILE} needs a fileUrl")));
    };
    let path = local_path(url).map_err(invalid)?;
    let Some((dir, inside)) =
        config.serve_dirs.iter().find_map(|dir| Some((dir.clone(), path.strip_prefix(dir).ok()?.to_owned())))
    else {
        return Err(refused(format!("{} is not inside a directory in [vcp] serve_dirs", path.display())));
    };
    Ok(FileRequest { path, dir, inside })
}

/// The `result` the server expects for `request`, or why the file cannot
/// be served.
pub(super) async fn read(config: &VcpConfig, request: FileRequest) -> Result<Value, String> {
    let FileRequest { path, dir, inside } = request;
    let most = config.max_file_bytes;
    let shown = path.display().to_string();
    let read = tokio::task::spawn_blocking(move || read_inside(&dir, &inside, most))
        .await
        .map_err(|e| format!("reading {shown} failed: {e}"))?;
    let bytes = read.map_err(|why| format!("{shown}: {why}"))?;
    Ok(json!({
        "status": "success",
        "fileData": base64::engine::general_purpose::STANDARD.encode(&bytes),
        "mimeType": mime_type(&path),
    }))
}

/// The most bytes the frame serving a file can take: the largest file,
/// base64-encoded, and room for the rest of the frame.
pub(super) fn largest_frame(config: &VcpConfig) -> usize {
    usize::try_from(config.max_file_bytes.div_ceil(3) * 4).unwrap_or(usize::MAX).saturating_add(4 << 10)
}

/// The absolute path a `file://` URL names, percent-decoded, refused when
/// any component is `..`.
fn local_path(url: &str) -> Result<PathBuf, String> {
    let rest = url
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("file://"))
        .map(|_| &url[7..])
        .ok_or_else(|| format!("{url:?} is not a file:// URL"))?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err(format!("{url:?} does not name a local absolute path"));
    }
    let decoded = percent_decode(rest).ok_or_else(|| format!("{url:?} is not validly percent-encoded"))?;
    let path = PathBuf::from(decoded);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!("{url:?} climbs with `..`"));
    }
    Ok(path)
}

/// `%XX` sequences as bytes, the whole read as UTF-8; `None` when a
/// sequence is broken, the text is not UTF-8, or it holds a NUL.
fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok().filter(|s| !s.contains('\0'))
}

/// The file at `inside` under `dir`, if it is a regular file of at most
/// `most` bytes.
fn read_inside(dir: &Path, inside: &Path, most: u64) -> Result<Vec<u8>, String> {
    let base = std::fs::File::open(dir).map_err(|e| format!("cannot open the served directory {}: {e}", dir.display()))?;
    let mut options = OpenOptions::new();
    options.read(true);
    // A FIFO would wait for a writer and a terminal would become ours:
    // never block, never adopt.
    options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32);
    // The directory itself is `.`, refused below as not a regular file.
    let inside = if inside.as_os_str().is_empty() { Path::new(".") } else { inside };
    let file = cap_primitives::fs::open(&base, inside, &options).map_err(|e| format!("cannot be served: {e}"))?;
    let metadata = file.metadata().map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err("is not a regular file".into());
    }
    if metadata.len() > most {
        return Err(format!("is {} bytes, over the limit of {most} bytes ([vcp] max_file_kib)", metadata.len()));
    }
    let mut bytes = Vec::new();
    // Read one byte past the limit, in case the file grew since.
    file.take(most + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > most {
        return Err(format!("grew past the limit of {most} bytes ([vcp] max_file_kib) while it was read"));
    }
    Ok(bytes)
}

/// The MIME type of `path` by its extension, for the file kinds a chat
/// passes along; anything else is `application/octet-stream`.
fn mime_type(path: &Path) -> &'static str {
    let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        Some("txt" | "log") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("json") => "application/json",
        Some("mp3") => "audio/mpeg",
        Some("wav") => "audio/wav",
        Some("mp4") => "video/mp4",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_become_paths_and_climbing_is_refused() {
        assert_eq!(local_path("file:///srv/a%20b.png").unwrap(), PathBuf::from("/srv/a b.png"));
        assert_eq!(local_path("FILE://localhost/srv/x").unwrap(), PathBuf::from("/srv/x"));
        assert!(local_path("file:///srv/../etc/passwd").unwrap_err().contains("climbs with `..`"));
        assert!(local_path("file:///srv/%2e%2e/etc/passwd").unwrap_err().contains("climbs"), "encoded .. too");
        assert!(local_path("file://host/srv/x").unwrap_err().contains("local absolute path"));
        assert!(local_path("http://x/y").unwrap_err().contains("not a file:// URL"));
        assert!(local_path("file:///a%00b").unwrap_err().contains("percent-encoded"));
        assert!(local_path("file:///a%zz").unwrap_err().contains("percent-encoded"));
    }

    #[test]
    fn a_relative_serve_dir_serves_the_files_under_it() {
        // The CLI names the working directory's toolhost.toml by its bare
        // name; `serve_dirs = ["shared"]` is then relative to it.
        let policy = crate::Policy::parse(
            "[vcp]\nserver = \"ws://127.0.0.1:6005\"\nserve_dirs = [\"shared\"]\n",
            Path::new("toolhost.toml"),
        )
        .expect("the policy parses");
        let config = policy.vcp.expect("a [vcp] section");
        let file = std::env::current_dir().expect("a working directory").join("shared/report.txt");
        let args = serde_json::json!({ "fileUrl": format!("file://{}", file.display()) });
        let args = args.as_object().cloned().expect("an object");
        match check(&config, &args) {
            Ok(request) => assert_eq!(request.inside, PathBuf::from("report.txt")),
            Err(refused) => panic!("refused: {}", refused.why),
        }
    }

    #[test]
    fn mime_types_follow_the_extension() {
        assert_eq!(mime_type(Path::new("/a/B.PNG")), "image/png");
        assert_eq!(mime_type(Path::new("/a/b")), "application/octet-stream");
    }
}
