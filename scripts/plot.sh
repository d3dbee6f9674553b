#!/usr/bin/env bash
# easeml: plot results as PNG files with gnuplot (docs/results.md, §5).
#
#   scripts/plot.sh [--out DIR] [--run RUN_ID]... [--replay-curve CSV] [--no-db]
#                   [--live-curve CSV] [--keep-data]
#
# From the database psql connects to (PGHOST, PGPORT, PGDATABASE, PGUSER;
# a tenant sees its own tasks, an administrator every tenant's; run as root
# with no PGUSER, it connects as scripts/setup.sh does: as the postgres OS
# user, to the database easeml unless PGDATABASE says otherwise):
#   global_loss.png          global average accuracy loss over time
#   leaderboard-<task>.png   each task's runs, best first, as bars
#   best_so_far-<n>.png      each tenant's best score so far, one line a task
#   curve-<run>.png          a run's learning curve (easeml.run_progress):
#                            the runs given with --run, else every task's
#                            deployed run
# From a curve CSV of easeml-replay --curve (devices,policy,time,mean_loss,
# median_loss):
#   replay_loss.png          mean loss over simulated time, one line a policy
# From a curve CSV of live runs (policy,seconds,mean_loss: the steps of each
# policy's loss, as scripts/bench/multitenant.sh writes it):
#   live_loss.png            average loss over wall-clock time, one line a policy
#
# --keep-data also leaves the tab-separated data it plotted in DIR/data.
# Prints the files it wrote.  Names tenants write (tasks, roles) reach
# gnuplot only as data, never as commands; file names use ids.
set -euo pipefail

out=.
runs=()
replay=
live=
use_db=1
keep_data=0
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--run) runs+=("$2"); shift 2 ;;
	--replay-curve) replay=$2; shift 2 ;;
	--live-curve) live=$2; shift 2 ;;
	--no-db) use_db=0; shift ;;
	--keep-data) keep_data=1; shift ;;
	-h | --help) sed -n '2,23p' "$0"; exit 0 ;;
	*) echo "plot.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for r in "${runs[@]}"; do
	[[ $r =~ ^[1-9][0-9]{0,17}$ ]] || { echo "plot.sh: --run needs a run id, not \"$r\"" >&2; exit 2; }
