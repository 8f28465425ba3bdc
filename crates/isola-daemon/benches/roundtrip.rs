//! Submit-to-completion of a 64-byte `crc32c` task, several ways, in one
//! sitting:
//!
//! - through the daemon (client, shared-memory rings, socket wake-ups only
//!   for a side that sleeps, the runtime and its scheduler behind);
//! - submitted to an in-process runtime of the same configuration;
//! - the baseline the shared-memory path must beat: the request carried in
//!   a Unix `SOCK_SEQPACKET` message to a server in another process (this
//!   bench binary, run again) that runs the same `crc32c` operator and
//!   answers with the result in a message, blocking in its receive;
//! - the same socket server and client polling non-blocking receives for
//!   50 us before they block (the wake-up policy of the daemon's rings);
//! - the daemon's wire protocol without the daemon: a server process that
//!   takes the entry off a shared-memory submission ring (`isola_wire`),
//!   runs `crc32c` itself and answers on the completion ring, polling and
//!   sleeping as the daemon does, but with no runtime or scheduler behind.
//!
//! - the runtime and the daemon again with the engine run on the
//!   dispatcher's own thread (`workers = 0`), one hand-off less each way.
//!
//! Issue 15's goal: daemon p50 within 1 us of in-process; issue 17's: in
//! process at most 3 us at p50, and the daemon still within 1 us of it.
//!
//! Run: `cargo bench -p isola-daemon --bench roundtrip`

use criterion::Criterion;
use isola_client::Client;
use isola_core::{AffineCost, Slo, TenantId};
use isola_daemon::{Daemon, DaemonConfig};
use isola_runtime::{EngineConfig, Mode, RuntimeBuilder};
use isola_wire::control::{self, Reply, Request};
use isola_wire::{CompletionEntry, Consumer, Geometry, Producer, Region, Submission};
use rustix::fd::{AsFd, OwnedFd};
use rustix::net::{RecvFlags, SendFlags};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Set in the environment of a server process: the socket to serve.
const SERVER_SOCKET: &str = "ISOLA_ROUNDTRIP_SERVER";
/// Set beside it: how it serves ([`Server`]'s name).
const SERVER_KIND: &str = "ISOLA_ROUNDTRIP_KIND";

/// How a baseline's server process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// Socket messages, blocking receives.
    Blocking,
    /// Socket messages, receives polled for [`SPIN`] before blocking.
    Polling,
    /// Shared-memory rings, polled for [`SPIN`] before sleeping on the socket.
    Rings,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Server::Blocking => "blocking",
            Server::Polling => "polling",
            Server::Rings => "rings",
        }
    }
}

/// Round trips timed per path (in rounds that take turns).
const SAMPLES: usize = 20_000;
const ROUNDS: usize = 4;

/// The socket baselines' server: receives a request, runs `crc32c` on
/// it, answers the checksum, until the bench closes its end.
fn serve_socket(socket: &OwnedFd, spin: bool) {
    let crc = isola_ops::build_operator("crc32c", &BTreeMap::new()).expect("crc32c builds");
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let Some(n) = receive(socket, &mut buf, spin) else {
            return;
        };
        let out = crc.run(&buf[..n]).unwrap_or_default();
        if rustix::net::send(socket, &out, SendFlags::NOSIGNAL).is_err() {
            return;
        }
    }
}

/// The rings baseline's server: maps the region the bench passes, then
/// takes each submission off its ring, runs `crc32c` on its input and
/// answers on the completion ring, as the daemon's connection does
/// (polling for [`SPIN`], then sleeping on the socket for a kick; kicking
/// the bench only when it sleeps), until the bench closes its end.
fn serve_rings(socket: &OwnedFd) {
    let crc = isola_ops::build_operator("crc32c", &BTreeMap::new()).expect("crc32c builds");
    let Ok((_, Some(fd))) = control::recv::<Reply>(socket.as_fd()) else {
        return;
    };
    let region = Region::open(fd).expect("the bench passes a region");
    let l = *region.layout();
    let (mut sq, mut cq) = (Consumer::new(l.sq), Producer::new(l.cq));
    let words = region.words();
    loop {
        let Some(entry) = next_entry(&region, &mut sq, socket) else {
            return;
        };
        let s = Submission::decode(&entry);
        let input = region.read_arena(s.input_offset, s.input_len).unwrap_or_default();
        let out = crc.run(&input).unwrap_or_default();
        let _ = region.write_arena(s.output_offset, &out);
        let c = CompletionEntry {
            tag: s.tag,
            outcome: isola_wire::CompletionStatus::Ok,
            output_len: out.len() as u64,
            arrival_ns: 0,
            dispatch_ns: 0,
            completion_ns: 0,
            predicted_ns: 0,
            service_ns: 0,
        };
        if cq.push(words, &c.encode()).is_err() {
            return;
        }
        if cq.consumer_sleeps(words) && control::send(socket.as_fd(), &Reply::Kick, None).is_err() {
            return;
        }
    }
}

