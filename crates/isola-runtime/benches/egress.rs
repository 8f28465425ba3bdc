//! An egress worker's send of a 64 KiB task (45 datagrams of at most 1472
//! bytes) to a local sink: `EgressPort::send`, which hands them to the
//! kernel in one `sendmmsg`, against one `send` a datagram on the same
//! connected socket. Same sitting, same sink; the ratio is the point.
//!
//! Run: `cargo bench -p isola-runtime --bench egress`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use isola_runtime::{EgressPort, EgressSink, DEFAULT_MTU_PAYLOAD};
use std::net::UdpSocket;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let sink = EgressSink::bind(false).unwrap();
    let payload: Vec<u8> = (0..65_536u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut g = c.benchmark_group("egress-64KiB");
    g.sample_size(50)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(payload.len() as u64));
    let port = EgressPort::connect(sink.addr(), DEFAULT_MTU_PAYLOAD).unwrap();
    g.bench_function("sendmmsg", |b| b.iter(|| port.send(&payload).unwrap()));
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(sink.addr()).unwrap();
    g.bench_function("send-per-datagram", |b| {
        b.iter(|| {
            for d in payload.chunks(DEFAULT_MTU_PAYLOAD) {
                socket.send(d).unwrap();
            }
        })
    });
    g.finish();
    let (got, _) = sink.stop();
    eprintln!("sink received {} datagrams, {} bytes", got.datagrams, got.bytes);
}

criterion_group!(benches, bench);
criterion_main!(benches);
