# shellcheck shell=bash
# Sourced by scripts/test-node.sh and scripts/test-vm.sh: the manual's own install lines.
#
#   readme_cmd REGEX   the one command line of docs/install.md's "Install (admins)" section (its sh
#                      blocks and inline `code`) matching REGEX, trailing comment removed; fails (and
#                      says so on stderr) when there is not exactly one. Run from the repository root.
readme_cmd() {
  local lines n
  lines=$(awk '/^## Install \(admins\)/ { on = 1; next } /^### From source/ { on = 0 } on' docs/install.md |
    awk '/^```sh/ { c = 1; next } /^```/ { c = 0 } c { print; next } { while (match($0, /`[^`]+`/)) { print substr($0, RSTART + 1, RLENGTH - 2); $0 = substr($0, RSTART + RLENGTH) } }' |
    sed 's/[[:space:]]\{2,\}#.*$//; s/[[:space:]]*$//' | grep -E -- "$1" | sort -u)
  n=$(printf '%s' "$lines" | grep -c . || true)
  if [ "$n" != 1 ]; then
    echo "docs/install.md's Install section has $n lines matching '$1'" >&2
    return 1
  fi
  printf '%s\n' "$lines"
}
