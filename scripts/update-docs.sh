#!/usr/bin/env bash
# Copies the references generated from the .td files (add_mlir_doc, built into
# build/docs/attn/) to docs/reference/, where the docs.* tests compare them.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target mlir-doc
mkdir -p docs/reference
cp build/docs/attn/AttnDialect.md build/docs/attn/AttnInterfaces.md \
   build/docs/attn/AttnPasses.md docs/reference/
