#!/bin/sh
# reload.sh - SIGHUP to decod re-reads the config and each stage gets what
# the settings table says: a live setting (journal_retention) reaches the
# renderer, which does housekeeping, without a restart, and its next prune
# uses the new value (proved by its effect on old audit rows); a setting
# that needs a restart restarts exactly the stages that read it, no more.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
for p in "$DECOD" "$DECOCTL"; do [ -x "$p" ] || bail "$p not built"; done
STAGES="fetcher renderer publisher notifier"
mkdir -p "$T/libexec"
for s in $STAGES; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
command -v jq >/dev/null || skip_all "jq not installed"
cat > "$T/base.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
housekeeping_interval = 200ms
CONF
cp "$T/base.conf" "$T/decod.conf"	# each reload below adds a line
export DECOD_CONFIG="$T/decod.conf"

stages_json() { "$DECOCTL" stages -o json 2>/dev/null; }
pids() { # "fetcher=PID renderer=PID ..." of READY stages
	stages_json | jq -r '[.stages[] | select(.state == "READY") |
	    "\(.name)=\(.pid)"] | join(" ")'
}
ready4() { [ "$(pids | wc -w)" -eq 4 ]; }
pid_of() { pids | tr ' ' '\n' | sed -n "s/^$1=//p"; }
old_rows() { # audit rows of the fixture object, through decoctl
	"$DECOCTL" journal -o json 2>/dev/null |
	    jq '[.[] | select(.object == "reload-fixture")] | length'
}
none_old() { [ "$(old_rows)" = 0 ]; }
# restarted_exactly "A B": after a reload, exactly stages A and B have new pids
changed() { # changed "A B": A and B have new pids and all four are READY
	ready4 || return 1
	for s in $1; do [ "$(pid_of "$s")" != "$(eval echo \$before_$s)" ] || return 1; done
}
restarted_exactly() {
	want=$1
	wait_for 20 changed "$want" || { diag "not all of '$want' restarted: $(pids)"; return 1; }
	for s in $STAGES; do
		case " $want " in *" $s "*) [ "$(pid_of "$s")" != "$(eval echo \$before_$s)" ] || { diag "$s kept its pid"; return 1; } ;;
		*) [ "$(pid_of "$s")" = "$(eval echo \$before_$s)" ] || { diag "$s restarted"; return 1; } ;;
		esac
	done
}
remember() { for s in $STAGES; do eval "before_$s=$(pid_of "$s")"; done; }
# hup_with "LINE": add LINE to the config, SIGHUP, wait for decod's reload
hup_with() {
	n=$(grep -c 'configuration reloaded' "$T/decod.log")
	echo "$1" >>"$T/decod.conf"
	kill -HUP "$SUP"
	wait_for 10 sh -c "[ \$(grep -c 'configuration reloaded' \"$T/decod.log\") -gt $n ]"
}

"$DECOD" 2>"$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for 20 ready4
ok $? "four stages READY"

# history two hours old: kept under the default retention (168h)
db_write "$T/state/journal.db" "INSERT INTO audit (at, stage, object, action, detail)
    VALUES (strftime('%Y-%m-%dT%H:%M:%fZ','now','-2 hours'), 'test', 'reload-fixture', 'old', ''),
           (strftime('%Y-%m-%dT%H:%M:%fZ','now','-2 hours'), 'test', 'reload-fixture', 'old', '')"
wait_for 5 grep -q 'housekeeping done' "$T/decod.log"
ok $? "the renderer does housekeeping every 200 ms"
n=$(grep -c 'housekeeping done' "$T/decod.log")
wait_for 5 sh -c "[ \$(grep -c 'housekeeping done' \"$T/decod.log\") -gt $n ]"
is "$(old_rows)" 2 "two-hour-old audit rows survive a 168h retention"

remember
hup_with "journal_retention = 1h"
ok $? "SIGHUP: decod reloads with journal_retention = 1h"
wait_for 10 none_old
ok $? "the renderer's next prune uses 1h: the two-hour-old rows are gone"
restarted_exactly ""
ok $? "no stage restarted for a live setting"
grep -q 'stage=renderer.*telling stage to reload\|telling stage to reload.*stage=renderer' "$T/decod.log"
ok $? "decod told the renderer to reload (SIGHUP), as the table marks it live"

# the other live setting: housekeeping runs on at the new interval, no restart
remember
n=$(grep -c 'housekeeping done' "$T/decod.log")
hup_with "housekeeping_interval = 150ms"
ok $? "SIGHUP: decod reloads with housekeeping_interval = 150ms"
wait_for 5 sh -c "[ \$(grep -c 'housekeeping done' \"$T/decod.log\") -gt $((n + 3)) ]"
ok $? "housekeeping goes on at the new interval"
restarted_exactly ""
ok $? "no stage restarted for it either"

# a setting that needs a restart: exactly its readers restart
while read -r name value readers; do
	remember
	hup_with "$name = $value"
	restarted_exactly "$readers"
	ok $? "$name = $value restarts exactly: $readers"
done <<'ROWS'
brotli_quality 5 renderer
poll_period 3s fetcher
default_target s3 renderer publisher
notify_concurrency 7 notifier
drift_check_interval 20s publisher
etcd_timeout 9s fetcher renderer publisher notifier
ROWS

kill -TERM $SUP
wait_for 15 sh -c "! kill -0 $SUP 2>/dev/null"
ok $? "decod stopped"
done_testing
