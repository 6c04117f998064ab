#!/usr/bin/env python3
"""catalog.py: the message catalogue of the launch stack, triaged against launchguard's rules.

    scripts/catalog.py SOURCE_TREE [SOURCE_TREE...] [--release TAG] [--show new|miss|all] [--json]
    scripts/catalog.py self-test      (the extraction on small inputs; run by scripts/test.sh)

SOURCE_TREE is an unpacked release of one of the projects whose messages end up in a failed job's
output (none of them is committed here; take them from their public repositories, e.g.
`git archive v0.24.0 | tar -x -C /tmp/pyxis`). The kind is recognised from the tree's layout:

    pyxis         slurm_error / slurm_spank_log / slurm_info in *.c
    enroot        common::err and `common::log WARN` in the shell sources, err/errx/warn/warnx in bin/*.c
    nccl          WARN( in src/ (NCCL's own plugins included)
    aws-ofi-nccl  NCCL_OFI_WARN(, and the texts its C++ throws (`throw std::runtime_error("...")`),
                  which the plugin's catch sites WARN (`Caught exception in plugin init: %s`)
    munge         log_err / log_errno
    slurm         error( / fatal( under src/

Every message template found is instantiated (its printf or shell substitutions replaced by sample
values chosen from the argument's name), framed as it appears in a job's output, and fed to
`launchguard explain --json -`, one line per run. The triage (every scripts/catalog/*.tsv: triage.tsv,
triage-nccl.tsv for NCCL and aws-ofi-nccl...) says what
each template should be, keyed by source, file and a hash of the template (the upstream text is
never stored here):

    rule    explain (or the NCCL model it hands NCCL lines to) must give the finding ID named
    benign  harmless, the note says why (with an ID: explain must give it, e.g. the follow-on
            finding that points at the earlier WARN to read)
    out     out of scope for launchguard (an internal error of the tool, a usage message of a
            command users do not run under Slurm...), the note says why

The report prints, per source and release, the templates found and how many are ruled (triaged
`rule` AND explain gives that ID for the instantiated line), benign, out of scope and untriaged,
plus `rule-miss` (triaged rule, explain does not give the ID) and `flagged` (untriaged, but explain
already says something); for NCCL, `5-areas` adds up init, net, transport, bootstrap and proxy (the
areas issue 31 sets goals for). A newer release's new templates show up as untriaged; `--show new` lists
them with their hash, to be triaged. Exit 0 always unless the arguments are wrong (a report, not a
test: CI checks the rules through their own examples).
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRIAGE_DIR = os.path.join(HERE, "catalog")
CLASSES = ("rule", "benign", "out")

# --- source kinds ----------------------------------------------------------------------------------


def detect(tree):
    """The kind of source tree, from marker files."""
    has = lambda p: os.path.exists(os.path.join(tree, p))  # noqa: E731
    if has("spank_pyxis.lds") or has("pyxis_slurmstepd.c"):
        return "pyxis"
    if has("enroot.in"):
        return "enroot"
    if has("src/init.cc") and has("src/bootstrap.cc"):
        return "nccl"
    if has("include/nccl_ofi.h") or has("include/nccl_ofi_log.h"):
        return "aws-ofi-nccl"
    if has("src/munged"):
        return "munge"
    if has("src/slurmd") and has("src/common"):
        return "slurm"
    return None


def release_of(tree, kind):
    """A best guess at the release: the version a Makefile sets, else the directory's name."""
    p = os.path.join(tree, "makefiles", "version.mk")  # NCCL
    if os.path.isfile(p):
        v = dict(re.findall(r"^NCCL_(MAJOR|MINOR|PATCH)\s*:=\s*(\S*)", open(p).read(), re.M))
        if "MAJOR" in v:
            return "%s.%s.%s" % (v["MAJOR"], v.get("MINOR", "0"), v.get("PATCH", "0"))
    if kind == "aws-ofi-nccl":
        # configure.ac takes the version from `git tag` or a .release_version file; an archive of a
        # tag has neither, so the directory's name (aws-ofi-nccl-1.21.1, v1.21.1) is the fallback.
        p = os.path.join(tree, ".release_version")
        if os.path.isfile(p):
            return open(p).read().strip()
        m = re.search(r"(\d+\.\d+\.\d+\S*)$", os.path.basename(os.path.normpath(tree)))
        if m:
            return m.group(1)
    p = os.path.join(tree, "Makefile")
    if os.path.isfile(p):
        m = re.search(r"^(?:PYXIS_VER|VERSION)\s*[:?]?=\s*(\d\S*)", open(p, errors="replace").read(), re.M)
        if m:
            return m.group(1)
    return os.path.basename(os.path.normpath(tree))


