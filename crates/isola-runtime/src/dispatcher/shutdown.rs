//! Ending work on the dispatcher thread: shutdown (what is queued is
//! cancelled, what runs finishes, and what still runs when the grace
//! period is over is abandoned) and an engine taken out of service after
//! its core panicked. Each task still ends in exactly one completion.

use super::Dispatcher;
use crate::guard::catch;
use crate::job::TaskError;
use std::sync::atomic::Ordering;

impl Dispatcher {
    /// Stops taking work: everything still queued is cancelled, what runs
    /// finishes; the loop ends when no task is left.
    pub(super) fn begin_shutdown(&mut self, ack: crossbeam_channel::Sender<()>) {
        self.shutdown_ack = Some(ack);
        self.shared.cancelled.store(true, Ordering::Release);
        let now = self.now();
        self.log(|| crate::CoreCall::Close { now });
        let handed_back: Vec<u64> = match catch(|| self.scheduler.close()) {
            Ok(tasks) => tasks.iter().map(|t| t.id.0).collect(),
            // The core failed while closing: whatever does not run is
            // cancelled.
            Err(_) => self
                .tasks
                .iter()
                .filter(|(_, t)| t.running == 0)
                .map(|(&id, _)| id)
                .collect(),
        };
        for id in handed_back {
            // A task of an engine whose core failed may already be done.
            let Some(task) = self.tasks.get_mut(&id) else {
                continue;
            };
            task.settled = true;
            task.error.get_or_insert(TaskError::Cancelled);
            self.finish_if_settled(id);
        }
    }

    /// Shutdown's grace period is over: every task left (its work still
    /// running) completes with `TaskError::Abandoned`; its workers' later
    /// reports are dropped with the dispatcher.
    pub(super) fn abandon_running(&mut self) {
        let grace_ms = self.shutdown_grace.as_millis() as u64;
        let ids: Vec<u64> = self.tasks.keys().copied().collect();
        for id in ids {
            if let Some(task) = self.tasks.remove(&id) {
                self.finish(task, Err(TaskError::Abandoned { grace_ms }));
            }
        }
        self.running.clear();
    }

    /// Takes engine `e` out of service after its core panicked with
    /// `message`: each of its tasks ends with `TaskError::CoreFailed` (once
    /// what of it runs is back), and later ones at once.
    pub(super) fn fail_engine(&mut self, e: usize, message: String) {
        let engine = self.shared.engines[e].name.clone();
        eprintln!(
            "isola-runtime: engine `{engine}`'s scheduler panicked ({message}); its tasks fail from now on"
        );
        self.failed[e] = Some(message.clone());
        let ids: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.engine == e)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            if let Some(task) = self.tasks.get_mut(&id) {
                task.settled = true;
                task.error.get_or_insert(TaskError::CoreFailed {
                    engine: engine.clone(),
                    message: message.clone(),
                });
            }
            self.finish_if_settled(id);
        }
    }
}
