//! Opening a file that must be a regular file, without waiting on it: a
//! FIFO would block the open until a writer came, `/dev/zero` would be
//! read forever, and a terminal would become the process's. The open never
//! blocks and never adopts a terminal; anything but a regular file is
//! refused before a byte is read, naming what it is.

use std::fs::File;
use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// `path`, opened for reading, if it is a regular file (symlinks are
/// followed). Anything else is an error of kind
/// [`ErrorKind::InvalidInput`] that says what it is.
///
/// # Errors
///
/// The I/O error of opening it; [`ErrorKind::InvalidInput`] when it is not a
/// regular file.
pub fn open_regular_file(path: &Path) -> std::io::Result<File> {
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(Error::new(ErrorKind::InvalidInput, format!("{} is {what}, not a regular file; it was not read", path.display())))
}

/// The bytes of the regular file at `path`, refused without reading when
/// it is not one or is larger than `most` bytes, and past `most` if it
/// grows while it is read.
///
/// # Errors
///
/// The I/O error of reading it; [`ErrorKind::InvalidInput`] when it is not a
/// regular file or is larger than `most` bytes.
pub fn read_regular_file(path: &Path, most: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular_file(path)?;
    let too_large =
        || Error::new(ErrorKind::InvalidData, format!("{} is larger than {most} bytes; it was not read", path.display()));
    let len = file.metadata()?.len();
    if len > most {
        return Err(too_large());
    }
    // Room for the whole file at once: into a buffer grown as it went, a
    // 171 KiB component took 15 reads and as many reallocations.
    let mut bytes = Vec::with_capacity(usize::try_from(len).map_or(0, |len| len.saturating_add(1)));
    file.take(most.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > most {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        for (path, says) in
            [(fifo.as_path(), "is a FIFO"), (Path::new("/dev/zero"), "is a device"), (dir.path(), "is a directory")]
        {
            let error = read_regular_file(path, 1 << 20).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
            assert!(error.to_string().contains(says), "{error}");
        }
        let file = dir.path().join("file");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_regular_file(&file, 5).unwrap(), b"12345");
        assert!(read_regular_file(&file, 4).unwrap_err().to_string().contains("larger than 4 bytes"));
    }
}
