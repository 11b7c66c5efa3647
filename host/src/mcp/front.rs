//! [`Front`]: the one thread a stdio client is served on, which runs a
//! call itself when it is the only one, and hands calls made at once to
//! the runtime's other threads.
//!
//! On a multi-threaded runtime, each request's task and the answer's write
//! wake other threads on the way (a futex wake and a context switch each).
//! One thread that reads the request, runs the call and writes the answer
//! does none of that: over stdio it answered 12–15 µs sooner a call (five
//! alternating rounds of 2 000 calls, docs/PERFORMANCE.md). But one thread
//! alone would run a client's parallel calls on one core, so a call that
//! arrives while another runs here goes to the pool.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// Where the calls of a client served on one thread run.
#[derive(Clone)]
pub(super) struct Front {
    /// The runtime whose threads run the calls made at once.
    pool: Handle,
    /// Whether a call runs on the front thread now.
    busy: Arc<AtomicBool>,
}

impl Front {
    pub(super) fn new(pool: Handle) -> Self {
        Front { pool, busy: Arc::new(AtomicBool::new(false)) }
    }

    /// Run `call` on this thread if no other call runs here, else on the
    /// pool; `None` if the pool shut down before it finished. Dropping the
    /// future stops the call wherever it runs.
    pub(super) async fn run<F>(&self, call: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if let Some(_here) = Claim::take(&self.busy) {
            return Some(call.await);
        }
        let mut task = AbortOnDrop(self.pool.spawn(call));
        match (&mut task.0).await {
            Ok(output) => Some(output),
            // The call's panic is this request's, as if it had run here.
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_cancelled) => None,
        }
    }
}

/// The front thread taken for one call, given back when dropped.
struct Claim<'a>(&'a AtomicBool);

impl<'a> Claim<'a> {
    fn take(busy: &'a AtomicBool) -> Option<Self> {
        busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok().then_some(Claim(busy))
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A task stopped when this is dropped.
pub(super) struct AbortOnDrop<T>(pub(super) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    fn thread_name() -> String {
        std::thread::current().name().unwrap_or_default().to_owned()
    }

    fn pool() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).thread_name("pool").enable_all().build().unwrap()
    }

    fn front_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    #[test]
    fn a_call_alone_runs_on_the_front_thread_and_one_made_meanwhile_on_the_pool() {
        let pool = pool();
        let front = Front::new(pool.handle().clone());
        let here = std::thread::current().name().map(str::to_owned);
        front_thread().block_on(async {
            let (release, held) = oneshot::channel::<()>();
            let first = {
                let front = front.clone();
                tokio::spawn(async move {
                    front
                        .run(async move {
                            let name = thread_name();
                            held.await.unwrap();
                            name
                        })
                        .await
                })
            };
            tokio::task::yield_now().await;
            assert!(front.busy.load(Ordering::Acquire), "the first call holds the front thread");
            let second = front.run(async { thread_name() }).await.unwrap();
            release.send(()).unwrap();
            let first = first.await.unwrap().unwrap();
            assert_eq!(Some(first), here, "alone, it ran on the front thread");
            assert_eq!(second, "pool", "made while the first ran, it ran on the pool");
            assert!(!front.busy.load(Ordering::Acquire), "given back once done");
            let third = front.run(async { thread_name() }).await.unwrap();
            assert_eq!(Some(third), here, "alone again, on the front thread");
        });
    }

    #[test]
    fn a_call_on_the_pool_is_stopped_when_its_request_is_dropped() {
        let pool = pool();
        let front = Front::new(pool.handle().clone());
        front_thread().block_on(async {
            let _here = Claim::take(&front.busy).unwrap();
            let (dropped, told) = oneshot::channel::<()>();
            struct TellOnDrop(Option<oneshot::Sender<()>>);
            impl Drop for TellOnDrop {
                fn drop(&mut self) {
                    let _ = self.0.take().map(|tell| tell.send(()));
                }
            }
            let call = async move {
                let _tell = TellOnDrop(Some(dropped));
                std::future::pending::<()>().await;
            };
            let request = front.run(call);
            assert!(tokio::time::timeout(std::time::Duration::from_millis(50), request).await.is_err());
            // The request's future is gone: the call on the pool is aborted.
            tokio::time::timeout(std::time::Duration::from_secs(10), told).await.unwrap().unwrap();
        });
    }

    #[test]
    fn a_panic_on_the_pool_is_the_requests() {
        let pool = pool();
        let front = Front::new(pool.handle().clone());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            front_thread().block_on(async {
                let _here = Claim::take(&front.busy).unwrap();
                front.run(async { panic!("the call's own") }).await
            })
        }));
        let message = caught.unwrap_err();
        assert_eq!(message.downcast_ref::<&str>(), Some(&"the call's own"));
    }
}
