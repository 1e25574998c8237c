#!/bin/sh
# Totals the words of every text file below a directory, the way a quick
# maintenance script does it: one `wc` per file inside a shell loop.
# usage: word_totals.sh DIR
total=0
for f in $(find "$1" -type f -name '*.txt' | sort); do
	words=$(wc -w < "$f")
	total=$((total + words))
done
echo "$total words"
