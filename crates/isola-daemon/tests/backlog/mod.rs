//! What the tests of live changes share: a tenant that queues a backlog of
//! equal tasks through its rings at once and waits for them all.

#![allow(dead_code)]

use isola_client::{Client, CompletionStatus};
use isola_wire::Submission;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Each task's input: one shared 256 KiB buffer. (A tenant's memory quota
/// bounds the bytes of its tasks queued or in service: 64 MiB holds 256.)
pub const INPUT: u64 = 256 * 1024;

/// A task of operator `handle` on the shared input, its output at
/// `slot`'s 32 bytes after it.
pub fn task(handle: u32, slot: u64) -> Submission {
    Submission {
        handle,
        flags: 0,
        input_offset: 0,
        input_len: INPUT,
        output_offset: INPUT + slot * 32,
        output_cap: 32,
        tag: slot,
    }
}

/// Tenant `name` queues `tasks` tasks of `op` at once when `start` lets
/// it, then waits for them all, counting them in `done`; returns the
/// client and when each task was dispatched (daemon clock).
pub fn backlog(
    socket: PathBuf,
    name: &str,
    op: &'static str,
    tasks: u64,
    start: Arc<std::sync::Barrier>,
    done: Arc<AtomicU64>,
) -> std::thread::JoinHandle<(Client, Vec<u64>)> {
    let name = name.to_string();
    std::thread::spawn(move || {
        let mut c = Client::connect(&socket, &name).unwrap();
        let h = c.register(op, &BTreeMap::new()).unwrap();
        c.write(0, &vec![5u8; INPUT as usize]).unwrap();
        let batch: Vec<Submission> = (0..tasks).map(|i| task(h, i)).collect();
        start.wait();
        c.submit_all(&batch).unwrap();
        let mut dispatched = Vec::new();
        for _ in 0..tasks {
            let answer = c.wait().unwrap();
            assert_eq!(answer.outcome, CompletionStatus::Ok);
            dispatched.push(answer.dispatch_ns);
            done.fetch_add(1, Ordering::AcqRel);
        }
        (c, dispatched)
    })
}

/// Tenant `name` keeps `in_flight` tasks of `op` submitted (each answer
/// followed by another task) until `stop`, then waits for the rest;
/// counts every answer in `done` and returns the client.
pub fn keep_busy(
    socket: PathBuf,
    name: &str,
    op: &'static str,
    in_flight: u64,
    stop: Arc<std::sync::atomic::AtomicBool>,
    done: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Client> {
    let name = name.to_string();
    std::thread::spawn(move || {
        let mut c = Client::connect(&socket, &name).unwrap();
        let h = c.register(op, &BTreeMap::new()).unwrap();
        c.write(0, &vec![5u8; INPUT as usize]).unwrap();
        let batch: Vec<Submission> = (0..in_flight).map(|i| task(h, i)).collect();
        c.submit_all(&batch).unwrap();
        let mut out = in_flight;
        while out > 0 {
            let answer = c.wait().unwrap();
            assert_eq!(answer.outcome, CompletionStatus::Ok);
            done.fetch_add(1, Ordering::AcqRel);
            out -= 1;
            if !stop.load(Ordering::Acquire) {
                c.submit_all(&[task(h, answer.tag)]).unwrap();
                out += 1;
            }
        }
        c
    })
}
