#!/usr/bin/env python3
"""Reads the log of cargo test runs that scripts/test.sh collects and prints its closing lines.

    testlog.py summary LOG [--failed-stage STAGE] [--rerun-env 'LG_SLURM_TESTS=1 …'] [--rerun CMD]
    testlog.py self-test

`summary` prints `tests: N passed, N failed, N skipped` (from every `test result:` line of libtest),
naming the skipped tests the run accepts (`ALLOWED_SKIPS`: the real-Pyxis test when Pyxis is not
installed) and the ones it does not. With `--failed-stage`, it also prints which stage failed and
the command that reruns exactly the failed tests: cargo's own hint (`error: test failed, to rerun
pass `-p launchguard --test agent``) runs zero tests without the cluster variables, so the line is
`RERUN_ENV cargo test --release -p … --test … -- NAME… --exact`; a stage that failed outside cargo
test is rerun with `--rerun CMD`. Exit status: 1 when a test failed or a test was skipped that is
not allowed, else 0.

The parsing is pure (`parse`, `render`) and tested on canned logs by `self-test`.
"""
import re
import sys

# Ignore reasons (libtest prints `test NAME ... ignored, REASON`) of the skips the run accepts, and why.
ALLOWED_SKIPS = {
    "real Pyxis:": "real Pyxis runs on the host cluster only, where scripts/pyxis.sh installed it (then LG_PYXIS=1)",
}

# libtest's line, and the same line without `ignored` that the script stages print
# (`test result: ok. 66 passed; 0 failed; (scripts/test-package.sh)`).
RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;(?: (\d+) ignored)?")
FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$")
IGNORED = re.compile(r"^test (\S+) \.\.\. ignored(?:, (.*))?$")
HINT = re.compile(r"error: test failed, to rerun pass `([^`]*)`")


def parse(text):
    """Counts and names from a log: dict(passed, failed, skipped, failed_tests[], hint, ignored[(name, reason)])."""
    r = {"passed": 0, "failed": 0, "skipped": 0, "failed_tests": [], "hint": None, "ignored": []}
    for line in text.splitlines():
        line = line.rstrip("\r")
        m = RESULT.match(line)
        if m:
            r["passed"] += int(m.group(1))
            r["failed"] += int(m.group(2))
            r["skipped"] += int(m.group(3) or 0)
            continue
        m = FAILED.match(line)
        if m and m.group(1) not in r["failed_tests"]:
            r["failed_tests"].append(m.group(1))
            continue
        m = IGNORED.match(line)
        if m:
            r["ignored"].append((m.group(1), m.group(2) or ""))
            continue
        m = HINT.search(line)
        if m:
            r["hint"] = m.group(1)
    return r


def allowed(reason):
    """The accepted-skip explanation for an ignore reason, or None."""
    for prefix, why in ALLOWED_SKIPS.items():
        if reason.startswith(prefix):
            return why
    return None


def render(r, stage=None, rerun_env="", rerun=None):
    """(lines, exit status) for a parsed log; `stage` set when the run failed there."""
    lines = []
    ok_skips = [(n, allowed(why)) for n, why in r["ignored"] if allowed(why)]
    bad_skips = [(n, why) for n, why in r["ignored"] if not allowed(why)]
    # The counts alone on their line: the plain closing line CI reads (`tests: N passed, N failed,
    # N skipped`); what was skipped and why goes on the next line.
    lines.append(f"tests: {r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped")
    counts = ""
    if ok_skips:
        # One entry per test and reason, with how many runs skipped it (one per cluster).
        seen = {}
        for n, why in ok_skips:
            seen[(n, why)] = seen.get((n, why), 0) + 1
        counts = "test: accepted skips: " + ", ".join(
            f"{n} ({why})" + (f" x{k}" if k > 1 else "") for (n, why), k in seen.items()
        )
        lines.append(counts)
    # A skip without its `test … ignored` line (a libtest that does not print it) counts as not allowed.
    unexplained = r["skipped"] - len(ok_skips) - len(bad_skips)
    if bad_skips or unexplained > 0:
        named = ", ".join(f"{n} ({why or 'no reason given'})" for n, why in bad_skips)
        lines.append(
            "test: FAILED: every test must run, and these were skipped: "
            + (named or f"{unexplained} unnamed")
            + "; run them with LG_SLURM_TESTS=1 and the clusters up (scripts/cluster.sh up, scripts/multinode.sh up 3)"
        )
    if stage:
        lines.append(f"test: FAILED in stage: {stage}")
        if r["failed_tests"] and r["hint"]:
            env = (rerun_env + " ") if rerun_env else ""
            names = " ".join(r["failed_tests"])
            lines.append(f"test: rerun the failed test(s): {env}cargo test --release {r['hint']} -- {names} --exact")
        elif rerun:
            lines.append(f"test: rerun the stage: {rerun}")
    status = 1 if (r["failed"] > 0 or bad_skips or unexplained > 0 or stage) else 0
    return lines, status


