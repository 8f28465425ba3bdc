//! The packet path's ingress (issue 16, first part): the daemon listens on
//! its configured UDP addresses; each datagram is matched on its 5-tuple
//! (the one matcher, `isola_model::ingress`) to a tenant's flow queue
//! (OSMOSIS' FMQ: `[[tenant.flow]]`, first rule in tenant and flow order
//! wins), and its payload runs through that flow's kernel as a task of
//! the tenant: scheduled by the core like every other task, refused when
//! the tenant's channel is full (the packet is dropped and counted). A
//! flow that replies sends the kernel's output back to the packet's
//! sender. Unmatched packets are counted and dropped.
//!
//! Rules follow the live tenant table: adding, changing or removing a
//! tenant (or its flows) through `isola ctl` or a reload takes effect at
//! the next packet.

use crate::config::FlowConfig;
use crate::kernel::FlowKernel;
use crate::metrics::PacketOutcome;
use crate::tenants::TenantTable;
use crate::Shared;
use isola_core::TenantId;
use isola_kernels::KernelOutput;
use isola_model::ingress::{FiveTuple, RuleSet};
use isola_ops::OpError;
use isola_runtime::TaskError;
use isola_wire::EventKind;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest datagram taken in: a UDP payload's maximum.
const MAX_DATAGRAM: usize = 65_535;

/// The receive buffer asked for each listening socket: 4 MiB.
const RECV_BUFFER: usize = 4 << 20;

/// Datagrams taken in one system call.
const BATCH: usize = 32;

/// How often a listening thread looks whether the daemon stops.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// One flow queue as the matcher finds it.
#[derive(Debug, Clone)]
struct Flow {
    tenant: usize,
    /// Its index among the tenant's flows (an event names it so).
    index: usize,
    kernel: FlowKernel,
    reply: bool,
}

/// A tenant's packet counters (they outlive its flows).
#[derive(Debug, Default)]
struct TenantPackets {
    received: AtomicU64,
    replied: AtomicU64,
    dropped: AtomicU64,
    aborted: AtomicU64,
}

/// The packet path's counters, as [`crate::Daemon::packet_counts`] gives
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketCounts {
    /// Datagrams no flow matched (dropped).
    pub unmatched: u64,
    /// Per tenant slot: (received, replied, dropped for a full queue,
    /// aborted by its kernel).
    pub tenants: Vec<(u64, u64, u64, u64)>,
}

/// The matcher and the counters, shared by the listening threads and the
/// tenant table.
pub(crate) struct PacketPath {
    rules: RwLock<RuleSet<Flow>>,
    unmatched: AtomicU64,
    tenants: Vec<TenantPackets>,
}

impl PacketPath {
    /// The rules of `table`'s tenants.
    pub(crate) fn new(table: &TenantTable) -> PacketPath {
        let path = PacketPath {
            rules: RwLock::new(RuleSet::new(Vec::new())),
            unmatched: AtomicU64::new(0),
            tenants: (0..table.slots.len()).map(|_| TenantPackets::default()).collect(),
        };
        path.rebuild(table);
        path
    }

    /// Takes the rules from `table` again (after a live change).
    pub(crate) fn rebuild(&self, table: &TenantTable) {
        let rules = table
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.removing)
            .filter_map(|(t, s)| s.config.as_ref().map(|c| (t, &c.flows)))
            .flat_map(|(t, flows)| {
                flows
                    .iter()
                    .enumerate()
                    .map(move |(i, f): (usize, &FlowConfig)| (f.rule, flow(t, i, f)))
            })
            .collect();
        if let Ok(mut r) = self.rules.write() {
            *r = RuleSet::new(rules);
        }
    }

    /// The counters now.
    pub(crate) fn counts(&self) -> PacketCounts {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PacketCounts {
            unmatched: n(&self.unmatched),
            tenants: self
                .tenants
                .iter()
                .map(|t| (n(&t.received), n(&t.replied), n(&t.dropped), n(&t.aborted)))
                .collect(),
        }
    }
}

fn flow(tenant: usize, index: usize, f: &FlowConfig) -> Flow {
    Flow {
        tenant,
        index,
        kernel: f.kernel.clone(),
        reply: f.reply,
    }
}

/// The listening sockets and their threads.
pub(crate) struct Ingress {
    addrs: Vec<SocketAddr>,
    threads: Vec<JoinHandle<()>>,
}

impl Ingress {
    /// Binds every address of `addrs` and starts a thread on each.
    pub(crate) fn start(
        addrs: &[SocketAddr],
        shared: &Arc<Shared>,
        stopping: &Arc<AtomicBool>,
    ) -> std::io::Result<Ingress> {
        let mut bound = Vec::new();
        let mut sockets = Vec::new();
        for addr in addrs {
            let socket = UdpSocket::bind(addr)?;
            socket.set_read_timeout(Some(STOP_CHECK))?;
            // Room for bursts (the system may cap it at net.core.rmem_max).
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, RECV_BUFFER);
            bound.push(socket.local_addr()?);
            sockets.push(Arc::new(socket));
        }
        let threads = sockets
            .into_iter()
            .map(|socket| {
                let (shared, stopping) = (Arc::clone(shared), Arc::clone(stopping));
                std::thread::spawn(move || listen(&socket, &shared, &stopping))
            })
            .collect();
        Ok(Ingress {
            addrs: bound,
            threads,
        })
    }

    /// The addresses bound (the ports chosen where the configuration said 0).
    pub(crate) fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Waits for the listening threads (after `stopping` was set).
    pub(crate) fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Takes datagrams on `socket` until `stopping`, each to its flow.
