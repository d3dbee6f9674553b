#!/bin/bash
# scripts/test_replay_cli.sh: the easeml-replay command line checks its
# input.  Every bad option value must exit with status 2 and say why (it
# used to run with atoi's guess: --tenants 4294967297 ran 1 tenant,
# --thresholds 0.1,,x ran with 0 for x); CSVs accept subnormal numbers and
# reject repeated row ids; identical rows are removed and counted before
# tenants are drawn; --overhead charges every run; choose prints the
# default policy's choice on a history.
# Run by scripts/test.sh unit; needs only the built ./easeml-replay.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${EASEML_REPLAY:-./easeml-replay}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0

fail() {
	echo "not ok: $*" >&2
	fails=$((fails + 1))
}

# A 6 x 3 quality matrix: rows 4-6 repeat row 3 (two copies to remove).
cat >"$tmp/q.csv" <<'EOF'
id,a,b,c
1,0.9,0.5,0.6
2,0.2,0.8,0.3
3,0.1,0.5,0.95
4,0.1,0.5,0.95
5,0.1,0.5,0.95
6,0.3,0.4,1e-308
EOF

# rejected: exit status 2 and a message naming the option
reject() {
	local want=$1
	shift
	checks=$((checks + 1))
	out=$("$BIN" --quality "$tmp/q.csv" --draws 1 --tenants 2 "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -ne 2 ]; then
		fail "easeml-replay $* exited $rc, want 2 ($out)"
	elif ! grep -qF -- "$want" <<<"$out"; then
		fail "easeml-replay $*: message \"$out\" does not mention \"$want\""
	fi
}

reject "--tenants must be an integer" --tenants 4294967297
reject "--tenants must be an integer" --tenants 12x
reject "--tenants must be an integer" --tenants 0
reject "--draws must be an integer" --draws ""
reject "--thresholds: empty item" --thresholds 0.1,,x
reject "--thresholds must be a number" --thresholds 0.1,x
reject "--thresholds must be a number" --thresholds 1.5
reject "--thresholds: empty item" --thresholds 0.1,
reject "--shrinkage must be a number" --shrinkage nan
reject "--shrinkage must be a number" --shrinkage -0.5
reject "--noise-var must be a number" --noise-var NaN
reject "--noise-var must be a number" --noise-var -1e-4
reject "--stop-loss must be a number" --stop-loss nan
reject "--stop-loss must be a number" --stop-loss -0.01
reject "--overhead must be a number" --overhead -1
reject "--overhead must be a number" --overhead inf
reject "--devices must be an integer" --devices 1,0
reject "--seed must be an integer" --seed -3
reject "--policies: empty item" --policies popular,
reject "baseline \"rr\" is not one of --policies" --policies popular --baselines rr
reject "needs a value" --overhead
reject "--auto-candidates: auto candidates: \"default\" is auto itself" --auto-candidates popular,default
reject "--auto-candidates: auto candidates \"popular,,rr\": 1 to 8 specs" --auto-candidates popular,,rr
reject "--auto-candidates: auto candidates \",rr\": 1 to 8 specs" --auto-candidates ,rr
reject "--auto-candidates: unknown policy \"nope\"" --auto-candidates popular,nope
reject "--auto-draws must be an integer" --auto-draws 0
reject "--auto-draws must be an integer" --auto-draws 65

# accepted: the subnormal cell parses, identical rows are counted
checks=$((checks + 1))
out=$("$BIN" --quality "$tmp/q.csv" --draws 1 --tenants 2 --policies popular 2>&1)
if [ $? -ne 0 ]; then
	fail "valid run failed: $out"
elif ! grep -q "identical rows removed before drawing tenants: 2 (4 distinct rows left)" <<<"$out"; then
	fail "identical rows not reported: $out"
fi

# --auto-candidates: default chooses among the given specs and says so;
# with 2 distinct prior rows (fewer than 4) it runs the fallback, popular
checks=$((checks + 1))
out=$("$BIN" --quality "$tmp/q.csv" --draws 1 --tenants 2 --policies default \
	--auto-candidates rr,popular 2>&1)
if [ $? -ne 0 ] || ! grep -Eq '^AUTO devices=1 policy=default rr=0 popular=0 fallback:popular=1$' <<<"$out"; then
	fail "--auto-candidates rr,popular: $out"
fi

# repeated row id
checks=$((checks + 1))
printf 'id,a\n7,0.5\n7,0.6\n' >"$tmp/dup.csv"
out=$("$BIN" --quality "$tmp/dup.csv" --draws 1 --tenants 1 2>&1)
if [ $? -eq 0 ] || ! grep -q 'row id "7" already appeared on line 2' <<<"$out"; then
	fail "repeated row id accepted: $out"
fi

# --overhead 1 with unit costs: every run takes 2 s, so every time to a
# loss target doubles
time_to() {
	"$BIN" --quality "$tmp/q.csv" --draws 1 --tenants 2 --policies popular \
		--thresholds 0 "$@" | awk '$1 == "TIME" { sub("median=", "", $5); print $5 }'
}
checks=$((checks + 1))
t0=$(time_to)
t1=$(time_to --overhead 1)
if [ -z "$t0" ] || ! awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(a > 0 && b == 2 * a) }'; then
	fail "--overhead 1 with unit costs: time $t1, want 2 x $t0"
fi

