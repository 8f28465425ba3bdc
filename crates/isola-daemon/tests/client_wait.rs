//! `Client::wait_until` against a real daemon: it returns `None` at its
//! deadline when nothing is answered (having slept on the socket, not
//! hung), and the answer when one comes, polling or sleeping.

use isola_client::{Client, CompletionStatus};
use isola_daemon::{Daemon, DaemonConfig};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[test]
fn wait_until_returns_at_its_deadline_or_with_the_answer() {
    let dir = std::env::temp_dir().join(format!("isolad-wait-until-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uid = rustix::process::getuid().as_raw();
    let text = format!(
        "[daemon]\nsocket = \"isolad.sock\"\n[[engine]]\nname = \"acc\"\n\
         [[tenant]]\nname = \"a\"\nmemory_quota = \"64KiB\"\nusers = [{uid}]\n"
    );
    let d = Daemon::start(DaemonConfig::parse(&text, &dir.join("isolad.toml")).unwrap()).unwrap();
    let mut c = Client::connect(d.socket(), "a").unwrap();
    let g = c.geometry();
    assert!(g.sq_entries.is_power_of_two() && g.cq_entries.is_power_of_two());
    assert_eq!(g.arena_bytes, c.arena_bytes());

    // Nothing in flight: past the spin it sleeps, and returns at the deadline.
    let start = Instant::now();
    assert!(c.wait_until(start + Duration::from_millis(30)).unwrap().is_none());
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(30) && waited < Duration::from_secs(5),
        "{waited:?}"
    );

    let h = c.register("crc32c", &BTreeMap::new()).unwrap();
    c.write(0, b"123456789").unwrap();
    let s = Submission {
        handle: h,
        flags: 0,
        input_offset: 0,
        input_len: 9,
        output_offset: 4096,
        output_cap: 4,
        tag: 1,
    };
    // Polling (the default spin) and sleeping at once (no spin): both get it.
    for spin in [isola_client::DEFAULT_SPIN, Duration::ZERO] {
        c.set_spin(spin);
        c.submit(&s).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let done = loop {
            if let Some(done) = c.wait_until(deadline).unwrap() {
                break done;
            }
            assert!(Instant::now() < deadline, "no answer with spin {spin:?}");
        };
        assert_eq!((done.tag, done.outcome), (1, CompletionStatus::Ok));
        assert_eq!(c.read(4096, 4).unwrap(), 0xE306_9283u32.to_be_bytes());
    }
}
