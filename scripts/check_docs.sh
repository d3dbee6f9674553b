#!/usr/bin/env bash
# check_docs.sh - check the relative links of the project's Markdown files.
#
# Every link [text](target) and image ![alt](target) in README.md and
# docs/**/*.md whose target is relative (not http:, https:, mailto: or
# another scheme) must name an existing file or directory, relative to the
# file that holds the link; a target with #anchor, or a bare #anchor (the
# same file), must name a heading of that Markdown file, as GitHub makes
# anchors: the heading's text with links reduced to their text, lowercased,
# every character other than a letter, digit, space, '-' or '_' removed,
# spaces turned into '-', and -1, -2, ... appended to repeated anchors.
# Explicit <a name="..."> / id="..." anchors count too.  Links inside code
# (fenced blocks and `inline code`) are not links and are skipped.
#
# Usage: scripts/check_docs.sh [FILE.md ...]   (default: README.md docs/**/*.md)
# Prints one line per broken link, FILE:LINE: target: why, and exits 1 if
# there is any, 0 otherwise.  Needs bash, find and awk only.
set -euo pipefail
export LC_ALL=C

if [ $# -gt 0 ]; then
	files=()
	for f in "$@"; do
		case "$f" in /*) files+=("$f") ;; *) files+=("$PWD/$f") ;; esac
	done
	cd "$(dirname "$0")/.."
else
	cd "$(dirname "$0")/.."
	files=(README.md)
	while IFS= read -r f; do files+=("$f"); done < <(find docs -name '*.md' | sort)
fi

# anchors FILE: the anchors of a Markdown file, one per line
anchors() {
	awk '
	/^[ \t]*(```|~~~)/ { fence = !fence; next }
	fence { next }
	/^#+[ \t]/ && match($0, /^#+/) && RLENGTH <= 6 {
		t = $0
		sub(/^#+[ \t]+/, "", t); sub(/[ \t]+#+[ \t]*$/, "", t); sub(/[ \t]+$/, "", t)
		while (match(t, /!?\[[^]]*\]\([^)]*\)/)) {
			s = substr(t, RSTART, RLENGTH); sub(/^!?\[/, "", s); sub(/\]\(.*$/, "", s)
			t = substr(t, 1, RSTART - 1) s substr(t, RSTART + RLENGTH)
		}
		t = tolower(t)
		gsub(/[^a-z0-9 _\200-\377-]/, "", t)
		gsub(/ /, "-", t)
		a = t
		if (a in seen) a = a "-" seen[t]
		seen[t]++
		print a
	}
	{
		line = $0
		while (match(line, /<a[ \t]+(name|id)="[^"]*"/)) {
			s = substr(line, RSTART, RLENGTH); sub(/^[^"]*"/, "", s); sub(/"$/, "", s)
			print s
			line = substr(line, RSTART + RLENGTH)
		}
	}' "$1"
}

# links FILE: LINE<TAB>TARGET for every link outside code
links() {
	awk '
	/^[ \t]*(```|~~~)/ { fence = !fence; next }
	fence { next }
	{
		line = $0
		gsub(/``[^`]*``/, "", line)
		gsub(/`[^`]*`/, "", line)
		while (match(line, /\]\([^)]*\)/)) {
			s = substr(line, RSTART + 2, RLENGTH - 3)
			sub(/^[ \t]+/, "", s); sub(/[ \t].*$/, "", s)     # drop a "title"
			sub(/^</, "", s); sub(/>$/, "", s)
			if (s != "") print NR "\t" s
			line = substr(line, RSTART + RLENGTH)
		}
	}' "$1"
}

bad=0
checked=0
declare -A anchor_cache=()
for f in "${files[@]}"; do
	[ -f "$f" ] || { echo "$f: no such file"; bad=$((bad + 1)); continue; }
	dir=$(dirname "$f")
	while IFS=$'\t' read -r ln target; do
		case "$target" in
			*://* | mailto:* | tel:* | data:*) continue ;;
		esac
		checked=$((checked + 1))
		path=${target%%#*}
		anchor=""
		[[ "$target" == *"#"* ]] && anchor=${target#*#}
		if [ -z "$path" ]; then
			dest=$f
		elif [[ "$path" == /* ]]; then
			dest=".$path"
		else
			dest="$dir/$path"
		fi
		if [ ! -e "$dest" ]; then
			echo "$f:$ln: $target: $dest does not exist"
			bad=$((bad + 1))
			continue
		fi
		[ -n "$anchor" ] || continue
		if [[ "$dest" != *.md ]] || [ -d "$dest" ]; then
			echo "$f:$ln: $target: an anchor into a file that is not Markdown"
			bad=$((bad + 1))
			continue
		fi
		key=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")
		if [ -z "${anchor_cache[$key]+x}" ]; then
			anchor_cache[$key]=$'\n'$(anchors "$dest")$'\n'
		fi
		if [[ "${anchor_cache[$key]}" != *$'\n'"$anchor"$'\n'* ]]; then
			echo "$f:$ln: $target: no heading with anchor #$anchor in $dest"
			bad=$((bad + 1))
		fi
	done < <(links "$f")
done

if [ "$bad" -gt 0 ]; then
	echo "check_docs: $bad broken link(s) of $checked relative link(s) in ${#files[@]} file(s)"
	exit 1
fi
echo "check_docs: ok, $checked relative link(s) in ${#files[@]} file(s)"
