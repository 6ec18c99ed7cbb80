# same_trees.sh - sourced by pattern_trees.sh and random_trees.sh: Files
# compared byte for byte, each difference shown, one verdict at the end.
# The sourcing script sets $work (its scratch directory) first.
failed=0

# same REFERENCE DIR LABEL: DIR holds what REFERENCE holds, byte for byte
# (else the difference is shown and finish fails).
same() {
    if diff -r "$1" "$2" > "$work/diff.txt" 2>&1; then
        echo "same: $3"
    else
        echo "DIFFERENT: $3" >&2
        cat "$work/diff.txt" >&2
        failed=1
    fi
}

# Exit 1 if any pair differed; else remove $work and say so.
finish() {
    [ "$failed" -eq 0 ] || exit 1
    rm -rf "$work"
    echo "PASS: every File is the same"
}
