#!/usr/bin/env python3
"""check-docs.py - the documented lists against the tables in the code.

Checks, each printed as a TAP line (ok N - WHAT / not ok N - WHAT, with
the differences as # lines below a failure):
  1. every configuration key of src/core/conf.c's key table has an entry
     in man/aisd.conf.5, and every entry there is a key of the table;
  2. every aisctl command of src/cli/main.c's cli_cmds[] (hidden ones
     aside) is documented in man/aisctl.1's COMMANDS and named in the
     aisctl section's command list (the "- **Commands**:" item of the
     user guides, docs/getting-started.md), and every command aisctl(1)
     documents exists;
  3. every native route (method and path prefix) of the target's table
     (src/target/routes.c) and the gateway's (src/gateway/gateway.c) has a
     section "### METHOD PATH" in docs/api.md, every section names a route
     that exists, and its "Where" line (both, target or gateway) says which
     roles serve it;
  4. every relative link of README.md and the guides (docs/*.md) names a
     file of the tree, and its #anchor a heading of that file (the
     guides link each other's sections since the README was split);
  5. every `KEY` or `KEY=VALUE` in backticks in README.md and the guides
     whose first word is a configuration section (net., store., s3., ...)
     is a key of the table, or one of the few bucket properties and
     object metadata names that share those sections (NOT_CONFIG).
Exit status 0 when every check passed, 1 otherwise. Standard library only;
run from anywhere (paths are relative to the repository root), or with
--root DIR to check another tree.
"""
import itertools
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if len(sys.argv) == 3 and sys.argv[1] == "--root":
    ROOT = Path(sys.argv[2]).resolve()

results = []


def check(what, missing_doc, missing_code, doc_name, code_name):
    """One TAP line: passes when both difference lists are empty."""
    bad = []
    for x in sorted(missing_doc):
        bad.append(f"{x}: in {code_name}, not in {doc_name}")
    for x in sorted(missing_code):
        bad.append(f"{x}: in {doc_name}, not in {code_name}")
    results.append((what, bad))


def read(rel):
    return (ROOT / rel).read_text(encoding="utf-8")


def c_table(text, start):
    """The text of a C array initializer that begins at `start`."""
    i = text.index(start)
    return text[i:text.index("\n};", i)]


# 1. configuration keys ----------------------------------------------------
conf_c = c_table(read("src/core/conf.c"), "{\"role\", K_")
code_keys = set(re.findall(r'^\s*\{"([a-z0-9_.]+)",\s*K_', conf_c, re.M))
man5 = read("man/aisd.conf.5").split("\n")
doc_keys = set()
for prev, line in zip(man5, man5[1:]):
    if prev.startswith(".TP"):
        m = re.match(r'^\.BR? +([a-z0-9_]+(?:\\?\.[a-z0-9_]+)+)', line)
        if m:
            doc_keys.add(m.group(1).replace("\\", ""))
        elif re.match(r'^\.BR? +(role)\b', line):
            doc_keys.add("role")
check(f"configuration keys ({len(code_keys)}): aisd.conf(5) and the key table in src/core/conf.c",
      code_keys - doc_keys, doc_keys - code_keys, "aisd.conf(5)", "src/core/conf.c")

# 2. aisctl commands -------------------------------------------------------
cmds_c = c_table(read("src/cli/main.c"), "static const struct cli_cmd cli_cmds[]")
code_cmds = set()
for name, hidden in re.findall(r'\{\s*"([^"]+)"\s*,.*?,\s*(true|false)\s*\}\s*,', cmds_c, re.S):
    if hidden == "false":
        code_cmds.add(name)


def words_of(tokens):
    """Command names a man page or README entry names: its leading command
    words, with "a | b" alternatives of the last word expanded."""
    out = []
    first = tokens[0].split() if tokens else []
    words = list(itertools.takewhile(lambda w: re.fullmatch(r"[a-z][a-z-]*", w), first))
    if not words:
        return out
    out.append(" ".join(words))
    rest = tokens[1:]
    while len(rest) >= 2 and rest[0] == "|" and re.fullmatch(r"[a-z][a-z-]*", rest[1]):
        out.append(" ".join(words[:-1] + [rest[1]]))
        rest = rest[2:]
    return out


man1 = read("man/aisctl.1")
sect = man1[man1.index("\n.SH COMMANDS"):man1.index("\n.SH OPTIONS")].split("\n")
doc_cmds, depth = set(), 0
for prev, line in zip(sect, sect[1:]):
    if line.startswith(".RS"):
        depth += 1
    elif line.startswith(".RE"):
        depth -= 1
    if prev.startswith(".TP") and depth == 0 and re.match(r"^\.B[IR]? ", line):
        clean = re.sub(r"\\f[BIRP]", " ", line.split(" ", 1)[1]).replace("\\-", "-")
        try:
            toks = shlex.split(clean)
        except ValueError:
            toks = clean.split()
        if line.startswith(".B ") and toks:  # .B: every argument is one bold run
            toks = [" ".join(toks)]
        for c in words_of(toks):
            doc_cmds.add(c)


def covered(cmd, names):
    """A command is documented when a documented name is it or starts with
    it ("node maintenance" by "node maintenance start")."""
    return any(n == cmd or n.startswith(cmd + " ") for n in names)


def exists(name, cmds):
    """A documented name exists when it is a command or a command followed
    by its sub-argument words ("node maintenance start")."""
    return any(name == c or name.startswith(c + " ") for c in cmds)


