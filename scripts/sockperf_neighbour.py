#!/usr/bin/env python3
"""A victim's tail beside a busy neighbour (issue 34, part 3; docs/perf.md,
"Issue 34: a victim's tail beside a busy neighbour").

Usage: sockperf_neighbour.py [--isolad PATH] [--rounds N] [--seconds S]
                             [--modes LIST] [--floods LIST] [--json FILE]

Starts isolad with two tenants on one `pu` engine: `victim`, whose flow's
WebAssembly kernel answers as `sockperf server` does
(examples/kernels/sockperf_server.wat), and `flood`, whose kernel loops
on every packet until its 100,000-fuel limit stops it
(examples/kernels/burn.wat). Mellanox's `sockperf ping-pong` measures
the victim's round trip (half round trips, as sockperf reports them)
while a flood sender sends 20,000 packets/s at the neighbour:

  none    no flood
  sleepy  a sender that sleeps between bursts (20 packets every 1 ms)
  tp      `sockperf tp --mps 20000`, whose rate loop spins a core

under each isolad mode:

  default   the defaults
  realtime  `realtime = true` (its duty-cycle regime is on by default)
  pinned    that and `pin_threads = true`
  realtime-plain  `realtime = true`, `realtime_duty_cycle = false` (not
            run unless asked: --modes)
  nospin    `spin = "0s"` (not run unless asked: --modes)

Prints a Markdown table of p50, p99 and p99.9 per (flood, mode): the
range over the rounds. Needs sockperf (Debian's package `sockperf`).

With --capture, tcpdump (Debian's `tcpdump`, run as root) records the
victim's datagrams on the loopback, and each cell also gets the time
from a request's arrival to its reply's departure, on the kernel's
timestamps: the part of the round trip spent in isolad, the rest being
the client's (its own scheduling, its sends and receives).
"""
import argparse, json, os, re, shutil, signal, socket, struct, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VICTIM_PORT, FLOOD_PORT, METRICS_PORT = 11111, 11112, 11113
RATE = 20000
MODES = {
    'default': '',
    'realtime': 'realtime = true\n',
    'pinned': 'realtime = true\npin_threads = true\n',
    'realtime-plain': 'realtime = true\nrealtime_duty_cycle = false\n',
    'nospin': 'spin = "0s"\n',
}
DEFAULT_MODES = ('default', 'realtime', 'pinned')
FLOODS = ('none', 'sleepy', 'tp')


def config(mode):
    kernels = os.path.join(ROOT, 'examples', 'kernels')
    return f'''[daemon]
socket = "isolad.sock"
udp = ["127.0.0.1:{VICTIM_PORT}", "127.0.0.1:{FLOOD_PORT}"]
metrics = "127.0.0.1:{METRICS_PORT}"
{MODES[mode]}
[[engine]]
name = "pu"
kind = "pu"
ops = ["wasm"]

[[tenant]]
name = "victim"
users = ["self"]
memory_quota = "16MiB"
[[tenant.flow]]
match = {{ dst_port = {VICTIM_PORT}, proto = 17 }}
kernel = "wasm:{kernels}/sockperf_server.wat"

[[tenant]]
name = "flood"
users = ["self"]
memory_quota = "16MiB"
[[tenant.flow]]
match = {{ dst_port = {FLOOD_PORT}, proto = 17 }}
kernel = "wasm:{kernels}/burn.wat"
fuel = 100000
'''


