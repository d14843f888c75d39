# Sourced by the benchmark scripts that take the median of several rounds (dbus, boards).
#
#   printf '%s\n' 3 1 2 | median        # 2
#
# The median of the numbers on stdin, one per line: the middle value as written for an odd
# count, the mean of the middle two (three decimals) for an even one.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
