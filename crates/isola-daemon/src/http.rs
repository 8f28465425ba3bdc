//! The metrics endpoint: `GET /metrics` over HTTP/1.1 on a TCP address
//! (`isolad --metrics ADDR`), answered with [`crate::metrics::Metrics`]'
//! exposition; every other path is 404, every other method 405.
//!
//! A minimal responder on `std::net::TcpListener`, written here rather
//! than taken from a crate: the one small maintained candidate,
//! `tiny_http` (0.12), sets no read or write timeout on its sockets, does
//! not bound a request's head, and gives every connection a thread of its
//! pool without limit, so a client that sends nothing holds a thread
//! forever; the async servers bring a runtime to a daemon that has none.
//! What a scrape needs is one request line and a few headers, so this
//! module reads at most [`MAX_REQUEST`] bytes of head, within
//! [`IO_TIMEOUT`] a read or write and [`REQUEST_DEADLINE`] in all,
//! answers with `Connection: close`, and serves each connection on its own
//! thread, at most [`MAX_CLIENTS`] at once (more are closed unanswered):
//! a slow or hostile client holds one slot for at most the deadline, and
//! never the acceptor, another scrape or the daemon.
//!
//! A second thread slides the fairness window ([`crate::metrics`]) every
//! [`crate::metrics::FAIRNESS_TICK`].

use crate::metrics::{Metrics, FAIRNESS_TICK};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest request head (request line and headers) read: 8 KiB.
pub const MAX_REQUEST: usize = 8 << 10;

/// Longest one read or write may block.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest one connection is served, from accept to the response's end.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// Most connections served at once.
pub const MAX_CLIENTS: usize = 16;

