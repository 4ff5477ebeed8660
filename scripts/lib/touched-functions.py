#!/usr/bin/env python3
"""The functions a program's processes have touched, read from their resident pages.

    touched-functions.py EXE OUT

Meant for a build whose functions each start on a page of their own (scripts/order-file
links one): then a resident page of .text names exactly one function. Samples every
process running EXE each second and, when stopped (SIGTERM or SIGINT), writes to OUT the
mangled names of every function any of them touched, in the order they were first seen
(the binary's order within one second).
"""
import os
import signal
import struct
import subprocess
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def text_functions(exe):
    """(file offset, size, mangled name) of each function in .text, by offset."""
    taddr = toff = tsize = None
    for line in subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True, check=True).stdout.splitlines():
        if " .text " in line:
            fields = line.split("]", 1)[1].split()
            taddr, toff, tsize = (int(x, 16) for x in fields[2:5])
    out = []
    listed = subprocess.run(["nm", "--print-size", "--defined-only", exe], capture_output=True, text=True, check=True)
    for line in listed.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            addr, size = int(parts[0], 16), int(parts[1], 16)
            if size and taddr <= addr < taddr + tsize:
                out.append((addr - taddr + toff, size, parts[3]))
    return sorted(out)


def resident_pages(pid, exe):
    pages = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                parts = line.split()
                if len(parts) < 6 or parts[5] != exe:
                    continue
                start, end = (int(x, 16) for x in parts[0].split("-"))
                pagemap.seek(start // PAGE * 8)
                data = pagemap.read((end - start) // PAGE * 8)
                base = int(parts[2], 16)
                for i, (entry,) in enumerate(struct.iter_unpack("<Q", data)):
                    if entry >> 63 & 1:
                        pages.add(base + i * PAGE)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return pages


def pids_running(exe):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") == exe:
                yield int(pid)
        except OSError:
            continue


def main():
    exe, out = os.path.realpath(sys.argv[1]), sys.argv[2]
    functions = text_functions(exe)
    seen = {}
    tick = 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    while not stop:
        for pid in pids_running(exe):
            for page in resident_pages(pid, exe):
                seen.setdefault(page, tick)
        tick += 1
        time.sleep(1)
    first = []
    for off, size, name in functions:
        ticks = [seen[p] for p in range(off - off % PAGE, off + size, PAGE) if p in seen]
        if ticks:
            first.append((min(ticks), off, name))
    touched = [name for _, _, name in sorted(first)]
    with open(out, "w") as f:
        f.write("".join(name + "\n" for name in touched))
    print(f"{len(touched)} of {len(functions)} functions touched", file=sys.stderr)


if __name__ == "__main__":
    main()