check(f"aisctl commands ({len(code_cmds)}): aisctl(1) COMMANDS and cli_cmds[] in src/cli/main.c",
      {c for c in code_cmds if not covered(c, doc_cmds)},
      {d for d in doc_cmds if not exists(d, code_cmds)}, "aisctl(1)", "src/cli/main.c")

GUIDES = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
m = cmds_in = None
for g in GUIDES:
    m = re.search(r"^- \*\*Commands\*\*:(.*?)(?=^- \*\*)", read(g), re.M | re.S)
    if m:
        cmds_in = g
        break
readme_cmds = set()
if m:
    for span in re.findall(r"`([^`]+)`", m.group(1)):
        w = span.split()
        # "job show|wait|start|stop [..]": the alternatives of each word
        lead = list(itertools.takewhile(lambda x: re.fullmatch(r"[a-z][a-z|-]*", x), w))
        for combo in itertools.product(*[x.split("|") for x in lead]):
            readme_cmds.add(" ".join(combo))
check(f"aisctl commands: the aisctl section's list ({cmds_in or 'not found in README.md or docs/'}) and cli_cmds[]",
      {c for c in code_cmds if not covered(c, readme_cmds)}, set(), cmds_in or "the guides", "src/cli/main.c")

# 3. routes ----------------------------------------------------------------


def routes_of(rel):
    table = c_table(read(rel), "static const http_route_t routes[]")
    out = set()
    for prefix, methods in re.findall(r'\{\s*"(/[^"]*)",\s*([^,]+),', table):
        if prefix == "/":  # S3: documented in the README and aisd(8)
            continue
        for meth in re.findall(r"M\((\w+)\)", methods):
            out.add((meth, prefix))
    return out


tgt = routes_of("src/target/routes.c")
gw = routes_of("src/gateway/gateway.c")
prefixes = sorted({p for _, p in tgt | gw}, key=len, reverse=True)
api = read("docs/api.md")
doc_routes, where_bad = set(), []
for sec in re.split(r"^### ", api, flags=re.M)[1:]:
    head = sec.split("\n", 1)[0]
    mm = re.match(r"([A-Z]+) (/\S*)", head)
    if not mm:
        continue
    meth, path = mm.groups()
    pfx = next((p for p in prefixes if path == p or path.startswith(p + "/") or path.startswith(p + "[")), None)
    if pfx is None:
        doc_routes.add((meth, path))
        continue
    doc_routes.add((meth, pfx))
    w = re.search(r"\*\*Where\*\*: (both|target|gateway)", sec)
    on = ("both" if (meth, pfx) in tgt and (meth, pfx) in gw
          else "target" if (meth, pfx) in tgt else "gateway" if (meth, pfx) in gw else None)
    if on and (not w or w.group(1) != on):
        where_bad.append(f"{head}: the code serves it on {on}, docs/api.md says "
                         f"{w.group(1) if w else 'nothing'}")
code_routes = tgt | gw
check(f"native routes ({len(tgt | gw)} method+path pairs): docs/api.md and the route tables",
      {f"{m} {p}" for m, p in code_routes - doc_routes},
      {f"{m} {p}" for m, p in doc_routes - code_routes}, "docs/api.md", "the route tables")
results.append(("native routes: the roles in docs/api.md's Where lines", where_bad))

# 4. links between the README and the guides ---------------------------


def anchors_of(text):
    """GitHub's anchors of a Markdown text's headings (outside fences)."""
    out, fence, seen = set(), False, {}
    for line in text.split("\n"):
        if re.match(r"^\s*```", line):
            fence = not fence
        hm = None if fence else re.match(r"^#{1,6} +(.*?)\s*#*\s*$", line)
        if hm:
            a = re.sub(r"[^\w\- ]", "", hm.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


bad_links = []
for g in GUIDES:
    text, fence = read(g), False
    for ln, line in enumerate(text.split("\n"), 1):
        if re.match(r"^\s*```", line):
            fence = not fence
        if fence:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (ROOT / g).parent / path if path else ROOT / g
            if not dest.exists():
                bad_links.append(f"{g}:{ln}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors_of(dest.read_text(encoding="utf-8")):
                bad_links.append(f"{g}:{ln}: {target}: no such heading in {dest.relative_to(ROOT)}")
results.append((f"links of README.md and the guides ({len(GUIDES) - 1} under docs/) resolve", bad_links))

# 5. configuration keys named in the README and the guides ---------------
# Bucket properties (PATCH /v1/buckets) and object metadata keys whose
# first word is also a configuration section.
NOT_CONFIG = {"mirror.enabled", "mirror.copies", "s3.lock", "s3.etag", "s3.ps", "dsort.run"}
sections = {k.split(".")[0] for k in code_keys if "." in k}
named = {}
for g in GUIDES:
    for mk in re.finditer(r"`([a-z0-9_]+(?:\.[a-z0-9_]+)+)(?:\s*=[^`]*)?`", read(g)):
        k = mk.group(1)
        if k.split(".")[0] in sections and k not in NOT_CONFIG:
            named.setdefault(k, set()).add(g)
check(f"configuration keys named in README.md and the guides ({len(named)}): the key table",
      set(), {f"{k} ({', '.join(sorted(named[k]))})" for k in named if k not in code_keys},
      "the guides", "src/core/conf.c")

failed = 0
print(f"1..{len(results)}")
for n, (what, bad) in enumerate(results, 1):
    print(f"{'not ok' if bad else 'ok'} {n} - {what}")
    for b in bad:
        print(f"#   {b}")
    failed += bool(bad)
print(f"check-docs: {len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
