//! The admin socket: what `isola ctl` talks to. Owner-only twice over:
//! the socket file is made `0600` (only the daemon's user can connect),
//! and each peer's kernel credentials are checked again on accept (the
//! daemon's own uid, or root), so a socket file whose mode someone
//! loosened still admits nobody else. Each request gets one reply
//! ([`isola_wire::admin`]); the work is the tenant table's (`tenants`).

use crate::Shared;
use isola_wire::admin::{AdminReply, AdminRequest};
use isola_wire::control::{self, ControlError};
use rustix::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Makes the socket at `path` readable and writable by its owner only.
pub(crate) fn owner_only(path: &Path) -> Result<(), ControlError> {
    rustix::fs::chmod(path, rustix::fs::Mode::from_raw_mode(0o600)).map_err(|source| ControlError::Os {
        what: "chmod 0600 the admin socket",
        source,
    })
}

/// Accepts admin connections until `stopping`, each on its own thread.
pub(crate) fn serve(shared: &Arc<Shared>, listener: &OwnedFd, stopping: &AtomicBool) {
    crate::accept_each(listener, stopping, "admin accept", |socket| {
        let shared = Arc::clone(shared);
        std::thread::spawn(move || converse(&shared, &socket));
    });
}

/// Answers one admin connection's requests until it closes.
fn converse(shared: &Arc<Shared>, socket: &OwnedFd) {
    let me = rustix::process::geteuid().as_raw();
    match control::peer(socket) {
        Ok(p) if p.uid.as_raw() == me || p.uid.is_root() => {}
        Ok(p) => {
            let reason = format!(
                "process {} (uid {}) may not administer this daemon (uid {me})",
                p.pid.as_raw_nonzero(),
                p.uid.as_raw()
            );
            eprintln!("isolad: refused an admin connection: {reason}");
            let _ = control::send(socket.as_fd(), &AdminReply::Failed { reason }, None);
            return;
        }
        Err(e) => {
            eprintln!("isolad: admin connection without credentials: {e}");
            return;
        }
    }
    while let Ok((request, _)) = control::recv::<AdminRequest>(socket.as_fd()) {
        let added = match &request {
            AdminRequest::Add { tenant, .. } => Some(tenant.clone()),
            _ => None,
        };
        let reply = with_attach_sockets(shared, answer(shared, request), added);
        if control::send(socket.as_fd(), &reply, None).is_err() {
            return;
        }
    }
}

/// After a change, the tenants' own sockets follow the table
/// (`attach_socket`); one that could not be made turns the reply into a
/// refusal, and a tenant just added for it is removed again (nothing is
/// left half-made).
fn with_attach_sockets(shared: &Arc<Shared>, reply: AdminReply, added: Option<String>) -> AdminReply {
    if !matches!(reply, AdminReply::Done { .. }) {
        return reply;
    }
    let failed = crate::possession::AttachSockets::sync(shared);
    let Some((tenant, why)) = failed.into_iter().next() else {
        return reply;
    };
    if added.as_deref() == Some(tenant.as_str()) {
        let _ = shared.remove_tenant(&tenant);
        crate::possession::AttachSockets::sync(shared);
        return AdminReply::Failed {
            reason: format!("{why}; tenant `{tenant}` was not added"),
        };
    }
    AdminReply::Failed {
        reason: format!("{why} (the change was made; its socket was not)"),
    }
}

/// Carries out one request.
fn answer(shared: &Shared, request: AdminRequest) -> AdminReply {
    let done = |r: Result<String, String>| match r {
        Ok(message) => {
            eprintln!("isolad: {message}");
            AdminReply::Done { message }
        }
        Err(reason) => AdminReply::Failed { reason },
    };
    match request {
        AdminRequest::List { from } => {
            let (tenants, next) = shared.list(from);
            AdminReply::Tenants { tenants, next }
        }
        AdminRequest::Add { tenant, keys } => done(shared.add_tenant(&tenant, &keys)),
        AdminRequest::AddTable { table, origin } => done(shared.add_table(&table, &origin)),
        AdminRequest::Set { tenant, changes } => done(shared.set_tenant(&tenant, &changes)),
        AdminRequest::Remove { tenant } => done(shared.remove_tenant(&tenant)),
        AdminRequest::Reload => done(shared.reload()),
        AdminRequest::Costs => AdminReply::Costs {
            engines: shared.costs(),
        },
        AdminRequest::Engines => AdminReply::Engines {
            engines: shared.engines(),
        },
    }
}