def files(tree, exts, under=""):
    base = os.path.join(tree, under)
    for d, dirs, fs in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x not in (".git", "test", "tests", "doc", "docs"))
        for f in sorted(fs):
            if f.endswith(exts):
                yield os.path.join(d, f)


# --- extracting templates ------------------------------------------------------------------------

C_MACROS = {"PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIu32": "u", "PRId32": "d",
            "PRIx32": "x", "PRIi64": "ld", "PRIu16": "u", "PRIu8": "u", "PRIxPTR": "lx",
            "PRIuPTR": "lu", "PYXIS_VERSION": "0.0.0"}


def c_split(text, i, sep):
    """Splits C text from text[i] at each `sep` outside brackets, string and character literals and
    comments, up to the bracket that closes before it or the end: (stripped parts, whether a
    closing bracket ended it)."""
    parts, depth, cur, j = [], 0, [], i
    while j < len(text):
        ch = text[j]
        if ch in "\"'":
            k = j + 1
            while k < len(text) and text[k] != ch:
                k += 2 if text[k] == "\\" else 1
            cur.append(text[j:k + 1])
            j = k + 1
            continue
        if ch == "/" and text[j:j + 2] == "/*":
            k = text.find("*/", j + 2)
            j = len(text) if k < 0 else k + 2
            continue
        if ch == "/" and text[j:j + 2] == "//":
            k = text.find("\n", j)
            j = len(text) if k < 0 else k
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                parts.append("".join(cur).strip())
                return parts, True
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            j += 1
            continue
        cur.append(ch)
        j += 1
    parts.append("".join(cur).strip())
    return parts, False


def c_args(text, i):
    """Splits a C call's arguments from just after its '(' at text[i]: a list of raw strings, or
    None when the call is not closed."""
    args, closed = c_split(text, i, ",")
    return args if closed else None


def c_literal(arg):
    """The string a C argument made of literals (and PRI* macros) spells, or None."""
    out, pos = [], 0
    tok = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z_]\w*))')
    while pos < len(arg):
        m = tok.match(arg, pos)
        if not m:
            if arg[pos:].strip() == "":
                break
            return None
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) in C_MACROS:
            out.append(C_MACROS[m.group(2)])
        else:
            return None
        pos = m.end()
    return "".join(out) if out else None


def c_calls(path, calls, fmt_index):
    """(line, level, template, args) for every call NAME( in the file whose format is a literal."""
    text = open(path, errors="replace").read()
    pat = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(re.escape(c) for c in calls))
    for m in pat.finditer(text):
        # skip definitions and prototypes: `void error(const char *fmt, ...)` and macros
        start = text.rfind("\n", 0, m.start()) + 1
        head = text[start:m.start()]
        if re.search(r"#\s*define|\b(void|int|extern|static)\s*\**\s*$", head):
            continue
        args = c_args(text, m.end())
        if not args:
            continue
        idx = fmt_index(m.group(1))
        if idx >= len(args):
            continue
        t = c_literal(args[idx])
        if t is None:
            continue
        yield text.count("\n", 0, m.start()) + 1, m.group(1), t, args[idx + 1:]


def cxx_throws(path):
    """The texts `throw std::runtime_error(...)` (or another std exception) gives in a C++ file: its
    literals, with `%s` for each part built at run time (`"fi_getname failed: " + fi_strerror(-rc)`);
    for `std::system_error(code, category, what)` the last argument and `: %s` (the error's text it
    appends). A text with no literal at all is skipped, and so is `throw new ...` (a pointer: no
    handler or terminate message prints a text for it)."""
    return cxx_throw_texts(open(path, errors="replace").read())