/// The next entry of ring `ring` of `region`: polled for [`SPIN`], then
/// waited for on `socket` (the peer kicks a sleeper); `None` once the peer
/// closed the socket.
fn next_entry<const N: usize>(region: &Region, ring: &mut Consumer, socket: &OwnedFd) -> Option<[u64; N]> {
    let words = region.words();
    loop {
        let start = Instant::now();
        while start.elapsed() < SPIN {
            if let Some(e) = ring.pop::<N>(words).ok()? {
                return Some(e);
            }
            std::thread::yield_now();
        }
        ring.sleep(words, true);
        if let Some(e) = ring.pop::<N>(words).ok()? {
            ring.sleep(words, false);
            return Some(e);
        }
        let woken = control::recv::<Request>(socket.as_fd());
        ring.sleep(words, false);
        woken.ok()?;
    }
}

/// How long a polling side of the socket baseline polls before it blocks:
/// the daemon's and the client's spin (`isola_client::DEFAULT_SPIN`).
const SPIN: Duration = isola_client::DEFAULT_SPIN;

/// One message into `buf`: its length, or `None` once the peer closed.
/// When `spin`, polls a non-blocking receive for [`SPIN`] first, then
/// blocks, as the rings' consumers do.
fn receive(socket: &OwnedFd, buf: &mut [u8], spin: bool) -> Option<usize> {
    let start = Instant::now();
    loop {
        let flags = if spin && start.elapsed() < SPIN {
            RecvFlags::DONTWAIT
        } else {
            RecvFlags::empty()
        };
        match rustix::net::recv(socket, &mut *buf, flags) {
            Ok((0, _)) => return None,
            Ok((n, _)) => return Some(n),
            // Yielding, as the rings' pollers do: a spinning poller would
            // starve the peer that has the work on this 2-core VM.
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => std::thread::yield_now(),
            Err(_) => return None,
        }
    }
}

/// A connected socket to a server of `kind` in a new process (this
/// binary, run with [`SERVER_SOCKET`] and [`SERVER_KIND`] set), and the
/// process.
fn server(dir: &Path, kind: Server) -> (OwnedFd, std::process::Child) {
    let path = dir.join(format!("{}.sock", kind.name()));
    let listener = control::listen(&path).expect("a socket in the temporary folder");
    let child = std::process::Command::new(std::env::current_exe().expect("this bench's path"))
        .env(SERVER_SOCKET, &path)
        .env(SERVER_KIND, kind.name())
        .spawn()
        .expect("the server process starts");
    let socket = rustix::net::accept(&listener).expect("the server connects");
    (socket, child)
}

/// The bench's side of the rings baseline: a region shared with the
/// server, the input written in its arena.
struct Rings {
    socket: OwnedFd,
    region: Region,
    sq: Producer,
    cq: Consumer,
}

impl Rings {
    /// Creates the region and passes it to the server at `socket`.
    fn new(socket: OwnedFd) -> Rings {
        let layout = Geometry {
            sq_entries: 8,
            cq_entries: 8,
            eq_entries: 8,
            arena_bytes: 64 << 10,
        }
        .layout()
        .expect("a valid geometry");
        let region = Region::create("isola-bench", layout).expect("a memfd");
        control::send(socket.as_fd(), &Reply::Kick, Some(region.fd())).expect("the server is there");
        region.write_arena(0, &[7u8; 64]).expect("the arena holds it");
        Rings {
            socket,
            sq: Producer::new(layout.sq),
            cq: Consumer::new(layout.cq),
            region,
        }
    }

    /// One round trip: submit, kick the server if it sleeps, wait.
    fn round_trip(&mut self, s: &Submission) {
        let words = self.region.words();
        self.sq.push(words, &s.encode()).expect("room on the ring");
        if self.sq.consumer_sleeps(words) {
            control::send(self.socket.as_fd(), &Request::Kick, None).expect("the server is there");
        }
        let c = next_entry::<{ CompletionEntry::WORDS }>(&self.region, &mut self.cq, &self.socket)
            .expect("the server answers");
        assert_eq!(CompletionEntry::decode(&c).output_len, 4);
    }
}

