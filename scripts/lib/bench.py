"""Pieces the benchmark scripts share (scripts/bench-launch.py, scripts/bench-builds.py)."""
import contextlib
import os


def trimmed(xs, cut=0.2):
    """Mean of the middle values, `cut` dropped at each end (same unit as `xs`)."""
    xs = sorted(xs)
    k = int(len(xs) * cut)
    mid = xs[k:len(xs) - k] or xs
    return sum(mid) / len(mid)


@contextlib.contextmanager
def plugstack_dropin(path):
    """Yields `put(line)`: writes `line` as the whole plugstack drop-in at `path` (renamed into place,
    so a concurrent srun reads the old or the new file, never half of one), or removes the drop-in
    when `line` is None. On exit the drop-in is put back as it was, or removed if there was none."""
    def put(line):
        if line is None:
            if os.path.exists(path):
                os.remove(path)
            return
        with open(path + ".tmp", "w") as f:
            f.write(line)
        os.replace(path + ".tmp", path)

    saved = open(path).read() if os.path.exists(path) else None
    try:
        yield put
    finally:
        put(saved)