def strip_comments(text):
    """C/C++ text with its comments blanked (string and character literals kept as they are)."""
    out, j, n = [], 0, len(text)
    while j < n:
        ch = text[j]
        if ch in "\"'":
            k = j + 1
            while k < n and text[k] != ch and text[k] != "\n":
                k += 2 if text[k] == "\\" else 1
            out.append(text[j:k + 1])
            j = k + 1
        elif text.startswith("//", j):
            k = text.find("\n", j)
            j = n if k < 0 else k
        elif text.startswith("/*", j):
            k = text.find("*/", j + 2)
            k = n if k < 0 else k + 2
            out.append("\n" * text.count("\n", j, k))
            j = k
        else:
            out.append(ch)
            j += 1
    return "".join(out)


def cxx_part(part):
    """The literal one operand of a `+` chain spells (`"text"`, `std::string("text")`), or None."""
    m = re.fullmatch(r"\s*std::string\s*\((.*)\)\s*", part, re.S)
    return c_literal(m.group(1) if m else part)


def cxx_throw_texts(text):
    """The texts of the `throw std::X(...)` expressions in C++ source `text` (see cxx_throws)."""
    text = strip_comments(text)
    for m in re.finditer(r"\bthrow\s+std::(\w+)\s*\(", text):
        args = c_args(text, m.end())
        if not args or not args[0]:
            continue
        system = m.group(1) == "system_error"
        # the text's operands: the argument split at its top-level '+'
        parts, _ = c_split(args[-1] if system else args[0], 0, "+")
        out, lit = [], False
        for part in parts:
            t = cxx_part(part)
            if t is None:
                out.append("%s")
            else:
                out.append(t.replace("%", "%%"))
                lit = True
        if lit:
            yield "".join(out) + (": %s" if system else "")


def sh_calls(path):
    """(line, level, template, []) for enroot's common::err "..." and common::log WARN "..."."""
    text = open(path, errors="replace").read()
    for m in re.finditer(r'common::(err|log WARN)\s+"', text):
        j, depth = m.end(), 0
        while j < len(text):  # the closing quote, skipping quotes inside $( ... )
            if text[j] == "\\":
                j += 2
                continue
            if text.startswith("$(", j):
                depth += 1
                j += 2
                continue
            if text[j] == ")" and depth:
                depth -= 1
            elif text[j] == '"' and not depth:
                break
            j += 1
        level = "err" if m.group(1) == "err" else "warn"
        yield text.count("\n", 0, m.start()) + 1, level, text[m.end():j], []


def extract(tree, kind):
    """[(relpath, level, template, args)] with one entry per distinct (file, template)."""
    found = []

    def add(path, level, t, args):
        found.append((os.path.relpath(path, tree), level, t, args))

    if kind == "pyxis":
        for p in files(tree, (".c",)):
            for _, call, t, args in c_calls(p, ["slurm_error", "slurm_spank_log", "slurm_info"], lambda c: 0):
                add(p, {"slurm_error": "error", "slurm_spank_log": "log", "slurm_info": "info"}[call], t, args)
    elif kind == "enroot":
        for p in list(files(tree, (".sh", ".in"), "src")) + [os.path.join(tree, "enroot.in")] + \
                list(files(tree, (".sh",), "conf")):
            if os.path.isfile(p):
                for _, lvl, t, args in sh_calls(p):
                    add(p, lvl, t, args)
        for p in files(tree, (".c",), "bin"):
            calls = ["err", "errx", "warn", "warnx"]
            for _, call, t, args in c_calls(p, calls, lambda c: 1 if c in ("err", "errx") else 0):
                add(p, call, t, args)
    elif kind == "nccl":
        for p in files(tree, (".cc", ".cu", ".h", ".c", ".cpp"), "src"):
            for _, _, t, args in c_calls(p, ["WARN"], lambda c: 0):
                add(p, "warn", t, args)
        for extra in ("plugins", "ext-net"):
            if os.path.isdir(os.path.join(tree, extra)):
                for p in files(tree, (".cc", ".c", ".h", ".cpp"), extra):
                    for _, _, t, args in c_calls(p, ["WARN"], lambda c: 0):
                        add(p, "warn", t, args)
    elif kind == "aws-ofi-nccl":
        for p in files(tree, (".cpp", ".c", ".h"), ""):
            for _, _, t, args in c_calls(p, ["NCCL_OFI_WARN"], lambda c: 0):
                add(p, "warn", t, args)
            # The C++ parts throw: the plugin's entry points catch the exception and WARN its text
            # (`Caught exception in plugin init: %s`, listen, connect, accept, GIN's), so each
            # thrown text is a message of its own.
            for t in cxx_throws(p):
                add(p, "throw", t, [])
    elif kind == "munge":
        for p in files(tree, (".c",), "src"):
            for _, call, t, args in c_calls(p, ["log_err", "log_errno"], lambda c: 2):
                add(p, "error", t, args)
    elif kind == "slurm":
        for p in files(tree, (".c",), "src"):
            for _, call, t, args in c_calls(p, ["error", "fatal"], lambda c: 0):
                add(p, call, t, args)
    seen, out = set(), []
    for rel, level, t, args in found:
        if (rel, t) not in seen:
            seen.add((rel, t))
            out.append((rel, level, t, args))
    return out


