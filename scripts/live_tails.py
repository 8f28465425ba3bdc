#!/usr/bin/env python3
"""Live tails against simulated ones (docs/perf.md, "Simulation against
live, tails").

Usage: live_tails.py ISOLA LIVE_SCENARIO RUNS SIM_SCENARIO... [-- RUN_FLAGS...]

Runs `ISOLA run LIVE_SCENARIO --json RUN_FLAGS` RUNS times and `ISOLA sim
SIM_SCENARIO --json` once per file, and prints a Markdown table: per policy
and tenant, the live p50 and p99 (each divided by its run's time dilation,
so in scenario time) as the median over the runs and their range, against
each simulation's p99, and how many tenants' median live p99 is within 25%
of each simulation's.
"""
import json, re, subprocess, sys, statistics as st
if len(sys.argv) < 5:
    sys.exit(__doc__)
isola, live_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sims = sys.argv[4:]
extra = []
if '--' in sims:
    i = sims.index('--'); extra = sims[i+1:]; sims = sims[:i]
live = {}
for r in range(n):
    out = subprocess.run([isola, 'run', live_file, '--json'] + extra, capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    for p in d['policies']:
        dil = 1.0
        for w in p['warnings']:
            m = re.search(r'time dilated x([0-9.]+)', w)
            if m: dil = float(m.group(1))
        for t in p['tenants']:
            live.setdefault((p['policy'], t['name']), []).append((t['latency_ns']['p50']/dil/1e3, t['latency_ns']['p99']/dil/1e3))
simres = []
for f in sims:
    d = json.loads(subprocess.run([isola, 'sim', f, '--json'], capture_output=True, text=True, check=True).stdout)
    simres.append({(p['policy'], t['name']): (t['latency_ns']['p50']/1e3, t['latency_ns']['p99']/1e3) for p in d['policies'] for t in p['tenants']})
hdr = '| policy | tenant | live p50 median (range) | live p99 median (range) |' + ''.join(f' sim {i+1} p99 | vs median |' for i in range(len(sims)))
print(hdr); print('|' + ' --- |' * (4 + 2*len(sims)))
within = [0]*len(sims); total = 0
for k, v in live.items():
    p50 = sorted(x[0] for x in v); p99 = sorted(x[1] for x in v)
    m99 = st.median(p99); total += 1
    row = f'| {k[0]} | {k[1]} | {st.median(p50):.1f} ({p50[0]:.1f}-{p50[-1]:.1f}) | {m99:.1f} ({p99[0]:.1f}-{p99[-1]:.1f}) |'
    for i, s in enumerate(simres):
        sp = s.get(k)
        if sp is None: row += ' - | - |'; continue
        dev = m99/sp[1]-1 if sp[1] else float('inf')
        within[i] += abs(dev) <= 0.25
        row += f' {sp[1]:.1f} | {dev*100:+.0f}% |'
    print(row)
for i, f in enumerate(sims):
    print(f'sim {i+1} = {f}: live median p99 within 25% for {within[i]} of {total}')
