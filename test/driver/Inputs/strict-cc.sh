#!/bin/sh
# The system C compiler with warnings as errors, for the plan.c attnc writes.
exec cc -Wall -Wextra -Werror "$@"