def key_hash(template):
    return hashlib.sha256(template.encode("utf-8", "surrogateescape")).hexdigest()[:12]


# --- instantiating ---------------------------------------------------------------------------------

SPEC = re.compile(r"%(?:%|[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|j|t|L|q)?([diouxXeEfgGcspnm]))")


def sample_for(expr, conv):
    """A plausible value for a printf argument, from the expression's text."""
    e = (expr or "").lower()
    if conv in "diouxX":
        if "rank" in e or "dev" in e or "idx" in e or "index" in e:
            return "0"
        if "port" in e:
            return "29500"
        return "1" if conv in "diou" else "1f"
    if conv in "eEfgG":
        return "12"
    if conv == "p":
        return "0x7f3a2c000000"
    if conv == "c":
        return "x"
    if "strerror" in e or "errno" in e:
        return "Permission denied"
    if "ncclgeterrorstring" in e or "ncclresult" in e:
        return "unhandled system error"
    if "cudageterrorstring" in e or "cudaerr" in e:
        return "out of memory"
    if "image" in e:
        return "nvcr.io#nvidia/pytorch:24.01-py3"
    if "ifname" in e or "dev" in e and "name" in e or "if_name" in e:
        return "eth0"
    if "addr" in e or "host" in e:
        return "10.0.0.1<29500>"
    if "path" in e or "dir" in e or "file" in e or "source" in e or "target" in e or "mount" in e:
        return "/tmp/sample"
    if "name" in e:
        return "sample"
    return "sample"


def instantiate_c(template, args, values=()):
    """The template with its printf conversions replaced: values[i] (from the triage) for the i-th,
    else a sample chosen from the argument's expression."""
    n, k = 0, 0

    def sub(m):
        nonlocal n, k
        if m.group(0) == "%%":
            return "%"
        conv = m.group(1)
        if conv == "m":  # glibc's errno text (Slurm's error()/fatal()): takes no argument
            k += 1
            return values[k - 1] if k <= len(values) and values[k - 1] else "No such file or directory"
        n += m.group(0).count("*")
        expr = args[n] if n < len(args) else ""
        n += 1
        k += 1
        if k <= len(values) and values[k - 1]:
            return values[k - 1]
        return sample_for(expr, conv)

    t = SPEC.sub(sub, template)
    t = t.replace("\\n", "").replace("\\t", " ").replace('\\"', '"').replace("\\\\", "\\")
    return t.strip(), values[k:]


def instantiate_sh(template, values=()):
    k = 0

    def sub(m):
        nonlocal k
        k += 1
        if k <= len(values) and values[k - 1]:
            return values[k - 1]
        name = (m.group(1) or m.group(2) or "").lower()
        if name.startswith("#"):
            return "2"
        if name in ("?",):
            return "1"
        return sample_for(name, "s")

    t = re.sub(r"\$\{([^}]*)\}|\$([A-Za-z_?]\w*|\d)", sub, template)
    t = re.sub(r"\$\([^)]*\)", "/tmp", t)
    return t.replace('\\"', '"')


def framed(kind, rel, level, template, args, values=()):
    """The line as a job's output shows it (values: the triage's sample values, in order, an extra
    one for the errno text that err()/warn() append)."""
    if kind == "enroot" and not rel.endswith(".c"):
        t = instantiate_sh(template, values)
        return "slurmstepd: error: pyxis:     [%s] %s" % ("ERROR" if level == "err" else "WARN", t)
    msg, rest = instantiate_c(template, args, values)
    if kind == "pyxis":
        return ("slurmstepd: error: " + msg) if level == "error" else msg
    if kind == "enroot":
        prog = os.path.splitext(os.path.basename(rel))[0]
        if level in ("err", "warn"):
            msg += ": " + (rest[0] if rest and rest[0] else "Permission denied")
        return "slurmstepd: error: pyxis:     %s: %s" % (prog, msg)
    if kind == "nccl":
        return "node1:12345:12400 [0] NCCL WARN " + msg
    if kind == "aws-ofi-nccl":
        if level == "throw":
            msg = ofi_catcher(rel, template) + msg
        return "node1:12345:12400 [0] NCCL WARN NET/OFI " + msg
    if kind == "munge":
        return "munged: Error: " + msg
    if kind == "slurm":
        return "slurmstepd: %s: %s" % ("fatal" if level == "fatal" else "error", msg)
    return msg


