#!/usr/bin/env python3
"""Prints a TCP port that nobody listens on on 127.0.0.1 right now, below
32768: outside the kernel's ephemeral range (32768-60999), where any
outgoing connection may take a port between the check and its use.
Drawn at random from AISD_PORT_RANGE ("LO-HI", a share handed to one test
when several run at once) or from 20000-32000, checked by binding it.
Exit status 1 when 200 draws found none free."""
import os
import random
import socket
import sys


def pick():
    """The port, or 0 when 200 draws found none free."""
    lo, hi = 20000, 32000
    rng = os.environ.get("AISD_PORT_RANGE", "")
    if rng:
        lo, hi = (int(x) for x in rng.split("-"))
    for _ in range(200):
        p = random.randint(lo, hi)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        return p
    return 0


def main():
    p = pick()
    if not p:
        print("free_port: no free port below 32768 (AISD_PORT_RANGE=%s)" % os.environ.get("AISD_PORT_RANGE", ""),
              file=sys.stderr)
        return 1
    print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
