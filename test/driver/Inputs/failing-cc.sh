#!/bin/sh
# A C compiler that dies halfway through linking: it leaves a partial file at
# its -o path and fails, as a killed or out-of-disk linker would.
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then
    echo "partial" > "$2"
  fi
  shift
done
echo "failing-cc: out of disk space" >&2
exit 1