def ofi_catcher(rel, text):
    """The WARN of aws-ofi-nccl 1.21 that prints `text`, thrown in file `rel` (the `catch` that
    reaches it first, read in 1.21.1): the connection manager's connector (`CM connect failed`), the
    RDMA plugin object's constructor (`rdma_init`, when the protocol is not set), GDRCopy's loader,
    GDAKI's context, GIN's other resources, the message buffer, the ID pool (taken at connect and
    accept), else the plugin's entry points, where devices, domains and endpoints are built (init,
    listen, connect, accept: shown as init, listen for the listener's address). A text thrown where
    no catch reaches it (a call NCCL makes after start) ends the process with libstdc++'s `terminate
    called after throwing` and `what():` lines instead: its triage row says so."""
    name = os.path.basename(rel)
    if rel.startswith("src/cm/"):
        if text in ("duplicate id insert", "Failed call to fi_av_insert"):
            return "CM connect failed: "
        if text == "Failed to get EP address":
            return "Caught exception in plugin listen: "
        return "Caught exception in plugin init: "
    if name == "nccl_ofi_rdma.cpp" and text.startswith("rdma plugin constructor:"):
        return "Caught exception in rdma_init: "
    if name == "nccl_ofi_idpool.cpp":
        return "Caught exception in plugin connect: "
    if name == "nccl_ofi_gdrcopy.cpp":
        return "Failed to initialize GDRCopy: "
    if "gin_gdaki" in name:
        return "gin GDAKI: createContext failed: "
    if "/gin/" in rel:
        return "Caught exception in GIN connect: "
    if name == "nccl_ofi_msgbuff.cpp":
        return "Failed to allocate and initialize message buffer: "
    return "Caught exception in plugin init: "


def area(kind, rel):
    """The NCCL area a file belongs to (the goals are set for init, net, transport, bootstrap, proxy)."""
    if kind not in ("nccl", "aws-ofi-nccl"):
        return "-"
    r = rel.lower()
    b = os.path.basename(r)
    if kind == "aws-ofi-nccl":
        return "net"
    if "bootstrap" in b:
        return "bootstrap"
    if "proxy" in b:
        return "proxy"
    if "/net" in r or "socket" in b or "ibvwrap" in b or "ibvsymbols" in b or "/plugin/net" in r or \
            b.startswith("net") or "/ext-net" in r or "gin" in b:
        return "net"
    if "/transport" in r:
        return "transport"
    if b.startswith("init") or b in ("collectives.cc", "channel.cc", "group.cc", "comm.cc") or "/graph/" in r:
        return "init"
    return "other"


# --- triage and explain ----------------------------------------------------------------------------


def load_triage(paths):
    """The triage of every file in `paths` (a directory: its *.tsv files, in name order); a key
    triaged in two files is an error."""
    tri, where = {}, {}
    if isinstance(paths, str):
        paths = [paths]
    files_ = []
    for path in paths:
        if os.path.isdir(path):
            files_ += sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".tsv"))
        elif os.path.isfile(path):
            files_.append(path)
    for path in files_:
        load_triage_file(path, tri, where)
    return tri


def load_triage_file(path, tri, where):
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 6 or cols[3] not in CLASSES:
            sys.exit("%s:%d: want source<TAB>file<TAB>hash<TAB>rule|benign|out<TAB>id|-<TAB>note" % (path, n))
        src, rel, h, cls, fid, note = cols[:6]
        if cls == "rule" and fid == "-":
            sys.exit("%s:%d: a rule entry names the finding ID" % (path, n))
        values = tuple(cols[6].split("|")) if len(cols) > 6 and cols[6] else ()
        if (src, rel, h) in tri:
            sys.exit("%s:%d: %s %s %s is triaged already in %s" % (path, n, src, rel, h, where[(src, rel, h)]))
        tri[(src, rel, h)] = (cls, fid, note, values)
        where[(src, rel, h)] = "%s:%d" % (path, n)