done
if [ "$use_db" = 0 ] && [ ${#runs[@]} -gt 0 ]; then
	echo "plot.sh: --run reads the database; leave out --no-db" >&2
	exit 2
fi
if [ -n "$replay" ] && [ ! -r "$replay" ]; then
	echo "plot.sh: cannot read replay curve \"$replay\"" >&2
	exit 2
fi
if [ -n "$live" ] && [ ! -r "$live" ]; then
	echo "plot.sh: cannot read live curve \"$live\"" >&2
	exit 2
fi
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
keep() {
	if [ "$keep_data" = 1 ]; then
		mkdir -p "$out/data"
		cp "$tmp"/*.tsv "$out/data/" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap keep EXIT

# root has no role of its own: connect as scripts/setup.sh does
psql_cmd=(psql)
if [ "$(id -u)" = 0 ] && [ -z "${PGUSER:-}" ]; then
	psql_cmd=(runuser -u postgres -- psql)
	export PGDATABASE=${PGDATABASE:-easeml}
fi

# rows of a query as tab-separated values (names stay data: never a command)
query() {
	"${psql_cmd[@]}" -XAtq -v ON_ERROR_STOP=1 -F $'\t' -c "$1" </dev/null
}

# run gnuplot on a script; say which PNG it wrote
draw() {
	local png=$1 script=$2
	gnuplot "$script"
	[ -s "$png" ] || { echo "plot.sh: gnuplot wrote no $png" >&2; exit 1; }
	echo "$png"
}

# "set <axis>range" around the values of column col of the files when they
# are all one value: gnuplot warns of an autoscaled range that is empty
range_for() {
	local axis=$1 col=$2
	shift 2
	awk -F'\t' -v col="$col" -v axis="$axis" '
		NF >= col && $col != "" && $col != "NaN" {
			v = $col + 0
			if (n == 0 || v < lo) lo = v
			if (n == 0 || v > hi) hi = v
			n++
		}
		END {
			if (n > 0 && lo == hi) {
				d = (lo < 0 ? -lo : lo) * 0.1 + 0.05
				printf "set %srange [%.17g:%.17g]\n", axis, lo - d, hi + d
			}
		}' "$@"
}

# the terminal and the look every plot shares
header() {
	cat <<EOF
set terminal pngcairo size 900,540 font ",10"
set output "$1"
set datafile separator "\t"
set grid
set key outside right top
EOF
}

if [ "$use_db" = 1 ]; then
	# ---- global average accuracy loss over time --------------------------
	# a task's loss at time t: its best score at the end minus its best by
	# t, on its current snapshot; the average is over the tasks with a
	# result by t
	query "
		WITH r AS (SELECT r.task_id, r.finished_at AS t, r.score
					 FROM easeml.runs r JOIN easeml.tasks k ON k.id = r.task_id
					WHERE r.status = 'succeeded' AND r.score IS NOT NULL
					  AND r.snapshot_version IS NOT DISTINCT FROM k.snapshot_version),
			 fin AS (SELECT task_id, max(score) AS best FROM r GROUP BY task_id),
			 t0 AS (SELECT min(t) AS t0 FROM r)
		SELECT round(extract(epoch FROM ts.t - t0.t0)::numeric, 3), avg(fin.best - b.best_by)
		  FROM (SELECT DISTINCT t FROM r) ts CROSS JOIN t0
		 CROSS JOIN LATERAL (SELECT task_id, max(score) AS best_by FROM r
							  WHERE r.t <= ts.t GROUP BY task_id) b
		  JOIN fin ON fin.task_id = b.task_id
		 GROUP BY ts.t, t0.t0 ORDER BY 1" >"$tmp/global.tsv"
	if [ -s "$tmp/global.tsv" ]; then
		{
			header "$out/global_loss.png"
			cat <<EOF
set title "Global average accuracy loss over time"
set xlabel "seconds since the first result"
set ylabel "average over tasks of (final best - best so far)"
set key off
$(range_for x 1 "$tmp/global.tsv")
$(range_for y 2 "$tmp/global.tsv")
plot "$tmp/global.tsv" using 1:2 with steps linewidth 2
EOF
		} >"$tmp/global.gp"
		draw "$out/global_loss.png" "$tmp/global.gp"
	fi

	# ---- per-task leaderboard bars (at most 20 runs a task) --------------
	for task in $(query "SELECT DISTINCT task_id FROM easeml.leaderboard ORDER BY 1"); do
		query "SELECT rank, model || ' #' || run_id, score FROM easeml.leaderboard
				WHERE task_id = $task AND rank <= 20 ORDER BY rank, run_id" >"$tmp/lb-$task.tsv"
		query "SELECT tenant, task, metric FROM easeml.leaderboard WHERE task_id = $task LIMIT 1" >"$tmp/lb-$task.title"
		{
			header "$out/leaderboard-$task.png"
			cat <<EOF
set title sprintf("Leaderboard of task %s (tenant %s), score = %s quality", system("cut -f2 '$tmp/lb-$task.title'"), system("cut -f1 '$tmp/lb-$task.title'"), system("cut -f3 '$tmp/lb-$task.title'")) noenhanced
set style fill solid 0.8 border -1
set boxwidth 0.7
set key off
set xtics rotate by -45 noenhanced
set ylabel "score"
set yrange [*:*]
$(range_for y 3 "$tmp/lb-$task.tsv")
$([ "$(wc -l <"$tmp/lb-$task.tsv")" = 1 ] && echo 'set xrange [-1:1]')
plot "$tmp/lb-$task.tsv" using 0:3:xticlabels(2) with boxes
EOF
		} >"$tmp/lb-$task.gp"
		draw "$out/leaderboard-$task.png" "$tmp/lb-$task.gp"
	done

	# ---- per-tenant best-so-far curves ------------------------------------
	while IFS=$'\t' read -r n tenant; do
		printf '%s' "$tenant" >"$tmp/tenant-$n.name"
		ntasks=0
		: >"$tmp/bsf-$n.titles"
		# the tenant's tasks, by id (its name is matched in SQL, as data)
		query "SELECT t.id FROM easeml.tasks t
				 JOIN (SELECT name, row_number() OVER (ORDER BY name) AS n FROM easeml.tenants) x
				   ON x.name = t.tenant AND x.n = $n
				ORDER BY t.id" >"$tmp/tasks-$n"
		while read -r task; do
			# the best so far starts again on each snapshot version (a
			# refresh): a blank line between versions breaks the line
			query "SELECT round(extract(epoch FROM r.finished_at - t.created_at)::numeric, 3),
						  max(r.score) OVER (PARTITION BY r.snapshot_version
											 ORDER BY r.finished_at, r.id),
						  coalesce(r.snapshot_version, 0)
					 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
					WHERE r.task_id = $task AND r.status = 'succeeded' AND r.score IS NOT NULL
					ORDER BY r.finished_at, r.id" |
				awk -F'\t' -v OFS='\t' 'NR > 1 && $3 != v { print "" } { v = $3; print $1, $2 }' \
					>"$tmp/bsf-$n-$ntasks.tsv"
			[ -s "$tmp/bsf-$n-$ntasks.tsv" ] || continue
			query "SELECT name FROM easeml.tasks WHERE id = $task" >>"$tmp/bsf-$n.titles"
			ntasks=$((ntasks + 1))
		done <"$tmp/tasks-$n"
		[ "$ntasks" -gt 0 ] || continue
		{
			header "$out/best_so_far-$n.png"
			cat <<EOF
set title sprintf("Best score so far of tenant %s", system("cat '$tmp/tenant-$n.name'")) noenhanced
set xlabel "seconds since the task was declared"
set ylabel "best score so far"
set key noenhanced
titles = system("cat '$tmp/bsf-$n.titles'")
$(range_for x 1 "$tmp"/bsf-"$n"-*.tsv)
$(range_for y 2 "$tmp"/bsf-"$n"-*.tsv)
plot for [i = 0:$((ntasks - 1))] sprintf("$tmp/bsf-$n-%d.tsv", i) using 1:2 with steps linewidth 2 title word(titles, i + 1)
EOF
		} >"$tmp/bsf-$n.gp"
		draw "$out/best_so_far-$n.png" "$tmp/bsf-$n.gp"
	done < <(query "SELECT row_number() OVER (ORDER BY name), name FROM easeml.tenants ORDER BY name")

	# ---- learning curves --------------------------------------------------
	if [ ${#runs[@]} -eq 0 ]; then
		mapfile -t runs < <(query "SELECT run_id FROM easeml.deployed ORDER BY run_id")
	fi
	for run in "${runs[@]}"; do
		query "SELECT epoch, coalesce(loss::text, 'NaN'), coalesce(score::text, 'NaN')
				 FROM easeml.run_progress WHERE run_id = $run ORDER BY id" >"$tmp/curve-$run.tsv"
		if [ ! -s "$tmp/curve-$run.tsv" ]; then
			echo "plot.sh: run $run has no learning curve (easeml.run_progress), skipped" >&2
			continue
		fi
		query "SELECT m.name FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id WHERE r.id = $run" \
			>"$tmp/curve-$run.title"
		# families without a training loss (k-NN, forests) show their score
		# only, runs that report no validation score per epoch their loss only
		read -r has_loss has_score < <(query "SELECT count(loss) > 0, count(score) > 0
												FROM easeml.run_progress WHERE run_id = $run" | tr '\t' ' ')
		score_line="\"$tmp/curve-$run.tsv\" using 1:3 axes x1y2 with points pointtype 7 pointsize 1.5 title \"validation score\""
		if [ "$has_loss" = t ]; then
			ycol=2
			lines="\"$tmp/curve-$run.tsv\" using 1:2 with linespoints title \"training loss\""
			[ "$has_score" = t ] && lines="$lines, $score_line"
		elif [ "$has_score" = t ]; then
			ycol=3
			lines="$score_line, \"\" using 1:3 with points pointtype 7 pointsize 1.5 notitle"
		else
			echo "plot.sh: run $run reports neither loss nor score per epoch, skipped" >&2
			continue
		fi

		# one epoch is one point, a constant loss a flat line: ranges
		# around them (an autoscaled range of one value is empty)
		ranges="$(range_for x 1 "$tmp/curve-$run.tsv")
$(range_for y "$ycol" "$tmp/curve-$run.tsv")
$(range_for y2 3 "$tmp/curve-$run.tsv")"
		{
			header "$out/curve-$run.png"
			cat <<EOF
set title sprintf("Learning curve of run $run (%s)", system("cat '$tmp/curve-$run.title'")) noenhanced
set xlabel "epoch"
set ylabel "training loss"
set y2label "validation score"
set y2tics
set ytics nomirror
$ranges
plot $lines
EOF
		} >"$tmp/curve-$run.gp"
		draw "$out/curve-$run.png" "$tmp/curve-$run.gp"
	done
fi

# ---- replay: loss over simulated time per policy ----------------------------
if [ -n "$replay" ]; then
	# one block per (policy, devices), in the order they first appear
	awk -F',' -v dir="$tmp" '
		NR == 1 { next }
		{
			pol = $2; gsub(/"/, "", pol); gsub(/[^A-Za-z0-9_.:+-]/, "_", pol)
			key = pol ($1 == "1" ? "" : "@" $1 "dev")
			if (!(key in idx)) { idx[key] = n++; names[idx[key]] = key }
			print $3 "\t" $4 > (dir "/replay-" idx[key] ".tsv")
		}
		END {
			for (i = 0; i < n; i++) printf "%s ", names[i] > (dir "/replay.titles")
			print n > (dir "/replay.count")
		}' "$replay"
	count=$(cat "$tmp/replay.count" 2>/dev/null || echo 0)
	if [ "$count" -gt 0 ]; then
		{
			header "$out/replay_loss.png"
			cat <<EOF
set title "Replay: global average accuracy loss over simulated time"
set xlabel "simulated seconds (log scale)"
set ylabel "mean accuracy loss"
set key noenhanced
set logscale x
titles = system("cat '$tmp/replay.titles'")
plot for [i = 0:$((count - 1))] sprintf("$tmp/replay-%d.tsv", i) using 1:2 with lines linewidth 2 title word(titles, i + 1)
EOF
		} >"$tmp/replay.gp"
		draw "$out/replay_loss.png" "$tmp/replay.gp"
	else
		echo "plot.sh: $replay has no curve rows" >&2
		exit 1
	fi
fi

# ---- live: average loss over wall-clock time per policy ----------------------
if [ -n "$live" ]; then
	# one block per policy, in the order they first appear
	awk -F',' -v dir="$tmp" '
		NR == 1 { next }
		NF >= 3 {
			pol = $1; gsub(/"/, "", pol); gsub(/[^A-Za-z0-9_.:+-]/, "_", pol)
			if (!(pol in idx)) { idx[pol] = n++; names[idx[pol]] = pol }
			print $2 "\t" $3 > (dir "/live-" idx[pol] ".tsv")
		}
		END {
			for (i = 0; i < n; i++) printf "%s ", names[i] > (dir "/live.titles")
			print n + 0 > (dir "/live.count")
		}' "$live"
	count=$(cat "$tmp/live.count" 2>/dev/null || echo 0)
	if [ "$count" -gt 0 ]; then
		{
			header "$out/live_loss.png"
			cat <<EOF
set title "Live: average over tenants of (best score reached - best so far)"
set xlabel "seconds since the first task was declared"
set ylabel "average best-score loss (log scale; 0 drawn at 1e-4)"
set key noenhanced
set logscale y
set yrange [1e-4:*]
titles = system("cat '$tmp/live.titles'")
$(range_for x 1 "$tmp"/live-*.tsv)
plot for [i = 0:$((count - 1))] sprintf("$tmp/live-%d.tsv", i) using 1:(\$2 > 1e-4 ? \$2 : 1e-4) with steps linewidth 2 title word(titles, i + 1)
EOF
		} >"$tmp/live.gp"
		draw "$out/live_loss.png" "$tmp/live.gp"
	else
		echo "plot.sh: $live has no curve rows" >&2
		exit 1
	fi
fi