/// One round trip on the socket baseline.
fn socket_round_trip(socket: &OwnedFd, request: &[u8], spin: bool) {
    rustix::net::send(socket.as_fd(), request, SendFlags::NOSIGNAL).expect("the server is there");
    let mut answer = [0u8; 16];
    assert_eq!(receive(socket, &mut answer, spin), Some(4));
}

/// p50 and p99 of single round trips, in ns: every path is timed in
/// `ROUNDS` rounds that take turns, so that drift over the sitting touches
/// them alike.
fn percentiles(paths: &mut [(&str, &mut dyn FnMut())]) -> Vec<(String, u128, u128)> {
    let mut times: Vec<Vec<u128>> = vec![Vec::with_capacity(SAMPLES); paths.len()];
    for _ in 0..ROUNDS {
        for (i, (_, f)) in paths.iter_mut().enumerate() {
            for _ in 0..SAMPLES / ROUNDS {
                let start = Instant::now();
                f();
                times[i].push(start.elapsed().as_nanos());
            }
        }
    }
    paths
        .iter()
        .zip(times.iter_mut())
        .map(|((name, _), t)| {
            // Sorts `t`, for the 99th percentile too.
            let p50 = isola_core::metrics::median(t).expect("samples");
            (name.to_string(), p50, t[t.len() * 99 / 100])
        })
        .collect()
}

/// An in-process runtime with one `sfq` engine: one worker, or (`here`)
/// run on the dispatcher (`EngineConfig::on_dispatcher`).
fn runtime(here: bool) -> isola_runtime::Runtime {
    let mut b = RuntimeBuilder::new();
    let engine = EngineConfig::new(
        "acc",
        &[],
        1,
        Arc::new(AffineCost::new(1_000.0, 0.5).expect("a valid cost model")),
    );
    b.engine(if here { engine.on_dispatcher() } else { engine });
    b.tenant("a", Slo::default());
    b.mode(Mode::Isolated {
        policy: "sfq".into(),
        params: BTreeMap::new(),
    });
    b.start().expect("the runtime starts")
}