def explain(binary, line):
    p = subprocess.run([binary, "explain", "--json", "-"], input=line + "\n", capture_output=True,
                       text=True, timeout=60)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return None
    return [(f["id"], f["severity"]) for f in doc.get("findings", [])]


def self_test():
    """Checks the extraction on small inputs written here (no upstream text); exit 1 on a failure."""
    cases = [
        ('throw std::runtime_error("plain text");', ["plain text"]),
        ('throw std::runtime_error("joined: " + std::to_string(rc));', ["joined: %s"]),
        ('throw std::runtime_error(std::string("wrapped ") + name + " tail");', ["wrapped %s tail"]),
        ('throw std::runtime_error("a + b stays" + x);', ["a + b stays%s"]),
        ('throw std::runtime_error("quote \\" inside");', ['quote \\" inside']),
        ("throw std::runtime_error(c == '+' ? \"x\" : \"y\");", []),
        ('throw std::runtime_error("a" + std::string(1, \'"\') + "b");', ["a%sb"]),
        ('char q = \'"\'; // throw std::runtime_error("c");', []),
        ('throw std::runtime_error(\n\t"split "\n\t"over lines");', ["split over lines"]),
        ('throw std::system_error(errno, std::system_category(), "Failed to frob " + f);',
         ["Failed to frob %s: %s"]),
        ('throw new std::runtime_error("a pointer");', []),
        ('// throw std::runtime_error("in a comment");', []),
        ('/* throw std::runtime_error("in a block\n comment"); */ throw std::logic_error("after");', ["after"]),
        ('throw std::runtime_error("100% done");', ["100%% done"]),
        ('throw std::logic_error(str.str());', []),
    ]
    catchers = [
        ("src/cm/nccl_ofi_cm.cpp", "duplicate id insert", "CM connect failed: "),
        ("src/cm/nccl_ofi_cm.cpp", "Failed to get EP address", "Caught exception in plugin listen: "),
        ("src/cm/nccl_ofi_cm_resources.cpp", "Failed to post rx buffer", "Caught exception in plugin init: "),
        ("src/nccl_ofi_rdma.cpp", "rdma plugin constructor: x", "Caught exception in rdma_init: "),
        ("src/nccl_ofi_rdma.cpp", "RDMA domain constructor: x", "Caught exception in plugin init: "),
        ("src/nccl_ofi_sendrecv.cpp", "x", "Caught exception in plugin init: "),
        ("src/nccl_ofi_idpool.cpp", "x", "Caught exception in plugin connect: "),
        ("src/nccl_ofi_gdrcopy.cpp", "x", "Failed to initialize GDRCopy: "),
        ("src/rdma/gin/nccl_ofi_gin_gdaki.cpp", "x", "gin GDAKI: createContext failed: "),
        ("src/rdma/gin/nccl_ofi_gin_resources.cpp", "x", "Caught exception in GIN connect: "),
        ("src/nccl_ofi_net.cpp", "x", "Caught exception in plugin init: "),
    ]
    checks, bad = 0, 0

    def check(ok, what):
        nonlocal checks, bad
        checks += 1
        if not ok:
            bad += 1
            print("catalog self-test: " + what, file=sys.stderr)

    for src, want in cases:
        got = list(cxx_throw_texts(src))
        check(got == want, "%r gave %r, want %r" % (src, got, want))
    for rel, text, want in catchers:
        got = ofi_catcher(rel, text)
        check(got == want, "%s %r is caught by %r, want %r" % (rel, text, got, want))
    line = framed("aws-ofi-nccl", "src/nccl_ofi_net.cpp", "throw", "no %s here", [], ("luck",))
    check(line == "node1:12345:12400 [0] NCCL WARN NET/OFI Caught exception in plugin init: no luck here",
          "framed %r" % line)
    print("catalog self-test: %d checks, %d failed" % (checks, bad))
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["self-test"]:
        sys.exit(self_test())
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="+", metavar="SOURCE_TREE")
    ap.add_argument("--release", help="the release name to print (default: read from the tree)")
    ap.add_argument("--triage", action="append", metavar="TSV_OR_DIR",
                    help="triage files (default: every scripts/catalog/*.tsv)")
    ap.add_argument("--launchguard", default=os.path.join(ROOT, "target", "release", "launchguard"))
    ap.add_argument("--show", choices=["new", "miss", "all"], help="list templates: untriaged, rule misses, every one")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if not os.access(a.launchguard, os.X_OK):
        sys.exit("no launchguard binary at %s (cargo build --release -p launchguard)" % a.launchguard)
    tri = load_triage(a.triage or [TRIAGE_DIR])
    rows, summary, used_by_kind = [], [], {}
    for tree in a.trees:
        kind = detect(tree)
        if not kind:
            sys.exit("%s: not a source tree catalog.py knows" % tree)
        rel_name = a.release or release_of(tree, kind)
        temps = extract(tree, kind)
        lines = [framed(kind, rel, lvl, t, args, tri.get((kind, rel, key_hash(t)), (0, 0, 0, ()))[3])
                 for rel, lvl, t, args in temps]
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            got = list(ex.map(lambda ln: explain(a.launchguard, ln), lines))
        used = set()
        for (rel, lvl, t, _), line, finds in zip(temps, lines, got):
            h = key_hash(t)
            used.add((kind, rel, h))
            cls, fid, note, _ = tri.get((kind, rel, h), ("untriaged", "-", "", ()))
            ids = [f[0] for f in finds or []]
            if cls == "rule" or (cls == "benign" and fid != "-"):
                # a benign entry that names an ID (the info or follow-on finding explain gives
                # for it) is checked like a rule
                state = ("ruled" if cls == "rule" else "benign") if fid in ids else "rule-miss"
            elif cls == "untriaged":
                state = "flagged" if ids else "untriaged"
            else:
                state = cls
            shown = {"err": "error", "errx": "error", "fatal": "error", "warnx": "warn"}.get(lvl, lvl)
            rows.append(dict(source=kind, release=rel_name, file=rel, hash=h, level=shown,
                             area=area(kind, rel), triage=cls, want=fid, state=state, got=ids,
                             note=note, line=line))
        used_by_kind.setdefault(kind, set()).update(used)
        summary.append((kind, rel_name))
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return
    # An entry is stale when no tree of its source given here has its template (one triage file
    # serves several releases).
    stale = {kind: sorted(k for k in tri if k[0] == kind and k not in used)
             for kind, used in used_by_kind.items()}
    print_report(rows, stale)
    if a.show:
        want = {"new": ("untriaged", "flagged"), "miss": ("rule-miss",), "all": None}[a.show]
        print()
        for r in rows:
            if want is None or r["state"] in want:
                print("%s\t%s\t%s\t%s\t%s\t%s" % (r["source"], r["file"], r["hash"], r["state"],
                                                  ",".join(r["got"]) or "-", r["line"]))


