#!/bin/bash
# Prints every long option that Slurm's srun, sbatch or salloc accepts, as "name required|none|optional",
# probed from the binary's own getopt_long (hidden aliases such as srun's --tasks-per-node included).
# Used to write core/tests/data/slurm-options/<release>-<tool>.txt, which the argv tables are tested
# against. Usage: scripts/slurm-options.sh srun|sbatch|salloc [CHROOT]   (e.g. /srv/lg-trixie)
#
# Safety: srun is run without a command, sbatch with an empty script, both sbatch and salloc with a
# non-existent partition and mutually exclusive memory options, so nothing is ever allocated.
# Candidates: the strings of libslurmfull and of the binary, every suffix at a '-' or after the first
# letter (the compiler merges "tasks-per-node" into "ntasks-per-node"), the names in --help, and every
# name the tables of core/tests/data/slurm-options/ already hold for any release (26.05's srun has
# --ntasks-per-gpu and --extra in neither its strings nor its --help). A candidate is kept only when
# the binary itself accepts it.
set -u
tool=$1
root=${2:-}
run() { if [ -n "$root" ]; then timeout 5 chroot "$root" "$tool" "$@"; else timeout 5 "$tool" "$@"; fi; }
guard=()
[ "$tool" != srun ] && guard=(-p lgnopart --mem=1 --mem-per-cpu=1)
lib=$(ls "$root"/usr/lib/*/slurm-wlm/libslurmfull.so "$root"/usr/lib*/slurm/libslurmfull.so 2>/dev/null | head -1)
bin=$root$(if [ -n "$root" ]; then chroot "$root" sh -c "command -v $tool"; else command -v "$tool"; fi)
help=$(cd /tmp && run --help 2>&1 | grep -o -- '--[a-z][a-z0-9-]*' | sed 's/^--//' | sort -u)
known=$(cat "$(dirname "$0")"/../core/tests/data/slurm-options/*.txt 2>/dev/null | grep -v '^#' | cut -d' ' -f1)
{ strings "$lib" "$bin"; echo "$help"; echo "$known"; } | grep -xE '[a-z][a-z0-9-]{1,30}' | sort -u |
    awk '{ print; for (i = 2; i <= length($0); i++) if (i == 2 || substr($0, i - 1, 1) == "-") { s = substr($0, i); if (length(s) > 2 && s ~ /^[a-z]/) print s } }' |
    sort -u | grep -vxE 'help|usage|version' |
while read -r c; do
    a=$(cd /tmp && run "${guard[@]}" "--$c" </dev/null 2>&1 | head -3)
    if grep -q "unrecognized option\|is ambiguous" <<<"$a"; then continue; fi
    if n=$(grep -o "option '--[a-z0-9-]*' requires an argument" <<<"$a"); then
        echo "$(cut -d"'" -f2 <<<"$n" | sed 's/^--//') required"; continue
    fi
    b=$(cd /tmp && run "${guard[@]}" "--$c=x" </dev/null 2>&1 | head -3)
    if n=$(grep -o "option '--[a-z0-9-]*' doesn't allow an argument" <<<"$b"); then
        echo "$(cut -d"'" -f2 <<<"$n" | sed 's/^--//') none"; continue
    fi
    # Accepted with and without a value: an optional argument, or an abbreviation of one; only names
    # that --help prints or an earlier release's table holds are kept (an abbreviation cannot be told
    # from an exact name here).
    grep -qx -- "$c" <<<"$help"$'\n'"$known" && echo "$c optional"
done | sort -u
printf '%s none\n' help usage version
