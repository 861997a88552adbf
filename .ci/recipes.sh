#!/usr/bin/env bash
# Runs shell recipes of README.md exactly as printed. A recipe is the ```sh block right after
# a line "<!-- ci: recipe NAME ... -->"; it is taken as it stands (less the indentation of a
# list item) and run from the repository's root with bash -euo pipefail, in a process group of
# its own, under a timeout. A recipe must stop what it starts and leave the work tree as it
# found it: a process of its group still running when it ends, or a file it added or changed
# that git does not ignore, fails it.
#
#   .ci/recipes.sh NAME[:TIMEOUT_SECONDS]...     (default timeout 600 s)
set -euo pipefail
cd "$(dirname "$0")/.."

# extract NAME prints the recipe's block, dedented; nothing if there is none.
extract() {
  awk -v name="$1" '
    found == 0 && $0 ~ "^[ \t]*<!-- ci: recipe " name "([ \t]|-->)" { found = 1; next }
    found == 1 {
      if (match($0, /^[ \t]*```sh[ \t]*$/)) { indent = index($0, "`") - 1; found = 2; next }
      exit 1   # the marker must be right above the block
    }
    found == 2 {
      if ($0 ~ /^[ \t]*```[ \t]*$/) { found = 3; exit 0 }
      print substr($0, 1, indent) ~ /^[ \t]*$/ ? substr($0, indent + 1) : $0
    }
    END { if (found != 3) exit 1 }
  ' README.md
}

status() { git status --porcelain --untracked-files=all; }

failed=0
for spec in "$@"; do
  name=${spec%%:*}
  limit=600
  [ "$name" != "$spec" ] && limit=${spec#*:}
  script=$(mktemp)
  if ! extract "$name" >"$script" || [ ! -s "$script" ]; then
    echo "recipe $name: no \`\`\`sh block right after <!-- ci: recipe $name --> in README.md"
    rm -f "$script"; failed=1; continue
  fi
  echo "-- recipe $name (timeout ${limit}s), as README.md prints it:"
  sed 's/^/   | /' "$script"
  before=$(status)
  start=$SECONDS
  # timeout makes itself the leader of a new process group and signals the whole group on
  # expiry; its pid is that group's id, so what the recipe leaves behind can be found.
  timeout --kill-after=15 "$limit" bash -euo pipefail "$script" </dev/null &
  group=$!
  rc=0
  wait "$group" || rc=$?
  if [ "$rc" -eq 124 ]; then
    echo "recipe $name: timed out after ${limit}s"
  fi
  # What the recipe killed may take a few seconds to exit (the JVM runs its shutdown hooks).
  for _ in $(seq 30); do pgrep -g "$group" >/dev/null || break; sleep 1; done
  if left=$(pgrep -g "$group" -a); then
    echo "recipe $name: left running, so the recipe does not stop what it starts:"
    echo "$left"
    kill -TERM -- "-$group" 2>/dev/null || true
    sleep 5
    kill -KILL -- "-$group" 2>/dev/null || true
    [ "$rc" -eq 0 ] && rc=1
  fi
  after=$(status)
  if [ "$before" != "$after" ]; then
    echo "recipe $name: changed the work tree (git status before and after):"
    diff <(echo "$before") <(echo "$after") || true
    [ "$rc" -eq 0 ] && rc=1
  fi
  rm -f "$script"
  if [ "$rc" -ne 0 ]; then
    echo "recipe $name: FAILED (exit status $rc) after $((SECONDS - start))s"
    failed=1
  else
    echo "recipe $name: ok in $((SECONDS - start))s"
  fi
done
exit "$failed"