# --runs: one line per run, as many as the replay says it ran, and the
# times to the loss targets recomputed from them match --times (checked by
# oracle_interleave.py, which exits non-zero on a mismatch); the oracle's
# own arithmetic is tested on hand-made cases.
checks=$((checks + 1))
cat >"$tmp/q8.csv" <<'EOF2'
id,a,b,c,d
1,0.9,0.5,0.6,0.7
2,0.2,0.8,0.3,0.4
3,0.1,0.5,0.95,0.6
4,0.3,0.4,0.2,0.8
5,0.6,0.7,0.5,0.3
6,0.5,0.6,0.9,0.2
7,0.8,0.1,0.4,0.5
8,0.4,0.3,0.7,0.9
EOF2
out=$("$BIN" --quality "$tmp/q8.csv" --draws 2 --tenants 3 --policies tenant_bo,popular \
	--thresholds 0.05,0 --times "$tmp/times.csv" --runs "$tmp/runs.csv" 2>&1)
want=$(awk -F, 'NR > 1 && $2 == "\"tenant_bo\"" && $4 == 0 { n += $8 } END { print n + 0 }' "$tmp/times.csv")
got=$(awk -F, 'NR > 1 && $2 == "\"tenant_bo\"" { n++ } END { print n + 0 }' "$tmp/runs.csv")
if [ $? -ne 0 ] || [ "$want" -le 0 ] || [ "$got" != "$want" ]; then
	fail "--runs wrote $got tenant_bo runs, --times says $want ($out)"
elif ! out=$(/usr/bin/python3 scripts/bench/oracle_interleave.py --thresholds 0.05,0 \
	--times "$tmp/times.csv" "$tmp/runs.csv" 2>&1); then
	fail "the --runs trace does not reproduce --times: $out"
fi
checks=$((checks + 1))
if ! out=$(/usr/bin/python3 scripts/bench/test_oracle_interleave.py 2>&1); then
	fail "oracle_interleave.py: $out"
fi
checks=$((checks + 1))
if ! out=$(/usr/bin/python3 scripts/bench/test_clairvoyant.py 2>&1); then
	fail "clairvoyant.py / replay_summary.py: $out"
fi

# choose: the default policy's choice on a history, every row in file
# order; too little history gives the fallback, popular
checks=$((checks + 1))
out=$("$BIN" choose --quality "$tmp/q8.csv" 2>&1)
if [ $? -ne 0 ] || ! grep -qE '^CHOICE policy=\S+ index=[0-9]+ chosen=1 rows=8 models=4 tenants=4 ' <<<"$out" ||
	[ "$(grep -c '^SCORE candidate=' <<<"$out")" -lt 2 ]; then
	fail "choose on 8 rows: $out"
fi
checks=$((checks + 1))
head -4 "$tmp/q8.csv" >"$tmp/q3.csv"
out=$("$BIN" choose --quality "$tmp/q3.csv" 2>&1)
if [ $? -ne 0 ] || ! grep -q '^CHOICE policy=popular index=-1 chosen=0 rows=3 ' <<<"$out"; then
	fail "choose on 3 rows: want the fallback popular ($out)"
fi
checks=$((checks + 1))
out=$("$BIN" choose --quality "$tmp/q8.csv" --devices 1,2 2>&1)
if [ $? -ne 2 ] || ! grep -q 'devices takes one value' <<<"$out"; then
	fail "choose --devices 1,2: want status 2 and why ($out)"
fi

# options after auto: those that apply (w, s, qmax, qarm) go on every
# candidate the choice compares and on the spec chosen, in a canonical
# order; those that select what auto chooses are refused with the reason
checks=$((checks + 1))
out=$("$BIN" choose --quality "$tmp/q8.csv" --policies auto:w=5:s=2:w=60 2>&1)
if [ $? -ne 0 ] || ! grep -qE '^CHOICE policy=\S+:w=60:s=2 index=[0-9]+ chosen=1 ' <<<"$out" ||
	[ "$(grep -c '^SCORE candidate=\S*:w=60:s=2 ' <<<"$out")" -lt 2 ] ||
	grep '^SCORE' <<<"$out" | grep -qv ':w=60:s=2 '; then
	fail "choose --policies auto:w=5:s=2:w=60: every candidate and the choice with :w=60:s=2 ($out)"
fi
checks=$((checks + 1))
out=$("$BIN" choose --quality "$tmp/q3.csv" --policies default:qmax=0.99 2>&1)
if [ $? -ne 0 ] || ! grep -q '^CHOICE policy=popular:qmax=0.99 index=-1 chosen=0 ' <<<"$out"; then
	fail "choose --policies default:qmax=0.99 on 3 rows: the fallback with the option ($out)"
fi
for bad in auto:acq=ei auto:cost default:xg=1.5 auto:w=60:mrg=1 auto:greedy=max_gap; do
	checks=$((checks + 1))
	out=$("$BIN" --quality "$tmp/q8.csv" --draws 1 --tenants 2 --policies "popular,$bad" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 0 ] || ! grep -q "cannot follow auto in \"$bad\": auto chooses " <<<"$out"; then
		fail "--policies popular,$bad: want a refusal with the reason, got status $rc ($out)"
	fi
done
checks=$((checks + 1))
out=$("$BIN" choose --quality "$tmp/q8.csv" --policies auto:cost 2>&1)
if [ $? -ne 2 ] || ! grep -q 'auto chooses the cost mode' <<<"$out"; then
	fail "choose --policies auto:cost: want status 2 and why ($out)"
fi
checks=$((checks + 1))
out=$("$BIN" choose --quality "$tmp/q8.csv" --policies hybrid 2>&1)
if [ $? -ne 2 ] || ! grep -q 'is not auto' <<<"$out"; then
	fail "choose --policies hybrid: want status 2, not auto ($out)"
fi
checks=$((checks + 1))
out=$("$BIN" grammar 2>&1)
if ! grep -qE '^\| `w` .*\| applies to every candidate \|$' <<<"$out" ||
	! grep -qE '^\| `acq` .*\| refused: auto chooses the acquisition \|$' <<<"$out"; then
	fail "grammar: the after-auto column ($out)"
fi

echo "test_replay_cli.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
