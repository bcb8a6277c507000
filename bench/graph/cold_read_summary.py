#!/usr/bin/env python3
"""Medians of bench/graph/cold_read.sh's scan.csv per (scale, command, system, state), with the
ratios the cold-read targets are stated in: to mmap (Metall's way) of the same command and
state, and to cat of the same bytes, cold, in the same run. Writes SUMMARY_CSV and prints a
Markdown table. Usage: cold_read_summary.py SCAN_CSV SUMMARY_CSV"""
import csv
import statistics
import sys
from collections import defaultdict


def main():
    scan, summary = sys.argv[1], sys.argv[2]
    rows = list(csv.DictReader(open(scan)))
    groups = defaultdict(list)
    for r in rows:
        groups[(int(r["scale"]), r["command"], r["system"], r["state"])].append(r)

    def med(key, field):
        return statistics.median(float(r[field]) for r in groups[key])

    out = []
    for key in sorted(groups):
        scale, cmd, system, state = key
        wall = med(key, "wall_s")
        mb = med(key, "device_mb")
        reads = med(key, "device_reads")
        mmap_key = (scale, cmd, "mmap", state)
        cat_key = (scale, "cat", "disk", "cold")
        out.append({
            "scale": scale, "command": cmd, "system": system, "state": state,
            "wall_s": f"{wall:.3f}", "wall_min": f"{min(float(r['wall_s']) for r in groups[key]):.3f}",
            "wall_max": f"{max(float(r['wall_s']) for r in groups[key]):.3f}",
            "device_mb": f"{mb:.1f}", "device_reads": f"{reads:.0f}",
            "mb_per_s": f"{mb / wall:.0f}" if wall > 0 else "0",
            "vs_mmap": f"{wall / med(mmap_key, 'wall_s'):.2f}" if mmap_key in groups else "",
            "vs_cat": f"{wall / med(cat_key, 'wall_s'):.2f}" if cat_key in groups else "",
            "rounds": len(groups[key]),
        })
    with open(summary, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
        w.writeheader()
        w.writerows(out)
    print("| SCALE | command | system | state | wall s (median; min-max) | device MB | MB/s | ÷ mmap | ÷ cat |")
    print("|---|---|---|---|---|---|---|---|---|")
    for o in out:
        print(f"| {o['scale']} | {o['command']} | {o['system']} | {o['state']} | {o['wall_s']} ({o['wall_min']}-{o['wall_max']}) "
              f"| {o['device_mb']} | {o['mb_per_s']} | {o['vs_mmap']} | {o['vs_cat']} |")


if __name__ == "__main__":
    main()
