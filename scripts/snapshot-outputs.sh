#!/usr/bin/env bash
# Writes every output trainjobs generates from this repository into OUT_DIR: the rendered
# manifests of each example job, the offline preview of each stack (job and infra projects),
# the CRDs, the Dockerfiles and `validate`'s report. Two snapshots compared with `diff -r`
# show that a change (a refactor, a dependency bump) left every output as it was.
#
#   scripts/snapshot-outputs.sh OUT_DIR            # the working tree
#   scripts/snapshot-outputs.sh --ref REF OUT_DIR  # a git ref, run with its own code
#   scripts/snapshot-outputs.sh --compare REF      # both, then diff -r (exit 1 on a difference)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}

snapshot() {  # snapshot TREE OUT_DIR
    local tree=$1 out=$2
    mkdir -p "$out"
    # PYTHONPATH puts TREE's package before the virtualenv's editable install, so each tree
    # runs its own code.
    run() { (cd "$tree" && PYTHONPATH="$tree" "$python" -c \
        'import sys; from trainjobs.cli import main; sys.exit(main(sys.argv[1:]))' "$@"); }
    run validate "$tree"/jobs/*.yaml > "$out/validate.txt" 2>&1
    for job in "$tree"/jobs/*.yaml; do
        run render "$job" --out "$out/render/$(basename "$job" .yaml)" > /dev/null
    done
    for stack_file in "$tree"/Pulumi.*.yaml; do
        stack=$(basename "$stack_file" .yaml); stack=${stack#Pulumi.}
        run preview --stack "$stack" --out "$out/preview/$stack" > /dev/null
    done
    for stack_file in "$tree"/infra/Pulumi.*.yaml; do
        stack=$(basename "$stack_file" .yaml); stack=${stack#Pulumi.}
        run preview --stack "$stack" --project infra --out "$out/preview-infra/$stack" > /dev/null
    done
    run crds --out "$out/crds" > /dev/null
    run dockerfiles --out "$out/images" > /dev/null
}

export_ref() {  # export_ref REF DIR
    mkdir -p "$2"
    git -C "$repo" archive "$1" | tar -x -C "$2"
}

case "${1:-}" in
    --ref)
        [ $# -eq 3 ] || { echo "usage: $0 --ref REF OUT_DIR" >&2; exit 2; }
        tree=$(mktemp -d); trap 'rm -rf "$tree"' EXIT
        export_ref "$2" "$tree"
        snapshot "$tree" "$(realpath -m "$3")" ;;
    --compare)
        [ $# -eq 2 ] || { echo "usage: $0 --compare REF" >&2; exit 2; }
        work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
        export_ref "$2" "$work/tree"
        snapshot "$work/tree" "$work/base"
        snapshot "$repo" "$work/head"
        # Paths inside validate's report name the tree they ran in.
        sed -i "s#$work/tree#$repo#g" "$work/base/validate.txt"
        if diff -r "$work/base" "$work/head"; then
            echo "outputs identical to $2 ($(find "$work/head" -type f | wc -l) files)"
        else
            echo "outputs differ from $2" >&2; exit 1
        fi ;;
    -*|"") echo "usage: $0 [--ref REF] OUT_DIR | --compare REF" >&2; exit 2 ;;
    *) snapshot "$repo" "$(realpath -m "$1")" ;;
esac
