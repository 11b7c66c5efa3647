//! [`Appender`]: lines appended to a file by a thread of its own, so that
//! the async code that records them (a turn's audit records, a
//! conversation's transcript) never waits on the disk, and a flush that
//! says when everything handed over is written.
//!
//! One thread per file keeps the lines in order; it sleeps on its queue
//! when there is nothing to write, and ends when the appender is dropped,
//! after writing what it was given.

use std::fs::File;
use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// Opens the file on the first line, and again after a write failed.
pub(crate) type Open = Box<dyn FnMut() -> std::io::Result<File> + Send>;

/// A file written line by line on its own thread.
pub(crate) struct Appender {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// The first write that failed since the last flush.
    failed: Arc<Mutex<Option<std::io::Error>>>,
}

enum Job {
    Line(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

impl Appender {
    /// An appender that writes to the file `open` gives, opened when the
    /// first line comes. `name` names the thread.
    pub(crate) fn new(name: &str, open: Open) -> Self {
        let (jobs, queue) = mpsc::channel();
        let failed = Arc::new(Mutex::new(None));
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn({
                let failed = Arc::clone(&failed);
                move || write_lines(&queue, open, &failed)
            })
            .expect("a thread for the appender starts");
        Appender { jobs: Some(jobs), thread: Some(thread), failed }
    }

    /// Hand `line` (without its line break) over to be written. Returns
    /// the error of an earlier write that failed, if one did since the last
    /// flush; the line is handed over all the same.
    pub(crate) fn append(&self, line: &str) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.send(Job::Line(bytes));
        self.take_error()
    }

    /// Wait until every line handed over so far is written; the error of a
    /// write that failed since the last flush, if any.
    pub(crate) async fn flush(&self) -> std::io::Result<()> {
        let (done, written) = oneshot::channel();
        self.send(Job::Flush(done));
        // The thread only goes away with the appender.
        let _ = written.await;
        self.take_error()
    }

    fn send(&self, job: Job) {
        let jobs = self.jobs.as_ref().expect("the queue lives as long as the appender");
        jobs.send(job).expect("the appender's thread runs as long as the appender");
    }

    fn take_error(&self) -> std::io::Result<()> {
        match self.failed.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender").finish_non_exhaustive()
    }
}

/// Dropping the appender writes what it was given before it returns.
impl Drop for Appender {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_lines(queue: &mpsc::Receiver<Job>, mut open: Open, failed: &Mutex<Option<std::io::Error>>) {
    let mut file: Option<File> = None;
    while let Ok(job) = queue.recv() {
        match job {
            Job::Line(bytes) => {
                let written = match &mut file {
                    Some(open) => open.write_all(&bytes),
                    None => open().and_then(|mut opened| {
                        let written = opened.write_all(&bytes);
                        file = Some(opened);
                        written
                    }),
                };
                if let Err(error) = written {
                    // Reopened for the next line.
                    file = None;
                    failed.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(error);
                }
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_written_in_order_by_the_flush_and_a_failure_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines");
        let to = path.clone();
        let appender = Appender::new("test-appender", Box::new(move || File::options().create(true).append(true).open(&to)));
        for n in 0..100 {
            appender.append(&n.to_string()).unwrap();
        }
        appender.flush().await.unwrap();
        let written: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
        assert_eq!(written, (0..100).map(|n| n.to_string()).collect::<Vec<_>>());

        let nowhere = Appender::new("test-appender", Box::new(|| File::open("/nonexistent-dir/lines")));
        nowhere.append("lost").unwrap();
        assert!(nowhere.flush().await.is_err());
        assert!(nowhere.flush().await.is_ok(), "each failure is reported once");
    }
}
