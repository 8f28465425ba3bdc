//! Live control of a running runtime, carried out on the dispatcher
//! thread that owns the core: a tenant's SLO changed (effective at the
//! core's next decision), and a tenant's queued work withdrawn (each task
//! ends in its one completion, `TaskError::Cancelled`; work in service
//! finishes and is answered as usual).
//!
//! The control path goes first (OSMOSIS R5): an SLO change travels on a
//! channel of its own, which the dispatcher empties before every message
//! of the data path it takes (submissions, workers' reports) and before it
//! runs work itself; the runtime then wakes it with a message on the data
//! channel in case it is waiting there. So a change waits at most for the
//! message or the piece of work the dispatcher is handling when it comes,
//! never for the tenants' submissions queued ahead of it. A withdrawal is
//! the exception: it must see every submission sent before it (a tenant
//! that left has its last submissions cancelled, not run), so it travels
//! on the data path, in order.

use super::Dispatcher;
use crate::guard::catch;
use crate::job::TaskError;
use isola_core::{EngineSelector, Slo, SloChangeError, SloOverride, TenantId};

/// A live change, sent to the dispatcher with where to answer.
pub(crate) enum Control {
    /// [`crate::Runtime::set_slo`].
    SetSlo {
        tenant: TenantId,
        slo: Slo,
        overrides: Vec<(EngineSelector, SloOverride)>,
        ack: crossbeam_channel::Sender<Result<(), ControlError>>,
    },
    /// [`crate::Runtime::cancel_queued`]: the tenant's queued tasks, or
    /// only those of `only`.
    Withdraw {
        tenant: TenantId,
        only: Option<std::collections::HashSet<u64>>,
        ack: crossbeam_channel::Sender<Result<usize, ControlError>>,
    },
}

/// Why a live change did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControlError {
    /// The core refused the change; nothing changed.
    #[error(transparent)]
    Refused(#[from] SloChangeError),
    /// The core panicked carrying it out (a policy's constructor).
    #[error("the core panicked: {0}")]
    CorePanicked(String),
    /// The runtime is shutting down or gone.
    #[error("the runtime is shut down")]
    ShutDown,
}

impl Dispatcher {
    /// Carries out every change waiting on the control path.
    #[inline]
    pub(crate) fn take_controls(&mut self) {
        while let Ok(c) = self.controls.try_recv() {
            self.control(c);
        }
    }

    /// Carries out `c` and answers it (nobody waiting: nothing to tell).
    pub(crate) fn control(&mut self, c: Control) {
        let now = self.now();
        match c {
            Control::SetSlo {
                tenant,
                slo,
                overrides,
                ack,
            } => {
                self.log(|| crate::CoreCall::SetSlo {
                    now,
                    tenant,
                    slo: Box::new((slo.clone(), overrides.clone())),
                });
                let result = match catch(|| self.scheduler.set_slo(now, tenant, slo, overrides)) {
                    Ok(r) => r.map_err(ControlError::from),
                    Err(message) => Err(ControlError::CorePanicked(message)),
                };
                ack.send(result).ok();
            }
            Control::Withdraw { tenant, only, ack } => {
                let which = |id: isola_core::TaskId| only.as_ref().is_none_or(|o| o.contains(&id.0));
                let result = match catch(|| self.scheduler.withdraw(now, tenant, which)) {
                    Ok(tasks) => {
                        self.log(|| crate::CoreCall::Withdraw {
                            now,
                            tenant,
                            tasks: tasks.iter().map(|t| t.id).collect(),
                        });
                        let n = tasks.len();
                        for t in tasks {
                            let id = t.id.0;
                            if let Some(task) = self.tasks.get_mut(&id) {
                                task.settled = true;
                                task.error.get_or_insert(TaskError::Cancelled);
                                self.finish_if_settled(id);
                            }
                        }
                        Ok(n)
                    }
                    Err(message) => Err(ControlError::CorePanicked(message)),
                };
                ack.send(result).ok();
            }
        }
    }
}
