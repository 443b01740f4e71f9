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
    sandbox kept; `systemd-analyze security --offline` rates it below 3.
 5. The sysusers.d and tmpfiles.d files installed with it, applied to the
    staging root (systemd-sysusers/systemd-tmpfiles --root, as make install
    applies them to / when run as root without DESTDIR), make the system
    user aisd (no login shell), /var/lib/aisd and /var/log/aisd aisd:aisd
    0750 and the config folder root:aisd 0750. (test_deb_systemd.sh runs
    make install into a booted container and starts its unit.)
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
inst = os.path.join(DEST, "usr", "local", "lib", "systemd", "system", "aisd@gateway.service")
with open(inst, "w") as f:
    f.write(unit.replace("%i", "gateway"))
r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=29", inst],
                   capture_output=True, text=True)
score = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
t.check(r.returncode == 0 and score is not None and float(score.group(1)) < 3,
        "systemd-analyze security of the installed unit below 3 (%s)" % (score.group(1) if score else "?"),
        (r.stdout[-300:], r.stderr[-300:]))
os.unlink(inst)

sysusers = os.path.join(DEST, "usr", "local", "lib", "sysusers.d", "aisd.conf")
tmpfiles = os.path.join(DEST, "usr", "local", "lib", "tmpfiles.d", "aisd.conf")
t.check(read(sysusers) == read(os.path.join(ROOT, "deploy", "debian", "aisd.sysusers")),
        "the package's sysusers.d file installed")
t.check(b"z /usr/local/etc/aisd " in read(tmpfiles) and b" /etc/aisd " not in read(tmpfiles),
        "the tmpfiles.d file names the config folder under PREFIX", read(tmpfiles).decode())
if os.getuid() != 0:
    t.skip("the sysusers.d and tmpfiles.d files applied to the staging root", "not root (chown)")
    subprocess.run(["rm", "-rf", DEST])
    t.finish()
os.makedirs(os.path.join(DEST, "etc"), exist_ok=True)
r1 = subprocess.run(["systemd-sysusers", "--root=" + DEST, sysusers], capture_output=True, text=True)
r2 = subprocess.run(["systemd-tmpfiles", "--root=" + DEST, "--create", tmpfiles], capture_output=True, text=True)
t.check(r1.returncode == 0 and r2.returncode == 0, "systemd-sysusers and systemd-tmpfiles apply them",
        (r1.stderr[-300:], r2.stderr[-300:]))
with open(os.path.join(DEST, "etc", "passwd")) as f:
    pw = [l.rstrip("\n").split(":") for l in f if l.startswith("aisd:")]
with open(os.path.join(DEST, "etc", "group")) as f:
    gr = [l.rstrip("\n").split(":") for l in f if l.startswith("aisd:")]
t.check(len(pw) == 1 and len(gr) == 1 and int(pw[0][2]) < 1000 and pw[0][3] == gr[0][2] and
        pw[0][5] == "/var/lib/aisd" and pw[0][6] == "/usr/sbin/nologin",
        "a system user and group aisd, home /var/lib/aisd, no login shell", (pw, gr))


def owner(p):
    st = os.stat(os.path.join(DEST, p))
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


if pw:
    uid, gid = int(pw[0][2]), int(pw[0][3])
    got = {p: owner(p) for p in ("var/lib/aisd", "var/log/aisd", "usr/local/etc/aisd")
           if os.path.exists(os.path.join(DEST, p))}
    t.eq(got, {"var/lib/aisd": (uid, gid, 0o750), "var/log/aisd": (uid, gid, 0o750),
               "usr/local/etc/aisd": (0, gid, 0o750)}, "the data, log and config folders: owners and modes")
subprocess.run(["rm", "-rf", DEST])
t.finish()
