#!/usr/bin/env python3
"""bench_table.py BEFORE AFTER: the criterion medians of two benchmark
outputs (cargo bench stdout) as a markdown table with after/before ratios."""
import re
import sys

UNITS = {'ns': 1, 'µs': 1e3, 'us': 1e3, 'ms': 1e6, 's': 1e9}


def medians(path):
    out, name = {}, None
    for line in open(path):
        if re.match(r'^[a-z]+/\S+', line) and 'time:' not in line:
            name = line.split()[0]
        m = re.search(r'^(\S+)?\s*time:\s+\[(\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\]', line)
        if m and m.group(5) in UNITS:
            name = m.group(1) or name
            out[name] = float(m.group(4)) * UNITS[m.group(5)]
    return out


def shown(ns):
    return f'{ns:.0f} ns' if ns < 1e4 else (f'{ns / 1e3:.1f} us' if ns < 1e7 else f'{ns / 1e6:.2f} ms')


before, after = medians(sys.argv[1]), medians(sys.argv[2])
print('| benchmark | before | after | after / before |')
print('| --- | ---: | ---: | ---: |')
for k, v in before.items():
    if k in after:
        print(f'| `{k}` | {shown(v)} | {shown(after[k])} | {after[k] / v:.2f} |')