/// The metrics server: its acceptor and the fairness ticker, stopped when
/// dropped.
pub(crate) struct MetricsServer {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    /// Dropped to stop the ticker.
    tick_stop: Option<crossbeam_channel::Sender<()>>,
    ticker: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (port 0: any free port) and serves `metrics`.
    pub(crate) fn start(addr: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (stopping, metrics) = (Arc::clone(&stopping), Arc::clone(&metrics));
            std::thread::Builder::new()
                .name("isolad-metrics".into())
                .spawn(move || accept(&listener, &metrics, &stopping))?
        };
        let (tick_stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let ticker = std::thread::Builder::new()
            .name("isolad-fairness".into())
            .spawn(move || {
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(FAIRNESS_TICK)
                {
                    metrics.tick_fairness();
                }
            })?;
        Ok(MetricsServer {
            addr,
            stopping,
            acceptor: Some(acceptor),
            tick_stop: Some(tick_stop),
            ticker: Some(ticker),
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Wakes the acceptor out of `accept` (through loopback if it
        // listens on every address).
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
            if let Some(a) = self.acceptor.take() {
                let _ = a.join();
            }
        }
        drop(self.tick_stop.take());
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

/// Releases a client slot when its connection is done.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts scrapes until `stopping`, each on its own thread.
fn accept(listener: &TcpListener, metrics: &Arc<Metrics>, stopping: &AtomicBool) {
    let busy = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept();
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, say: let some close.
                eprintln!("isolad: metrics: accept: {e}");
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if busy.fetch_add(1, Ordering::AcqRel) >= MAX_CLIENTS {
            // Closed unanswered: answering could block on this client.
            busy.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let slot = Slot(Arc::clone(&busy));
        let metrics = Arc::clone(metrics);
        let spawned = std::thread::Builder::new()
            .name("isolad-scrape".into())
            .spawn(move || {
                let _slot = slot;
                serve(stream, &metrics);
            });
        if let Err(e) = spawned {
            eprintln!("isolad: metrics: cannot start a thread: {e}");
        }
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// The exposition (`GET` or `HEAD /metrics`), in OpenMetrics if the
    /// client accepts it.
    Metrics {
        /// A `HEAD`: the headers only.
        head_only: bool,
        /// `Accept` names `application/openmetrics-text`.
        openmetrics: bool,
    },
    /// Answered with this status and no body.
    Status(&'static str),
}

/// Reads a request head and says what it asks for.
fn parse(head: &str) -> Request {
    let mut lines = head.split("\r\n").flat_map(|l| l.split('\n'));
    let mut words = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Request::Status("400 Bad Request");
    };
    if !version.starts_with("HTTP/1.") {
        return Request::Status("505 HTTP Version Not Supported");
    }
    let path = target.split('?').next().unwrap_or(target);
    if path != "/metrics" {
        return Request::Status("404 Not Found");
    }
    if method != "GET" && method != "HEAD" {
        return Request::Status("405 Method Not Allowed");
    }
    let openmetrics = lines.any(|l| {
        l.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("accept") && value.contains("application/openmetrics-text")
        })
    });
    Request::Metrics {
        head_only: method == "HEAD",
        openmetrics,
    }
}

/// Serves one connection: one request, one response, then close.
fn serve(mut stream: TcpStream, metrics: &Metrics) {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    if stream.set_read_timeout(Some(IO_TIMEOUT)).is_err()
        || stream.set_write_timeout(Some(IO_TIMEOUT)).is_err()
    {
        return;
    }
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut len = 0;
    let head_end = loop {
        if let Some(end) = find_head_end(&buf[..len]) {
            break end;
        }
        if len == buf.len() {
            respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "",
                "",
                deadline,
            );
            return;
        }
        if Instant::now() >= deadline {
            respond(&mut stream, "408 Request Timeout", "", "", deadline);
            return;
        }
        match stream.read(&mut buf[len..]) {
            Ok(0) => return,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Timed out, or the client went away.
            Err(_) => return,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]);
    match parse(&head) {
        Request::Metrics {
            head_only,
            openmetrics,
        } => {
            let body = metrics.encode(openmetrics);
            let kind = if openmetrics {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            } else {
                "text/plain; version=0.0.4; charset=utf-8"
            };
            let shown = if head_only { "" } else { body.as_str() };
            respond_sized(&mut stream, "200 OK", kind, body.len(), shown, deadline);
        }
        Request::Status(status) => respond(&mut stream, status, "", "", deadline),
    }
}

/// Where the request head ends (after its blank line), if it is all in
/// `buf`.
fn find_head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Writes a response whose body is `body`.
fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &str, deadline: Instant) {
    respond_sized(stream, status, kind, body.len(), body, deadline);
}

/// Writes a response of `length` bytes of body (`body`, or nothing for a
/// `HEAD`), giving up at `deadline`.
fn respond_sized(
    stream: &mut TcpStream,
    status: &str,
    kind: &str,
    length: usize,
    body: &str,
    deadline: Instant,
) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {length}\r\nConnection: close\r\n");
    if !kind.is_empty() {
        head.push_str(&format!("Content-Type: {kind}\r\n"));
    }
    if status.starts_with("405") {
        head.push_str("Allow: GET, HEAD\r\n");
    }
    head.push_str("\r\n");
    for chunk in std::iter::once(head.as_bytes()).chain(body.as_bytes().chunks(16 << 10)) {
        if Instant::now() >= deadline || stream.write_all(chunk).is_err() {
            return;
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_as_a_scraper_means_them() {
        let get = |head: &str| parse(head);
        assert_eq!(
            get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics {
                head_only: false,
                openmetrics: false
            }
        );
        assert_eq!(
            get("GET /metrics?x=1 HTTP/1.1\r\naccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n"),
            Request::Metrics {
                head_only: false,
                openmetrics: true
            }
        );
        assert_eq!(
            get("HEAD /metrics HTTP/1.0\n\n"),
            Request::Metrics {
                head_only: true,
                openmetrics: false
            }
        );
        assert_eq!(get("GET / HTTP/1.1\r\n\r\n"), Request::Status("404 Not Found"));
        assert_eq!(
            get("POST /metrics HTTP/1.1\r\n\r\n"),
            Request::Status("405 Method Not Allowed")
        );
        assert_eq!(get("GET /metrics\r\n\r\n"), Request::Status("400 Bad Request"));
        assert_eq!(get("\u{1}\u{2}"), Request::Status("400 Bad Request"));
        assert_eq!(
            get("GET /metrics SPDY/3\r\n\r\n"),
            Request::Status("505 HTTP Version Not Supported")
        );
    }

    #[test]
    fn a_head_ends_at_its_blank_line() {
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nrest"), Some(24));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\n\n"), Some(16));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\nA: b\r\n"), None);
    }
}