CANNED_FAIL = """\
     Running tests/agent.rs (target/release/deps/agent-0123)

running 3 tests
test a_users_connection_flood ... ok
test slurm_cluster_tests ... ignored, Slurm cluster tests skipped: they need root
test fat_reports_are_clipped_so_memory_stays_bounded ... FAILED

failures:

---- fat_reports_are_clipped_so_memory_stays_bounded stdout ----
thread 'fat_reports_are_clipped_so_memory_stays_bounded' panicked at node-agent/tests/agent.rs:398:9:
BrokenPipeError: [Errno 32] Broken pipe

failures:
    fat_reports_are_clipped_so_memory_stays_bounded

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 3.01s

error: test failed, to rerun pass `-p launchguard --test agent`
"""

CANNED_PASS = """\
running 2 tests
test real_pyxis_in_both_orders ... ignored, real Pyxis: runs on the host cluster only, with LG_PYXIS=1
test next_to_pyxis ... ok
test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 1.00s
running 5 tests
test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""


def self_test():
    r = parse(CANNED_FAIL)
    assert (r["passed"], r["failed"], r["skipped"]) == (1, 1, 1), r
    lines, status = render(r, stage="cargo test --release --workspace", rerun_env="LG_SLURM_TESTS=1 LG_PYXIS=0")
    assert lines[0] == "tests: 1 passed, 1 failed, 1 skipped", lines
    assert "slurm_cluster_tests (Slurm cluster tests skipped: they need root)" in lines[1], lines
    assert lines[2] == "test: FAILED in stage: cargo test --release --workspace", lines
    assert lines[3] == (
        "test: rerun the failed test(s): LG_SLURM_TESTS=1 LG_PYXIS=0 cargo test --release "
        "-p launchguard --test agent -- fat_reports_are_clipped_so_memory_stays_bounded --exact"
    ), lines
    assert status == 1
    r = parse(CANNED_PASS)
    lines, status = render(r)
    assert status == 0, lines
    assert lines == [
        "tests: 6 passed, 0 failed, 1 skipped",
        "test: accepted skips: real_pyxis_in_both_orders "
        "(real Pyxis runs on the host cluster only, where scripts/pyxis.sh installed it (then LG_PYXIS=1))",
    ], lines
    # A stage that failed outside cargo test: its own command.
    lines, status = render(parse(""), stage="cargo clippy -D warnings", rerun="cargo clippy --release --workspace --all-targets -- -D warnings")
    assert lines[0] == "tests: 0 passed, 0 failed, 0 skipped", lines
    assert lines[2] == "test: rerun the stage: cargo clippy --release --workspace --all-targets -- -D warnings", lines
    assert status == 1
    # The script stages' own result lines count too (test-package.sh, test-node.sh).
    r = parse("test result: ok. 66 passed; 0 failed; (scripts/test-package.sh)\n"
              "test result: FAILED. 34 passed; 1 failed; (scripts/test-node.sh, 80 s)\n")
    assert (r["passed"], r["failed"], r["skipped"]) == (100, 1, 0), r
    print("testlog.py self-test: ok")


def main(argv):
    if argv[1:2] == ["self-test"]:
        self_test()
        return 0
    if len(argv) < 3 or argv[1] != "summary":
        print(__doc__, file=sys.stderr)
        return 2
    args = argv[3:]
    opts = {}
    while args:
        k = args.pop(0)
        if k in ("--failed-stage", "--rerun-env", "--rerun") and args:
            opts[k] = args.pop(0)
        else:
            print(f"testlog.py: unknown argument {k!r}", file=sys.stderr)
            return 2
    try:
        with open(argv[2], encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        text = ""
        print(f"testlog.py: cannot read {argv[2]}: {e}", file=sys.stderr)
    lines, status = render(parse(text), opts.get("--failed-stage"), opts.get("--rerun-env", ""), opts.get("--rerun"))
    for line in lines:
        print(line)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
