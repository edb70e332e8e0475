//! The background checkpointer: a thread that checkpoints when the log passes its size
//! threshold (writers kick it) or when the interval elapses with changes pending. What it
//! runs holds only a weak reference to the tree, so it never keeps a closed tree alive,
//! and it stops (joined) when the last `Tree` handle is dropped.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::pool::lock;

/// Wake-ups for the checkpointer.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    state: Mutex<Wakeup>,
    cv: Condvar,
}

/// What the checkpointer was asked since it last looked.
#[derive(Debug, Default)]
struct Wakeup {
    /// The tree is closing: the thread ends.
    stop: bool,
    /// A writer saw the log pass its threshold: checkpoint now.
    kick: bool,
}

impl Signal {
    /// Asks for a checkpoint soon.
    pub fn kick(&self) {
        lock(&self.state).kick = true;
        self.cv.notify_all();
    }

    fn stop(&self) {
        lock(&self.state).stop = true;
        self.cv.notify_all();
    }

    /// Waits for a kick, the interval or a stop; false on stop.
    fn wait(&self, every: Duration) -> bool {
        let mut st = lock(&self.state);
        if !st.stop && !st.kick {
            st = self
                .cv
                .wait_timeout(st, every)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        st.kick = false;
        !st.stop
    }
}

/// The running checkpointer; dropping it stops and joins the thread.
#[derive(Debug)]
pub(crate) struct Background {
    signal: Arc<Signal>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Background {
    /// Starts a thread that calls `checkpoint` on each kick or interval until it returns
    /// false (the tree is gone) or the handle is dropped; a handle that does nothing when
    /// disabled.
    pub fn start(
        mut checkpoint: impl FnMut() -> bool + Send + 'static,
        signal: Arc<Signal>,
        every: Duration,
        enabled: bool,
    ) -> Self {
        let handle = enabled.then(|| {
            let signal = signal.clone();
            std::thread::Builder::new()
                .name("aimeta-checkpointer".into())
                .spawn(move || {
                    while signal.wait(every) {
                        if !checkpoint() {
                            return;
                        }
                    }
                })
                .ok()
        });
        Background {
            signal,
            handle: Mutex::new(handle.flatten()),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.signal.stop();
        if let Some(h) = lock(&self.handle).take() {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}
