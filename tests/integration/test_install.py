"""test_install.py - `make install` as an operator runs it, into a staging
root (DESTDIR), twice: the second install (an upgrade) keeps the configs
the operator edited and refreshes NAME.conf.example beside them.

Checks:
 1. The first install writes the binaries, man pages, the completion and
    both configs, each with its .example twin (same bytes as conf/).
 2. After an edit of target.conf and the removal of gateway.conf, a second
    install keeps the edit (and says so), writes gateway.conf again, and
    refreshes the examples.
 3. The installed aisd prints the daemon's version.
 4. The systemd unit installed is the package's hardened one with this
    install's paths: aisd and its configs under PREFIX, user aisd, the
    sandbox kept.
"""
# serial: installs into the system
# timeout: 120
import os
import re
import subprocess
import tempfile

from itlib import T

t = T()
ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
BUILD = os.path.dirname(os.environ["AISD_BIN"])
DEST = tempfile.mkdtemp(prefix="install.")
ETC = os.path.join(DEST, "usr", "local", "etc", "aisd")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"}


def install():
    return subprocess.run(["make", "-s", "-C", ROOT, "install", "BUILD=" + BUILD, "DESTDIR=" + DEST,
                           "PREFIX=/usr/local"], env=ENV, capture_output=True, text=True, timeout=100)


def read(p):
    with open(p, "rb") as f:
        return f.read()


confs = sorted(f for f in os.listdir(os.path.join(ROOT, "conf")) if f.endswith(".conf"))
r = install()
t.check(r.returncode == 0, "first make install", r.stderr[-800:])
want = [os.path.join(DEST, "usr", "local", p) for p in
        ("bin/aisd", "bin/aisctl", "bin/aisloader", "share/man/man8/aisd.8", "share/man/man5/aisd.conf.5",
         "share/man/man1/aisctl.1", "share/bash-completion/completions/aisctl")]
t.check(all(os.path.isfile(p) for p in want), "binaries, man pages and completion installed",
        [p for p in want if not os.path.isfile(p)])
same = all(read(os.path.join(ETC, c)) == read(os.path.join(ROOT, "conf", c)) ==
           read(os.path.join(ETC, c + ".example")) for c in confs)
t.check(len(confs) >= 2 and same, "every config and its .example installed as in conf/ (%s)" % ", ".join(confs))

edited = read(os.path.join(ETC, "target.conf")) + b"\n# edited by the operator\nlog.level = debug\n"
with open(os.path.join(ETC, "target.conf"), "wb") as f:
    f.write(edited)
os.unlink(os.path.join(ETC, "gateway.conf"))
with open(os.path.join(ETC, "target.conf.example"), "wb") as f:
    f.write(b"stale\n")
r = install()
t.check(r.returncode == 0 and re.search(r"kept \S*/target\.conf", r.stdout + r.stderr) is not None,
        "second make install says it kept target.conf", (r.stdout[-500:], r.stderr[-500:]))
t.check(read(os.path.join(ETC, "target.conf")) == edited, "the edited target.conf is kept")
t.check(read(os.path.join(ETC, "gateway.conf")) == read(os.path.join(ROOT, "conf", "gateway.conf")),
        "a removed gateway.conf is installed again")
t.check(read(os.path.join(ETC, "target.conf.example")) == read(os.path.join(ROOT, "conf", "target.conf")),
        "target.conf.example refreshed")

r = subprocess.run([os.path.join(DEST, "usr", "local", "bin", "aisd"), "--version"], capture_output=True, text=True)
with open(os.path.join(ROOT, "include", "aisd", "version.h")) as f:
    ver = re.search(r'#define AISD_VERSION "([^"]+)"', f.read()).group(1)
t.check(r.returncode == 0 and ver in r.stdout + r.stderr, "the installed aisd prints version %s" % ver,
        (r.stdout, r.stderr))
unit = read(os.path.join(DEST, "usr", "local", "lib", "systemd", "system", "aisd@.service")).decode()
pkg = read(os.path.join(ROOT, "deploy", "debian", "aisd@.service")).decode()
t.check("ExecStart=/usr/local/bin/aisd --config /usr/local/etc/aisd/%i.conf\n" in unit,
        "the unit runs the installed aisd with its config under PREFIX", unit[:600])
t.check("/usr/bin/aisd" not in unit and " /etc/aisd/" not in unit and "=/etc/aisd/" not in unit,
        "no path of the package's layout is left in the installed unit")
sandbox = [l for l in pkg.splitlines() if l.split("=")[0] in
           ("User", "NoNewPrivileges", "ProtectSystem", "CapabilityBoundingSet", "SystemCallFilter",
            "ReadWritePaths", "PrivateDevices")]
t.check(len(sandbox) >= 7 and all(l in unit.splitlines() for l in sandbox),
        "the installed unit keeps the package's user and sandbox (%d lines)" % len(sandbox),
        [l for l in sandbox if l not in unit.splitlines()])
subprocess.run(["rm", "-rf", DEST])
t.finish()