/// A daemon in `dir` with one `sfq` engine of `workers` workers (0: run on
/// the dispatcher), socket `NAME.sock`, and a client of it attached.
fn start_daemon(dir: &Path, name: &str, workers: usize) -> (Daemon, Client) {
    let uid = rustix::process::getuid().as_raw();
    let config = format!(
        r#"[daemon]
socket = "{name}.sock"
[[engine]]
name = "acc"
policy = "sfq"
workers = {workers}
cost = {{ base = "1us", per_byte_ns = 0.5 }}
[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [{uid}]
"#
    );
    let daemon = Daemon::start(
        DaemonConfig::parse(&config, &dir.join(format!("{name}.toml"))).expect("a valid configuration"),
    )
    .expect("the daemon starts");
    let client = Client::connect(daemon.socket(), "a").expect("attached");
    (daemon, client)
}

/// Two daemons in `dir`, one engine worker and none (the engine on the
/// dispatcher), each with a client attached that registered `crc32c` and
/// wrote 64 bytes at 0; and the submission of a CRC of them.
fn daemons(dir: &Path) -> ((Daemon, Client), (Daemon, Client), Submission) {
    let (daemon, mut client) = start_daemon(dir, "b", 1);
    let (daemon_here, mut client_here) = start_daemon(dir, "b0", 0);
    let crc = client.register("crc32c", &BTreeMap::new()).expect("registered");
    let crc_here = client_here
        .register("crc32c", &BTreeMap::new())
        .expect("registered");
    assert_eq!(crc, crc_here, "the first registration of each client");
    client.write(0, &[7u8; 64]).expect("the arena holds it");
    client_here.write(0, &[7u8; 64]).expect("the arena holds it");
    let s = Submission {
        handle: crc,
        flags: 0,
        input_offset: 0,
        input_len: 64,
        output_offset: 4096,
        output_cap: 4,
        tag: 0,
    };
    ((daemon, client), (daemon_here, client_here), s)
}

/// Prints each path's percentiles (in the order `bench` measures them)
/// and the ratios the goals are on.
fn print_percentiles(measured: &[(String, u128, u128)]) {
    println!("crc32c 64 B round trip, {SAMPLES} each in {ROUNDS} rounds taking turns:");
    for (name, p50, p99) in measured {
        println!("  {name:<36} p50 {p50:>7} ns  p99 {p99:>7} ns");
    }
    let p50 = |i: usize| measured[i].1 as f64;
    println!(
        "  p50 ratios: daemon / in-process {:.2}; unix socket blocking / daemon {:.2}; \
         unix socket polling / daemon {:.2}; unix socket polling / rings without runtime {:.2}",
        p50(1) / p50(0),
        p50(2) / p50(1),
        p50(3) / p50(1),
        p50(3) / p50(4)
    );
    println!(
        "  engine on the dispatcher (workers = 0): daemon minus in-process p50 {:.0} ns",
        p50(6) - p50(5)
    );
}

fn bench(c: &mut Criterion) {
    let (rt, rt_here) = (runtime(false), runtime(true));
    let (handle, handle_here) = (rt.tenant(TenantId(0)), rt_here.tenant(TenantId(0)));
    let payload = Arc::new(vec![7u8; 64]);
    let params = BTreeMap::new();
    let in_process_on = |handle: &isola_runtime::TenantHandle| {
        let c = handle
            .submit("crc32c", &params, Arc::clone(&payload))
            .expect("submitted")
            .wait();
        assert!(c.result.is_ok());
    };
    let mut in_process = || in_process_on(&handle);
    let mut in_process_here = || in_process_on(&handle_here);

    let dir = std::env::temp_dir().join(format!("isolad-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let ((daemon, mut client), (daemon_here, mut client_here), s) = daemons(&dir);
    let through = |client: &mut Client| {
        client.submit(&s).expect("submitted");
        assert_eq!(
            client.wait().expect("answered").outcome,
            isola_wire::CompletionStatus::Ok
        );
    };
    let mut through_daemon = || through(&mut client);
    let mut through_daemon_here = || through(&mut client_here);

    let request = [7u8; 64];
    let (blocking, mut blocking_server) = server(&dir, Server::Blocking);
    let mut socket_blocking = || socket_round_trip(&blocking, &request, false);
    let (polling, mut polling_server) = server(&dir, Server::Polling);
    let mut socket_polling = || socket_round_trip(&polling, &request, true);
    let (rings_socket, mut rings_server) = server(&dir, Server::Rings);
    let mut rings = Rings::new(rings_socket);
    let mut raw_rings = || rings.round_trip(&s);

    let mut g = c.benchmark_group("roundtrip");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("crc32c-64B/in-process", |b| b.iter(&mut in_process));
    g.bench_function("crc32c-64B/through-daemon", |b| b.iter(&mut through_daemon));
    g.bench_function("crc32c-64B/unix-socket-blocking", |b| {
        b.iter(&mut socket_blocking)
    });
    g.bench_function("crc32c-64B/unix-socket-polling", |b| b.iter(&mut socket_polling));
    g.bench_function("crc32c-64B/rings-no-runtime", |b| b.iter(&mut raw_rings));
    g.finish();

    // Criterion reports means of batches; the goal is on single round
    // trips' percentiles, measured here in turns.
    let measured = percentiles(&mut [
        ("in-process runtime", &mut in_process),
        ("through the daemon (shared memory)", &mut through_daemon),
        ("unix socket, blocking", &mut socket_blocking),
        ("unix socket, polling 50 us", &mut socket_polling),
        ("shared-memory rings, no runtime", &mut raw_rings),
        ("in-process, engine on the dispatcher", &mut in_process_here),
        ("daemon, engine on the dispatcher", &mut through_daemon_here),
    ]);
    print_percentiles(&measured);

    // Closing the sockets ends the servers.
    drop((blocking, polling, rings));
    for server in [&mut blocking_server, &mut polling_server, &mut rings_server] {
        let _ = server.wait();
    }
    drop((client, client_here));
    daemon.stop();
    daemon_here.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    // Run again as a baseline's server.
    if let Some(path) = std::env::var_os(SERVER_SOCKET) {
        let kind = std::env::var(SERVER_KIND).unwrap_or_default();
        let socket = control::connect(Path::new(&path)).expect("the bench listens");
        match kind.as_str() {
            "rings" => serve_rings(&socket),
            "polling" => serve_socket(&socket, true),
            _ => serve_socket(&socket, false),
        }
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