def sleepy_sender(stop):
    """20 sockperf-shaped packets every millisecond, sleeping in between."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq, burst, period = 0, RATE // 1000, 0.001
    due = time.monotonic()
    while not stop.is_set():
        for _ in range(burst):
            seq += 1
            # sequence, flags = client (no answer asked), length
            s.sendto(seq.to_bytes(8, 'big') + (1).to_bytes(2, 'big') + (14).to_bytes(4, 'big'),
                     ('127.0.0.1', FLOOD_PORT))
        due += period
        time.sleep(max(0.0, due - time.monotonic()))


def flood_packets():
    """The flood tenant's packets so far by outcome, from isolad's metrics."""
    import urllib.request
    text = urllib.request.urlopen(f'http://127.0.0.1:{METRICS_PORT}/metrics', timeout=5).read().decode()
    got = {}
    for m in re.finditer(r'^isola_packets_total\{([^}]*)\} ([0-9.e+]+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels.get('tenant') == 'flood':
            got[labels.get('outcome')] = float(m.group(2))
    return got


def percentiles(out):
    got = {}
    for key, name in (('50.000', 'p50'), ('99.000', 'p99'), ('99.900', 'p99.9')):
        m = re.search(r'percentile ' + re.escape(key) + r' =\s*([0-9.]+)', out)
        if m:
            got[name] = float(m.group(1))
    m = re.search(r'<MAX> observation =\s*([0-9.]+)', out)
    if m:
        got['max'] = float(m.group(1))
    m = re.search(r'\[Valid Duration\].*ReceivedMessages=(\d+)', out)
    got['messages'] = int(m.group(1)) if m else 0
    return got


def in_daemon_us(pcap):
    """Per answered request, reply departure minus request arrival (us),
    from a loopback capture of the victim's port (sockperf's sequence
    number pairs them)."""
    data = open(pcap, 'rb').read()
    if len(data) < 24:
        return []
    magic = struct.unpack('<I', data[:4])[0]
    per_s = 1e9 if magic == 0xa1b23c4d else 1e6
    linktype = struct.unpack('<I', data[20:24])[0]
    link = {1: 14, 113: 16, 276: 20}.get(linktype, 14)
    sent, waits, at = {}, [], 24
    while at + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack('<IIII', data[at:at + 16])
        pkt = data[at + 16:at + 16 + incl]
        at += 16 + incl
        ip = pkt[link:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        udp = ip[(ip[0] & 15) * 4:]
        if len(udp) < 8 + 10:
            continue
        sport, dport = struct.unpack('>HH', udp[:4])
        seq, flags = struct.unpack('>QH', udp[8:18])
        t = sec + frac / per_s
        if dport == VICTIM_PORT and flags & 2:
            sent[seq] = t
        elif sport == VICTIM_PORT and seq in sent:
            waits.append((t - sent.pop(seq)) * 1e6)
    return waits


def quantile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def one_round(isolad, mode, flood, seconds, capture):
    folder = tempfile.mkdtemp(prefix='isola-sockperf-')
    try:
        with open(os.path.join(folder, 'isolad.toml'), 'w') as f:
            f.write(config(mode))
        log = open(os.path.join(folder, 'isolad.log'), 'w')
        daemon = subprocess.Popen([isolad, '--config', 'isolad.toml'], cwd=folder,
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(os.path.join(folder, 'isolad.sock')):
                if daemon.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    sys.exit(f'isolad did not start: {open(os.path.join(folder, "isolad.log")).read()}')
                time.sleep(0.05)
            return measure(folder, flood, seconds, capture, threading.Event())
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
            log.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(folder, flood, seconds, capture, stop):
    """One round against the isolad running in `folder`; stops its flood
    sender and capture however it ends."""
    sender, tap = None, None
    try:
        if flood == 'sleepy':
            sender = threading.Thread(target=sleepy_sender, args=(stop,), daemon=True)
            sender.start()
        elif flood == 'tp':
            sender = subprocess.Popen(['sockperf', 'tp', '-i', '127.0.0.1', '-p', str(FLOOD_PORT),
                                       '--mps', str(RATE), '-t', str(seconds + 5)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        pcap = os.path.join(folder, 'victim.pcap')
        if capture:
            tap = subprocess.Popen(['tcpdump', '-i', 'lo', '-s', '64', '-B', '16384', '-U',
                                    '--time-stamp-precision=nano', '-w', pcap,
                                    f'udp port {VICTIM_PORT}'],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        before, started = flood_packets(), time.monotonic()
        out = subprocess.run(['sockperf', 'ping-pong', '-i', '127.0.0.1', '-p', str(VICTIM_PORT),
                              '-t', str(seconds)], capture_output=True, text=True).stdout
        after, took = flood_packets(), time.monotonic() - started
        got = percentiles(out)
        # The neighbour's packets its kernel ran (each to its fuel limit)
        # and those dropped, a second, while the victim measured.
        for outcome in ('aborted', 'dropped'):
            got['flood ' + outcome + '/s'] = round((after.get(outcome, 0) - before.get(outcome, 0)) / took)
        if tap is not None:
            tap.send_signal(signal.SIGINT)
            tap.wait()
            tap = None
            waits = sorted(in_daemon_us(pcap))
            if waits:
                for q, name in ((0.5, 'p50'), (0.99, 'p99'), (0.999, 'p99.9')):
                    got['isolad ' + name] = round(quantile(waits, q), 1)
        return got
    finally:
        stop.set()
        if tap is not None:
            tap.kill()
            tap.wait()
        if isinstance(sender, threading.Thread):
            sender.join()
        elif sender is not None:
            sender.terminate()
            sender.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--isolad', default=os.path.join(ROOT, 'target', 'release', 'isolad'))
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--seconds', type=int, default=10)
    ap.add_argument('--modes', default=','.join(DEFAULT_MODES))
    ap.add_argument('--floods', default=','.join(FLOODS))
    ap.add_argument('--capture', action='store_true',
                    help='also time each request inside isolad with tcpdump on the loopback (root)')
    ap.add_argument('--json', metavar='FILE')
    a = ap.parse_args()
    modes, floods = a.modes.split(','), a.floods.split(',')
    for m in modes:
        if m not in MODES:
            ap.error(f'--modes: unknown mode {m!r} (one of {", ".join(MODES)})')
    for f in floods:
        if f not in FLOODS:
            ap.error(f'--floods: unknown flood {f!r} (one of {", ".join(FLOODS)})')
    if a.capture and shutil.which('tcpdump') is None:
        sys.exit('--capture: tcpdump not found: install Debian\'s package `tcpdump`')
    if shutil.which('sockperf') is None:
        sys.exit('sockperf not found: install Debian\'s package `sockperf`')
    a.isolad = os.path.abspath(a.isolad)   # isolad runs in a folder of its own
    if not os.access(a.isolad, os.X_OK):
        sys.exit(f'{a.isolad}: not found (cargo build --release -p isola-daemon, or --isolad PATH)')
    results = {}
    # Rounds outermost, so that each cell's range spans the sitting.
    for r in range(a.rounds):
        for flood in floods:
            for mode in modes:
                got = one_round(a.isolad, mode, flood, a.seconds, a.capture)
                results.setdefault(f'{flood}/{mode}', []).append(got)
                print(f'round {r + 1}/{a.rounds} {flood:6} {mode:8} ' +
                      ' '.join(f'{k}={v}' for k, v in got.items()), file=sys.stderr, flush=True)
    keys = ['p50', 'p99', 'p99.9', 'max', 'flood aborted/s']
    if a.capture:
        keys += ['isolad p50', 'isolad p99', 'isolad p99.9']
    print('| flood sender | isolad mode | ' + ' | '.join(keys) + ' |')
    print('| --- | --- |' + ' --- |' * len(keys))
    for flood in floods:
        for mode in modes:
            rows = results[f'{flood}/{mode}']
            cells = []
            for k in keys:
                v = sorted(x[k] for x in rows if k in x)
                cells.append('-' if not v else f'{v[0]:,.1f}' if v[0] == v[-1] else f'{v[0]:,.1f}-{v[-1]:,.1f}')
            print(f'| {flood} | {mode} | ' + ' | '.join(cells) + ' |')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
