//! Waking the runtime's dispatcher when a datagram arrives at a listening
//! socket whose poller sleeps (`crate::ingress`).
//!
//! The dispatcher takes datagrams itself, polling each listening socket
//! beside its channel (an `isola_runtime::Poller`), so that a packet goes
//! from the socket to the core with no thread hand-off. Before the
//! dispatcher blocks, each socket's poller arms its [`Watch`]: one thread
//! waits in `epoll_wait` on every listening socket, each registered
//! one-shot, and the first datagram on an armed socket wakes the
//! dispatcher (io_uring's `SQ_NEED_WAKEUP`, with the kernel as the
//! producer). While the dispatcher runs, no socket is armed and this
//! thread sleeps: under load it costs nothing.
//!
//! A socket is in the epoll set only while armed: a registered socket
//! calls into epoll on every datagram it takes in and every one it sends
//! (its wait queue has a sleeper), which under load would cost the packet
//! path a lock and a callback per datagram for wake-ups nobody needs.
//!
//! No wake-up is lost: arming registers the socket one-shot, which the
//! kernel evaluates at once (a datagram already waiting fires it), and
//! the poller looks at the socket once more after arming.

use rustix::event::epoll;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the waiting thread looks whether the daemon stops.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The epoll set the listening sockets join while armed, and each one's
/// armed flag.
pub(crate) struct SocketWake {
    epoll: Arc<OwnedFd>,
    armed: Vec<Arc<AtomicBool>>,
}

/// One listening socket's place in the set, held by its poller.
pub(crate) struct Watch {
    epoll: Arc<OwnedFd>,
    index: u64,
    armed: Arc<AtomicBool>,
    /// Whether the socket is in the epoll set now.
    registered: bool,
}

impl SocketWake {
    /// An empty set.
    pub(crate) fn new() -> io::Result<SocketWake> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        Ok(SocketWake {
            epoll: Arc::new(epoll),
            armed: Vec::new(),
        })
    }

    /// A place for one more socket (disarmed: it wakes nobody until its
    /// poller sleeps).
    pub(crate) fn watch(&mut self) -> Watch {
        let index = self.armed.len() as u64;
        let armed = Arc::new(AtomicBool::new(false));
        self.armed.push(Arc::clone(&armed));
        Watch {
            epoll: Arc::clone(&self.epoll),
            index,
            armed,
            registered: false,
        }
    }

    /// Starts the thread that waits on the set until `stopping`, calling
    /// `wake` when a datagram arrives at an armed socket. It runs in
    /// `realtime` (the dispatcher's class) where one is given and the
    /// system permits: it is the first step of a sleeping dispatcher's
    /// path to a datagram, and a normal thread waits behind the machine's
    /// busy threads for a time slice.
    pub(crate) fn spawn(
        self,
        stopping: Arc<AtomicBool>,
        realtime: Option<isola_runtime::Realtime>,
        wake: impl Fn() + Send + 'static,
    ) -> io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("isolad-udp-wake".into())
            .spawn(move || {
                if let Some(rt) = realtime {
                    // Refused (no privilege): it waits in the normal class, as
                    // the runtime's threads then do.
                    let _ = rt.enter_current_thread();
                }
                self.run(&stopping, &wake)
            })
    }

    fn run(&self, stopping: &AtomicBool, wake: &dyn Fn()) {
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: STOP_CHECK.as_nanos() as i64,
        };
        let mut events = Vec::with_capacity(self.armed.len().max(1));
        while !stopping.load(Ordering::Acquire) {
            events.clear();
            match epoll::wait(
                &*self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                Some(&timeout),
            ) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    eprintln!("isolad: waiting on the udp sockets: {e}");
                    std::thread::sleep(STOP_CHECK);
                    continue;
                }
            }
            // One wake-up for any number of sockets: the dispatcher polls
            // them all.
            let any = events.iter().fold(false, |any, e| {
                let armed = self.armed.get(e.data.u64() as usize);
                armed.is_some_and(|a| a.swap(false, Ordering::AcqRel)) || any
            });
            if any {
                wake();
            }
        }
    }
}

impl Watch {
    /// The dispatcher is about to block: arms the socket (its next
    /// datagram, or one already waiting, wakes the dispatcher), then looks
    /// once more; `true` if a datagram is waiting (the dispatcher then
    /// polls on, and the socket is disarmed).
    pub(crate) fn sleep(&mut self, socket: BorrowedFd<'_>) -> bool {
        self.armed.store(true, Ordering::Release);
        let (data, flags) = (
            epoll::EventData::new_u64(self.index),
            epoll::EventFlags::IN | epoll::EventFlags::ONESHOT,
        );
        let joined = if self.registered {
            epoll::modify(&*self.epoll, socket, data, flags)
        } else {
            epoll::add(&*self.epoll, socket, data, flags)
        };
        self.registered = joined.is_ok();
        let waiting = joined.is_err() || readable(socket);
        if waiting {
            // Or the socket could not join the set (out of memory, say):
            // poll on rather than sleep deaf to it.
            self.wake(socket);
        }
        waiting
    }

    /// The dispatcher polls again: a datagram need not wake it, and the
    /// socket leaves the set.
    pub(crate) fn wake(&mut self, socket: BorrowedFd<'_>) {
        self.armed.store(false, Ordering::Release);
        if self.registered && epoll::delete(&*self.epoll, socket).is_ok() {
            self.registered = false;
        }
    }
}

/// Whether a datagram waits at `socket`.
fn readable(socket: BorrowedFd<'_>) -> bool {
    let mut fds = [rustix::event::PollFd::new(&socket, rustix::event::PollFlags::IN)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;
    use std::sync::mpsc;

    fn pair() -> (UdpSocket, UdpSocket) {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        tx.connect(rx.local_addr().expect("addr")).expect("connect");
        (rx, tx)
    }

    #[test]
    fn an_armed_socket_wakes_on_its_next_datagram_and_a_disarmed_one_does_not() {
        let (rx, tx) = pair();
        let mut wake = SocketWake::new().expect("epoll");
        let mut watch = wake.watch();
        let stopping = Arc::new(AtomicBool::new(false));
        let (woke_tx, woke) = mpsc::channel();
        let thread = wake
            .spawn(Arc::clone(&stopping), None, move || {
                woke_tx.send(()).expect("send")
            })
            .expect("spawn");
        // Disarmed: a datagram wakes nobody.
        tx.send(b"a").expect("send");
        assert!(woke.recv_timeout(Duration::from_millis(200)).is_err());
        // Armed with one waiting: the look once more sees it.
        assert!(watch.sleep(rx.as_fd()), "a waiting datagram is seen when arming");
        let mut buf = [0u8; 8];
        rx.recv(&mut buf).expect("recv");
        // The thread may have seen that datagram too, before the look
        // disarmed the socket: forget a wake-up it gave then.
        std::thread::sleep(Duration::from_millis(100));
        while woke.try_recv().is_ok() {}
        // Armed on an empty socket: the next datagram wakes, once.
        assert!(!watch.sleep(rx.as_fd()));
        tx.send(b"b").expect("send");
        woke.recv_timeout(Duration::from_secs(5)).expect("woken");
        tx.send(b"c").expect("send");
        assert!(woke.recv_timeout(Duration::from_millis(200)).is_err(), "one-shot");
        stopping.store(true, Ordering::Release);
        thread.join().expect("join");
    }
}