fn listen(socket: &Arc<UdpSocket>, shared: &Arc<Shared>, stopping: &AtomicBool) {
    let path = &shared.packets;
    let local = match socket.local_addr() {
        Ok(a) => a,
        Err(_) => return,
    };
    let mut batch = crate::udp_batch::RecvBatch::new(BATCH, MAX_DATAGRAM);
    while !stopping.load(Ordering::Acquire) {
        let got = match batch.recv(std::os::fd::AsFd::as_fd(&**socket)) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("isolad: udp {local}: {e}");
                std::thread::sleep(STOP_CHECK);
                continue;
            }
        };
        for i in 0..got {
            let Some((payload, from, truncated)) = batch.get(i) else {
                continue;
            };
            let (Some(from), false) = (from, truncated) else {
                // Cut short, or from no IPv4 sender: nothing to match.
                path.unmatched.fetch_add(1, Ordering::Relaxed);
                shared.metrics.unmatched();
                continue;
            };
            let (IpAddr::V4(src_ip), IpAddr::V4(dst_ip)) = (from.ip(), local.ip()) else {
                // IPv4 rules only: anything else matches no flow.
                path.unmatched.fetch_add(1, Ordering::Relaxed);
                shared.metrics.unmatched();
                continue;
            };
            let tuple = FiveTuple {
                src_ip,
                dst_ip,
                src_port: from.port(),
                dst_port: local.port(),
                proto: 17,
            };
            let found = path.rules.read().ok().and_then(|r| r.classify(&tuple).cloned());
            let Some(flow) = found else {
                path.unmatched.fetch_add(1, Ordering::Relaxed);
                shared.metrics.unmatched();
                continue;
            };
            deliver(socket, shared, flow, payload.to_vec(), from);
        }
    }
}

/// Runs `payload` through `flow`'s kernel as a task of its tenant, and
/// answers `from` with the output if the flow replies.
fn deliver(socket: &Arc<UdpSocket>, shared: &Arc<Shared>, flow: Flow, payload: Vec<u8>, from: SocketAddr) {
    let tenant = flow.tenant;
    let Some(counts) = shared.packets.tenants.get(tenant) else {
        return;
    };
    counts.received.fetch_add(1, Ordering::Relaxed);
    shared.metrics.packet(tenant, PacketOutcome::Received);
    let operator = Arc::clone(flow.kernel.operator());
    let on_done: isola_runtime::OnCompletion = {
        let (socket, shared) = (Arc::clone(socket), Arc::clone(shared));
        Arc::new(move |c| {
            shared.keep(&c);
            let (tenant, counts) = (flow.tenant, &shared.packets.tenants[flow.tenant]);
            let abort = || {
                counts.aborted.fetch_add(1, Ordering::Relaxed);
                shared.metrics.packet(tenant, PacketOutcome::Aborted);
            };
            let output = match &c.result {
                Ok(out) => out,
                Err(TaskError::Rejected(_)) => {
                    counts.dropped.fetch_add(1, Ordering::Relaxed);
                    shared.metrics.packet(tenant, PacketOutcome::Dropped);
                    return;
                }
                Err(TaskError::Operator(OpError::KernelStopped { cause, .. })) => {
                    abort();
                    shared.tell_tenant_of(
                        tenant,
                        EventKind::KernelAborted,
                        flow.index as u64,
                        u64::from(*cause),
                    );
                    return;
                }
                Err(_) => return abort(),
            };
            // A built-in kernel's output is its reply; a WebAssembly
            // kernel's says what it asked for (see `crate::kernel`).
            let asked;
            let reply = if flow.kernel.is_wasm() {
                asked = match KernelOutput::from_bytes(output) {
                    Some(asked) => asked,
                    None => return abort(),
                };
                if !crate::host_write::carry_out(&shared, tenant, flow.index as u64, asked.dma) {
                    return abort();
                }
                asked.reply.as_deref()
            } else {
                Some(&output[..])
            };
            if let (true, Some(reply)) = (flow.reply, reply) {
                // A reply that cannot be sent is the sender's loss, as on
                // the wire.
                if socket.send_to(reply, from).is_ok() {
                    counts.replied.fetch_add(1, Ordering::Relaxed);
                    shared.metrics.packet(tenant, PacketOutcome::Replied);
                }
            }
        })
    };
    let handle = shared.runtime.tenant(TenantId(tenant as u32));
    if handle
        .submit_operator_calling(operator, payload, on_done)
        .is_err()
    {
        counts.aborted.fetch_add(1, Ordering::Relaxed);
        shared.metrics.packet(tenant, PacketOutcome::Aborted);
    }
}