GOAL_AREAS = ("init", "net", "transport", "bootstrap", "proxy")


def print_report(rows, stale):
    cols = ("found", "ruled", "benign", "out", "untriaged", "rule-miss", "flagged")
    print("%-13s %-10s %-10s %-6s" % ("source", "release", "area", "level") +
          "".join("%10s" % c for c in cols) + "   ruled+benign")
    groups = {}
    for r in rows:
        gs = [(r["source"], r["release"], "all", "all"), (r["source"], r["release"], r["area"], r["level"])]
        if r["source"] == "nccl" and r["area"] in GOAL_AREAS:
            gs.append((r["source"], r["release"], "5-areas", r["level"]))
        for g in gs:
            groups.setdefault(g, []).append(r)
    for g in sorted(groups, key=lambda g: (g[0], g[1], g[2] != "all", g[2], g[3])):
        rs = groups[g]
        if g[2] != "all" and g[2] == "-" and len({r["level"] for r in groups[(g[0], g[1], "all", "all")]}) == 1:
            continue
        c = {k: 0 for k in cols}
        c["found"] = len(rs)
        for r in rs:
            c[r["state"]] += 1
        pct = 100.0 * (c["ruled"] + c["benign"]) / max(1, c["found"])
        print("%-13s %-10s %-10s %-6s" % g + "".join("%10d" % c[k] for k in cols) + "   %5.1f%%" % pct)
    for kind, keys in sorted(stale.items()):
        if keys:
            print("%s: %d triage entries match no template of the trees given (gone or changed)" % (kind, len(keys)))


if __name__ == "__main__":
    main()
