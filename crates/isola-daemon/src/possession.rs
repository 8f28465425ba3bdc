//! Attach by possession: a tenant with `attach_socket` gets a listening
//! socket of its own at that path, whose connections attach as that tenant
//! alone, their uid and gid unchecked. Whoever can reach the path may
//! connect: the socket is made `0666`, and what grants it is the
//! directory it lies in (the Kubernetes driver makes one per claim and
//! mounts it into that claim's containers only). docs/daemon.md has the
//! threat model.
//!
//! The sockets follow the tenant table: made at start and when a tenant
//! gains one, closed and unlinked when its tenant is removed (at once:
//! a tenant being removed takes no new connection) or its path changes.

use crate::{accept_each, connection, Shared};
use rustix::fd::OwnedFd;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The open attach sockets, by tenant.
#[derive(Debug, Default)]
pub(crate) struct AttachSockets {
    open: Mutex<BTreeMap<String, Open>>,
}

/// One open attach socket.
#[derive(Debug)]
struct Open {
    path: PathBuf,
    listener: Arc<OwnedFd>,
    stopping: Arc<AtomicBool>,
}

impl Open {
    /// Stops accepting (a listening socket shut down answers `accept` at
    /// once) and unlinks the path.
    fn close(self) {
        self.stopping.store(true, Ordering::Release);
        let _ = rustix::net::shutdown(&*self.listener, rustix::net::Shutdown::Both);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Makes the socket at `path` that admits tenant `tenant` alone.
fn open(shared: &Arc<Shared>, tenant: &str, path: &Path) -> Result<Open, String> {
    let named =
        |e: &dyn std::fmt::Display| format!("tenant `{tenant}`: attach_socket {}: {e}", path.display());
    match path.parent() {
        Some(dir) if dir.is_dir() => {}
        _ => return Err(named(&"its directory does not exist (make it first)")),
    }
    let listener = isola_wire::control::listen(path).map_err(|e| named(&e))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).map_err(|e| named(&e))?;
    }
    let listener = Arc::new(listener);
    let stopping = Arc::new(AtomicBool::new(false));
    let (served, stop, accepting, name) = (
        Arc::clone(shared),
        Arc::clone(&stopping),
        Arc::clone(&listener),
        tenant.to_string(),
    );
    let thread = std::thread::Builder::new()
        .name("isolad-attach".into())
        .spawn(move || {
            accept_each(&accepting, &stop, "accept (attach_socket)", |socket| {
                let (shared, name) = (Arc::clone(&served), name.clone());
                let t = std::thread::spawn(move || connection::serve(shared, socket, Some(name)));
                served.keep_thread(t);
            })
        })
        .map_err(|e| named(&e))?;
    shared.keep_thread(thread);
    Ok(Open {
        path: path.to_path_buf(),
        listener,
        stopping,
    })
}

impl AttachSockets {
    /// Brings the open sockets in step with the tenant table: closes those
    /// of tenants gone, being removed or moved, opens the missing. The
    /// tenants whose socket could not be made, with why.
    pub(crate) fn sync(shared: &Arc<Shared>) -> Vec<(String, String)> {
        let wanted: BTreeMap<String, PathBuf> = match shared.tenants.lock() {
            Ok(table) => table
                .seats
                .iter()
                .filter(|s| !s.removing)
                .filter_map(|s| s.config.as_ref())
                .filter_map(|c| Some((c.name().to_string(), c.tenant.access.attach_socket.clone()?)))
                .collect(),
            Err(_) => return Vec::new(),
        };
        let Ok(mut open) = shared.attach_sockets.open.lock() else {
            return Vec::new();
        };
        let stale: Vec<String> = open
            .iter()
            .filter(|(name, o)| wanted.get(*name) != Some(&o.path))
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            if let Some(o) = open.remove(&name) {
                o.close();
            }
        }
        let mut failed = Vec::new();
        for (name, path) in wanted {
            if open.contains_key(&name) {
                continue;
            }
            match self::open(shared, &name, &path) {
                Ok(o) => {
                    open.insert(name, o);
                }
                Err(why) => failed.push((name, why)),
            }
        }
        failed
    }

    /// Closes every socket (the daemon stops).
    pub(crate) fn close_all(&self) {
        if let Ok(mut open) = self.open.lock() {
            for (_, o) in std::mem::take(&mut *open) {
                o.close();
            }
        }
    }
}
